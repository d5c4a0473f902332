"""ControlledShutdown (key 7): the schema classes and v0's header, the controller's plan for a
shutting-down broker and how the other decisions treat such a broker (replication/controller.py),
the controller's memory of who is shutting down (ActiveController.as_controller) and the stopping
broker's side (replication/shutdown_client.py, ZkBackend.controlled_shutdown). A whole cluster's
answers are compared with Kafka 3.9.1's in conformance/cluster/controlled_shutdown.py."""

from __future__ import annotations

import dataclasses
import struct
import uuid
from types import SimpleNamespace

import pytest
import trio
import trio.testing

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk.controller import (PREFERRED, UNCLEAN, ClusterSnapshot, LeaderAndIsr, StateWrite,
                                                     TopicView, elect, imbalanced_leaders, led_partitions,
                                                     plan_controlled_shutdown, plan_state_changes)
from wirekafka.broker.metadata.zk.controller import controlled_shutdown_in_steps
from wirekafka.broker.replication.peer_client import PeerUnavailable
from wirekafka.broker.replication.shutdown_client import ShutdownAnswer, ask_controller
from wirekafka.broker.metadata.zk.active_controller import ActiveController
from wirekafka.broker.metadata.zk.offline_replicas import OfflineReplicas
from wirekafka.broker.metadata.zk.backend import ZkBackend
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.protocol import served_versions as api_versions, codec
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import ControlledShutdownRequest, ControlledShutdownResponse

EPOCH = 7


def snapshot(states: dict[tuple[str, int], LeaderAndIsr | None], assignment: dict[tuple[str, int], tuple[int, ...]],
             shutting_down: set[int], live: tuple[int, ...] = (1, 2, 3), deleting: tuple[str, ...] = ()
             ) -> ClusterSnapshot:
    topics: dict[str, TopicView] = {}
    for (name, index), replicas in assignment.items():
        view = topics.setdefault(name, TopicView(uuid.uuid4(), {}))
        view.assignment[index] = replicas
        if states.get((name, index)) is not None:
            view.states[index] = (states[(name, index)], 3)  # type: ignore[assignment]
    return ClusterSnapshot({b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in live}, 1, EPOCH, 5, topics, deleting,
                           broker_epochs={b: 100 + b for b in live}, shutting_down=frozenset(shutting_down))


def never(_topic: str) -> bool:
    return False


# ---- schema and header -------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_schema_round_trips(version: int) -> None:
    fields = {"broker_epoch": 41} if version >= 2 else {}
    request = ControlledShutdownRequest(version=version, broker_id=3, **fields)
    assert ControlledShutdownRequest.decode(request.encode(), version=version) == request
    answer = ControlledShutdownResponse(version=version, error_code=0, remaining_partitions=[
        ControlledShutdownResponse.RemainingPartition(topic_name="t", partition_index=2)])
    assert ControlledShutdownResponse.decode(answer.encode(), version=version) == answer


def test_schema_is_kafkas() -> None:
    assert ControlledShutdownRequest.API_KEY == ControlledShutdownResponse.API_KEY == 7
    assert ControlledShutdownRequest.valid_versions == (0, 3)
    assert [ControlledShutdownRequest.flexible_version_q(v) for v in range(4)] == [False, False, False, True]
    # v3: broker id, broker epoch, an empty tag buffer
    assert bytes(ControlledShutdownRequest(version=3, broker_id=2, broker_epoch=55).encode()) == (
        struct.pack(">iq", 2, 55) + b"\x00")


def test_v0_header_has_no_client_id_where_controlled_shutdown_is_served(monkeypatch) -> None:
    frame = struct.pack(">hhii", 7, 0, 9, 4)  # key, version, correlation id, then the body (broker id 4)
    monkeypatch.delitem(api_versions.REQUEST_CLASSES, 7, raising=False)
    assert api_versions.request_header_has_client_id(7, 0)  # a KRaft broker's view: not served
    monkeypatch.setitem(api_versions.REQUEST_CLASSES, 7, ControlledShutdownRequest)
    assert not api_versions.request_header_has_client_id(7, 0)
    assert api_versions.request_header_has_client_id(7, 1)
    header = codec.parse_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id, header.body_offset) == (
        7, 0, 9, None, 8)
    assert codec.decode_body(header, frame) == ControlledShutdownRequest(version=0, broker_id=4)


