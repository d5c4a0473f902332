"""A 3-broker wirekafka cluster on a real ZooKeeper: Kafka 3.9's znodes, replication, the ISR,
leader election and failover, with stock clients.

Each test starts its own cluster under its own ZooKeeper chroot (one ZooKeeper server for the
module). Failover waits for ZooKeeper to expire a killed broker's session
(zookeeper.session.timeout.ms = 2 s here)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kazoo.client import KazooClient

from client_support import raw_call
from testsupport.broker_process import BrokerProcess, free_port
from testsupport import kdc as kdc_support
from testsupport.cluster import WirekafkaCluster
from conformance.cluster.follower_fetch import check_follower_fetch, rack_overrides
from conformance.cluster.alter_partition import check_alter_partition
from conformance.cluster.controlled_shutdown import check_controlled_shutdown
from conformance.cluster.leader_hints import check_leader_hints
from conformance.cluster.legacy_admin import check_legacy_admin_znodes
from conformance.cluster.dynamic_log_config import check_dynamic_default
from conformance.cluster.throttled_reassignment import check_throttled_reassignment
from conformance.cluster.client_quotas import check_client_quotas
from conformance.cluster.scram_users import check_scram_users
from conformance.cluster.txn_offsets import check_txn_offsets_across_coordinators
from conformance.cluster.coordinator_unavailable import check_coordinator_unavailable
from testsupport.tls_material import make as make_tls_material
from testsupport.oauth_provider import OAuthProvider
from conformance.cluster.two_listeners import KerberosRealm, check_two_listeners, listener_overrides
from conformance.cluster.znodes import check_kafka39_znodes
from wirekafka.broker.coordinator.group_model import partition_for
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.slow


def _admin(cluster: WirekafkaCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def _create(cluster: WirekafkaCluster, topic: str, partitions: int = 1, rf: int = 3,
            config: dict[str, str] | None = None) -> None:
    admin = _admin(cluster)  # keep it alive until the result is in
    futures = admin.create_topics([NewTopic(topic, partitions, rf, config=config or {})], request_timeout=30)
    futures[topic].result(30)
    for p in range(partitions):
        state = cluster.wait_isr(topic, p, rf)
        _wait_broker_isr(cluster.brokers[state["leader"]], topic, rf, partition=p)


def _produce_raw(broker, topic: str, values: list[bytes], acks: int, timeout_ms: int = 3000) -> int:
    """One Produce request (v9) of one batch; the partition's error code."""
    batch = records.build_batch([(None, v, int(time.time() * 1000)) for v in values])
    T = ProduceRequest.TopicProduceData
    req = ProduceRequest(version=9, transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[
        T(name=topic, partition_data=[T.PartitionProduceData(index=0, records=batch)])])
    resp = raw_call(broker, req, ProduceResponse)
    return resp.responses[0].partition_responses[0].error_code


