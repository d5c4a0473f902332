"""A wirekafka cluster on a secured ZooKeeper (broker/replication/zk_security.py): brokers log in
with SASL (DIGEST-MD5 or Kerberos) from the JAAS file KAFKA_OPTS names, or connect over TLS with a
client certificate, and with zookeeper.set.acl=true put Kafka 3.9's ACLs on every znode they create.
conformance/cluster/znode_acls.check_secure_acls is the check Kafka 3.9.1's brokers pass in
compat-tests/test_zookeeper_launcher.py (test_kafka39_sets_znode_acls_over_*)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from testsupport.broker_process import free_port
from testsupport.cluster import WirekafkaCluster
from testsupport import kdc as kdc_support
from testsupport.secure_zookeeper import KerberosZooKeeper, SaslZooKeeper, TlsZooKeeper
from conformance.cluster.two_listeners import JAAS, check_two_listeners, listener_overrides
from conformance.cluster.znode_acls import TOPIC, check_secure_acls

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper]


def _records_round_trip(bootstrap: str) -> None:
    """acks=all writes to the check's RF=3 topic are read back: the cluster serves as usual."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(20):
        producer.produce(TOPIC, f"secured-{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "secured-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        values = []
        while len(values) < 20:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(values)} records read back"
            values.append(msg.value())
        assert values == [f"secured-{i}".encode() for i in range(20)]
    finally:
        consumer.close()


def test_brokers_set_kafkas_znode_acls_over_sasl(tmp_path: Path) -> None:
    with SaslZooKeeper(tmp_path / "zk") as zk:
        cluster = WirekafkaCluster(tmp_path / "cluster", zk.connect_string, overrides={"zookeeper.set.acl": "true"},
                                   env={"KAFKA_OPTS": zk.kafka_opts("kafka")})
        with cluster:
            summary = check_secure_acls(zk.kazoo(cluster.chroot, user="kafka"), zk.acl_id("kafka"),
                                        zk.kazoo(cluster.chroot), cluster.bootstrap)
            print(f"wirekafka over SASL: {summary}")
            _records_round_trip(cluster.bootstrap)


def test_brokers_set_kafkas_znode_acls_over_tls(tmp_path: Path) -> None:
    with TlsZooKeeper(tmp_path / "zk") as zk:
        cluster = WirekafkaCluster(tmp_path / "cluster", zk.secure_connect_string,
                                   overrides={"zookeeper.set.acl": "true", **zk.broker_settings()})
        cluster.zk = zk.kazoo(cluster.chroot)  # the test's own reads over TLS too, as the broker's identity
        with cluster:
            summary = check_secure_acls(cluster.zk, zk.broker_acl_id(), zk.kazoo(cluster.chroot, tls=False),
                                        cluster.bootstrap)
            print(f"wirekafka over TLS: {summary}")
            _records_round_trip(cluster.bootstrap)


@pytest.mark.skipif(not kdc_support.available(),
                    reason="MIT Kerberos KDC not installed (scripts/install_system_deps.sh)")
def test_brokers_set_kafkas_znode_acls_over_kerberos(tmp_path: Path) -> None:
    """GSSAPI to ZooKeeper from a Krb5LoginModule Client section: ZooKeeper records the broker's
    full principal, as it does for Kafka 3.9.1's brokers. The reader is ZooKeeper's digest super user."""
    with kdc_support.Kdc(tmp_path / "kdc") as kdc, KerberosZooKeeper(tmp_path / "zk", kdc) as zk:
        cluster = WirekafkaCluster(tmp_path / "cluster", zk.connect_string, overrides={"zookeeper.set.acl": "true"},
                                   env=zk.env())
        with cluster:
            summary = check_secure_acls(zk.kazoo(cluster.chroot, super_user=True), zk.acl_id(),
                                        zk.kazoo(cluster.chroot), cluster.bootstrap)
            print(f"wirekafka over Kerberos: {summary}")
            _records_round_trip(cluster.bootstrap)


def test_one_jaas_file_logs_brokers_in_to_zookeeper_and_to_each_other(tmp_path: Path) -> None:
    """Kafka 3.9's usual secured cluster: one JAAS file in KAFKA_OPTS, its KafkaServer section for
    the SASL/PLAIN REPLICATION listener (brokers log in to each other with its username), its
    Client section for ZooKeeper; no sasl.jaas.config keys at all."""
    ports = {n: (free_port(), free_port()) for n in (1, 2, 3)}
    with SaslZooKeeper(tmp_path / "zk") as zk:
        jaas = tmp_path / "kafka_server_jaas.conf"
        jaas.write_text(f"KafkaServer {{ {JAAS} }};\n" + zk.client_jaas_file("kafka").read_text())
        overrides = {}
        for node, (client_port, replication_port) in ports.items():
            overrides[node] = listener_overrides(client_port, replication_port, "SASL_PLAINTEXT", mechanism="PLAIN")
            del overrides[node]["listener.name.replication.plain.sasl.jaas.config"]
        cluster = WirekafkaCluster(tmp_path / "cluster", zk.connect_string, ports={n: p[0] for n, p in ports.items()},
                                   overrides={"zookeeper.set.acl": "true"}, broker_overrides=overrides,
                                   env={"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"})
        with cluster:
            print(check_two_listeners(cluster.zk, ports, protocol="SASL_PLAINTEXT", mechanism="PLAIN"))
            assert [acl.id.id for acl in cluster.zk.get_acls("/brokers/ids/1")[0]] == ["kafka", "anyone"]


def test_a_broker_whose_zookeeper_login_fails_does_not_start(tmp_path: Path) -> None:
    """A wrong password in the JAAS Client section: ZooKeeper closes the session, and the broker
    stops at start-up, as Kafka's does, rather than run without its ZooKeeper state."""
    with SaslZooKeeper(tmp_path / "zk") as zk:
        jaas = tmp_path / "wrong.jaas"
        jaas.write_text('Client { org.apache.zookeeper.server.auth.DigestLoginModule required '
                        'username="kafka" password="wrong-secret"; };')
        run = subprocess.run([sys.executable, "-m", "wirekafka", "serve", "--override", "broker.id=1",
                              "--override", f"zookeeper.connect={zk.connect_string}/wk-denied",
                              "--override", "zookeeper.connection.timeout.ms=5000",
                              "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}",
                              "--override", "zookeeper.set.acl=true"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"})
        assert run.returncode == 1, run.stderr
        assert "fatal error during startup" in run.stderr, run.stderr
        assert zk.kazoo().exists("/wk-denied") is None