# ---- the controller's plan --------------------------------------------------------------------
def test_led_partitions_move_to_the_first_eligible_isr_member() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {("t", 0): (1, 2, 3)}, {1})
    assert plan_controlled_shutdown(s, EPOCH, 1) == [StateWrite("t", 0, LeaderAndIsr(2, 5, (2, 3), EPOCH), 3)]


def test_a_plan_in_steps_is_the_whole_plan_cut_every_so_many_partitions() -> None:
    """A broker in 10,000 partitions is planned a step at a time, the controller's loop turning
    between two: the same writes in the same order, a step after every `step` partitions looked
    at, whether the broker is in them or not."""
    states = {("t", p): [LeaderAndIsr(1, 4, (1, 2, 3), 6), LeaderAndIsr(2, 4, (2, 1), 6),
                         LeaderAndIsr(3, 4, (3, 2), 6)][p % 3] for p in range(10)}
    s = snapshot(states, {("t", p): (1, 2, 3) for p in range(10)}, {1})
    whole = plan_controlled_shutdown(s, EPOCH, 1)
    steps = list(controlled_shutdown_in_steps(s, EPOCH, 1, 3))
    assert [w for step in steps for w in step] == whole
    # broker 1 leads 0, 3, 6, 9 (they move to 2) and follows in 1, 4, 7 (it leaves their ISR)
    assert [[w.partition for w in step] for step in steps] == [[0, 1], [3, 4], [6, 7], [9]]
    assert {w.partition: (w.state.leader, w.state.isr) for w in whole} == {
        **{p: (2, (2, 3)) for p in (0, 3, 6, 9)}, **{p: (2, (2,)) for p in (1, 4, 7)}}


def test_every_shutting_down_broker_leaves_the_isr_and_none_is_elected() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {("t", 0): (1, 2, 3)}, {1, 2})
    assert plan_controlled_shutdown(s, EPOCH, 1) == [StateWrite("t", 0, LeaderAndIsr(3, 5, (3,), EPOCH), 3)]


def test_a_leadership_without_an_eligible_isr_member_stays_and_remains() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(1, 4, (1, 2), 6), ("t", 1): LeaderAndIsr(1, 2, (1,), 6)},
                 {("t", 0): (1, 2), ("t", 1): (1, 3)}, {1, 2})
    assert plan_controlled_shutdown(s, EPOCH, 1) == []
    assert led_partitions(s, 1) == [("t", 0), ("t", 1)]


def test_followed_partitions_lose_the_broker_from_their_isr_unless_it_is_the_only_member() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(2, 4, (2, 1), 6), ("t", 1): LeaderAndIsr(-1, 3, (1,), 6),
                  ("t", 2): LeaderAndIsr(2, 1, (2,), 6)}, {("t", 0): (2, 1), ("t", 1): (1, 2), ("t", 2): (2, 1)}, {1})
    assert plan_controlled_shutdown(s, EPOCH, 1) == [
        StateWrite("t", 0, LeaderAndIsr(2, 5, (2,), EPOCH), 3),
        StateWrite("t", 1, LeaderAndIsr(-1, 4, (1,), EPOCH), 3)]  # Kafka writes it, leader epoch bumped


def test_single_replica_deleted_and_stateless_partitions_are_left_alone() -> None:
    s = snapshot({("one", 0): LeaderAndIsr(1, 0, (1,), 6), ("gone", 0): LeaderAndIsr(1, 0, (1, 2), 6)},
                 {("one", 0): (1,), ("gone", 0): (1, 2), ("new", 0): (1, 2)}, {1}, deleting=("gone",))
    assert plan_controlled_shutdown(s, EPOCH, 1) == []
    assert led_partitions(s, 1) == []