def _latest(broker, topic: str) -> int:
    T = ListOffsetsRequest.ListOffsetsTopic
    req = ListOffsetsRequest(version=7, replica_id=-1, isolation_level=0, topics=[T(name=topic, partitions=[
        T.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
    p = raw_call(broker, req, ListOffsetsResponse).topics[0].partitions[0]
    assert p.error_code == ErrorCode.NONE, ErrorCode(p.error_code)
    return p.offset


def _wait_broker_isr(broker, topic: str, size: int, timeout: float = 30, partition: int = 0) -> None:
    """Until the broker itself (its Metadata answer) has applied an ISR of that size (a broker
    learns of a new topic's partitions asynchronously, as a Kafka broker does from the controller)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def applied() -> bool:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        return partition in partitions and len(partitions[partition].isrs) == size

    WirekafkaCluster.wait_for(applied, timeout, f"broker {broker.bootstrap} to apply an ISR of {size}")


def _consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    # and nothing more than expected shows up
    extra_deadline = time.monotonic() + 1
    while time.monotonic() < extra_deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return got


# ---- the registry, the controller and the topic znodes ----------------------------------------
def test_znodes_have_kafka_shapes(cluster: WirekafkaCluster) -> None:
    """The same check as Kafka 3.9's own cluster passes (test_zookeeper_launcher.py)."""
    _create(cluster, "shapes", config={"min.insync.replicas": "2"})
    cluster_id = cluster.znode("/cluster/id")["id"]
    check_kafka39_znodes(cluster.zk, {n: b.port for n, b in cluster.brokers.items()}, "shapes", cluster_id,
                         {"min.insync.replicas": "2"})
    for b in cluster.brokers.values():
        meta = (b.data_dir / "meta.properties").read_text()
        assert f"cluster.id={cluster_id}" in meta and "version=0" in meta
    # every broker answers Metadata for the whole cluster
    leader = cluster.leader("shapes")
    for b in cluster.brokers.values():
        _wait_broker_isr(b, "shapes", 3)
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        # librdkafka may send an all-topics request to any broker it is connected to, and a
        # broker learns a new topic asynchronously: once one answer names it, the answer holds
        cluster.wait_for(lambda: "shapes" in admin.list_topics(timeout=10).topics, 30,
                         f"an all-topics answer naming shapes from {b.bootstrap}'s client")
        md = admin.list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 2, 3]
        assert md.controller_id == cluster.controller()
        assert md.topics["shapes"].partitions[0].leader == leader
        assert sorted(md.topics["shapes"].partitions[0].isrs) == [1, 2, 3]


# ---- failover --------------------------------------------------------------------------------
class _Producing:
    """An idempotent acks=all producer sending numbered values until stopped; what was acked."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120000,
                                  "topic.metadata.refresh.interval.ms": 500, "reconnect.backoff.max.ms": 500})
        self.topic = topic
        self.acked: list[bytes] = []
        self.failed: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.acked.append(msg.value())
        else:
            self.failed.append(str(err))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.producer.produce(self.topic, value=b"v%08d" % self.sent, on_delivery=self._on_delivery)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.002)

    def __enter__(self) -> "_Producing":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(120)


def test_leader_kill_loop_loses_and_duplicates_nothing(cluster: WirekafkaCluster) -> None:
    kills = 20
    _create(cluster, "failover", config={"min.insync.replicas": "2"})
    epochs = [cluster.partition_state("failover", 0)["leader_epoch"]]
    with _Producing(cluster.bootstrap, "failover") as producing:
        for _ in range(kills):
            acked_before = len(producing.acked)
            cluster.wait_for(lambda: len(producing.acked) > acked_before + 50, 60, "acknowledged writes")
            old = cluster.leader("failover")
            cluster.brokers[old].kill()
            started = time.monotonic()
            state = cluster.wait_for(lambda: (s := cluster.partition_state("failover", 0))["leader"] not in (old, -1)
                                     and s, 30, "a new leader")
            assert time.monotonic() - started < 2 * 2.0 + 5  # within the session timeout (and a margin)
            assert state["leader_epoch"] > epochs[-1]
            epochs.append(state["leader_epoch"])
            cluster.brokers[old].start(timeout=60)
            cluster.wait_isr("failover", 0, 3, timeout=60)
    assert not producing.failed, producing.failed[:5]
    acked = producing.acked
    assert len(acked) > kills * 50
    got = _consume_all(cluster.bootstrap, "failover", len(acked), timeout=120)
    assert len(got) == len(set(got)), "duplicated records"
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    # every replica's log is the same, byte for byte, once all are in sync and caught up
    def same_logs() -> bool:
        logs = [b"".join(p.read_bytes() for p in cluster.segment_files(n, "failover", 0)) for n in cluster.brokers]
        return all(log == logs[0] for log in logs) and len(logs[0]) > 0
    cluster.wait_for(same_logs, 30, "identical replica logs")


def test_min_insync_replicas_with_two_brokers_down(cluster: WirekafkaCluster) -> None:
    _create(cluster, "minisr", config={"min.insync.replicas": "2"})
    leader = cluster.leader("minisr")
    lb = cluster.brokers[leader]
    assert _produce_raw(lb, "minisr", [b"a", b"b"], acks=-1) == ErrorCode.NONE
    assert _latest(lb, "minisr") == 2
    for node in [n for n in cluster.brokers if n != leader]:
        cluster.brokers[node].kill()
    cluster.wait_isr("minisr", 0, 1, timeout=30)
    _wait_broker_isr(lb, "minisr", 1)
    # acks=all: refused and not appended
    assert _produce_raw(lb, "minisr", [b"c"], acks=-1) == ErrorCode.NOT_ENOUGH_REPLICAS
    # acks=1: appended, but the high watermark stays below it while the ISR is under min.insync.replicas
    assert _produce_raw(lb, "minisr", [b"d"], acks=1) == ErrorCode.NONE
    assert _latest(lb, "minisr") == 2
    for node in [n for n in cluster.brokers if n != leader]:
        cluster.brokers[node].start(timeout=60)
    cluster.wait_isr("minisr", 0, 3, timeout=60)
    cluster.wait_for(lambda: _latest(lb, "minisr") == 3, 30, "the high watermark past the acks=1 write")
    assert _consume_all(cluster.bootstrap, "minisr", 3) == [b"a", b"b", b"d"]


def test_acks_all_times_out_when_a_follower_is_stuck(cluster: WirekafkaCluster) -> None:
    """A follower that stops fetching (SIGSTOP) holds acks=all writes until the leader drops it
    from the ISR after replica.lag.time.max.ms; with a short request timeout the write times out."""
    _create(cluster, "stuck")
    leader = cluster.leader("stuck")
    follower = next(n for n in cluster.brokers if n != leader)
    cluster.brokers[follower].proc.send_signal(19)  # SIGSTOP
    try:
        assert _produce_raw(cluster.brokers[leader], "stuck", [b"x"], acks=-1, timeout_ms=500) \
            == ErrorCode.REQUEST_TIMED_OUT
    finally:
        cluster.brokers[follower].proc.send_signal(18)  # SIGCONT


def test_unclean_leader_election(cluster: WirekafkaCluster) -> None:
    _create(cluster, "unclean")
    state = cluster.partition_state("unclean", 0)
    leader = state["leader"]
    lagging = next(n for n in cluster.brokers if n != leader)
    cluster.brokers[lagging].kill()
    cluster.wait_isr("unclean", 0, 2)
    _wait_broker_isr(cluster.brokers[leader], "unclean", 2)
    assert _produce_raw(cluster.brokers[leader], "unclean", [b"only-in-sync"], acks=-1) == ErrorCode.NONE
    for node in [n for n in cluster.brokers if n != lagging]:
        cluster.brokers[node].kill()
    cluster.brokers[lagging].start(timeout=60)
    state = cluster.wait_for(lambda: (s := cluster.partition_state("unclean", 0))["leader"] == -1 and s, 30,
                             "a leaderless partition")
    assert lagging not in state["isr"]
    time.sleep(1)  # the controller does not elect the out-of-sync replica by itself
    assert cluster.leader("unclean") == -1
    admin = AdminClient({"bootstrap.servers": cluster.brokers[lagging].bootstrap})
    resource = ConfigResource("topic", "unclean", set_config={"unclean.leader.election.enable": "true"})
    admin.alter_configs([resource])[resource].result(30)
    state = cluster.wait_for(lambda: (s := cluster.partition_state("unclean", 0))["leader"] == lagging and s, 30,
                             "the unclean election")
    assert state["isr"] == [lagging]
    # elected RECOVERING; the new leader then records it RECOVERED (the field goes, as Kafka writes it)
    state = cluster.wait_for(lambda: "leader_recovery_state" not in (s := cluster.partition_state("unclean", 0))
                             and s, 30, "the leader to record its recovery")
    assert state["leader"] == lagging and state["isr"] == [lagging]


def test_controller_failover(cluster: WirekafkaCluster) -> None:
    old, epoch = cluster.controller(), cluster.controller_epoch()
    cluster.brokers[old].kill()
    new = cluster.wait_for(lambda: (c := cluster.controller()) not in (-1, old) and c, 30, "a new controller")
    assert cluster.controller_epoch() > epoch
    live = [n for n in cluster.brokers if n != old]

    def controller_seen_by(n: int) -> int:
        return AdminClient({"bootstrap.servers": cluster.brokers[n].bootstrap}).list_topics(timeout=10).controller_id

    # the brokers learn of the new controller from ZooKeeper a moment after it is elected; a client
    # that asked one before then would send its CreateTopics to the dead broker
    cluster.wait_for(lambda: all(controller_seen_by(n) == new for n in live), 30, "the brokers know the new controller")
    admin = AdminClient({"bootstrap.servers": ",".join(cluster.brokers[n].bootstrap for n in live)})
    admin.create_topics([NewTopic("after-controller", 2, 2)], request_timeout=30)["after-controller"].result(30)
    for p in (0, 1):
        cluster.wait_isr("after-controller", p, 2)
    assert new in live


def test_group_offsets_survive_the_coordinator(cluster: WirekafkaCluster) -> None:
    _create(cluster, "grouped")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce("grouped", value=b"m%d" % i)
    p.flush(30)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "survivors", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["grouped"])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 10 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen += 1
    c.commit(asynchronous=False)
    c.close()
    group_partition = partition_for("survivors", 5)
    coordinator = cluster.leader("__consumer_offsets", group_partition)
    cluster.brokers[coordinator].kill()
    cluster.wait_for(lambda: cluster.leader("__consumer_offsets", group_partition) not in (coordinator, -1), 30,
                     "a new coordinator")
    live = ",".join(b.bootstrap for n, b in cluster.brokers.items() if n != coordinator)
    c = Consumer({"bootstrap.servers": live, "group.id": "survivors"})
    deadline = time.monotonic() + 60
    while True:
        try:
            committed = c.committed([TopicPartition("grouped", 0)], timeout=10)
            if committed[0].offset == 10 or time.monotonic() > deadline:
                break
        except KafkaException:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)
    c.close()
    assert committed[0].offset == 10



def test_paused_stale_leader_cannot_acknowledge(cluster: WirekafkaCluster) -> None:
    """A leader paused (SIGSTOP) past its ZooKeeper session loses the partition; resumed, it
    must not acknowledge an acks=all write as the old leader."""
    _create(cluster, "stale")
    old = cluster.leader("stale")
    epoch = cluster.partition_state("stale", 0)["leader_epoch"]
    others = [n for n in cluster.brokers if n != old]

    def leader_seen_by(n: int) -> int:
        admin = AdminClient({"bootstrap.servers": cluster.brokers[n].bootstrap})
        partitions = admin.list_topics("stale", timeout=10).topics["stale"].partitions
        return partitions[0].leader if 0 in partitions else -1  # -1 until it learned of the topic

    cluster.brokers[old].proc.send_signal(19)  # SIGSTOP
    try:
        cluster.wait_for(lambda: cluster.leader("stale") not in (old, -1), 30, "a new leader")
        # Resumed while a follower still fetched from it, the old leader could see that follower
        # take the write (a real replication, not a stale acknowledgement): resume it once the
        # others follow the new leader, so only its own view can acknowledge anything.
        cluster.wait_for(lambda: all(leader_seen_by(n) not in (old, -1) for n in others), 30,
                         "the other brokers follow the new leader")
    finally:
        cluster.brokers[old].proc.send_signal(18)  # SIGCONT
    assert cluster.partition_state("stale", 0)["leader_epoch"] > epoch
    code = _produce_raw(cluster.brokers[old], "stale", [b"to-the-stale-leader"], acks=-1, timeout_ms=15000)
    assert code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT), ErrorCode(code)
    new = cluster.leader("stale")
    # its session expired while it was stopped: it registers again under a new one
    cluster.wait_for(lambda: old in cluster.registered(), 30, "the paused broker registered again")
    cluster.wait_isr("stale", 0, 3, timeout=60)
    assert _produce_raw(cluster.brokers[new], "stale", [b"to-the-leader"], acks=-1) == ErrorCode.NONE
    assert _consume_all(cluster.bootstrap, "stale", 1) == [b"to-the-leader"]


def test_controlled_shutdown_moves_leadership_first(cluster: WirekafkaCluster) -> None:
    _create(cluster, "handover", partitions=3)
    node = cluster.leader("handover", 0)
    led = [p for p in range(3) if cluster.leader("handover", p) == node]
    epochs = {p: cluster.partition_state("handover", p)["leader_epoch"] for p in led}
    assert cluster.brokers[node].stop() == 0
    for p in led:
        state = cluster.partition_state("handover", p)
        # moved by the broker before it exited: no wait for its session to expire
        assert state["leader"] not in (node, -1) and node not in state["isr"], state
        assert state["leader_epoch"] > epochs[p]
    assert node not in cluster.registered()


def test_rolling_restart_under_an_idempotent_producer_is_invisible_to_it(cluster: WirekafkaCluster) -> None:
    """Each broker in turn stopped with SIGTERM and started again while an idempotent acks=all
    producer writes: the controller moved every leadership before the broker exited, so the
    producer sees no error, and every acknowledged record is there once."""
    _create(cluster, "rolling", partitions=6, config={"min.insync.replicas": "2"})
    acked: list[bytes] = []
    errors: list[object] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5})
        sent = 0
        while not stop.is_set() and sent < 200_000:
            producer.produce("rolling", str(sent).encode(),
                             callback=lambda err, msg: errors.append(err) if err else acked.append(msg.value()))
            sent += 1
            producer.poll(0)
            if sent % 100 == 0:
                time.sleep(0.01)
        producer.flush(60)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        for node in (1, 2, 3):
            time.sleep(1)
            led = [p for p in range(6) if cluster.leader("rolling", p) == node]
            assert cluster.brokers[node].stop() == 0
            assert [p for p in led if cluster.partition_state("rolling", p)["leader"] == node] == []
            cluster.brokers[node].start()
            for p in range(6):
                cluster.wait_isr("rolling", p, 3, timeout=60)
    finally:
        stop.set()
        writer.join(90)
    assert errors == [] and acked
    got: list[bytes] = []
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "rolling-reader",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    reader.assign([TopicPartition("rolling", p, 0) for p in range(6)])
    deadline = time.monotonic() + 60
    while len(got) < len(acked) and time.monotonic() < deadline:
        m = reader.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    reader.close()
    assert len(got) == len(set(got)) == len(acked) and set(got) == set(acked)


def test_delete_and_grow_topics(cluster: WirekafkaCluster) -> None:
    _create(cluster, "doomed", partitions=2)
    _create(cluster, "growing", partitions=1)
    admin = _admin(cluster)
    admin.delete_topics(["doomed"], operation_timeout=30)["doomed"].result(30)
    cluster.wait_for(lambda: cluster.zk.exists("/brokers/topics/doomed") is None, 30, "the topic's znodes gone")
    assert cluster.zk.exists("/config/topics/doomed") is None
    assert cluster.zk.get_children("/admin/delete_topics") == []
    cluster.wait_for(lambda: not any((b.data_dir / "doomed-0").exists() or (b.data_dir / "doomed-1").exists()
                                     for b in cluster.brokers.values()), 30, "the replicas' files deleted")
    from confluent_kafka.admin import NewPartitions
    admin.create_partitions([NewPartitions("growing", 3)])["growing"].result(30)
    for p in (1, 2):
        cluster.wait_isr("growing", p, 3)
    assignment = cluster.znode("/brokers/topics/growing")["partitions"]
    assert sorted(assignment) == ["0", "1", "2"]


@pytest.mark.java
def test_preferred_leader_election_with_kafkas_tool(tmp_path: Path, zookeeper: str) -> None:
    """After a restart the preferred replica is a follower; Kafka's kafka-leader-election moves
    the leadership back (ElectLeaders), and asking again says no election is needed. The
    automatic rebalance is off: a controller elected when the killed broker was the controller
    checks the balance 5 s later, as Kafka 3.9's does, and could move it back first."""
    with WirekafkaCluster(tmp_path, zookeeper, overrides={"auto.leader.rebalance.enable": "false"}) as cluster:
        _elect_preferred_with_kafkas_tool(cluster)


def test_a_new_controller_moves_leaderships_home_5_s_after_its_election(cluster: WirekafkaCluster) -> None:
    """auto.leader.rebalance.enable with Kafka's 300 s check interval: a leadership left away from
    its preferred replica by a restart goes home once a new controller runs its first check, 5 s
    after its election, as Kafka 3.9's onControllerFailover schedules it."""
    time.sleep(8)  # past the first controller's own first check (5 s after it was elected, at start-up)
    controller = cluster.controller()
    preferred, other = [b for b in (1, 2, 3) if b != controller]
    admin = _admin(cluster)
    admin.create_topics([NewTopic("home", num_partitions=1, replica_assignment=[[preferred, other, controller]])],
                        request_timeout=30)["home"].result(30)
    cluster.wait_isr("home", 0, 3)
    cluster.brokers[preferred].kill()
    cluster.wait_for(lambda: cluster.leader("home") == other, 30, "the next replica leading")
    cluster.brokers[preferred].start(timeout=60)
    cluster.wait_isr("home", 0, 3, timeout=60)
    time.sleep(2)
    assert cluster.leader("home") == other  # the controller's next check is minutes away
    cluster.brokers[controller].kill()  # leads nothing: no election of its own moves "home"
    cluster.wait_for(lambda: cluster.controller() not in (controller, -1), 30, "a new controller")
    elected = time.monotonic()
    cluster.wait_for(lambda: cluster.leader("home") == preferred, 30, "the preferred replica leading again")
    assert time.monotonic() - elected >= 3  # the check, not the election, moved it


def _elect_preferred_with_kafkas_tool(cluster: WirekafkaCluster) -> None:
    from testsupport.java_tools import tool

    _create(cluster, "preferred")
    preferred = cluster.znode("/brokers/topics/preferred")["partitions"]["0"][0]
    cluster.brokers[preferred].kill()
    cluster.wait_for(lambda: cluster.leader("preferred") not in (preferred, -1), 30, "another leader")
    cluster.brokers[preferred].start(timeout=60)
    cluster.wait_isr("preferred", 0, 3, timeout=60)
    assert cluster.leader("preferred") != preferred
    done = tool("kafka-leader-election", "--bootstrap-server", cluster.bootstrap, "--election-type", "preferred",
                "--topic", "preferred", "--partition", "0")
    assert done.returncode == 0, done.stderr
    assert "Successfully completed leader election (PREFERRED) for partitions preferred-0" in done.stdout, done.stdout
    assert cluster.leader("preferred") == preferred
    again = tool("kafka-leader-election", "--bootstrap-server", cluster.bootstrap, "--election-type", "preferred",
                 "--all-topic-partitions")
    assert again.returncode == 0, again.stderr
    assert "Successfully" not in again.stdout and "Failed" not in again.stdout, again.stdout
    assert cluster.leader("preferred") == preferred


@pytest.mark.java
def test_reassignment_with_kafkas_tool(cluster: WirekafkaCluster, tmp_path: Path) -> None:
    """kafka-reassign-partitions moves a partition from brokers 1,2 to 2,3 (KIP-455 on the topic
    znode); its data follows, broker 1 deletes its copy, and --verify reports it complete."""
    from testsupport.java_tools import tool

    admin = _admin(cluster)
    admin.create_topics([NewTopic("moving", num_partitions=1, replica_assignment=[[1, 2]])], request_timeout=30)["moving"].result(30)
    cluster.wait_isr("moving", 0, 2)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(100):
        p.produce("moving", value=b"r%03d" % i)
    assert p.flush(30) == 0
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[3,2]}]}')
    run = tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
               str(plan), "--execute")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Successfully started partition reassignment for moving-0" in run.stdout, run.stdout
    cluster.wait_for(lambda: cluster.znode("/brokers/topics/moving")["partitions"]["0"] == [3, 2], 60,
                     "the reassignment to complete")
    topic = cluster.znode("/brokers/topics/moving")
    assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}
    state = cluster.wait_isr("moving", 0, 2)
    assert sorted(state["isr"]) == [2, 3] and state["leader"] in (2, 3)
    cluster.wait_for(lambda: not (cluster.brokers[1].data_dir / "moving-0").exists(), 30, "broker 1's copy deleted")
    verify = tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                  str(plan), "--verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "Reassignment of partition moving-0 is completed." in verify.stdout, verify.stdout
    cluster.brokers[2].kill()  # the new replica alone must have every record
    cluster.wait_for(lambda: cluster.leader("moving") == 3, 30, "broker 3 leading")
    assert _consume_all(cluster.bootstrap, "moving", 100) == [b"r%03d" % i for i in range(100)]


