"""The nemesis suite's short run (issue 34): one seeded schedule of kill -9s and pauses past the
ZooKeeper session, under an idempotent acks=all producer, on a three-broker wirekafka cluster and
on a three-broker Kafka 3.9.1 cluster with the same settings. Both must end with every
acknowledged record at its offset, no offset acknowledged twice and no value stored twice."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from faults.nemesis import run_schedule
from faults.schedule import make_schedule
from scripts import realkafka
from testsupport.cluster import SESSION_TIMEOUT_MS, WirekafkaCluster, every_broker_knows_the_cluster, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(420)]

SEED = 20261128
FAULTS = 4
PARTITIONS = 3
# what both clusters run with: the test cluster's ZooKeeper session and ISR lag
SETTINGS = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), "replica.lag.time.max.ms": "4000",
            "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
            "offsets.topic.num.partitions": "5", "transaction.state.log.num.partitions": "5",
            "unclean.leader.election.enable": "false"}
_LOG = logging.getLogger("librdkafka")


def _create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _LOG})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(30)

    def every_isr_full() -> bool:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        return len(meta.partitions) == PARTITIONS and all(
            p.leader >= 0 and len(p.isrs) == 3 for p in meta.partitions.values())

    wait_for(every_isr_full, 60, f"{topic}'s partitions led with full ISRs")


def _schedule():
    return make_schedule(SEED, (1, 2, 3), FAULTS, SESSION_TIMEOUT_MS / 1000)


def test_wirekafka_cluster_keeps_every_acknowledged_record(tmp_path: Path, zookeeper: str):
    with WirekafkaCluster(tmp_path, zookeeper, overrides=SETTINGS) as cluster:
        topic = f"nemesis-{SEED}"
        _create(cluster.bootstrap, topic)
        verdict = run_schedule(cluster.brokers, lambda: cluster.bootstrap, topic, PARTITIONS, _schedule())
    assert verdict.acknowledged > 1000
    assert verdict.ok, verdict.row()


@pytest.mark.realkafka
def test_kafka39_cluster_under_the_same_schedule(tmp_path: Path, zookeeper: str):
    chroot = f"/nemesis-k39-{tmp_path.name}"
    brokers: list = []
    try:
        brokers = realkafka.start_zk_cluster(zookeeper + chroot, (1, 2, 3), workdir=tmp_path, heap="256m",
                                             version=realkafka.KAFKA_ZK_VERSION, overrides=SETTINGS)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in brokers]), 60,
                 "every Kafka 3.9 broker naming all brokers and the controller")
        topic = f"nemesis-{SEED}"
        _create(bootstrap, topic)
        verdict = run_schedule({b.broker_id: b for b in brokers}, lambda: bootstrap, topic, PARTITIONS, _schedule())
    finally:
        realkafka.stop_all(brokers)
    assert verdict.acknowledged > 1000
    assert verdict.ok, verdict.row()