def test_recovery_state_is_kept() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(2, 4, (2, 1), 6, 1)}, {("t", 0): (2, 1)}, {1})
    assert plan_controlled_shutdown(s, EPOCH, 1)[0].state.leader_recovery_state == 1


# ---- the other decisions while a broker shuts down --------------------------------------------
def test_a_shutting_down_leader_keeps_what_it_leads_and_its_followers_stay_in_the_isr() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(1, 4, (1,), 6), ("t", 1): LeaderAndIsr(2, 4, (2, 1), 6)},
                 {("t", 0): (1, 2), ("t", 1): (2, 1)}, {1})
    assert plan_state_changes(s, EPOCH, never) == []


def test_no_election_picks_a_shutting_down_broker() -> None:
    # the leader died: the shutting-down ISR member is passed over, and leaves the ISR
    s = snapshot({("t", 0): LeaderAndIsr(3, 4, (3, 1, 2), 6)}, {("t", 0): (3, 1, 2)}, {1}, live=(1, 2))
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 5, (2,), EPOCH), 3)]
    # only a shutting-down replica left: leaderless, even with unclean election
    s = snapshot({("t", 0): LeaderAndIsr(3, 4, (3, 1), 6)}, {("t", 0): (3, 1)}, {1}, live=(1,))
    assert plan_state_changes(s, EPOCH, lambda _t: True) == [StateWrite("t", 0, LeaderAndIsr(-1, 5, (3,), EPOCH), 3)]
    # a new partition starts on the eligible replicas only
    s = snapshot({}, {("t", 0): (1, 2, 3)}, {1})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 0, (2, 3), EPOCH), None)]


def test_elect_leaders_treats_a_shutting_down_broker_as_gone() -> None:
    s = snapshot({("t", 0): LeaderAndIsr(2, 4, (2, 1), 6)}, {("t", 0): (1, 2)}, {1})
    assert elect(s, EPOCH, "t", 0, PREFERRED).error == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert imbalanced_leaders(s, EPOCH, 0) == []
    s = snapshot({("t", 0): LeaderAndIsr(1, 4, (1, 2), 6)}, {("t", 0): (1, 2)}, {1})
    assert elect(s, EPOCH, "t", 0, UNCLEAN).write == StateWrite("t", 0, LeaderAndIsr(2, 5, (2,), EPOCH), 3)


# ---- the controller's memory ---------------------------------------------------------------------
def controller(node_id: int, shutting: dict[int, int]) -> ActiveController:
    zk = ActiveController.__new__(ActiveController)  # only what as_controller reads
    zk.node_id = node_id
    zk._brokers_shutting_down = dict(shutting)
    zk._acted_epochs = {}
    zk.offline = OfflineReplicas(node_id, None, lambda: None, None)  # type: ignore[arg-type]
    return zk


def test_a_broker_stays_shutting_down_while_its_registration_does() -> None:
    base = snapshot({}, {}, set())
    zk = controller(1, {2: 102, 3: 999})  # 3 registered again since it asked
    assert zk.as_controller(base).shutting_down == {2}
    assert zk._brokers_shutting_down == {2: 102}
    gone = dataclasses.replace(base, brokers={1: base.brokers[1]}, broker_epochs={1: 101})
    assert zk.as_controller(gone).shutting_down == frozenset()


def test_a_broker_that_is_not_the_controller_forgets_who_is_shutting_down() -> None:
    zk = controller(2, {3: 103})
    assert zk.as_controller(snapshot({}, {}, set())).shutting_down == frozenset()
    assert zk._brokers_shutting_down == {}


