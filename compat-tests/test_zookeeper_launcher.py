"""Self-test of scripts/zookeeper.py and of realkafka.py's ZooKeeper mode (Kafka 3.9).

A real ZooKeeper starts, serves kazoo, restarts on its data, moves off a port someone else took,
and stops cleanly; the Debian fallback serves too. Then three real Kafka 3.9 brokers join one
ZooKeeper under a chroot, a replication-factor-3 topic is created with Kafka's own kafka-topics,
and the znodes Kafka 3.9 wrote are read back with kazoo: their JSON is the layout wirekafka's
cluster mode (broker/metadata/zk) reproduces, so the assertions pin each one's exact shape and the
test prints them verbatim (run with -s to see them).

Needs java and mvn (scripts/install_system_deps.sh); the first run downloads ZooKeeper's jars
(~6 MB) and Kafka 3.9.1's (~56 MB).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from scripts import realkafka, zookeeper

pytestmark = pytest.mark.zookeeper

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"


if shutil.which("java") is None:  # pragma: no cover
    pytest.skip("java is needed (scripts/install_system_deps.sh)", allow_module_level=True)

from kazoo.client import KazooClient  # noqa: E402  (after the skip: kazoo is a main dependency)

from testsupport.cluster import every_broker_knows_the_cluster, wait_for  # noqa: E402
from conformance.cluster.dynamic_log_config import check_dynamic_default  # noqa: E402
from conformance.cluster.follower_fetch import check_follower_fetch, rack_overrides  # noqa: E402
from conformance.cluster.alter_partition import check_alter_partition  # noqa: E402
from conformance.cluster.controlled_shutdown import check_controlled_shutdown  # noqa: E402
from conformance.cluster.leader_hints import check_leader_hints  # noqa: E402
from conformance.cluster.legacy_admin import check_legacy_admin_znodes  # noqa: E402
from conformance.cluster.throttled_reassignment import check_throttled_reassignment  # noqa: E402
from conformance.cluster.client_quotas import check_client_quotas  # noqa: E402
from conformance.cluster.scram_users import check_scram_users  # noqa: E402
from conformance.cluster.txn_offsets import check_txn_offsets_across_coordinators  # noqa: E402
from conformance.cluster.coordinator_unavailable import check_coordinator_unavailable  # noqa: E402
from testsupport.tls_material import make as make_tls_material  # noqa: E402
from testsupport.oauth_provider import OAuthProvider  # noqa: E402
from conformance.cluster.two_listeners import KerberosRealm, check_two_listeners, listener_overrides  # noqa: E402
from testsupport import kdc as kdc_support  # noqa: E402
from conformance.cluster.znodes import check_kafka39_znodes  # noqa: E402
from testsupport.secure_zookeeper import KerberosZooKeeper, SaslZooKeeper, TlsZooKeeper  # noqa: E402
from conformance.cluster.znode_acls import check_secure_acls  # noqa: E402


def _kazoo(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=15)
    return client


def _out(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


# --------------------------------------------------------------------------------------------
# ZooKeeper alone
# --------------------------------------------------------------------------------------------

def test_zookeeper_serves_kazoo_and_restarts(tmp_path):
    zk = zookeeper.ZooKeeperServer(tmp_path / "zk")
    with zk:
        assert zk.four_letter("ruok") == "imok"
        srvr = zk.four_letter("srvr")
        assert "Mode: standalone" in srvr, srvr
        assert f"Zookeeper version: {zk.jars.version}" in srvr, srvr
        assert zk.connect_string == f"127.0.0.1:{zk.port}"
        cfg = zk.config_path.read_text()
        for line in ("tickTime=500", "clientPortAddress=127.0.0.1", "admin.enableServer=false",
                     "4lw.commands.whitelist=srvr,ruok,stat,mntr", "minSessionTimeout=1000",
                     "maxSessionTimeout=60000", f"dataDir={tmp_path / 'zk' / 'data'}"):
            assert line + "\n" in cfg, cfg
        assert "is not in the whitelist" in zk.four_letter("conf")  # only FOUR_LETTER_WORDS

        client = _kazoo(zk.connect_string)
        try:
            client.create("/wirekafka/hello", b"world", makepath=True)
            client.create("/wirekafka/session", b"", ephemeral=True)
            data, stat = client.get("/wirekafka/hello")
            assert data == b"world" and stat.version == 0
            assert sorted(client.get_children("/wirekafka")) == ["hello", "session"]
            assert "zk_ephemerals_count\t1" in zk.four_letter("mntr")
        finally:
            client.stop()
            client.close()
        port = zk.port
        assert zk.stop() == 143  # SIGTERM, JVM shutdown hooks ran
    assert not zk.alive()
    assert zk.four_letter("ruok", timeout=1.0) == ""
    assert "Address already in use" not in zk.log_path.read_text()

    # Same work dir: same port, same data; the ephemeral node died with its session.
    zk.start()
    try:
        assert zk.port == port
        client = _kazoo(zk.connect_string)
        try:
            assert client.get("/wirekafka/hello")[0] == b"world"
            assert client.get_children("/wirekafka") == ["hello"]
        finally:
            client.stop()
            client.close()
        zk.kill()
        assert not zk.alive() and zk.proc.returncode == -signal.SIGKILL
    finally:
        zk.stop()


def test_zookeeper_moves_off_a_taken_port(tmp_path, monkeypatch):
    """A port picked here that someone else holds is replaced, and the other holder's answers
    are never taken for ours."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        picks = iter([taken])
        real_free_port = zookeeper.free_port
        monkeypatch.setattr(zookeeper, "free_port",
                            lambda host="127.0.0.1": next(picks, None) or real_free_port(host))
        with zookeeper.ZooKeeperServer(tmp_path / "zk") as zk:
            assert zk.port != taken
            assert "Mode: standalone" in zk.four_letter("srvr")
            assert "Address already in use" in zk.log_path.read_text()


