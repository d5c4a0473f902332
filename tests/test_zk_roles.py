"""The ZooKeeper backend's roles on their own (broker/metadata/zk): the cluster view's one wait for
reconciles, the registrar's wait for a previous session's registration, the admin writer's
producer-id blocks, and the backend answering ClusterMetadata from its view. Cluster runs over a
real ZooKeeper are compat-tests/test_cluster.py's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import trio
import trio.testing
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk.admin_writer import AdminWriter
from wirekafka.broker.metadata.zk.backend import ZkBackend
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot
from wirekafka.broker.metadata.zk.registration import Registrar
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.metadata.zk.znode_io import PRODUCER_ID_BLOCK
from wirekafka.broker.replication.peer_client import PeerSecurity
from wirekafka.config.loader import build_config
from wirekafka.startup_errors import StartupError

CONFIG = build_config({"zookeeper.connect": "127.0.0.1:1", "broker.id": "1", "zookeeper.session.timeout.ms": "6000"})


def never_opened(_topic, _index, _new):
    raise AssertionError("no partition is opened here")


class FakeSession:
    """What the roles ask of ZkSession: `call` runs the kazoo function at once on the fake client."""

    def __init__(self, client: object, session_id: int = 7) -> None:
        self.client = client
        self.id = session_id
        self.marks = 0

    async def call(self, fn, *args, **kwargs):
        await trio.sleep(0)
        return fn(*args, **kwargs)

    def session_id(self) -> int:
        return self.id

    def mark_changed(self) -> None:
        self.marks += 1


# ---- the cluster view's wait ---------------------------------------------------------------------
def test_wait_until_asks_for_reconciles_until_the_probe_answers() -> None:
    asked: list[int] = []
    view = ClusterView(CONFIG, never_opened, lambda: asked.append(1))

    async def main() -> object:
        async with trio.open_nursery() as nursery:
            async def reconcile_on_demand() -> None:
                while True:
                    await trio.sleep(0.01)
                    if asked:
                        asked.clear()
                        rounds.append(1)
                        view.reconciled()
            rounds: list[int] = []
            nursery.start_soon(reconcile_on_demand)
            found = await view.wait_until(lambda: "done" if len(rounds) >= 3 else None, 10)
            nursery.cancel_scope.cancel()
        assert len(rounds) == 3  # one reconcile asked for per unmet probe
        return found

    assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) == "done"


def test_wait_until_answers_at_once_when_the_probe_holds_and_none_after_the_timeout() -> None:
    asked: list[int] = []
    view = ClusterView(CONFIG, never_opened, lambda: asked.append(1))

    async def main() -> tuple[object, object, float]:
        at_once = await view.wait_until(lambda: 5, 1)
        start = trio.current_time()
        timed_out = await view.wait_until(lambda: None, 30)
        return at_once, timed_out, trio.current_time() - start

    assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) == (5, None, 30)
    assert asked == [1]  # the probe that held asked for nothing


def test_a_topic_read_but_not_applied_yet_counts_as_being_created() -> None:
    """Metadata must not try to auto-create a topic this broker read from ZooKeeper and is still
    applying (opening its replicas): it exists, and the attempt is a ZooKeeper request each time."""
    import uuid

    from wirekafka.broker.metadata.cluster_metadata import Topic
    from wirekafka.broker.metadata.zk.controller import TopicView

    view = ClusterView(CONFIG, never_opened, lambda: None)
    assert not view.being_created("t")
    view._read_topics = {"t": TopicView(uuid.uuid4(), {0: (1, 2, 3)})}  # as apply sets it when it starts
    assert view.being_created("t") and not view.being_created("other")
    view._topics["t"] = Topic("t", view._read_topics["t"].topic_id)  # applied: it is simply there
    assert not view.being_created("t")
    with view.creating("other"):
        assert view.being_created("other")


def followed_snapshot(config, topics: int, partitions: int) -> ClusterSnapshot:
    """Three brokers and `topics` topics of `partitions` partitions on all three, led by broker 2:
    broker 1's replicas are followers."""
    import uuid

    from wirekafka.broker.metadata.zk.controller import LeaderAndIsr, TopicView

    listener = config.listeners[0].name
    brokers = {n: BrokerInfo(n, "127.0.0.1", 9091 + n, endpoints={listener: ("127.0.0.1", 9091 + n)})
               for n in (1, 2, 3)}
    views = {f"t{i}": TopicView(uuid.UUID(int=i + 1), {p: (1, 2, 3) for p in range(partitions)},
                                states={p: (LeaderAndIsr(2, 1, (1, 2, 3), 1), 1) for p in range(partitions)})
             for i in range(topics)}
    return ClusterSnapshot(brokers, 2, 1, 1, views)


