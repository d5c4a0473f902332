"""Rows on 3-broker clusters: wirekafka's cluster mode next to Apache Kafka 3.9.1 in ZooKeeper mode.

Both clusters run on one ZooKeeper server (``scripts/zookeeper.py``), each under a chroot of its
own, one cluster at a time: the wirekafka cluster is ``testsupport/cluster.py``'s
WirekafkaCluster (three ``wirekafka serve`` processes), the Kafka cluster
``realkafka.start_zk_cluster`` (three JVMs, 512 MB heap each, as the single-node rows' Kafka).
Both get :data:`CLUSTER_CONFIG`: Kafka's defaults where they matter for these rows (WirekafkaCluster
sets test-friendly ones: a 2 s ZooKeeper session, a 4 s replica lag), replication factor 3, and
``zookeeper.session.timeout.ms`` 6000 for the failover row. Both clusters read and write Kafka
3.9's ZooKeeper layout, so one kazoo client per chroot (:class:`ZkView`) reads the controller,
the live brokers and the partition states of either.

- :func:`produce_row`: a 3-partition topic (replication 3, ``min.insync.replicas=2``), the
  throughput rows' producer (acks=all, idempotent, 1 KB, linger 5 ms); then the latency row's
  fixed-rate load on another such topic.
- :func:`failover_row`: a 1-partition topic (replication 3, ``min.insync.replicas=2``) whose
  leader is not the controller; a producer (acks=all, idempotent, linger 0) sends one record
  every ~5 ms; the leader is killed with SIGKILL (at a moment drawn per run, see
  :func:`kill_delay`); the time until the controller wrote a new
  leader into the partition's state znode, and until the first record *sent after the kill* was
  acknowledged (only the new leader can do that: the old one is dead, and with idempotence a
  partition's records are acknowledged in order, so this is the first acknowledged write on the
  new leader). The killed broker is restarted before the next run, on a fresh topic.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import random
import statistics
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from scripts import realkafka, zookeeper
from scripts.benchlib.workloads import BASE, WARM_TOPIC, LatencyResult, _producer_config, latency, new_topic_name, \
    produce, wait_for_leaders
from testsupport.cluster import WirekafkaCluster, wait_for

log = logging.getLogger(__name__)

NODES = (1, 2, 3)
SESSION_TIMEOUT_MS = 6000
#: server.properties entries of every broker of both clusters. Kafka's defaults where
#: WirekafkaCluster or realkafka's defaults differ from them and they matter here
#: (replica.lag.time.max.ms: when a follower may leave the ISR; 50 partitions of the internal
#: topics, created only on first use); the rest makes a 3-broker cluster (replication 3 for
#: everything, min.insync.replicas 2 on the internal transaction log as Kafka's default).
#: min.insync.replicas stays Kafka's default (1) broker-wide and is 2 on the topics measured
#: (:data:`TOPIC_CONFIG`).
#: controlled.shutdown.retry.backoff.ms only shortens the stop at the end (realkafka's default).
CLUSTER_CONFIG: dict[str, str] = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "30000",
    "default.replication.factor": "3",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "50",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "50",
    "group.initial.rebalance.delay.ms": "0",
    "controlled.shutdown.retry.backoff.ms": "500",
}
TOPIC_CONFIG = {"min.insync.replicas": "2"}
REPLICATION = 3
#: 1 KB records produced (untimed) before cluster-produce's figures.
WARM_UP_RECORDS = 5000
KAFKA_HEAP = "512m"
#: Seconds a failover run waits for the new leader / the first acknowledged write.
FAILOVER_TIMEOUT = 60.0
#: The failover producer sends a record, then serves delivery reports for up to this long.
FAILOVER_SEND_INTERVAL = 0.005


def kafka_cluster_name() -> str:
    return f"Kafka {realkafka.KAFKA_ZK_VERSION} (ZooKeeper)"


class Cluster(Protocol):
    """Three brokers on a ZooKeeper chroot: what the rows need."""

    name: str
    chroot: str

    @property
    def bootstrap(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def kill(self, node: int) -> None:
        """SIGKILL one broker."""

    def restart(self, node: int, timeout: float = 60.0) -> None:
        """Start a killed broker again on its port and data; return once it answers ApiVersions
        (RuntimeError after ``timeout`` s)."""

    def address(self, node: int) -> str:
        """host:port of one broker."""

    def log_paths(self) -> dict[int, Path]: ...


class WirekafkaClusterRun:
    """testsupport's WirekafkaCluster with :data:`CLUSTER_CONFIG` on top of its defaults, and
    ``broker_overrides[n]`` for broker n alone (cluster-scale: its metrics endpoint's port)."""

    name = "wirekafka"

    def __init__(self, workdir: Path, zk_connect: str,
                 broker_overrides: dict[int, dict[str, str]] | None = None) -> None:
        self.cluster = WirekafkaCluster(workdir, zk_connect, size=len(NODES), overrides=CLUSTER_CONFIG,
                                        broker_overrides=broker_overrides)
        self.chroot = self.cluster.chroot

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def start(self) -> None:
        """WirekafkaCluster.start(), but the brokers start in parallel (as start_zk_cluster does
        for Kafka's): most of a start is Python importing and compiling, which overlaps."""
        t0 = time.monotonic()
        brokers = list(self.cluster.brokers.values())
        try:
            for b in brokers:
                b.data_dir.parent.mkdir(parents=True, exist_ok=True)
            with concurrent.futures.ThreadPoolExecutor(len(brokers)) as pool:
                errors = [f.exception() for f in [pool.submit(b.start, 60) for b in brokers]]
            if failed := [e for e in errors if e is not None]:
                raise failed[0]
            self.cluster.zk.start(timeout=15)
            self.cluster.wait_for(lambda: len(self.cluster.registered()) == len(brokers), 60,
                                  "all brokers registered")
        except BaseException:
            self.stop()
            raise
        log.info("wirekafka cluster up on %s after %.1fs", self.bootstrap, time.monotonic() - t0)

    def stop(self) -> None:
        t0 = time.monotonic()
        self.cluster.stop()
        log.info("wirekafka cluster stopped in %.1fs", time.monotonic() - t0)

    def kill(self, node: int) -> None:
        self.cluster.brokers[node].kill()

    def restart(self, node: int, timeout: float = 60.0) -> None:
        self.cluster.brokers[node].start(timeout=timeout)

    def address(self, node: int) -> str:
        return self.cluster.brokers[node].bootstrap

    def log_paths(self) -> dict[int, Path]:
        return {n: b.log_path for n, b in self.cluster.brokers.items()}


class KafkaClusterRun:
    """Three Kafka 3.9.1 ZooKeeper-mode brokers (realkafka.start_zk_cluster)."""

    def __init__(self, workdir: Path, zk_connect: str, heap: str = KAFKA_HEAP) -> None:
        self.name = kafka_cluster_name()
        self.heap = heap
        self.workdir = workdir
        self.chroot = "/kafka39-" + workdir.name
        self.zk_connect = zk_connect
        self.nodes: dict[int, realkafka.RealKafka] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values() if n.alive())

    def start(self) -> None:
        t0 = time.monotonic()
        brokers = realkafka.start_zk_cluster(self.zk_connect + self.chroot, NODES, workdir=self.workdir,
                                             overrides=CLUSTER_CONFIG, heap=self.heap, start_timeout=120)
        self.nodes = {b.broker_id: b for b in brokers}
        log.info("Kafka cluster up on %s after %.1fs", self.bootstrap, time.monotonic() - t0)

    def stop(self) -> None:
        t0 = time.monotonic()
        realkafka.stop_all(list(self.nodes.values()))
        log.info("Kafka cluster stopped in %.1fs", time.monotonic() - t0)

    def kill(self, node: int) -> None:
        kafka = self.nodes[node]
        if kafka.proc is not None and kafka.proc.poll() is None:
            kafka.proc.kill()
            kafka.proc.wait()
        kafka.stop()  # the process is gone: this only closes its log (the work dir is ours, kept)

    def restart(self, node: int, timeout: float = 120.0) -> None:
        self.nodes[node].start_timeout = timeout
        self.nodes[node].start()

    def address(self, node: int) -> str:
        return self.nodes[node].bootstrap

    def log_paths(self) -> dict[int, Path]:
        return {n: k.log_path for n, k in self.nodes.items()}


