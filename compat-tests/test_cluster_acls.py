"""ACLs in a ZooKeeper-mode cluster, as Kafka 3.9's AclAuthorizer keeps them: the same check
(conformance/cluster/cluster_acls.py) on a 3-broker wirekafka cluster and on a 3-broker Kafka 3.9.1
cluster with AclAuthorizer, both on the session's ZooKeeper under chroots of their own.

- ACLs created through broker 1 (CreateAcls as a super user) are read back with kazoo in Kafka's
  paths and exact bytes, with Kafka's change notifications;
- broker 2 lists them (DescribeAcls), broker 3 enforces them (alice's Metadata shows a topic only
  while she holds DESCRIBE on it), and a deletion propagates the same way.

On the wirekafka cluster alone, Kafka 3.9.1's own kafka-acls (its AclAuthorizer, straight on the
cluster's ZooKeeper) adds an ACL that the wirekafka brokers apply from its notification, and lists
one a wirekafka broker created; a restarted broker loads every ACL at start-up.

One module-scoped cluster per broker kind, started only by the test that uses it. The Kafka side
needs java and mvn (scripts/install_system_deps.sh); the first run downloads Kafka 3.9.1's jars."""

from __future__ import annotations

import shutil
from typing import Iterator

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, NewTopic, ResourcePatternType, ResourceType
from kazoo.client import KazooClient

from scripts import realkafka
from testsupport.broker_process import free_port
from testsupport.cluster import WirekafkaCluster
from testsupport.cluster import wait_for
from conformance.cluster.cluster_acls import AUTHORIZER_SETTINGS, check_cluster_acls, listener_overrides, sasl_admin, visible

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper]

BROKERS = (1, 2, 3)


def _ports() -> dict[int, tuple[int, int]]:
    """Broker id -> (PLAINTEXT port, SASL_PLAINTEXT port)."""
    return {n: (free_port(), free_port()) for n in BROKERS}


@pytest.fixture(scope="module")
def wirekafka_cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper: str
                      ) -> Iterator[tuple[WirekafkaCluster, dict[int, str]]]:
    ports = _ports()
    cluster = WirekafkaCluster(tmp_path_factory.mktemp("wk-acls"), zookeeper, overrides=AUTHORIZER_SETTINGS,
                               broker_overrides={n: listener_overrides(*p) for n, p in ports.items()},
                               ports={n: p[0] for n, p in ports.items()})
    with cluster:
        yield cluster, {n: f"127.0.0.1:{p[1]}" for n, p in ports.items()}


@pytest.fixture(scope="module")
def kafka39_cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper: str
                    ) -> Iterator[tuple[KazooClient, dict[int, str]]]:
    if shutil.which("java") is None:  # pragma: no cover
        pytest.fail("java is needed (scripts/install_system_deps.sh)")
    workdir = tmp_path_factory.mktemp("kafka39-acls")
    chroot = f"/kafka39-{workdir.name}"
    ports = _ports()
    brokers = realkafka.start_zk_cluster(zookeeper + chroot, BROKERS, workdir=workdir, heap="256m",
                                         overrides=AUTHORIZER_SETTINGS, ports={n: p[0] for n, p in ports.items()},
                                         broker_overrides={n: listener_overrides(*p) for n, p in ports.items()})
    client = KazooClient(hosts=zookeeper + chroot, timeout=10.0)
    try:
        client.start(timeout=15)
        yield client, {n: f"127.0.0.1:{p[1]}" for n, p in ports.items()}
    finally:
        client.stop()
        client.close()
        realkafka.stop_all(brokers)


def test_wirekafka_acls_in_zookeeper(wirekafka_cluster) -> None:
    cluster, sasl = wirekafka_cluster
    print(f"\nwirekafka: {check_cluster_acls(cluster.zk, sasl)}")


@pytest.mark.realkafka
def test_wirekafka_shares_acls_with_kafka_tools_and_loads_them_at_start(wirekafka_cluster) -> None:
    cluster, sasl = wirekafka_cluster
    topic = "tool-topic"
    admin = sasl_admin(sasl[1], "admin")
    for name in (topic, "tool-unseen"):
        admin.create_topics([NewTopic(name, 1, 3)], request_timeout=30)[name].result(30)

    def kafka_acls(*args: str) -> str:
        done = realkafka.run_tool("kafka-acls", ["--authorizer-properties",
                                                 f"zookeeper.connect={cluster.zk_connect}{cluster.chroot}", *args],
                                  timeout=120, version=realkafka.KAFKA_ZK_VERSION)
        assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
        return done.stdout.decode()

    assert not visible(sasl[3], "bob", topic)
    kafka_acls("--add", "--allow-principal", "User:bob", "--operation", "Describe", "--topic", topic)
    wait_for(lambda: visible(sasl[3], "bob", topic), 30, "bob to see the topic on broker 3 after kafka-acls --add")

    read = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                      AclPermissionType.ALLOW)
    for future in admin.create_acls([read], request_timeout=30).values():
        future.result(30)
    listed = kafka_acls("--list", "--topic", topic)
    assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in listed, listed
    assert "principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW" in listed, listed

    restarted = cluster.brokers[2]
    assert restarted.stop() == 0
    restarted.start()
    # served only once every ACL is loaded: no wait
    assert visible(sasl[2], "bob", topic) and visible(sasl[2], "alice", topic)
    assert not visible(sasl[2], "alice", "tool-unseen") and not visible(sasl[2], "bob", "tool-unseen")


@pytest.mark.realkafka
def test_kafka39_acls_in_zookeeper(kafka39_cluster) -> None:
    """The reference: Kafka 3.9.1's AclAuthorizer passes the same check."""
    client, sasl = kafka39_cluster
    print(f"\nKafka 3.9.1: {check_cluster_acls(client, sasl)}")