def close_logs(view: ClusterView) -> None:
    for topic in view.by_name.values():
        for p in topic.local_partitions():
            p.files.log.close()


def test_a_full_apply_gives_the_loop_back_every_chunk_of_partitions(tmp_path, monkeypatch) -> None:
    """A full apply (the 5 s safety re-read) looks at every local partition even when no role
    changes; at 10,000 it took about 40 ms on the loop in one go. It hands the loop back every
    APPLY_CHUNK partitions."""
    from wirekafka.broker.metadata.zk import cluster_view
    from wirekafka.broker.state import BrokerState

    node = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "node.id": "1"}))
    node.load()
    view = ClusterView(node.config, node._open_partition, lambda: None)
    snapshot = followed_snapshot(node.config, 4, 10)
    monkeypatch.setattr(cluster_view, "APPLY_CHUNK", 7)
    events: list[str] = []  # "p": a partition applied; "t": the other task's turn
    apply_role = view._apply_role

    def recorded(*args, **kwargs):
        events.append("p")
        return apply_role(*args, **kwargs)

    async def main() -> None:
        await view.apply(snapshot, True)  # opens the 40 replicas, followers of broker 2
        monkeypatch.setattr(view, "_apply_role", recorded)
        done = False

        async def other_task() -> None:
            while not done:
                events.append("t")
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other_task)
            await view.apply(snapshot, True)  # no role changes: only the chunks hand the loop back
            done = True

    trio.run(main)
    stretches = [len(run) for run in "".join(events).split("t")]
    assert sum(stretches) == 40
    # trio runs each runnable task once per round, in an order it may shuffle: the other task's
    # turn comes before or after each chunk, so at most two chunks run between two of its turns
    assert max(stretches) <= 2 * 7
    close_logs(view)


def test_each_new_topic_is_followed_as_soon_as_it_is_opened(tmp_path) -> None:
    """A snapshot with many new topics (a create of 100 topics of 100 partitions) hands each
    topic's roles to the broker (its fetchers) once that topic's replicas are open, not after every
    topic's: followers that waited for all of them fell out of the ISRs meanwhile."""
    from wirekafka.broker.state import BrokerState

    node = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "node.id": "1"}))
    node.load()
    events: list[str] = []

    def opened(topic, index, new):
        events.append(f"open {topic.name}")
        return node._open_partition(topic, index, new)

    view = ClusterView(node.config, opened, lambda: None)
    view.on_roles = lambda change: events.append("follow " + ",".join(sorted({p.topic for p, _ in change.follow})))
    trio.run(view.apply, followed_snapshot(node.config, 3, 2), True)
    handed = [e for e in events if e != "follow "]  # the apply's last hand-over has nothing left
    assert handed == ["open t0", "open t0", "follow t0", "open t1", "open t1", "follow t1",
                      "open t2", "open t2", "follow t2"]
    close_logs(view)


def test_next_reconcile_holds_after_one_reconcile_finished() -> None:
    view = ClusterView(CONFIG, never_opened, lambda: None)
    probe = view.next_reconcile()
    assert probe() is None
    view.reconciled()
    assert probe() is True
    assert view.next_reconcile()() is None