# ---- the stopping broker ------------------------------------------------------------------------
class FakeClient:
    def __init__(self, answers: list, connecting_s: float = 0.0) -> None:
        self.answers = answers
        self.connecting_s = connecting_s  # how long ready() takes
        self.sent: list = []
        self.timeouts: list = []

    async def ready(self) -> None:
        await trio.sleep(self.connecting_s)

    async def send(self, request, timeout_s=None):
        self.sent.append(request)
        self.timeouts.append(timeout_s)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


SETTINGS = {"controller.socket.timeout.ms": 5000, "request.timeout.ms": 40000}


def pool(client: FakeClient | None) -> SimpleNamespace:
    return SimpleNamespace(client=lambda node: client, config=SimpleNamespace(node_id=4, int=SETTINGS.__getitem__))


def remaining(*parts: tuple[str, int]) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(version=3, error_code=0, remaining_partitions=[
        ControlledShutdownResponse.RemainingPartition(topic_name=t, partition_index=p) for t, p in parts])


def test_ask_controller_sends_v3_with_the_broker_epoch_and_reads_the_answer() -> None:
    client = FakeClient([remaining(("t", 1)), remaining()])
    answer = trio.run(ask_controller, pool(client), lambda: 2, 77)
    assert answer == ShutdownAnswer(ErrorCode.NONE, (("t", 1),)) and not answer.done
    assert client.sent[0] == ControlledShutdownRequest(version=3, broker_id=4, broker_epoch=77)
    assert trio.run(ask_controller, pool(client), lambda: 2, 77).done


def test_ask_controller_without_a_reachable_controller_is_none() -> None:
    assert trio.run(ask_controller, pool(FakeClient([])), lambda: -1, 77) is None
    assert trio.run(ask_controller, pool(None), lambda: 2, 77) is None
    assert trio.run(ask_controller, pool(FakeClient([PeerUnavailable("down")])), lambda: 2, 77) is None


def test_ask_controller_connects_within_the_controller_socket_timeout_and_waits_request_timeout() -> None:
    """Kafka 3.9: awaitReady bounded by controller.socket.timeout.ms, the answer by request.timeout.ms."""
    client = FakeClient([remaining()], connecting_s=4.9)
    assert trio.run(ask_controller, pool(client), lambda: 2, 77).done
    assert client.timeouts == [40.0]

    async def never_ready() -> tuple[ShutdownAnswer | None, float]:
        start = trio.current_time()
        answer = await ask_controller(pool(FakeClient([remaining()], connecting_s=60)), lambda: 2, 77)
        return answer, trio.current_time() - start

    assert trio.run(never_ready, clock=trio.testing.MockClock(autojump_threshold=0)) == (None, 5.0)


def stopping_broker(client: FakeClient) -> ZkBackend:
    zk = ZkBackend.__new__(ZkBackend)
    zk._controller_peers = pool(client)  # type: ignore[assignment]
    zk.view = ClusterView.__new__(ClusterView)
    zk.view.snapshot = snapshot({}, {}, set())
    zk.view._topics = {}
    zk.view.stopping = False
    zk.view.on_roles = lambda change: None
    zk.registrar = SimpleNamespace(broker_epoch=101)  # type: ignore[assignment]
    return zk


@pytest.mark.parametrize("answers, retries, done, asked", [
    ([remaining()], 3, True, 1),
    ([remaining(("t", 0)), PeerUnavailable("x"), remaining()], 3, True, 3),
    ([ControlledShutdownResponse(version=3, error_code=ErrorCode.STALE_CONTROLLER_EPOCH, remaining_partitions=[]),
      remaining(("t", 0))], 2, False, 2),
    ([], 0, False, 0),  # controlled.shutdown.max.retries=0: Kafka does not ask at all
])
def test_the_stopping_broker_asks_until_nothing_remains(answers: list, retries: int, done: bool, asked: int) -> None:
    client = FakeClient(answers)
    zk = stopping_broker(client)
    assert trio.run(zk.controlled_shutdown, retries, 0.0) is done
    assert len(client.sent) == asked
    assert zk.view.stopping
