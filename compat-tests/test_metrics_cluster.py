"""The cluster families of the Prometheus endpoint on a two-broker ZooKeeper-mode wirekafka
cluster: one active controller between them, the ZooKeeper session's state, leaders and partitions
adding up, and under-replicated partitions on the survivor once the other broker is gone."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from testsupport.broker_process import free_port
from testsupport.cluster import WirekafkaCluster, wait_for


def gauges(port: int) -> dict[str, float]:
    """Each unlabelled sample's value, and each sessionstate sample under its state."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.labels:
                out[s.name] = s.value
            elif s.name == "kafka_server_sessionexpirelistener_sessionstate":
                out[f"{s.name}:{s.labels['state']}"] = s.value
    return out


def test_cluster_families_on_two_brokers(zookeeper: str, tmp_path: Path) -> None:
    ports = {1: free_port(), 2: free_port()}
    cluster = WirekafkaCluster(tmp_path / "metrics-cluster", zookeeper, size=2, broker_overrides={
        n: {"wirekafka.metrics.listener": f"127.0.0.1:{port}"} for n, port in ports.items()}).start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("replicated", 4, 2)])["replicated"].result(30)
        for partition in range(4):
            cluster.wait_isr("replicated", partition, 2)
        wait_for(lambda: sum(gauges(p)["kafka_server_replicamanager_leadercount"] for p in ports.values()) == 4,
                 30, "every partition led")
        scraped = {n: gauges(p) for n, p in ports.items()}
        controller = cluster.controller()
        for node, g in scraped.items():
            assert g["kafka_controller_kafkacontroller_activecontrollercount"] == (node == controller)
            assert g["kafka_server_sessionexpirelistener_sessionstate:CONNECTED"] == 1
            assert g["kafka_server_replicamanager_partitioncount"] == 4
            assert g["kafka_server_replicamanager_underreplicatedpartitions"] == 0
            assert g["kafka_controller_kafkacontroller_offlinepartitionscount"] == 0
        cluster.brokers[2].stop()
        wait_for(lambda: gauges(ports[1])["kafka_server_replicamanager_underreplicatedpartitions"] == 4, 30,
                 "broker 1 leading every partition, under-replicated")
        # the controller may have been broker 2: broker 1 claims it once 2's session is gone, which
        # can come after its leaderships moved (a controlled shutdown moves them first)
        wait_for(lambda: gauges(ports[1])["kafka_controller_kafkacontroller_activecontrollercount"] == 1, 30,
                 "broker 1 the active controller")
    finally:
        cluster.stop()