def test_fixed_taken_port_fails_with_the_log(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        zk = zookeeper.ZooKeeperServer(tmp_path / "zk", taken)
        with pytest.raises(RuntimeError, match="Address already in use"):
            zk.start(timeout=30)
        assert not zk.alive()


@pytest.mark.skipif(not zookeeper.DEBIAN_JAR.is_file(),
                    reason="Debian's libzookeeper-java is not installed "
                           "(scripts/install_system_deps.sh)")
def test_debian_fallback(tmp_path, monkeypatch):
    def no_maven(*_a, **_k):
        raise RuntimeError("mvn not found (simulated)")

    monkeypatch.setattr(zookeeper, "ensure_maven_jars", no_maven)
    jars = zookeeper.server_jars()
    assert jars.source == "debian" and jars.classpath.startswith(str(zookeeper.DEBIAN_JAR))
    with pytest.raises(RuntimeError, match="simulated"):
        zookeeper.server_jars("maven")
    with zookeeper.ZooKeeperServer(tmp_path / "zk") as zk:
        assert zk.jars.source == "debian"
        assert f"Zookeeper version: {jars.version}" in zk.four_letter("srvr")
        client = _kazoo(zk.connect_string)
        try:
            client.create("/debian", b"ok")
            assert client.get("/debian")[0] == b"ok"
        finally:
            client.stop()
            client.close()
        assert "binding to port" in zk.log_path.read_text(), "slf4j-simple should log INFO"


def test_cli_ensure_and_serve(tmp_path):
    script = str(SCRIPTS / "zookeeper.py")
    ensured = subprocess.run([sys.executable, script, "ensure"], capture_output=True,
                             timeout=600)
    assert ensured.returncode == 0, _out(ensured)
    assert ensured.stdout.decode().strip() == zookeeper.server_jars().classpath

    proc = subprocess.Popen([sys.executable, script, "serve", "--dir", str(tmp_path / "zk")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline().decode().strip()
        assert re.fullmatch(r"127\.0\.0\.1:\d+", line), proc.stderr.read1().decode()
        host, port = line.split(":")
        assert zookeeper.four_letter_word(host, int(port), "ruok") == "imok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert zookeeper.four_letter_word(host, int(port), "ruok", timeout=1.0) == ""
        assert (tmp_path / "zk" / "zookeeper.log").is_file()  # --dir is kept
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------------------------
# Kafka 3.9 in ZooKeeper mode
# --------------------------------------------------------------------------------------------

@pytest.mark.realkafka
def test_kafka3_tool_classes_exist():
    """Every TOOLS_KAFKA3 entry names a class present in the Kafka 3.9 jars."""
    import zipfile

    libs = realkafka.ensure_jars(realkafka.KAFKA_ZK_VERSION)
    assert (libs / f"kafka_2.13-{realkafka.KAFKA_ZK_VERSION}.jar").is_file()
    assert (libs / "reload4j-1.2.25.jar").is_file(), "Kafka 3.9's log4j 1.x backend"
    classes: set[str] = set()
    for jar in libs.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            classes.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    missing = {n: c for n, c in realkafka.TOOLS_KAFKA3.items() if c not in classes}
    assert not missing
    assert realkafka.tools_for("3.9.1") is realkafka.TOOLS_KAFKA3
    assert realkafka.tools_for("4.3.1") is realkafka.TOOLS
    with pytest.raises(ValueError, match="no ZooKeeper mode"):
        realkafka.RealKafka(zookeeper_connect="127.0.0.1:1", version="4.3.1")


@pytest.mark.realkafka
@pytest.mark.slow
def test_kafka39_three_brokers_on_one_zookeeper(tmp_path):
    chroot = f"/kafka39-{tmp_path.name}"  # deterministic per test, distinct between tests
    topic = "replicated"
    zk = zookeeper.ZooKeeperServer(tmp_path / "zk").start()
    brokers: list = []
    client = None
    try:
        t0 = time.monotonic()
        # Kafka 3.9's controller runs its first leader-imbalance check 5 s after its election
        # (KafkaController.onControllerFailover): under load that check can land after the legacy
        # reassignment below and move the leadership to the new preferred replica, which the
        # reassignment itself keeps where it is (seen once in a parallel run). Off, as nothing here
        # is about it.
        brokers = realkafka.start_zk_cluster(zk.connect_string + chroot, (1, 2, 3), workdir=tmp_path, heap="256m",
                                             overrides={"auto.leader.rebalance.enable": "false"})
        print(f"\n3 Kafka {brokers[0].version} brokers up in {time.monotonic() - t0:.1f}s")
        for b in brokers:  # reload4j logs INFO into broker.log
            assert f"[KafkaServer id={b.broker_id}] started" in b.log_tail(5000), b.log_tail()
        client = _kazoo(zk.connect_string + chroot)
        wait_for(lambda: sorted(client.get_children("/brokers/ids"), key=int) == ["1", "2", "3"], 30.0,
                 "3 brokers in /brokers/ids")

        t0 = time.monotonic()
        created = brokers[0].run_tool(
            "kafka-topics", ["--bootstrap-server", ",".join(b.bootstrap for b in brokers),
                             "--create", "--topic", topic, "--partitions", "1",
                             "--replication-factor", "3", "--config", "min.insync.replicas=2"],
            timeout=120)
        assert created.returncode == 0, _out(created)
        assert f"Created topic {topic}." in created.stdout.decode()
        assert b"log4j:WARN" not in created.stderr, _out(created)  # tools' log4j 1 config found
        print(f"kafka-topics --create took {time.monotonic() - t0:.1f}s")

        state_path = f"/brokers/topics/{topic}/partitions/0/state"

        def full_isr() -> bool:
            if not client.exists(state_path):
                return False
            return sorted(json.loads(client.get(state_path)[0])["isr"]) == [1, 2, 3]

        wait_for(full_isr, 30.0, "3 in-sync replicas")

        # acks=all through the leader with min.insync.replicas=2: replication really works.
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": brokers[1].bootstrap, "acks": "all"})
        delivered = []
        producer.produce(topic, b"v", b"k", on_delivery=lambda err, msg: delivered.append(
            (err, msg.offset())))
        assert producer.flush(30) == 0
        del producer  # confluent-kafka closes on destruction; none left to retry during stop
        assert delivered == [(None, 0)], delivered

        assert all(b.cluster_id == brokers[0].cluster_id for b in brokers)
        seen = check_kafka39_znodes(client, {b.broker_id: b.port for b in brokers}, topic, brokers[0].cluster_id,
                                    {"min.insync.replicas": "2"})
        print(f"znodes Kafka {brokers[0].version} wrote under {chroot}:\n{seen}")
        moves = check_legacy_admin_znodes(client, topic)
        print(f"Kafka {brokers[0].version} and the legacy admin znodes:\n{moves}")
        bootstrap = ",".join(b.bootstrap for b in brokers)
        throttled = check_throttled_reassignment(
            client, bootstrap,
            lambda args: brokers[0].run_tool("kafka-reassign-partitions", ["--bootstrap-server", bootstrap, *args],
                                             timeout=120),
            tmp_path, source=1, target=3)
        print(f"Kafka {brokers[0].version}, kafka-reassign-partitions --throttle: {throttled}")
        print(f"Kafka {brokers[0].version}: {check_dynamic_default(client, bootstrap, [1, 2, 3])}")
    finally:
        if client is not None:
            client.stop()
            client.close()
        t0 = time.monotonic()
        codes = realkafka.stop_all(brokers)  # before ZooKeeper: brokers deregister cleanly
        print(f"stop_all took {time.monotonic() - t0:.1f}s: {codes}")
        zk.stop()
    assert codes == [143, 143, 143]


@contextlib.contextmanager
def _kafka39_cluster(tmp_path, **start_args) -> Iterator[tuple[list, KazooClient]]:
    """Three Kafka 3.9 brokers (realkafka.start_zk_cluster with start_args) on a ZooKeeper of
    their own, and kazoo on their chroot; all stopped after."""
    chroot = f"/kafka39-{tmp_path.name}"
    zk = zookeeper.ZooKeeperServer(tmp_path / "zk").start()
    brokers: list = []
    client = None
    try:
        brokers = realkafka.start_zk_cluster(zk.connect_string + chroot, (1, 2, 3), workdir=tmp_path, heap="256m",
                                             **start_args)
        wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in brokers]), 60,
                 "every Kafka 3.9 broker naming all brokers and the controller")
        client = _kazoo(zk.connect_string + chroot)
        yield brokers, client
    finally:
        if client is not None:
            client.stop()
            client.close()
        realkafka.stop_all(brokers)
        zk.stop()


