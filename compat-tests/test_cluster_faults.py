"""Faults on a wirekafka cluster on a real ZooKeeper, each a deterministic regression test for a
way acknowledged records could be lost or served corrupt (issue 34's holes), checked the way a
client sees it: every acknowledged record reads back at its offset, and the log takes writes.

Each test starts its own cluster under its own chroot of the session's ZooKeeper."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.admin import (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
                                  ElectLeadersRequest, ElectLeadersResponse)

from client_support import active_segment, log_batches, raw_call, read_confluent
from testsupport.cluster import WirekafkaCluster
from wirekafka.protocol.errors import ErrorCode

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(180)]

_LOG = logging.getLogger("librdkafka")


def _create(cluster: WirekafkaCluster, topic: str, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": _LOG})
    admin.create_topics([NewTopic(topic, 1, rf)], request_timeout=30)[topic].result(30)
    cluster.wait_isr(topic, 0, rf)


def _produce(cluster: WirekafkaCluster, topic: str, values: list[bytes]) -> list[int]:
    """acks=all, one batch per record (linger 0, in flight one at a time); the acknowledged
    offsets, in order."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": True, "max.in.flight.requests.per.connection": 1,
                         "logger": _LOG})
    offsets: list[int] = []

    def on_delivery(err, msg) -> None:
        assert err is None, err
        offsets.append(msg.offset())

    for v in values:
        producer.produce(topic, value=v, partition=0, on_delivery=on_delivery)
        producer.flush(30)
    assert len(offsets) == len(values)
    return offsets


def test_a_crashed_cluster_broker_recovers_its_torn_tail(tmp_path: Path, zookeeper: str, topic_name: str):
    """Kill -9 leaves the active segment with half a batch at its end (a write torn by the
    crash). On restart the broker must recover the log (LogLoader's recovery after an unclean
    shutdown: the clean-shutdown marker is absent), so the torn bytes are cut and the next batch
    follows the last valid one. Failed before the fix: in cluster mode the partitions opened
    after the start-up had already declared the shutdown clean, the torn bytes stayed, and the
    next acknowledged record was served as those bytes (a CRC mismatch for every reader)."""
    with WirekafkaCluster(tmp_path, zookeeper, size=1) as cluster:
        broker = cluster.brokers[1]
        _create(cluster, topic_name, rf=1)
        first = [b"before-%03d" % i for i in range(30)]
        assert _produce(cluster, topic_name, first) == list(range(30))
        broker.kill()

        segment = active_segment(broker.data_dir, topic_name, 0)
        last = log_batches(broker.data_dir, topic_name, 0)[-1]
        data = segment.read_bytes()
        size = len(data)
        with open(segment, "ab") as f:  # a second copy of the last batch, torn in half
            f.write(data[size - last.size: size - last.size // 2])

        broker.start()
        cluster.wait_isr(topic_name, 0, 1, timeout=60)
        assert segment.stat().st_size == size, "recovery cuts the torn half batch"
        then = [b"after-%03d" % i for i in range(10)]
        assert _produce(cluster, topic_name, then) == list(range(30, 40))
        got = read_confluent(broker.bootstrap, topic_name, {0: 40})
        assert [(g.offset, g.value) for g in got] == list(enumerate(first + then))


def test_only_the_controller_decides_elections_and_reassignments(tmp_path: Path, zookeeper: str, topic_name: str):
    """Issue 34, hole 6: ElectLeaders and AlterPartitionReassignments are decided by the
    controller alone, the one that knows which brokers are in controlled shutdown; another broker
    answers NOT_CONTROLLER, as Kafka 3.9's does (admin clients send these to the controller).
    Failed before: any broker decided them on a snapshot without the controller's memory, so a
    leader could be elected on a broker that was shutting down."""
    with WirekafkaCluster(tmp_path, zookeeper) as cluster:
        _create(cluster, topic_name, rf=3)
        controller = cluster.controller()
        other = cluster.brokers[next(n for n in cluster.brokers if n != controller)]
        T = ElectLeadersRequest.TopicPartitions
        elect = ElectLeadersRequest(version=2, election_type=0, timeout_ms=10_000,
                                    topic_partitions=[T(topic=topic_name, partitions=[0])])
        refused = raw_call(other, elect, ElectLeadersResponse)
        assert [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
                for r in refused.replica_election_results] == [(topic_name, [(0, ErrorCode.NOT_CONTROLLER)])]
        decided = raw_call(cluster.brokers[controller], elect, ElectLeadersResponse)
        assert decided.replica_election_results[0].partition_result[0].error_code in (
            ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)

        R = AlterPartitionReassignmentsRequest.ReassignableTopic
        move = AlterPartitionReassignmentsRequest(version=0, timeout_ms=10_000, topics=[R(
            name=topic_name, partitions=[R.ReassignablePartition(partition_index=0, replicas=[3, 2, 1])])])
        refused_move = raw_call(other, move, AlterPartitionReassignmentsResponse)
        assert (refused_move.error_code, refused_move.responses) == (ErrorCode.NOT_CONTROLLER, [])
        accepted = raw_call(cluster.brokers[controller], move, AlterPartitionReassignmentsResponse)
        assert accepted.error_code == ErrorCode.NONE
        assert [p.error_code for t in accepted.responses for p in t.partitions] == [ErrorCode.NONE]