class ZkView:
    """Reads of Kafka 3.9's ZooKeeper layout under one cluster's chroot (both clusters write it)."""

    def __init__(self, zk_connect: str, chroot: str) -> None:
        self.zk = KazooClient(hosts=zk_connect + chroot)
        self.zk.start(timeout=15)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.zk.stop()
            self.zk.close()

    def _json(self, path: str) -> dict | None:
        try:
            data, _ = self.zk.get(path)
        except Exception:  # noqa: BLE001 - NoNode while a znode is (re)created
            return None
        return json.loads(data)

    def registered(self) -> list[int]:
        return sorted(int(c) for c in self.zk.get_children("/brokers/ids"))

    def controller(self) -> int:
        c = self._json("/controller")
        return -1 if c is None else int(c["brokerid"])

    def partition_state(self, topic: str, partition: int = 0) -> dict | None:
        return self._json(f"/brokers/topics/{topic}/partitions/{partition}/state")


def wait_cluster_ready(cluster: Cluster, zk: ZkView, timeout: float = 60.0) -> int:
    """Until every broker is registered in ZooKeeper and answers Metadata naming all of them and
    the controller; returns the controller's id. (A Kafka broker answers ApiVersions, and has
    registered, before the controller sent it the cluster's metadata: an admin client that asks
    it then finds no controller to send CreateTopics to, and waits out its timeout.)"""
    wait_for(lambda: zk.registered() == list(NODES), timeout, "all brokers registered")
    controller = wait_for(lambda: (c := zk.controller()) > 0 and c, timeout, "a controller")

    def complete(node: int) -> bool:
        admin = AdminClient({"bootstrap.servers": cluster.address(node), "log_level": 3})
        try:
            md = admin.list_topics(timeout=5)
        except Exception:  # noqa: BLE001 - not answering yet
            return False
        return sorted(md.brokers) == list(NODES) and md.controller_id == controller

    for node in NODES:
        wait_for(lambda node=node: complete(node), timeout, f"broker {node}'s Metadata to name every broker",
                 interval=0.2)
    return controller


