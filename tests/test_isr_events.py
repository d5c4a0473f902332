"""The ZooKeeper-mode leader's ISR maintenance (broker/metadata/zk/isr_manager.py) as events and one
timer: a follower fetch that makes a replica eligible proposes the expansion at once, a lagging
follower leaves at the sweep every replica.lag.time.max.ms / 2 (Kafka's maybeShrinkIsr schedule),
a new leader after an unclean election proposes RECOVERED at once, refusals are tried again after
a backoff, one proposal in flight per partition. Partitions are real; the controller is a fake
proposer, time trio's MockClock (the partitions read the same clock)."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, cast

import pytest
import trio
import trio.testing

from wirekafka.broker.metadata.cluster_metadata import Topic
from wirekafka.broker.metadata.cluster_role import RoleChange
from wirekafka.broker.metadata.zk import isr_manager
from wirekafka.broker.metadata.zk.backend import ZkBackend
from wirekafka.broker.metadata.zk.controller import RECOVERED, RECOVERING, ClusterSnapshot, LeaderAndIsr, TopicView
from wirekafka.broker.metadata.zk.isr_manager import RETRY_S, IsrManager
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.broker.replica.replica_set import ReplicaSet
from wirekafka.broker.replication.alter_partition_client import IsrChange, IsrOutcome
from wirekafka.broker.replication.peer_client import PeerSecurity
from wirekafka.config.loader import build_config
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

LAG_MS = 4000
EPOCH = 3


class View:
    """The parts of ClusterView the manager uses: the led topics, the last applied snapshot, and
    its note that the snapshot was amended in place."""

    def __init__(self, topics: list[Topic], snapshot: ClusterSnapshot) -> None:
        self.topics, self.snapshot = topics, snapshot
        self.amendments = 0

    def all_topics(self) -> list[Topic]:
        return self.topics

    def amended(self) -> None:
        """The manager wrote a recorded ISR into the snapshot."""
        self.amendments += 1


class Proposer:
    """The controller: records each request's changes and answers them (accepted unless told
    otherwise); `gate`, when set, holds every answer until it is set."""

    def __init__(self) -> None:
        self.requests: list[list[IsrChange]] = []
        self.refuse: ErrorCode | None = None
        self.gate: trio.Event | None = None
        self.answered_at: list[float] = []

    async def propose(self, broker_epoch: int, changes: list[IsrChange]) -> dict[tuple[uuid.UUID, int], IsrOutcome]:
        self.requests.append(changes)
        if self.gate is not None:
            await self.gate.wait()
        self.answered_at.append(trio.current_time())
        if self.refuse is not None:
            return {(c.topic_id, c.partition.index): IsrOutcome(self.refuse) for c in changes}
        return {(c.topic_id, c.partition.index): IsrOutcome(ErrorCode.NONE, 1, c.leader_epoch, c.isr, RECOVERED,
                                                            c.partition_epoch + 1) for c in changes}

    def proposed(self) -> list[tuple[str, int, tuple[int, ...]]]:
        return [(c.partition.topic, c.partition.index, c.isr) for r in self.requests for c in r]


class Harness:
    def __init__(self, tmp_path: Path, partitions: int = 1, isr: tuple[int, ...] = (1, 2, 3),
                 recovery: int = RECOVERED, lag_ms: int = LAG_MS) -> None:
        self.topic = Topic("t", uuid.uuid4())
        view = TopicView(self.topic.topic_id, {})
        for i in range(partitions):
            d = tmp_path / f"t-{i}"
            p = Partition("t", i, PartitionLog(d, LogConfig()), LeaderEpochCache(d / "leader-epoch-checkpoint"),
                          clock=clock, node_id=1, lead=False)
            self.topic.partitions.append(p)
            view.assignment[i] = (1, 2, 3)
            view.states[i] = (LeaderAndIsr(1, EPOCH, isr, 1, recovery), 5)
        self.view = View([self.topic], ClusterSnapshot({}, 1, 1, 0, {"t": view}))
        self.zk = SimpleNamespace(connected=True, stale=0)
        self.zk.mark_changed = lambda: setattr(self.zk, "stale", self.zk.stale + 1)
        self.proposer = Proposer()
        config = SimpleNamespace(node_id=1, int=lambda key: {"replica.lag.time.max.ms": lag_ms}[key])
        self.manager = IsrManager(cast(Any, config), cast(Any, self.zk), cast(Any, self.view), cast(Any, self.proposer),
                                  lambda: 77)
        self.isr = frozenset(isr)

    @property
    def partitions(self) -> list[Partition]:
        return self.topic.local_partitions()

    def lead(self) -> None:
        """Lead every partition, as a reconcile does, and tell the manager (the role change)."""
        for p in self.partitions:
            p.make_leader(EPOCH, (1, 2, 3), self.isr)
        self.manager.on_roles(RoleChange(stop_fetching=self.partitions, became_leader=self.partitions))

    def run(self, scenario: Callable[["Harness"], Awaitable[None]], mock_clock: bool = True) -> None:
        async def main() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.manager.run)
                await scenario(self)
                nursery.cancel_scope.cancel()

        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0) if mock_clock else None)


def clock() -> float:
    """The partitions' clock: trio's (mock) clock once running, its start before."""
    try:
        return 1000 + trio.current_time()
    except RuntimeError:
        return 1000


def append(p: Partition, n: int = 1) -> None:
    batch = records.build_batch([(None, b"v", 0)] * n)
    p.append(batch, records.parse_header(batch), AppendOrigin.CLIENT)


async def until(condition: Callable[[], bool], limit_s: float = 60) -> float:
    """Wait (in mock time) until condition holds; the time it took."""
    began = trio.current_time()
    while not condition():
        assert trio.current_time() - began < limit_s, "condition never held"
        await trio.sleep(0.01)
    return trio.current_time() - began


def test_a_fetch_that_catches_a_follower_up_proposes_the_expansion_at_once(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        [p] = h.partitions
        h.lead()
        append(p, 3)
        p.record_follower_fetch(2, 3)
        await trio.sleep(1)
        assert h.proposer.proposed() == []  # broker 3 has not fetched: nothing to propose
        p.record_follower_fetch(3, 1)  # behind the high watermark (3): not eligible yet
        await trio.sleep(1)
        assert h.proposer.proposed() == []
        p.record_follower_fetch(3, 3)
        assert await until(lambda: h.proposer.proposed() != []) < 0.05  # not at the next sweep
        assert h.proposer.proposed() == [("t", 0, (1, 2, 3))]
        assert p.replica_set.isr == frozenset({1, 2, 3}) and p.replica_set.pending_isr is None
        # the recorded state is written into the applied snapshot, which says so (answers derived from it go)
        assert h.view.snapshot.topics["t"].states[0][0].isr == (1, 2, 3) and h.view.amendments == 1

    Harness(tmp_path, isr=(1, 2)).run(scenario)


def test_a_lagging_follower_leaves_at_the_sweep_after_the_lag_time(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        [p] = h.partitions
        h.lead()
        append(p, 2)
        began = trio.current_time()
        while trio.current_time() - began < 10:  # broker 2 keeps up, broker 3 never fetches past 1
            p.record_follower_fetch(2, p.log_end_offset)
            p.record_follower_fetch(3, 1)
            append(p)
            await trio.sleep(0.5)
            if h.proposer.proposed():
                break
        took = trio.current_time() - began
        # out of sync once LAG_MS passed, seen by the sweep every LAG_MS / 2: between 4 and 6 s
        assert LAG_MS / 1000 < took <= LAG_MS * 1.5 / 1000 + 0.5, took
        assert h.proposer.proposed() == [("t", 0, (1, 2))]
        assert p.replica_set.isr == frozenset({1, 2})

    Harness(tmp_path).run(scenario)


def test_an_idle_partition_in_sync_proposes_nothing(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        h.lead()
        for p in h.partitions:
            append(p)
            p.record_follower_fetch(2, 1)
            p.record_follower_fetch(3, 1)
        await trio.sleep(LAG_MS * 5 / 1000)  # followers at the log end stay in sync however long
        assert h.proposer.proposed() == []

    Harness(tmp_path, partitions=3).run(scenario)


def test_a_leader_after_an_unclean_election_proposes_recovered_at_once(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        h.lead()
        assert await until(lambda: h.proposer.proposed() != []) < 0.05
        assert h.proposer.proposed() == [("t", 0, (1,))]
        assert h.view.snapshot.topics["t"].states[0][0].leader_recovery_state == RECOVERED
        await trio.sleep(LAG_MS / 1000)
        assert len(h.proposer.requests) == 1  # recorded: not proposed again

    Harness(tmp_path, isr=(1,), recovery=RECOVERING).run(scenario)


def test_one_proposal_in_flight_and_a_refusal_is_tried_again_after_a_backoff(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        [p] = h.partitions
        h.lead()
        append(p, 2)
        h.proposer.gate = trio.Event()
        h.proposer.refuse = ErrorCode.NOT_CONTROLLER
        p.record_follower_fetch(2, 2)
        await until(lambda: len(h.proposer.requests) == 1)
        assert p.replica_set.pending_isr == frozenset({1, 2})
        for _ in range(10):  # more fetches while the proposal is out: no second one
            p.record_follower_fetch(2, 2)
            await trio.sleep(0.05)
        assert len(h.proposer.requests) == 1
        h.proposer.gate.set()
        await until(lambda: p.replica_set.pending_isr is None)
        assert p.replica_set.isr == frozenset({1})  # refused: the ISR stays
        h.proposer.refuse = None
        await until(lambda: len(h.proposer.requests) == 2)  # no fetch needed: the backoff retries
        assert trio.current_time() - h.proposer.answered_at[0] >= RETRY_S
        assert p.replica_set.isr == frozenset({1, 2}) and h.zk.stale == 0

    Harness(tmp_path, isr=(1,)).run(scenario)


def test_a_stale_view_refusal_asks_for_a_reconcile(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        [p] = h.partitions
        h.lead()
        append(p, 2)
        h.proposer.refuse = ErrorCode.INVALID_UPDATE_VERSION
        p.record_follower_fetch(2, 2)
        await until(lambda: h.zk.stale >= 1)
        assert p.replica_set.isr == frozenset({1}) and p.replica_set.pending_isr is None

    Harness(tmp_path, isr=(1,)).run(scenario)


def test_nothing_is_proposed_while_zookeeper_is_away(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        [p] = h.partitions
        h.lead()
        append(p, 2)
        h.zk.connected = False
        p.record_follower_fetch(2, 2)
        await trio.sleep(2)
        assert h.proposer.proposed() == []
        h.zk.connected = True  # the noted partition was kept: proposed without another fetch
        await until(lambda: h.proposer.proposed() == [("t", 0, (1, 2))], limit_s=1)

    Harness(tmp_path, isr=(1,)).run(scenario)


def test_a_partition_led_elsewhere_is_not_proposed(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        [p] = h.partitions
        h.lead()
        append(p, 2)
        p.make_follower(EPOCH + 1, 2, (1, 2, 3), frozenset({1, 2}))
        assert not p.record_follower_fetch(2, 2)  # a follower counts no fetches
        await trio.sleep(LAG_MS / 1000 + 1)  # nor does a sweep visit it
        assert h.proposer.proposed() == []

    Harness(tmp_path, isr=(1,)).run(scenario)


class TaskSteps(trio.abc.Instrument):
    """Counts task steps: two calls made in one step saw the same count."""

    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


def test_a_sweep_over_many_partitions_yields_to_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Led partitions are visited in chunks of SWEEP_CHUNK, each chunk in a task step of its own:
    the loop runs other tasks between two chunks (each shrink check records the step it ran in)."""
    monkeypatch.setattr(isr_manager, "SWEEP_CHUNK", 10)
    steps = TaskSteps()
    seen: list[int] = []

    async def scenario(h: Harness) -> None:
        trio.lowlevel.add_instrument(steps)
        h.lead()
        for p in h.partitions:
            append(p)
            p.record_follower_fetch(2, 1)
            p.record_follower_fetch(3, 1)
            monkeypatch.setattr(p, "isr_shrink", lambda lag_ms, shrink=p.isr_shrink: (seen.append(steps.count),
                                                                                      shrink(lag_ms))[1])
        await until(lambda: len(seen) >= 70)  # the new leaders' round, then the sweep at LAG_MS / 2
        assert h.proposer.proposed() == []

    Harness(tmp_path, partitions=35).run(scenario)
    for round_ in (seen[:35], seen[35:70]):  # 35 partitions: 4 steps of 10, 10, 10 and 5
        assert [len(set(round_[i:i + 10])) for i in range(0, 35, 10)] == [1, 1, 1, 1]
        assert len(set(round_)) == 4


