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

from client_support import active_segment, log_batches, read_confluent
from testsupport.cluster import WirekafkaCluster

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