def test_kafka39_wrong_broker_answers_name_the_leader(tmp_path):
    """KIP-951 on Kafka 3.9.1, then (one broker stopped, the internal topics not created yet)
    FindCoordinator's answers: the checks wirekafka's cluster passes too (compat-tests/test_cluster.py).
    One cluster for both: a Kafka cluster's start is the cost."""
    internal_rf3 = {"offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3"}
    with _kafka39_cluster(tmp_path, overrides=internal_rf3) as (brokers, client):
        summary = check_leader_hints(client, ",".join(b.bootstrap for b in brokers),
                                     {b.broker_id: b.bootstrap for b in brokers})
        print(f"Kafka {brokers[0].version}: {summary}")
        brokers[2].stop()
        print(f"Kafka {brokers[0].version}: {check_coordinator_unavailable(client, brokers[0].bootstrap, 2)}")


def test_kafka39_offsets_sent_to_a_transaction_whose_coordinator_is_not_the_groups(tmp_path):
    """TxnOffsetCommit across coordinators on Kafka 3.9.1: the check wirekafka's cluster passes too
    (compat-tests/test_cluster.py)."""
    with _kafka39_cluster(tmp_path) as (brokers, _client):
        summary = check_txn_offsets_across_coordinators(",".join(b.bootstrap for b in brokers), brokers[0].bootstrap)
        print(f"Kafka {brokers[0].version}: {summary}")