@pytest.mark.java
def test_throttled_reassignment_with_kafkas_tool(cluster: WirekafkaCluster, tmp_path: Path) -> None:
    """kafka-reassign-partitions --throttle: the rates and throttled replicas land in Kafka 3.9's
    znodes, the new replica catches up at the throttled pace, and --verify clears them (the same
    check passes on Kafka 3.9.1, compat-tests/test_zookeeper_launcher.py)."""
    from testsupport.java_tools import tool

    summary = check_throttled_reassignment(
        cluster.zk, cluster.bootstrap,
        lambda args: tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap, *args),
        tmp_path, source=1, target=3)
    print(summary)
    source, copy = ([f.read_bytes() for f in cluster.segment_files(n, "throttled", 0)] for n in (1, 3))
    assert source and copy == source  # the throttled copy is whole


def test_cluster_wide_dynamic_log_default(cluster: WirekafkaCluster) -> None:
    """message.max.bytes set on the cluster default lands in /config/brokers/<default> and
    reaches every broker's partitions, and deleting it restores the static value (the same check
    passes on Kafka 3.9.1, compat-tests/test_zookeeper_launcher.py)."""
    print(check_dynamic_default(cluster.zk, cluster.bootstrap, [1, 2, 3]))


def test_wrong_broker_answers_name_the_leader(cluster: WirekafkaCluster) -> None:
    """KIP-951: Produce v10+ and Fetch v16+ answered NOT_LEADER_OR_FOLLOWER name the current
    leader and its endpoint (the same check passes on Kafka 3.9.1, test_zookeeper_launcher.py)."""
    print(check_leader_hints(cluster.zk, cluster.bootstrap, {n: b.bootstrap for n, b in cluster.brokers.items()}))


