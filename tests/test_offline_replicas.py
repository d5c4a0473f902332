"""Replicas on a broker's failed log dir, in a ZooKeeper cluster (issue 34: several log dirs, one
fails): the controller's decisions with them down for their partitions alone
(controller.py), its memory of them (offline_replicas.py), the LeaderAndIsr it asks the broker
with (leader_and_isr_client.py) and the broker's answer (handlers/leader_and_isr.py), checked
against Kafka 3.9's schema codec."""

from __future__ import annotations

import dataclasses
import uuid
from types import SimpleNamespace

import trio

from wirekafka.broker.handlers import leader_and_isr
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk.controller import (PREFERRED, ClusterSnapshot, LeaderAndIsr, StateWrite,
                                                     TopicView, elect, plan_controlled_shutdown, plan_state_changes)
from wirekafka.broker.metadata.zk.offline_replicas import OfflineReplicas
from wirekafka.broker.replication.leader_and_isr_client import LEADER_AND_ISR_VERSION, ask_broker, request_for
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import LeaderAndIsrRequest, LeaderAndIsrResponse

EPOCH = 7
TOPIC_ID = uuid.UUID(int=42)


def snapshot(states: dict[int, LeaderAndIsr], offline: dict[int, frozenset[tuple[str, int]]]) -> ClusterSnapshot:
    """Brokers 1-3 live; topic t, every partition on (1, 2, 3)."""
    view = TopicView(TOPIC_ID, {p: (1, 2, 3) for p in states}, {}, {p: (s, 3) for p, s in states.items()})
    return ClusterSnapshot({b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in (1, 2, 3)}, 1, EPOCH, 5, {"t": view},
                           broker_epochs={1: 101, 2: 102, 3: 103}, offline_replicas=offline)


def never(_topic: str) -> bool:
    return False


def test_a_leader_on_a_failed_dir_is_replaced_and_leaves_the_isr() -> None:
    """Partition 0's leader 1 has it on the failed dir: the next ISR member leads, 1 leaves the
    ISR; partition 1, on broker 1's good dir, keeps its leader."""
    s = snapshot({0: LeaderAndIsr(1, 4, (1, 2, 3), 6), 1: LeaderAndIsr(1, 2, (1, 2, 3), 6)},
                 {1: frozenset({("t", 0)})})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 5, (2, 3), EPOCH), 3)]


def test_a_follower_on_a_failed_dir_leaves_the_isr() -> None:
    s = snapshot({0: LeaderAndIsr(2, 4, (2, 1, 3), 6)}, {1: frozenset({("t", 0)})})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 5, (2, 3), EPOCH), 3)]