def test_kafka39_controller_answers_alter_partition(tmp_path):
    """AlterPartition on Kafka 3.9.1's ZooKeeper controller: the check wirekafka's cluster passes too
    (compat-tests/test_cluster.py)."""
    with _kafka39_cluster(tmp_path) as (brokers, client):
        summary = check_alter_partition(client, ",".join(b.bootstrap for b in brokers),
                                        {b.broker_id: b.bootstrap for b in brokers})
        print(f"Kafka {brokers[0].version}: {summary}")


def test_kafka39_controller_answers_controlled_shutdown(tmp_path):
    """ControlledShutdown on Kafka 3.9.1's ZooKeeper controller: the check wirekafka's cluster passes
    too (compat-tests/test_cluster.py)."""
    with _kafka39_cluster(tmp_path) as (brokers, client):
        summary = check_controlled_shutdown(client, ",".join(b.bootstrap for b in brokers),
                                            {b.broker_id: b.bootstrap for b in brokers})
        print(f"Kafka {brokers[0].version}: {summary}")


def test_kafka39_consumers_fetch_from_the_replica_in_their_rack(tmp_path):
    """KIP-392 on Kafka 3.9.1 in racks with its RackAwareReplicaSelector: the check wirekafka's
    cluster passes too (compat-tests/test_cluster.py)."""
    with _kafka39_cluster(tmp_path, broker_overrides={n: rack_overrides(n) for n in (1, 2, 3)}) as (brokers, client):
        summary = check_follower_fetch(client, ",".join(b.bootstrap for b in brokers),
                                       {b.broker_id: b.bootstrap for b in brokers})
        print(f"Kafka {brokers[0].version}: {summary}")