def test_many_changes_are_built_and_settled_a_chunk_per_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of partitions wanting a change at once (a restarted follower rejoining every ISR)
    go to the controller in one request, but are built and settled SWEEP_CHUNK per task step:
    the loop runs other tasks between two chunks. Every change is proposed and settled, once."""
    monkeypatch.setattr(isr_manager, "SWEEP_CHUNK", 10)
    steps = TaskSteps()
    built: list[int] = []
    settled: list[int] = []

    async def scenario(h: Harness) -> None:
        trio.lowlevel.add_instrument(steps)
        isr_change, settle_isr = h.manager._isr_change, h.manager._settle_isr
        monkeypatch.setattr(h.manager, "_isr_change", lambda p, isr: (built.append(steps.count), isr_change(p, isr))[1])
        monkeypatch.setattr(h.manager, "_settle_isr", lambda c, o: (settled.append(steps.count), settle_isr(c, o))[1])
        h.lead()  # 35 new leaders after an unclean election: each proposes RECOVERED at once
        await until(lambda: len(settled) == 35)
        assert [len(r) for r in h.proposer.requests] == [35]
        assert sorted(i for _, i, _ in h.proposer.proposed()) == list(range(35))
        assert all(p.replica_set.pending_isr is None for p in h.partitions)

    Harness(tmp_path, partitions=35, isr=(1,), recovery=RECOVERING).run(scenario)
    for done in (built, settled):  # 35 partitions: 4 steps of 10, 10, 10 and 5
        assert [len(set(done[i:i + 10])) for i in range(0, 35, 10)] == [1, 1, 1, 1]
        assert len(set(done)) == 4


def test_only_a_fetch_of_a_follower_outside_the_isr_that_may_rejoin_notifies() -> None:
    notes: list[int] = []
    rs = ReplicaSet.single(1)
    rs.lead((1, 2, 3), frozenset({1, 2}), 0)
    rs.note_if_rejoining(3, lambda: frozenset({3}))  # not watched: nothing to tell
    rs.isr_watch = lambda: notes.append(1)
    rs.note_if_rejoining(2, never)  # a member's fetch checks no expansion
    rs.note_if_rejoining(3, lambda: frozenset())
    assert notes == []
    rs.note_if_rejoining(3, lambda: frozenset({3}))
    assert notes == [1]


def never() -> frozenset[int]:
    raise AssertionError("not to be called")


def test_the_zookeeper_backend_hands_its_role_changes_to_the_isr_manager(tmp_path: Path) -> None:
    """A reconcile's role changes reach the broker (its fetchers) and the ISR manager, which
    watches the partitions led here: their followers' fetches note them."""
    config = build_config({"zookeeper.connect": "127.0.0.1:1", "broker.id": "1"})
    seen: list[RoleChange] = []
    backend = ZkBackend(config, lambda topic, index, new: None, ZkSession("127.0.0.1:1", 6000, 6000),
                        PeerSecurity.of(config), seen.append)
    h = Harness(tmp_path, partitions=2)
    led, followed = h.partitions
    led.make_leader(EPOCH, (1, 2, 3), frozenset({1}))
    followed.make_follower(EPOCH, 2, (1, 2, 3), frozenset({2}))
    change = RoleChange(stop_fetching=[led, followed], became_leader=[led])
    backend.view.on_roles(change)
    assert seen == [change]
    assert led.replica_set.isr_watch is not None and followed.replica_set.isr_watch is None