def test_without_offline_replicas_nothing_is_written() -> None:
    s = snapshot({0: LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {})
    assert plan_state_changes(s, EPOCH, never) == []


def test_an_offline_replica_is_not_elected_by_election_or_controlled_shutdown() -> None:
    """Broker 1, preferred for partition 0, has it on a failed dir: no preferred election moves
    the leadership there; broker 2's controlled shutdown moves partition 0 to 3, not 1."""
    s = snapshot({0: LeaderAndIsr(2, 4, (2, 1, 3), 6)}, {1: frozenset({("t", 0)})})
    assert elect(s, EPOCH, "t", 0, PREFERRED).error == "PREFERRED_LEADER_NOT_AVAILABLE"
    down = dataclasses.replace(s, shutting_down=frozenset({2}))
    (write,) = plan_controlled_shutdown(down, EPOCH, 2)
    assert write.state.leader == 3


def test_the_controller_forgets_a_broker_s_offline_replicas_when_it_re_registers() -> None:
    memory = OfflineReplicas(1, None, lambda: snapshot({}, {}), None)  # type: ignore[arg-type]
    memory._known = {2: (102, frozenset({("t", 0)})), 3: (103, frozenset({("t", 1)}))}
    s = snapshot({}, {})
    s = dataclasses.replace(s, broker_epochs={1: 101, 2: 102, 3: 999})  # 3 restarted
    assert memory.lay_over(s) == {2: frozenset({("t", 0)})}
    memory.forget()
    assert memory.lay_over(s) == {}


def test_the_request_names_every_partition_the_broker_hosts_and_their_leaders() -> None:
    s = snapshot({0: LeaderAndIsr(1, 4, (1, 2, 3), 6), 1: LeaderAndIsr(2, 2, (2, 3), 6)}, {})
    request = request_for(s, 1, 3, lambda node: s.brokers.get(node))
    again = LeaderAndIsrRequest.decode(request.encode(), version=LEADER_AND_ISR_VERSION)
    assert again.controller_id == 1 and again.controller_epoch == EPOCH and again.broker_epoch == 103
    (topic,) = again.topic_states
    assert topic.topic_name == "t" and topic.topic_id == TOPIC_ID
    assert [(p.partition_index, p.leader, p.leader_epoch, p.isr, p.partition_epoch, p.replicas)
            for p in topic.partition_states] == [(0, 1, 4, [1, 2, 3], 3, [1, 2, 3]), (1, 2, 2, [2, 3], 3, [1, 2, 3])]
    assert sorted((b.broker_id, b.port) for b in again.live_leaders) == [(1, 9001), (2, 9002)]


class _Partition:
    def __init__(self, online: bool, error: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> None:
        self.online, self.offline_error = online, error


class _Cluster:
    def __init__(self, error: ErrorCode) -> None:
        self.error = error
        self.asked: list[tuple[int, int]] = []

    def check_controller_request(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        self.asked.append((controller_epoch, broker_epoch))
        return self.error


async def _answered(request: LeaderAndIsrRequest, version: int, cluster: _Cluster) -> LeaderAndIsrResponse:
    """The handler's answer on a broker whose t-1 is on a failed dir, through the codec."""
    partitions = [_Partition(True), _Partition(False, ErrorCode.KAFKA_STORAGE_ERROR), _Partition(False)]
    topic = SimpleNamespace(partitions=partitions)
    state = SimpleNamespace(cluster=cluster, metadata=SimpleNamespace(topic=lambda name: topic if name == "t" else None))
    ctx = SimpleNamespace(state=state, version=version, authorized_cluster=lambda operation: True)
    response = await leader_and_isr.handle(ctx, request)  # type: ignore[arg-type]
    return LeaderAndIsrResponse.decode(response.encode(), version=version)


def _answer(request: LeaderAndIsrRequest, version: int, cluster: _Cluster) -> LeaderAndIsrResponse:
    return trio.run(_answered, request, version, cluster)


def _request(version: int) -> LeaderAndIsrRequest:
    s = snapshot({0: LeaderAndIsr(1, 4, (1, 2, 3), 6), 1: LeaderAndIsr(1, 4, (1, 2, 3), 6),
                  2: LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {})
    built = request_for(s, 1, 2, lambda node: s.brokers.get(node))
    return LeaderAndIsrRequest.decode(built.encode(version=version), version=version)


def test_the_broker_answers_storage_errors_for_replicas_on_a_failed_dir() -> None:
    """Partition 1 is on the failed dir (KAFKA_STORAGE_ERROR); partition 2 went offline for
    another reason (a reassignment moving it away) and is not a storage error."""
    cluster = _Cluster(ErrorCode.NONE)
    answer = _answer(_request(LEADER_AND_ISR_VERSION), LEADER_AND_ISR_VERSION, cluster)
    assert answer.error_code == 0 and cluster.asked == [(EPOCH, 102)]
    (topic,) = answer.topics
    assert topic.topic_id == TOPIC_ID
    assert [(p.partition_index, p.error_code) for p in topic.partition_errors] == [
        (0, 0), (1, ErrorCode.KAFKA_STORAGE_ERROR), (2, 0)]
    old = _answer(_request(4), 4, _Cluster(ErrorCode.NONE))
    assert [(p.topic_name, p.partition_index, p.error_code) for p in old.partition_errors] == [
        ("t", 0, 0), ("t", 1, ErrorCode.KAFKA_STORAGE_ERROR), ("t", 2, 0)]


def test_a_stale_request_is_answered_with_its_error_for_every_partition() -> None:
    answer = _answer(_request(LEADER_AND_ISR_VERSION), LEADER_AND_ISR_VERSION, _Cluster(ErrorCode.STALE_BROKER_EPOCH))
    assert answer.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert {p.error_code for t in answer.topics for p in t.partition_errors} == {ErrorCode.STALE_BROKER_EPOCH}


class _Peer:
    """A broker answering LeaderAndIsr as handlers/leader_and_isr.py does, through its encoding."""

    def __init__(self) -> None:
        self.sent: list[LeaderAndIsrRequest] = []

    async def ready(self) -> None:
        pass

    async def send(self, request: LeaderAndIsrRequest, timeout_s: float) -> LeaderAndIsrResponse:
        self.sent.append(request)
        return await _answered(LeaderAndIsrRequest.decode(request.encode(), version=request.version),
                               request.version, _Cluster(ErrorCode.NONE))


def test_the_controller_reads_the_offline_replicas_from_the_answer() -> None:
    peer = _Peer()
    peers = SimpleNamespace(client=lambda node: peer if node == 2 else None,
                            config=SimpleNamespace(int=lambda key: 30_000))
    s = snapshot({0: LeaderAndIsr(1, 4, (1, 2, 3), 6), 1: LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {})

    async def ask() -> tuple:
        return (await ask_broker(peers, 2, request_for(s, 1, 2, lambda node: s.brokers.get(node))),  # type: ignore[arg-type]
                await ask_broker(peers, 3, request_for(s, 1, 3, lambda node: s.brokers.get(node))))  # type: ignore[arg-type]

    answered, unreachable = trio.run(ask)
    assert answered.error == ErrorCode.NONE and answered.offline() == frozenset({("t", 1)})
    assert unreachable is None and len(peer.sent) == 1