def create_replicated_topic(cluster: Cluster, zk: ZkView, topic: str, partitions: int,
                            assignment: list[list[int]] | None = None, timeout: float = 60.0,
                            config: dict[str, str] | None = None) -> None:
    """Create ``topic`` (replication 3, ``config`` or :data:`TOPIC_CONFIG`) through the controller
    and return once every partition has its full ISR in ZooKeeper and every broker's Metadata
    names a leader for it."""
    controller = wait_cluster_ready(cluster, zk, timeout)
    admin = AdminClient({"bootstrap.servers": cluster.address(controller), "log_level": 3})
    config = TOPIC_CONFIG if config is None else config
    if assignment is None:
        new = NewTopic(topic, partitions, REPLICATION, config=config)
    else:
        # librdkafka wants the partition count with an assignment, and no replication factor
        new = NewTopic(topic, len(assignment), replica_assignment=assignment, config=config)
    try:
        admin.create_topics([new], operation_timeout=timeout)[topic].result(timeout)
    except TimeoutError:
        raise TimeoutError(f"CreateTopics {topic} not answered within {timeout:g}s") from None
    for p in range(partitions):
        wait_for(lambda p=p: (s := zk.partition_state(topic, p)) is not None and s["leader"] >= 0
                 and len(s["isr"]) == REPLICATION, timeout, f"{topic}-{p} with {REPLICATION} in-sync replicas")
    for one in cluster.bootstrap.split(","):
        wait_for_leaders(one, topic, partitions, timeout)


# -- cluster-produce ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ProduceResult:
    mbps: float
    records_per_second: float
    acked: int
    latency: LatencyResult