def test_find_coordinator_while_its_internal_topic_cannot_be_created(cluster: WirekafkaCluster) -> None:
    """With a broker down, the internal topics (replication factor 3) cannot be created: each key is
    answered COORDINATOR_NOT_AVAILABLE (the same check passes on Kafka 3.9.1, test_zookeeper_launcher.py)."""
    assert cluster.brokers[3].stop() == 0
    cluster.wait_for(lambda: cluster.registered() == [1, 2], 30, "broker 3 gone from /brokers/ids")
    print(check_coordinator_unavailable(cluster.zk, cluster.brokers[1].bootstrap, 2))


def test_controller_answers_alter_partition(cluster: WirekafkaCluster) -> None:
    """Leaders propose ISR changes to the controller with AlterPartition; its answers and the state it
    records are Kafka 3.9's (the same check passes on Kafka 3.9.1, test_zookeeper_launcher.py)."""
    print(check_alter_partition(cluster.zk, cluster.bootstrap, {n: b.bootstrap for n, b in cluster.brokers.items()}))


def test_controller_answers_controlled_shutdown(tmp_path: Path, zookeeper: str) -> None:
    """A stopping broker's ControlledShutdown: the controller's answers and the states it writes are
    Kafka 3.9's (the same check passes on Kafka 3.9.1, test_zookeeper_launcher.py). A cluster of
    its own: the check leaves two brokers shutting down in the controller's eyes."""
    with WirekafkaCluster(tmp_path, zookeeper) as c:
        print(check_controlled_shutdown(c.zk, c.bootstrap, {n: b.bootstrap for n, b in c.brokers.items()}))