@contextlib.contextmanager
def _kafka39_two_listener_cluster(tmp_path, overrides_for, attempts: int = 3, **start_args):
    """_kafka39_cluster whose brokers each listen on two ports picked here, with
    overrides_for(client_port, replication_port) as each broker's settings; yields (brokers,
    kazoo, ports by broker). A port picked free can be taken by another process before the JVM
    binds it, and a broker cannot move ports its settings name: the cluster is then started
    again, on new ports, up to `attempts` times."""
    for attempt in range(1, attempts + 1):
        ports = {n: tuple(realkafka.free_ports(2)) for n in (1, 2, 3)}
        stack = contextlib.ExitStack()
        try:
            brokers, client = stack.enter_context(_kafka39_cluster(
                tmp_path / f"attempt-{attempt}", ports={n: p[0] for n, p in ports.items()},
                broker_overrides={n: overrides_for(*p) for n, p in ports.items()}, **start_args))
        except RuntimeError as exc:
            if "found its port taken" not in str(exc) or attempt == attempts:
                raise
            continue
        with stack:
            yield brokers, client, ports
        return


@pytest.mark.parametrize("protocol, mechanism", [("PLAINTEXT", None), ("SASL_PLAINTEXT", "PLAIN"),
                                                 ("SASL_PLAINTEXT", "OAUTHBEARER"), ("SSL", None),
                                                 ("SASL_SSL", "PLAIN")])
def test_kafka39_two_listeners_replicate_on_the_inter_broker_one(tmp_path, protocol, mechanism):
    """CLIENT and REPLICATION listeners, REPLICATION the inter-broker one, on Kafka 3.9.1: the
    check wirekafka's cluster passes too (compat-tests/test_cluster.py)."""
    tls = make_tls_material(tmp_path / "tls") if protocol.endswith("SSL") else None
    with _kafka39_two_listener_cluster(
            tmp_path, lambda client_port, replication_port: listener_overrides(
                client_port, replication_port, protocol, tls, mechanism)) as (brokers, client, ports):
        print(f"Kafka {brokers[0].version}: "
              f"{check_two_listeners(client, ports, protocol=protocol, tls=tls, mechanism=mechanism)}")


def test_kafka39_brokers_log_in_to_each_other_with_tokens_from_an_oauth_provider(tmp_path):
    """Kafka 3.9.1's secured OAUTHBEARER login and validator on the inter-broker listener: the
    check wirekafka's cluster passes too (compat-tests/test_cluster.py)."""
    with OAuthProvider(tmp_path / "oauth", {"broker": "broker-secret", "admin": "admin-secret"}) as provider, \
            _kafka39_two_listener_cluster(
                tmp_path, lambda client_port, replication_port: listener_overrides(
                    client_port, replication_port, "SASL_PLAINTEXT", None, "OAUTHBEARER", provider),
                jvm_opts=[provider.allowed_urls_option]) as (brokers, client, ports):
        print(f"Kafka {brokers[0].version}: " + check_two_listeners(
            client, ports, protocol="SASL_PLAINTEXT", mechanism="OAUTHBEARER", provider=provider))


@pytest.mark.skipif(not kdc_support.available() or shutil.which("kcat") is None,
                    reason="MIT Kerberos KDC or kcat not installed (scripts/install_system_deps.sh)")
def test_kafka39_brokers_log_in_to_each_other_with_kerberos(tmp_path):
    """sasl.mechanism.inter.broker.protocol=GSSAPI on Kafka 3.9.1: the check wirekafka's cluster
    passes too (compat-tests/test_cluster.py)."""
    with kdc_support.Kdc(tmp_path / "kdc") as kdc:
        realm = KerberosRealm.create(kdc)
        with _kafka39_two_listener_cluster(
                tmp_path, lambda client_port, replication_port: listener_overrides(
                    client_port, replication_port, "SASL_PLAINTEXT", mechanism="GSSAPI", kerberos=realm),
                jvm_opts=kdc.java_options()) as (brokers, client, ports):
            print(f"Kafka {brokers[0].version}: " + check_two_listeners(
                client, ports, protocol="SASL_PLAINTEXT", mechanism="GSSAPI", kerberos=realm))