def produce_row(cluster: Cluster, zk: ZkView, records: int, payloads: list[bytes], timeout: float,
                latency_rate: float, latency_seconds: float) -> ProduceResult:
    spec = replace(BASE, records=records)
    # The topic every producer of the workloads sends its first record to: replicated here, so
    # that the failover row's kills never leave it without a leader (workloads would create it
    # with one replica).
    create_replicated_topic(cluster, zk, WARM_TOPIC, 1, config={})
    # Untimed first use of the replication path (as the single-node rows' warm-up): the JVMs'
    # JIT and the followers' fetch sessions start here, not in the figures.
    warm = new_topic_name("cluster-warm-up")
    create_replicated_topic(cluster, zk, warm, spec.partitions)
    produce(cluster.bootstrap, warm, replace(spec, records=WARM_UP_RECORDS), payloads, time.monotonic() + timeout)
    topic = new_topic_name("cluster")
    create_replicated_topic(cluster, zk, topic, spec.partitions)
    seconds, acked = produce(cluster.bootstrap, topic, spec, payloads, time.monotonic() + timeout)
    log.info("%s cluster: %d records (%.1f MB payload) acked in %.2fs", cluster.name, acked,
             acked * spec.record_size / 1e6, seconds)
    lat = latency(cluster.bootstrap, latency_rate, latency_seconds, spec.record_size, payloads,
                  replication=REPLICATION, topic_config=TOPIC_CONFIG)
    log.info("%s cluster: latency over %d samples, mean %.2f ms", cluster.name, len(lat.samples_ms),
             statistics.fmean(lat.samples_ms) if lat.samples_ms else float("nan"))
    return ProduceResult(acked * spec.record_size / seconds / 1e6, acked / seconds, acked, lat)


# -- cluster-failover --------------------------------------------------------------------------

@dataclass
class FailoverRun:
    killed: int
    controller: int
    expired_seconds: float | None = None   # kill -> its /brokers/ids/N gone (ZooKeeper session expired)
    elected_seconds: float | None = None   # kill -> a new leader in the partition's state znode
    acked_seconds: float | None = None     # kill -> first record sent after the kill acknowledged
    new_leader: int | None = None
    failed_deliveries: list[str] = field(default_factory=list)


class _SteadyProducer:
    """One record every ~5 ms to partition 0 (acks=all, idempotent, linger 0: the latency row's
    producer), in its own thread; notes when the first record sent after ``mark()`` is acked."""

    def __init__(self, bootstrap: str, topic: str, payload: bytes) -> None:
        self.producer = Producer(_producer_config(bootstrap, BASE, **{"linger.ms": 0}))
        self.topic = topic
        self.payload = payload
        self.acked = 0
        self.errors: list[str] = []
        self.mark_at: float | None = None
        self.first_ack_after_mark: float | None = None
        self.acked_after_mark = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="failover-producer", daemon=True)

    def _on_delivery(self, err: KafkaError | None, _msg: object, sent_at: float) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        self.acked += 1
        mark = self.mark_at
        if mark is not None and sent_at > mark and self.first_ack_after_mark is None:
            self.first_ack_after_mark = time.perf_counter()
            self.acked_after_mark.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            sent_at = time.perf_counter()
            with contextlib.suppress(BufferError):
                self.producer.produce(self.topic, self.payload, partition=0,
                                      on_delivery=lambda err, msg, t=sent_at: self._on_delivery(err, msg, t))
            self.producer.poll(FAILOVER_SEND_INTERVAL)

    def start(self) -> "_SteadyProducer":
        self._thread.start()
        return self

    def mark(self) -> float:
        self.mark_at = time.perf_counter()
        return self.mark_at

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        left = self.producer.flush(30)
        if left:
            log.warning("failover producer: %d records unacknowledged at the end", left)


def kill_delay(run: int) -> float:
    """Seconds between the 100th acknowledged record and the kill. A crash comes at no particular
    moment, but the readiness checks before it can end just after an ISR change, which a
    wirekafka leader writes to ZooKeeper itself, refreshing its own session (a Kafka leader asks
    the controller to): killed right then, its session lives the whole timeout (traced once: the
    leader's state write 49 ms before the kill, its session expired 6.39 s later). Drawn uniformly
    from 0-4 s, two ZooKeeper ping intervals; the same for both clusters (seeded by the run)."""
    return random.Random(run).uniform(0.0, 4.0)