def test_consumers_fetch_from_the_replica_in_their_rack(tmp_path: Path, zookeeper: str) -> None:
    """KIP-392 with Kafka's RackAwareReplicaSelector: the leader points a consumer at the follower
    in its rack, the follower serves it (the same check passes on Kafka 3.9.1,
    compat-tests/test_zookeeper_launcher.py)."""
    with WirekafkaCluster(tmp_path, zookeeper, broker_overrides={n: rack_overrides(n) for n in (1, 2, 3)}) as c:
        print(check_follower_fetch(c.zk, c.bootstrap, {n: b.bootstrap for n, b in c.brokers.items()}))


@pytest.mark.parametrize("protocol, mechanism", [("PLAINTEXT", None), ("SASL_PLAINTEXT", "PLAIN"),
                                                 ("SASL_PLAINTEXT", "OAUTHBEARER"), ("SSL", None),
                                                 ("SASL_SSL", "PLAIN")])
def test_two_listeners_replicate_on_the_inter_broker_one(tmp_path: Path, zookeeper: str, protocol: str,
                                                        mechanism: str | None) -> None:
    """CLIENT and REPLICATION listeners on every broker, REPLICATION the inter-broker one: the
    registrations, Metadata per listener and replication are as on Kafka 3.9.1 (the same check
    runs there in compat-tests/test_zookeeper_launcher.py)."""
    ports = {n: (free_port(), free_port()) for n in (1, 2, 3)}
    tls = make_tls_material(tmp_path / "tls") if protocol.endswith("SSL") else None
    with WirekafkaCluster(tmp_path, zookeeper, ports={n: p[0] for n, p in ports.items()},
                          broker_overrides={n: listener_overrides(*p, protocol, tls, mechanism)
                                            for n, p in ports.items()}) as c:
        print(check_two_listeners(c.zk, ports, protocol=protocol, tls=tls, mechanism=mechanism))