# ---- registration --------------------------------------------------------------------------------
class RegistryClient:
    """/brokers/ids/1, owned by another session for the first `stale_reads` looks."""

    def __init__(self, stale_reads: int) -> None:
        self.stale_reads = stale_reads
        self.created: list[tuple[str, bool]] = []

    def create(self, path: str, data: bytes, ephemeral: bool = False, makepath: bool = False) -> None:
        self.created.append((path, ephemeral))
        if self.stale_reads > 0:
            raise NodeExistsError()

    def exists(self, path: str):
        if self.stale_reads > 0:
            self.stale_reads -= 1
            return SimpleNamespace(ephemeralOwner=3, czxid=10)
        return SimpleNamespace(ephemeralOwner=7, czxid=42)


def test_the_registrar_waits_for_the_previous_sessions_node_and_keeps_the_broker_epoch() -> None:
    client = RegistryClient(stale_reads=2)
    registrar = Registrar(CONFIG, FakeSession(client))  # type: ignore[arg-type]
    assert not registrar.current
    trio.run(registrar.register, clock=trio.testing.MockClock(autojump_threshold=0))
    assert client.created == [(zl.broker_path(1), True)] * 3
    assert registrar.broker_epoch == 42 and registrar.current


def test_the_registrar_gives_up_after_the_session_timeout() -> None:
    registrar = Registrar(CONFIG, FakeSession(RegistryClient(stale_reads=10**6)))  # type: ignore[arg-type]
    with pytest.raises(StartupError, match="registered by another live broker"):
        trio.run(registrar.register, clock=trio.testing.MockClock(autojump_threshold=0))


# ---- producer-id blocks --------------------------------------------------------------------------
class BlockClient:
    """/latest_producer_id_block, missing at first; one conditional write loses a race."""

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.version = 0
        self.lose_next = True

    def get(self, path: str):
        if self.data is None:
            raise NoNodeError()
        return self.data, SimpleNamespace(version=self.version)

    def ensure_path(self, path: str) -> None:
        self.data = self.data if self.data is not None else b""

    def set(self, path: str, data: bytes, version: int) -> None:
        if self.lose_next:  # another broker claimed a block meanwhile
            self.lose_next = False
            self.data, self.version = zl.ProducerIdBlock(broker_id=2, block_start=0, block_end=999).encode(), 1
            raise BadVersionError()
        assert version == self.version
        self.data, self.version = data, self.version + 1


def test_producer_ids_come_from_claimed_blocks() -> None:
    client = BlockClient()
    view = ClusterView(CONFIG, never_opened, lambda: None)
    admin = AdminWriter(CONFIG, FakeSession(client), view)  # type: ignore[arg-type]

    async def main() -> list[int]:
        return [await admin.allocate_producer_id() for _ in range(PRODUCER_ID_BLOCK + 1)]

    ids = trio.run(main)
    assert ids == list(range(1000, 1000 + PRODUCER_ID_BLOCK + 1))  # the block after the one lost to broker 2
    assert zl.ProducerIdBlock.decode(client.data).block_start == 2000  # type: ignore[arg-type]


# ---- the backend -----------------------------------------------------------------------------------
def test_the_backend_answers_from_what_its_view_applied() -> None:
    backend = ZkBackend(CONFIG, never_opened, ZkSession("127.0.0.1:1", 6000, 6000), PeerSecurity.of(CONFIG))
    assert backend.broker_configs is backend.view.broker_configs
    assert backend.scram is backend.view.scram and backend.client_quotas is backend.view.client_quotas
    assert backend.controller_id() == -1 and backend.brokers(CONFIG.inter_broker_listener) == []
    backend.view.snapshot = ClusterSnapshot({2: BrokerInfo(2, "h", 9, None, {CONFIG.inter_broker_listener: ("h", 9)})},
                                            2, 1, 0, {})
    assert backend.controller_id() == 2
    assert [b.node_id for b in backend.brokers(CONFIG.inter_broker_listener)] == [2]
    assert backend.topic("t") is None and backend.all_topics() == [] and not backend.being_created("t")
    with backend.view.creating("t"):
        assert backend.being_created("t")
    assert not backend.being_created("t")
    assert backend.list_reassignments(None) == []