def failover_once(cluster: Cluster, zk: ZkView, run: int, payload: bytes) -> FailoverRun:
    """One kill -9 of a partition leader that is not the controller; restarts it afterwards."""
    controller = wait_cluster_ready(cluster, zk)
    others = [n for n in NODES if n != controller]
    leader = others[run % len(others)]
    replicas = [leader, *(n for n in NODES if n != leader)]
    topic = new_topic_name("failover")
    create_replicated_topic(cluster, zk, topic, 1, assignment=[replicas])
    result = FailoverRun(killed=leader, controller=controller)
    producer = _SteadyProducer(cluster.bootstrap, topic, payload).start()
    killed = False
    try:
        wait_for(lambda: producer.acked >= 100, 30, "100 acknowledged records before the kill")
        time.sleep(kill_delay(run))
        state = zk.partition_state(topic)
        if state is None or state["leader"] != leader or len(state["isr"]) != REPLICATION:
            raise RuntimeError(f"{topic} is not led by {leader} with a full ISR before the kill: {state}")
        t_kill = producer.mark()
        killed = True
        cluster.kill(leader)
        log.info("%s: killed broker %d (leader of %s; controller %d)", cluster.name, leader, topic, controller)
        while result.elected_seconds is None and time.perf_counter() < t_kill + FAILOVER_TIMEOUT:
            if result.expired_seconds is None and not zk.zk.exists(f"/brokers/ids/{leader}"):
                result.expired_seconds = time.perf_counter() - t_kill
            state = zk.partition_state(topic)
            if state is not None and state["leader"] not in (leader, -1):
                result.elected_seconds = time.perf_counter() - t_kill
                result.new_leader = state["leader"]
            time.sleep(0.01)
        if result.elected_seconds is None:
            log.warning("%s: no new leader in ZooKeeper within %.0fs", cluster.name, FAILOVER_TIMEOUT)
        if producer.acked_after_mark.wait(max(0.0, t_kill + FAILOVER_TIMEOUT - time.perf_counter())):
            result.acked_seconds = producer.first_ack_after_mark - t_kill  # type: ignore[operator]
        else:
            log.warning("%s: no record sent after the kill acknowledged within %.0fs", cluster.name,
                        FAILOVER_TIMEOUT)
    finally:
        producer.close()
        result.failed_deliveries = producer.errors
        if killed:
            t0 = time.monotonic()
            cluster.restart(leader)
            log.info("%s: broker %d restarted in %.1fs", cluster.name, leader, time.monotonic() - t0)
    log.info("%s failover run %d: killed %d; session expired after %s s, new leader %s in ZooKeeper after %s s, "
             "first ack after %s s", cluster.name, run + 1, leader, fmt_seconds(result.expired_seconds),
             result.new_leader, fmt_seconds(result.elected_seconds), fmt_seconds(result.acked_seconds))
    return result


def failover_row(cluster: Cluster, zk: ZkView, runs: int, payload: bytes) -> list[FailoverRun]:
    return [failover_once(cluster, zk, i, payload) for i in range(runs)]


def zookeeper_server(workdir: Path) -> zookeeper.ZooKeeperServer:
    """The one ZooKeeper server both clusters use (each under its own chroot), started."""
    return zookeeper.ZooKeeperServer(workdir).start(timeout=60)


NOTE = ("cluster rows: both clusters get the same server.properties entries (benchlib/cluster_rows.py CLUSTER_CONFIG) "
        "and the same client settings; the client (Python, librdkafka) shares the 2 cores with three brokers and "
        "ZooKeeper.")
FAILOVER_NOTE = ("cluster-failover: ZooKeeper notices the killed broker only when its session expires (between the "
                 "session timeout minus the time since the broker's last ZooKeeper request and that plus one 500 ms "
                 "tick), the same for both clusters; then the controller elects a new leader, and the client, which "
                 "re-reads metadata at most once a second while a leader is down (librdkafka's default "
                 "retry.backoff.max.ms), finds and writes to it.")


def median(values: list[float | None]) -> float | None:
    """The median of the runs, or None if any run has no figure (a failed run is not left out)."""
    if not values or any(v is None for v in values):
        return None
    return statistics.median(values)  # type: ignore[type-var]


def fmt_seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def log_problems(cluster: Cluster, lines: int = 5) -> list[str]:
    """Lines of the brokers' logs that look like trouble (tracebacks, ERROR), for the notes."""
    found: list[str] = []
    for node, path in cluster.log_paths().items():
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        bad = [ln for ln in text if "Traceback" in ln or " ERROR " in ln or "] ERROR " in ln]
        if bad:
            log.warning("%s broker %d: %d suspicious log lines in %s, e.g.:\n  %s", cluster.name, node, len(bad),
                        path, "\n  ".join(bad[:lines]))
            found.append(f"broker {node}: {len(bad)} ERROR/Traceback lines, the first: {bad[0][:200]}")
    return found