def test_brokers_log_in_to_each_other_with_tokens_from_an_oauth_provider(tmp_path: Path, zookeeper: str) -> None:
    """Kafka's secured OAUTHBEARER login and validator on the inter-broker listener: each broker
    gets its token from the provider's token endpoint and checks the others' against its JWKS;
    replication works over it (the same check runs on Kafka 3.9.1, test_zookeeper_launcher.py)."""
    ports = {n: (free_port(), free_port()) for n in (1, 2, 3)}
    with OAuthProvider(tmp_path / "oauth", {"broker": "broker-secret", "admin": "admin-secret"}) as provider, \
            WirekafkaCluster(tmp_path, zookeeper, ports={n: p[0] for n, p in ports.items()},
                             broker_overrides={n: listener_overrides(*p, "SASL_PLAINTEXT", None, "OAUTHBEARER", provider)
                                               for n, p in ports.items()},
                             env={"KAFKA_OPTS": provider.allowed_urls_option}) as c:
        print(check_two_listeners(c.zk, ports, protocol="SASL_PLAINTEXT", mechanism="OAUTHBEARER", provider=provider))


@pytest.mark.skipif(not kdc_support.available() or shutil.which("kcat") is None,
                    reason="MIT Kerberos KDC or kcat not installed (scripts/install_system_deps.sh)")
def test_brokers_log_in_to_each_other_with_kerberos(tmp_path: Path, zookeeper: str) -> None:
    """sasl.mechanism.inter.broker.protocol=GSSAPI: each broker logs in to the others as
    kafka/localhost with its keytab (RFC 4752 over SaslAuthenticate), and replication works over
    it (the same check runs on Kafka 3.9.1, test_zookeeper_launcher.py)."""
    ports = {n: (free_port(), free_port()) for n in (1, 2, 3)}
    with kdc_support.Kdc(tmp_path / "kdc") as kdc:
        realm = KerberosRealm.create(kdc)
        with WirekafkaCluster(tmp_path, zookeeper, ports={n: p[0] for n, p in ports.items()},
                              broker_overrides={n: listener_overrides(*p, "SASL_PLAINTEXT", mechanism="GSSAPI",
                                                                      kerberos=realm) for n, p in ports.items()},
                              env=kdc.env) as c:
            print(check_two_listeners(c.zk, ports, protocol="SASL_PLAINTEXT", mechanism="GSSAPI", kerberos=realm))


def test_a_broker_whose_oauth_login_gets_no_token_does_not_start(tmp_path: Path, zookeeper: str) -> None:
    """Kafka's broker logs in at start-up: a token endpoint refusing its client stops it."""
    ports = (free_port(), free_port())
    with OAuthProvider(tmp_path / "oauth", {"broker": "another-secret"}) as provider:
        settings = {**listener_overrides(*ports, "SASL_PLAINTEXT", None, "OAUTHBEARER", provider),
                    "broker.id": "1", "zookeeper.connect": f"{zookeeper}/wk-refused-{tmp_path.name}",
                    "log.dirs": str(tmp_path / "data"), "sasl.login.retry.backoff.max.ms": "500"}
        args = [sys.executable, "-m", "wirekafka", "serve"]
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        run = subprocess.run(args, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "KAFKA_OPTS": provider.allowed_urls_option})
    assert run.returncode == 1, run.stderr
    assert "fatal error during startup: listener REPLICATION: the OAUTHBEARER login failed: " in run.stderr, run.stderr
    assert "invalid_client" in run.stderr, run.stderr