def test_kafka39_scram_credentials_in_zookeeper(tmp_path):
    """AlterUserScramCredentials on Kafka 3.9.1: the check wirekafka's cluster passes too."""
    with _kafka39_cluster(tmp_path) as (brokers, client):
        print(f"Kafka {brokers[0].version}: "
              f"{check_scram_users(client, {b.broker_id: b.bootstrap for b in brokers})}")


def test_kafka39_client_quotas(tmp_path):
    """AlterClientQuotas on Kafka 3.9.1: the check wirekafka's cluster passes too."""
    with _kafka39_cluster(tmp_path) as (brokers, client):
        print(f"Kafka {brokers[0].version}: "
              f"{check_client_quotas(client, {b.broker_id: b.bootstrap for b in brokers})}")


def test_kafka39_refuses_zookeeper_set_acl_without_authentication(tmp_path):
    """The reference for wirekafka's refusal (test_cluster.py): Kafka 3.9 exits during start-up
    when zookeeper.set.acl is true and its ZooKeeper client has no TLS keystore or JAAS file."""
    zk = zookeeper.ZooKeeperServer(tmp_path / "zk").start()
    try:
        broker = realkafka.RealKafka(tmp_path / "kafka", zookeeper_connect=zk.connect_string + "/acl", broker_id=1,
                                     overrides={"zookeeper.set.acl": "true"})
        with pytest.raises(RuntimeError) as failed:
            broker.start()
        assert "java.lang.SecurityException: zookeeper.set.acl is true, but ZooKeeper client TLS configuration " \
               "identifying at least zookeeper.ssl.client.enable" in str(failed.value), failed.value
    finally:
        zk.stop()


def test_kafka39_generates_broker_ids(tmp_path):
    """The reference for wirekafka's generated broker ids (test_cluster.py): Kafka 3.9 without
    broker.id registers as /brokers/seqid's version plus reserved.broker.max.id (1001) and keeps
    the id in meta.properties; ids out of Kafka's bounds stop it with these messages."""
    zk = zookeeper.ZooKeeperServer(tmp_path / "zk").start()
    client = None
    broker = realkafka.RealKafka(tmp_path / "generated", zookeeper_connect=zk.connect_string + "/ids", broker_id=1,
                                 overrides={"broker.id": "-1"})
    try:
        broker.start()
        client = _kazoo(zk.connect_string + "/ids")
        assert client.get_children("/brokers/ids") == ["1001"]
        assert client.exists("/brokers/seqid").version == 1
        meta = next((tmp_path / "generated").rglob("meta.properties")).read_text()
        assert "broker.id=1001" in meta, meta
        for overrides, message in (
                ({"broker.id": "-1", "broker.id.generation.enable": "false"},
                 "broker.id must be greater than or equal to 0"),
                ({"broker.id": "1001"},
                 "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id")):
            refused = realkafka.RealKafka(tmp_path / f"refused-{len(overrides)}", broker_id=1, overrides=overrides,
                                          zookeeper_connect=zk.connect_string + "/ids")
            with pytest.raises(RuntimeError) as failed:
                refused.start()
            assert f"requirement failed: {message}" in str(failed.value), failed.value
    finally:
        if client is not None:
            client.stop()
            client.close()
        realkafka.stop_all([broker])
        zk.stop()


@contextlib.contextmanager
def _kafka39_secured_cluster(tmp_path, zookeeper_connect: str, **start_args) -> Iterator[list]:
    """Three Kafka 3.9 brokers on a secured ZooKeeper the caller runs (its connect string with a
    chroot), once every one names all brokers and the controller; stopped after."""
    brokers: list = []
    try:
        brokers = realkafka.start_zk_cluster(zookeeper_connect, (1, 2, 3), workdir=tmp_path, heap="256m",
                                             **start_args)
        wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in brokers]), 60,
                 "every Kafka 3.9 broker naming all brokers and the controller")
        yield brokers
    finally:
        realkafka.stop_all(brokers)