def test_scram_credentials_in_zookeeper(cluster: WirekafkaCluster) -> None:
    """AlterUserScramCredentials writes /config/users/<user> as Kafka 3.9.1 does (the same check
    runs there in test_zookeeper_launcher.py) and every broker learns it from its watch."""
    print(check_scram_users(cluster.zk, {n: b.bootstrap for n, b in cluster.brokers.items()}))


def test_client_quotas_in_zookeeper(cluster: WirekafkaCluster) -> None:
    """AlterClientQuotas writes the quota znodes as Kafka 3.9.1 does (the same check runs there in
    test_zookeeper_launcher.py), beside a user's SCRAM credential, and every broker learns them."""
    print(check_client_quotas(cluster.zk, {n: b.bootstrap for n, b in cluster.brokers.items()}))


def test_legacy_admin_znodes(cluster: WirekafkaCluster) -> None:
    """The controller acts on /admin/reassign_partitions and /admin/preferred_replica_election
    as Kafka 3.9's does (the same check runs on Kafka 3.9 in test_zookeeper_launcher.py), and the
    moved partition keeps serving its records from its new replicas."""
    _create(cluster, "legacy")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(20):
        p.produce("legacy", value=b"r%02d" % i)
    assert p.flush(30) == 0
    print(check_legacy_admin_znodes(cluster.zk, "legacy"))
    dropped = next(b for b in cluster.brokers if b not in cluster.znode("/brokers/topics/legacy")["partitions"]["0"])
    cluster.wait_for(lambda: not (cluster.brokers[dropped].data_dir / "legacy-0").exists(), 30,
                     f"broker {dropped}'s copy deleted")
    assert _consume_all(cluster.bootstrap, "legacy", 20) == [b"r%02d" % i for i in range(20)]


def test_legacy_reassignment_waits_for_its_broker_and_yields_to_the_api(cluster: WirekafkaCluster) -> None:
    """A /admin/reassign_partitions entry naming a broker that is not up is started and waits for
    it (adding_replicas holds it); AlterPartitionReassignments for that partition later takes its
    place, and the entry leaves the znode (deleted once empty), as Kafka's controller does."""
    from kafka.protocol.admin import AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse

    _create(cluster, "waiting", rf=2)
    current = cluster.znode("/brokers/topics/waiting")["partitions"]["0"]
    cluster.zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "waiting", "partition": 0, "replicas": [9, *current]}]}).encode())
    cluster.wait_for(lambda: cluster.znode("/brokers/topics/waiting")["adding_replicas"] == {"0": [9]}, 30,
                     "the move to broker 9 to start")
    assert cluster.zk.exists("/admin/reassign_partitions") is not None  # broker 9 never comes: it waits
    A = AlterPartitionReassignmentsRequest.ReassignableTopic
    resp = raw_call(cluster.brokers[cluster.controller()], AlterPartitionReassignmentsRequest(  # as admins ask it
        version=0, timeout_ms=10000, topics=[
        A(name="waiting", partitions=[A.ReassignablePartition(partition_index=0, replicas=current[::-1])])]),
        AlterPartitionReassignmentsResponse)
    assert [p.error_code for p in resp.responses[0].partitions] == [ErrorCode.NONE]
    cluster.wait_for(lambda: cluster.zk.exists("/admin/reassign_partitions") is None, 30, "the znode to go")
    cluster.wait_for(lambda: cluster.znode("/brokers/topics/waiting")["partitions"] == {"0": current[::-1]}, 30,
                     "the API's target to be the assignment")
    topic = cluster.znode("/brokers/topics/waiting")
    assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}, topic


def test_zookeeper_set_acl_without_authentication_refuses_to_start(zookeeper: str, tmp_path: Path) -> None:
    """Kafka 3.9 exits at start-up with zookeeper.set.acl=true and no authenticated ZooKeeper
    client (TLS keystore or JAAS file), with this message; wirekafka does the same and leaves
    ZooKeeper untouched (with one: compat-tests/test_zookeeper_security.py)."""
    chroot = "/wk-acl-" + tmp_path.name
    run = subprocess.run([sys.executable, "-m", "wirekafka", "serve", "--override", "broker.id=1",
                          "--override", f"zookeeper.connect={zookeeper}{chroot}",
                          "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}",
                          "--override", "zookeeper.set.acl=true"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert "fatal error during startup: zookeeper.set.acl is true, but ZooKeeper client TLS configuration" \
        in run.stderr, run.stderr
    client = KazooClient(hosts=zookeeper)
    client.start(timeout=15)
    try:
        assert client.exists(chroot) is None
    finally:
        client.stop()
        client.close()


def test_brokers_without_broker_id_get_generated_ids(zookeeper: str, tmp_path: Path) -> None:
    """Kafka 3.9's broker id generation (the same steps give 1001 on Kafka 3.9.1): without
    broker.id a broker takes /brokers/seqid's next version plus reserved.broker.max.id, registers
    under it and keeps it in meta.properties, so a restart comes back as the same broker."""
    chroot = "/wk-ids-" + tmp_path.name
    base = {"zookeeper.connect": zookeeper + chroot, "zookeeper.session.timeout.ms": "2000"}
    client = KazooClient(hosts=zookeeper + chroot)
    first = BrokerProcess(tmp_path / "a", dict(base))
    second = BrokerProcess(tmp_path / "b", {**base, "reserved.broker.max.id": "2000"})
    try:
        first.start(60)
        client.start(timeout=15)
        WirekafkaCluster.wait_for(lambda: client.get_children("/brokers/ids") == ["1001"], 30, "broker 1001")
        assert "broker.id=1001" in (tmp_path / "a" / "meta.properties").read_text()
        second.start(60)
        WirekafkaCluster.wait_for(lambda: sorted(client.get_children("/brokers/ids")) == ["1001", "2002"], 30,
                                  "broker 2002 (the second id, above its own reserved.broker.max.id)")
        first.stop()
        WirekafkaCluster.wait_for(lambda: client.get_children("/brokers/ids") == ["2002"], 30, "1001 gone")
        first.start(60)  # its log dir says who it is: no new id
        WirekafkaCluster.wait_for(lambda: sorted(client.get_children("/brokers/ids")) == ["1001", "2002"], 30,
                                  "1001 back")
        assert client.exists("/brokers/seqid").version == 2
    finally:
        first.stop()
        second.stop()
        client.stop()
        client.close()


def test_transactions_across_leaders(cluster: WirekafkaCluster) -> None:
    """A transactional producer writing to partitions led by different brokers: the coordinator
    sends the markers to each leader (WriteTxnMarkers); read_committed sees the committed
    transaction only, and the consumed offsets committed with it."""
    _create(cluster, "txn-spread", partitions=3)
    leaders = {cluster.leader("txn-spread", p) for p in range(3)}
    assert len(leaders) > 1
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "spread-1",
                  "transaction.timeout.ms": 30000})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(30):
        p.produce("txn-spread", value=b"commit-%d" % i, partition=i % 3)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(30):
        p.produce("txn-spread", value=b"abort-%d" % i, partition=i % 3)
    p.abort_transaction(60)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "txn-reader", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition("txn-spread", i, 0) for i in range(3)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 30 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    quiet = time.monotonic() + 2
    while time.monotonic() < quiet:  # nothing of the aborted transaction follows
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert sorted(got) == sorted(b"commit-%d" % i for i in range(30))




def test_offsets_sent_to_a_transaction_whose_coordinator_is_not_the_groups(cluster: WirekafkaCluster) -> None:
    """TxnOffsetCommit reaches the group's coordinator, which verifies the transaction with the
    transaction's coordinator on another broker (AddPartitionsToTxn verify_only); before, it asked
    its own transaction coordinator, which answered NOT_COORDINATOR until the transaction timed
    out. The same check passes on Kafka 3.9.1 (compat-tests/test_zookeeper_launcher.py)."""
    print(check_txn_offsets_across_coordinators(cluster.bootstrap, cluster.brokers[1].bootstrap))

def test_broker_refuses_another_clusters_log_dir(cluster: WirekafkaCluster) -> None:
    """A log dir formatted for another cluster (meta.properties' cluster.id) is refused at start,
    with Kafka's message, instead of mixing two clusters' data."""
    b = cluster.brokers[3]
    b.stop()
    meta = b.data_dir / "meta.properties"
    real_id = cluster.znode("/cluster/id")["id"]
    meta.write_text(meta.read_text().replace(real_id, "AAAAAAAAAAAAAAAAAAAAAA"))
    with pytest.raises(RuntimeError, match="exited"):
        b.start(timeout=60)
    assert "doesn't match stored clusterId Some(AAAAAAAAAAAAAAAAAAAAAA) in meta.properties" in b.log_tail(200)
    assert 3 not in cluster.registered()


@pytest.mark.parametrize("asked", ["all topics", "by name"])
def test_metadata_is_reused_until_the_cluster_changes(cluster: WirekafkaCluster, asked: str) -> None:
    """A Metadata answer for all topics, or for a list of names that all exist, is encoded once
    and reused (ClusterMetadata.answer_cache): asked twice it is the same, and a topic created, a
    leader moved or a topic deleted shows in the next answer (a deleted topic asked for by name:
    UNKNOWN_TOPIC_OR_PARTITION)."""
    from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
    _create(cluster, "cached-a", partitions=2)
    before = cluster.leader("cached-a", 0)
    broker = next(b for n, b in cluster.brokers.items() if n != before)  # asked throughout
    topic = MetadataRequest.MetadataRequestTopic
    names = None if asked == "all topics" else [topic(name=n, topic_id=None) for n in ("cached-a", "cached-b")]

    def answer() -> MetadataResponse:
        return raw_call(broker, MetadataRequest(version=12, topics=names, allow_auto_topic_creation=False),
                        MetadataResponse)

    def leaders(name: str) -> dict[int, int]:
        return {p.partition_index: p.leader_id for t in answer().topics if t.name == name and not t.error_code
                for p in t.partitions}

    cluster.wait_for(lambda: leaders("cached-a") == {0: before, 1: cluster.leader("cached-a", 1)}, 30,
                     "the answer naming cached-a's leaders")
    assert answer() == answer()
    _create(cluster, "cached-b", partitions=1)
    cluster.wait_for(lambda: leaders("cached-b") == {0: cluster.leader("cached-b")}, 30, "cached-b in the answer")
    assert answer() == answer()
    cluster.brokers[before].kill()
    try:
        cluster.wait_for(lambda: leaders("cached-a").get(0) not in (before, None, -1)
                         and leaders("cached-a")[0] == cluster.leader("cached-a", 0), 60, "the new leader answered")
    finally:
        cluster.brokers[before].start()
    for p in (0, 1):
        cluster.wait_isr("cached-a", p, 3, timeout=60)
    admin = _admin(cluster)  # kept: a client dropped while its request waits fails the request
    admin.delete_topics(["cached-b"], operation_timeout=30)["cached-b"].result(30)
    cluster.wait_for(lambda: not leaders("cached-b"), 30, "cached-b gone from the answer")
    if names is not None:
        assert {t.name: t.error_code for t in answer().topics}["cached-b"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