def test_kafka39_sets_znode_acls_over_sasl(tmp_path):
    """zookeeper.set.acl=true on Kafka 3.9.1 logging in to ZooKeeper with SASL DIGEST-MD5 (the JAAS
    Client section named in KAFKA_OPTS): the ACL check wirekafka's cluster passes too."""
    chroot = f"/kafka39-{tmp_path.name}"
    with SaslZooKeeper(tmp_path / "zk") as zk, _kafka39_secured_cluster(
            tmp_path, zk.connect_string + chroot, overrides={"zookeeper.set.acl": "true"},
            jvm_opts=shlex.split(zk.kafka_opts("kafka"))) as brokers:
        summary = check_secure_acls(zk.kazoo(chroot, user="kafka"), zk.acl_id("kafka"), zk.kazoo(chroot),
                                    ",".join(b.bootstrap for b in brokers))
        print(f"Kafka {brokers[0].version} over SASL: {summary}")


def test_kafka39_sets_znode_acls_over_tls(tmp_path):
    """zookeeper.set.acl=true on Kafka 3.9.1 connecting to ZooKeeper over TLS with a client
    certificate (zookeeper.ssl.*, Netty): the ACL check wirekafka's cluster passes too."""
    chroot = f"/kafka39-{tmp_path.name}"
    with TlsZooKeeper(tmp_path / "zk") as zk, _kafka39_secured_cluster(
            tmp_path, zk.secure_connect_string + chroot,
            overrides={"zookeeper.set.acl": "true", **zk.broker_settings()}) as brokers:
        summary = check_secure_acls(zk.kazoo(chroot), zk.broker_acl_id(), zk.kazoo(chroot, tls=False),
                                    ",".join(b.bootstrap for b in brokers))
        print(f"Kafka {brokers[0].version} over TLS: {summary}")


@pytest.mark.skipif(not kdc_support.available(),
                    reason="MIT Kerberos KDC not installed (scripts/install_system_deps.sh)")
def test_kafka39_sets_znode_acls_over_kerberos(tmp_path):
    """zookeeper.set.acl=true on Kafka 3.9.1 logging in to ZooKeeper with SASL GSSAPI (a
    Krb5LoginModule Client section and krb5.conf in KAFKA_OPTS): the ACL check wirekafka's cluster
    passes too. The reader is ZooKeeper's digest super user (kazoo has no GSSAPI here)."""
    chroot = f"/kafka39-{tmp_path.name}"
    with kdc_support.Kdc(tmp_path / "kdc") as kdc, KerberosZooKeeper(tmp_path / "zk", kdc) as zk, \
            _kafka39_secured_cluster(tmp_path, zk.connect_string + chroot, overrides={"zookeeper.set.acl": "true"},
                                     jvm_opts=shlex.split(zk.kafka_opts())) as brokers:
        summary = check_secure_acls(zk.kazoo(chroot, super_user=True), zk.acl_id(), zk.kazoo(chroot),
                                    ",".join(b.bootstrap for b in brokers))
        print(f"Kafka {brokers[0].version} over Kerberos: {summary}")


@pytest.mark.realkafka
def test_kafka39_restarted_at_once_after_kill_9_comes_up_once_its_old_session_expires(tmp_path):
    """Kafka 3.9 exits at start-up while its killed run's /brokers/ids/<id> is still held by that
    run's unexpired session ("does not match current session"); the launcher starts it again, as
    a supervisor would, until the old session has expired and it registers (a nemesis run on
    Kafka once failed there: a disk-full halt, then an immediate restart)."""
    chroot = f"/kafka39-{tmp_path.name}"
    zk = zookeeper.ZooKeeperServer(tmp_path / "zk").start()
    brokers: list = []
    try:
        # the killed run's session must outlive the restarted JVM's way to its registration: with
        # 6 s, a start that took 12 s on a busy machine found the registration gone already
        brokers = realkafka.start_zk_cluster(zk.connect_string + chroot, (1,), workdir=tmp_path, heap="256m",
                                             overrides={"zookeeper.session.timeout.ms": "30000",
                                                        "offsets.topic.replication.factor": "1"})
        [broker] = brokers
        broker.kill()
        broker.start()  # at once: the old session holds the registration for up to 30 s more
        assert "does not match current session" in broker.log_tail(200_000)
        wait_for(lambda: every_broker_knows_the_cluster([broker.bootstrap]), 30, "the restarted broker serving")
    finally:
        realkafka.stop_all(brokers)
        zk.stop()
