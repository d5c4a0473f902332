"""cluster-scale: how a 3-broker cluster copes with many partitions, wirekafka next to Kafka 3.9.1.

A cluster's cost grows with its partitions where a single broker's throughput rows do not show
it: the controller writes and reads a state znode per partition, every broker applies a role
change per partition, and a failover moves a third of them at once. For each partition count a
fresh cluster per side (cluster_rows.py's, one at a time, on the one ZooKeeper server) goes
through five steps, each bounded by a timeout and reported as "timeout" rather than raising:

1. create: topics of ``topic_partitions`` partitions (replication 3, ``min.insync.replicas=2``)
   in one CreateTopics request; seconds until it is answered (its timeout lets the brokers wait
   for the leaders), until every partition has a leader in its state znode, and until one
   acks=all record was acknowledged on every partition. Then Metadata for all
   topics, 50 times against one broker over a raw socket (the round trip without any client's
   decoding, which at 10,000 partitions would be most of it), and each broker's RSS.
2. controller failover: kill -9 of the broker in /controller; seconds until another is there,
   and until a record sent after the kill was acknowledged on every partition.
3. controller restart: seconds from its restart until every ISR in ZooKeeper is full again.
4. broker failover: kill -9 of the non-controller that leads the most partitions (about a
   third); seconds until a record sent after the kill was acknowledged on each of them.
5. broker restart: seconds until every ISR is full again (its catch-up).

Per step, ZooKeeper's packet counts (``mntr``, the whole server's) less the bench's own reads,
which are counted here; and on wirekafka each broker's event-loop lateness
(``wirekafka_event_loop_lateness_seconds`` from its /metrics, scraped before and after).
The partition waits poll ZooKeeper (pipelined reads of the partitions not yet done), so their
seconds are late by up to one poll (0.2 s, more at thousands of partitions)."""

from __future__ import annotations

import collections
import concurrent.futures
import json
import logging
import re
import shutil
import socket
import struct
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.metadata import MetadataRequest
from kazoo.client import KazooClient

from scripts import port_pool, zookeeper
from scripts.benchlib import cluster_rows, netprobe, workloads
from scripts.benchlib.brokers import rss_mb
from scripts.benchlib.cluster_rows import NODES, REPLICATION, TOPIC_CONFIG, Cluster, ZkView
from scripts.benchlib.report import Report, Value

log = logging.getLogger(__name__)

Partition = tuple[str, int]
STEPS = ("create", "controller failover", "controller restart", "broker failover", "broker restart")
TIMEOUT = "timeout"
METADATA_REQUESTS = 50
PROGRESS_EVERY_S = 30.0  # how often a step waiting for acknowledgements logs its progress
PRODUCERS = 8  # the acknowledgement steps' producers (Acker): connections per broker
METADATA_VERSION = 12  # served by both (Kafka 3.9: up to 12)
RECORD = b"x" * 100
LATENESS = "wirekafka_event_loop_lateness"


@dataclass
class Lateness:
    """One broker's wirekafka_event_loop_lateness families at one scrape."""

    buckets: list[tuple[float, float]]  # (le, cumulative count), +Inf last
    max_seconds: float


@dataclass
class Snapshot:
    """What a step's figures are deltas of: ZooKeeper's packet counts and the bench's own
    ZooKeeper requests, each wirekafka broker's lateness (None: not answering)."""

    received: int
    sent: int
    own_requests: int
    lateness: dict[int, Lateness | None]


@dataclass
class SideResult:
    name: str
    seconds: dict[str, Value] = field(default_factory=dict)  # metric -> seconds, TIMEOUT, or None (not run)
    metadata_ms: list[float] = field(default_factory=list)
    rss_max_mb: float | None = None
    led_partitions: int | None = None
    packets: dict[str, tuple[int, int]] = field(default_factory=dict)  # step -> (received, sent)
    lateness: dict[str, str] = field(default_factory=dict)             # step -> "node: p99 / max" text
    problems: list[str] = field(default_factory=list)                  # ERROR lines in the brokers' logs


# -- ZooKeeper -------------------------------------------------------------------------------

class ZkReads:
    """The bench's reads of one cluster's chroot, counted: mntr's packets are the whole server's,
    and this bench's polls (one request, one answer each) must not be billed to the cluster."""

    def __init__(self, view: ZkView) -> None:
        self.view = view
        self.requests = 0

    def controller(self) -> int:
        self.requests += 1
        return self.view.controller()

    def states(self, partitions: Sequence[Partition]) -> dict[Partition, dict | None]:
        """Every partition's state znode, the reads pipelined (10,000 one by one take seconds)."""
        self.requests += len(partitions)
        pending = [(p, self.view.zk.get_async(f"/brokers/topics/{p[0]}/partitions/{p[1]}/state")) for p in partitions]
        out: dict[Partition, dict | None] = {}
        for p, answer in pending:
            try:
                got = answer.get(timeout=60)
            except Exception:  # noqa: BLE001 - NoNode until the controller wrote it
                got = None
            out[p] = json.loads(got[0]) if got else None
        return out

    def wait_all(self, partitions: Sequence[Partition], done: Callable[[dict], bool], deadline: float,
                 what: str) -> bool:
        """Poll the partitions not yet ``done`` until none is left (True) or the deadline."""
        left = list(partitions)
        while True:
            states = self.states(left)
            left = [p for p in left if (s := states[p]) is None or not done(s)]
            if not left:
                return True
            if time.monotonic() > deadline:
                log.warning("timed out waiting for %s: %d partitions left, e.g. %s", what, len(left), left[0])
                return False
            time.sleep(max(0.2, len(left) / 20_000))


def has_leader(state: dict) -> bool:
    return state["leader"] >= 0


def isr_full(state: dict) -> bool:
    return len(state["isr"]) == REPLICATION


def zk_packets(server: zookeeper.ZooKeeperServer) -> tuple[int, int]:
    """zk_packets_received and zk_packets_sent from mntr (each mntr adds 1 and 2 itself)."""
    figures = dict(line.split("\t", 1) for line in server.four_letter("mntr", timeout=10).splitlines() if "\t" in line)
    return int(figures["zk_packets_received"]), int(figures["zk_packets_sent"])


# -- clients -----------------------------------------------------------------------------------

class Acker:
    """``producers`` producers (acks=all, not idempotent, linger 5 ms) that get a record
    acknowledged on each partition they are given, each partition always through the same one,
    producing to each explicitly and again after a failed delivery, until a deadline. Each call
    has its own delivery callback, so a late report of an earlier call's record never counts for
    a later one.

    Several producers, because librdkafka puts one partition in a ProduceRequest and Kafka answers
    a connection's requests one at a time (it reads the next only once the last is answered): with
    one connection per broker, Kafka 3.9.1 at N=10,000 got about 500 partitions acknowledged per
    30 s, the other records timing out in the producer's queue (librdkafka's message.timeout.ms).
    Spread over PRODUCERS connections per broker, the step waits less on one connection's turns."""

    def __init__(self, bootstrap: str, producers: int = PRODUCERS) -> None:
        self.producers = [Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                                    "linger.ms": 5, "message.timeout.ms": 30_000, "log_level": 3,
                                    "queue.buffering.max.messages": 1_000_000}) for _ in range(producers)]

    def _producer_of(self, tp: Partition) -> Producer:
        return self.producers[tp[1] % len(self.producers)]

    def ack_every(self, partitions: Sequence[Partition], t0: float, deadline: float) -> Value:
        """Seconds from ``t0`` until every partition acknowledged a record sent now or later."""
        pending = set(partitions)
        failed: list[Partition] = []
        errors: collections.Counter[str] = collections.Counter()  # failed deliveries by error, for the progress lines

        def delivered(err: KafkaError | None, msg: Message) -> None:
            tp = (msg.topic() or "", msg.partition() or 0)
            if err is None:
                pending.discard(tp)
            elif tp in pending:
                failed.append(tp)
                errors[err.name()] += 1

        to_send = list(partitions)
        report_at = time.monotonic() + PROGRESS_EVERY_S
        while pending and time.monotonic() < deadline:
            if time.monotonic() >= report_at:  # a long step says how far it got, and what fails
                log.info("%d of %d partitions acknowledged after %.0fs; failed deliveries so far: %s",
                         len(partitions) - len(pending), len(partitions), time.monotonic() - t0,
                         dict(errors.most_common(5)) or "none")
                report_at += PROGRESS_EVERY_S
            later: list[Partition] = []
            for tp in to_send:
                try:
                    self._producer_of(tp).produce(tp[0], RECORD, partition=tp[1], on_delivery=delivered)
                except (BufferError, KafkaException):  # a full queue; a partition not in its metadata yet
                    later.append(tp)
            for producer in self.producers[1:]:
                producer.poll(0)
            self.producers[0].poll(0.2 if later else 0.05)  # the one wait of the pass
            to_send = later + [tp for tp in dict.fromkeys(failed) if tp in pending]
            failed.clear()
        if pending:
            log.warning("%d partitions without an acknowledged record, e.g. %s", len(pending), next(iter(pending)))
            return TIMEOUT
        return time.monotonic() - t0

    def close(self) -> None:
        for producer in self.producers:
            producer.purge()
            producer.flush(5)


def metadata_round_trips(address: str, count: int = METADATA_REQUESTS) -> list[float]:
    """Milliseconds from sending a Metadata request for all topics to its answer's last byte, one
    request at a time on one connection; no decoding."""
    host, port = address.rsplit(":", 1)
    times: list[float] = []
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        for correlation_id in range(1, count + 1):
            request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False)
            request.API_VERSION = METADATA_VERSION
            request.with_header(correlation_id=correlation_id, client_id="bench-scale")
            frame = bytes(request.encode(header=True, framed=True))
            t0 = time.perf_counter()
            sock.sendall(frame)
            (size,) = struct.unpack(">i", _exact(sock, 4))
            _exact(sock, size)
            times.append((time.perf_counter() - t0) * 1000)
    return times


def _exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between the closest ranks (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# -- event-loop lateness (wirekafka's /metrics) -------------------------------------------------

_SAMPLE = re.compile(rf'^({LATENESS}_\w+?)(?:\{{le="([^"]+)"\}})? (\S+)$')


def scrape_lateness(url: str) -> Lateness | None:
    """The two lateness families of one broker, None if it does not answer (killed)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            text = answer.read().decode()
    except OSError:
        return None
    buckets: list[tuple[float, float]] = []
    worst = 0.0
    for line in text.splitlines():
        if not line.startswith(LATENESS) or not (m := _SAMPLE.match(line)):
            continue
        name, le, value = m.groups()
        if name == f"{LATENESS}_seconds_bucket":
            buckets.append((float(le), float(value)))
        elif name == f"{LATENESS}_max_seconds":
            worst = float(value)
    return Lateness(buckets, worst) if buckets else None


def lateness_text(before: Lateness | None, after: Lateness | None) -> str:
    """"p99 / max" in ms over a step: the p99 as Prometheus's histogram_quantile interpolates it in
    the step's bucket deltas; the max is the max gauge when the step raised it, else at most the
    highest bucket the step reached ("≤"). A broker restarted in the step counts from zero."""
    if after is None:
        return "down"
    if before is None or after.buckets[-1][1] < before.buckets[-1][1]:
        before = Lateness([(le, 0.0) for le, _ in after.buckets], 0.0)
    delta = [(le, a - b) for (le, a), (_, b) in zip(after.buckets, before.buckets)]
    total = delta[-1][1]
    if total <= 0:
        return "no samples"
    target, lower, below = 0.99 * total, 0.0, 0.0
    p99 = lower
    for le, cumulative in delta:
        if cumulative >= target:
            p99 = lower if le == float("inf") else lower + (le - lower) * (target - below) / (cumulative - below)
            break
        lower, below = le, cumulative
    if after.max_seconds > before.max_seconds:
        worst = f"{after.max_seconds * 1000:.1f}"
    else:
        reached = next(le for le, c in delta if c >= total)
        worst = "> 5000" if reached == float("inf") else f"≤{reached * 1000:g}"
    return f"{p99 * 1000:.1f} / {worst}"


# -- one side -----------------------------------------------------------------------------------

class ScaleRun:
    """The five steps on one fresh, started cluster (see the module docstring)."""

    def __init__(self, cluster: Cluster, zk_server: zookeeper.ZooKeeperServer, metrics_urls: dict[int, str],
                 timeout: float) -> None:
        self.cluster = cluster
        self.zk_server = zk_server
        self.view = ZkView(zk_server.connect_string, cluster.chroot)
        self.reads = ZkReads(self.view)
        self.metrics_urls = metrics_urls
        self.timeout = timeout
        self.result = SideResult(cluster.name)
        self.acker: Acker | None = None

    def close(self) -> None:
        if self.acker is not None:
            self.acker.close()
            self.acker = None  # the producer goes now, not reconnecting to brokers being stopped
        self.view.close()

    def snapshot(self) -> Snapshot:
        received, sent = zk_packets(self.zk_server)
        return Snapshot(received, sent, self.reads.requests,
                        {n: scrape_lateness(url) for n, url in self.metrics_urls.items()})

    def finish(self, step: str, before: Snapshot) -> None:
        after = self.snapshot()
        own = after.own_requests - before.own_requests
        self.result.packets[step] = (after.received - before.received - own - 1, after.sent - before.sent - own - 2)
        if self.metrics_urls:
            self.result.lateness[step] = "; ".join(f"{n}: {lateness_text(before.lateness[n], after.lateness[n])}"
                                                   for n in self.metrics_urls)
        log.info("%s: %s done: %s; ZooKeeper packets received/sent %s; loop lateness p99 / max ms %s",
                 self.cluster.name, step, {k: v for k, v in self.result.seconds.items()},
                 self.result.packets[step], self.result.lateness.get(step, "-"))

    def run(self, partitions: int, topic_partitions: int) -> None:
        controller = cluster_rows.wait_cluster_ready(self.cluster, self.view, timeout=120)
        self.acker = Acker(self.cluster.bootstrap)
        every = self.create(controller, partitions, topic_partitions)
        self.result.metadata_ms = metadata_round_trips(self.cluster.address(NODES[0]))
        log.info("%s: Metadata round trips in the order sent, ms: %s", self.cluster.name,
                 " ".join(f"{ms:.1f}" for ms in self.result.metadata_ms))
        self.result.rss_max_mb = max((mb for pid in _pids(self.cluster) if (mb := rss_mb(pid)) is not None),
                                     default=None)
        if self.result.seconds.get("acked") == TIMEOUT:
            log.warning("%s: not every partition acknowledged a record; no failovers", self.cluster.name)
            return
        if self.fail_controller(every):
            self.fail_busiest_broker(every)

    def create(self, controller: int, partitions: int, topic_partitions: int) -> list[Partition]:
        run = uuid.uuid4().hex[:6]
        sizes = [min(topic_partitions, partitions - start) for start in range(0, partitions, topic_partitions)]
        topics = [NewTopic(f"scale-{run}-{i:04d}", n, REPLICATION, config=TOPIC_CONFIG) for i, n in enumerate(sizes)]
        every = [(t.topic, p) for t, n in zip(topics, sizes) for p in range(n)]
        admin = AdminClient({"bootstrap.servers": self.cluster.address(controller), "log_level": 3})
        before = self.snapshot()
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        # 100 topics a request (one request up to 10,000 partitions); the brokers answer once the
        # topics' leaders are elected (librdkafka's operation_timeout), or REQUEST_TIMED_OUT
        futures = [f for batch in range(0, len(topics), 100)
                   for f in admin.create_topics(topics[batch:batch + 100], operation_timeout=self.timeout,
                                                request_timeout=self.timeout + 30).values()]

        def answered_then_ack() -> Value:
            """The acknowledgements start once CreateTopics is answered: a producer that asked
            for a topic's metadata before could have it auto-created with one partition."""
            try:
                for future in futures:
                    future.result(timeout=max(1.0, deadline - time.monotonic()))
                self.result.seconds["answered"] = time.monotonic() - t0
            except (TimeoutError, KafkaException) as exc:
                error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
                if isinstance(error, KafkaError) and error.code() not in (KafkaError.REQUEST_TIMED_OUT,
                                                                          KafkaError._TIMED_OUT):
                    raise
                log.warning("%s: CreateTopics not answered in time: %s", self.cluster.name, exc)
                self.result.seconds["answered"] = TIMEOUT
            assert self.acker is not None
            return self.acker.ack_every(every, t0, deadline)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            acked = pool.submit(answered_then_ack)
            led = self.reads.wait_all(every, has_leader, deadline, "a leader for every partition")
            self.result.seconds["leaders"] = time.monotonic() - t0 if led else TIMEOUT
            self.result.seconds["acked"] = acked.result()
        self.finish("create", before)
        return every

    def fail_controller(self, every: list[Partition]) -> bool:
        assert self.acker is not None
        controller = self.reads.controller()
        before = self.snapshot()
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        self.cluster.kill(controller)
        log.info("%s: killed the controller, broker %d", self.cluster.name, controller)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            acked = pool.submit(self.acker.ack_every, every, t0, deadline)
            while (new := self.reads.controller()) in (-1, controller) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.result.seconds["new controller"] = time.monotonic() - t0 if new not in (-1, controller) else TIMEOUT
            self.result.seconds["controller acked"] = acked.result()
        self.finish("controller failover", before)
        return self.restart(controller, "controller restart", every)

    def fail_busiest_broker(self, every: list[Partition]) -> None:
        assert self.acker is not None
        controller = self.reads.controller()
        leaders = {p: s["leader"] for p, s in self.reads.states(every).items() if s is not None}
        victim = max((n for n in NODES if n != controller), key=lambda n: sum(v == n for v in leaders.values()))
        led = [p for p, leader in leaders.items() if leader == victim]
        self.result.led_partitions = len(led)
        before = self.snapshot()
        t0 = time.monotonic()
        self.cluster.kill(victim)
        log.info("%s: killed broker %d, leader of %d partitions (controller %d)", self.cluster.name, victim, len(led),
                 controller)
        self.result.seconds["broker acked"] = self.acker.ack_every(led, t0, t0 + self.timeout)
        self.finish("broker failover", before)
        self.restart(victim, "broker restart", every)

    def restart(self, node: int, step: str, every: list[Partition]) -> bool:
        """Whether the broker came back (the next step needs all three)."""
        before = self.snapshot()
        t0 = time.monotonic()
        try:
            self.cluster.restart(node, timeout=self.timeout)
        except RuntimeError as exc:  # did not answer within the timeout, or exited
            log.warning("%s: broker %d did not come back: %s", self.cluster.name, node, str(exc)[:2000])
            self.result.seconds[step] = TIMEOUT
            self.finish(step, before)
            return False
        log.info("%s: broker %d answers again after %.1fs", self.cluster.name, node, time.monotonic() - t0)
        full = self.reads.wait_all(every, isr_full, t0 + self.timeout, "every ISR full")
        self.result.seconds[step] = time.monotonic() - t0 if full else TIMEOUT
        self.finish(step, before)
        return True


def _pids(cluster: Cluster) -> Iterator[int]:
    if isinstance(cluster, cluster_rows.WirekafkaClusterRun):
        yield from (b.proc.pid for b in cluster.cluster.brokers.values() if b.proc is not None)
    elif isinstance(cluster, cluster_rows.KafkaClusterRun):
        yield from (k.proc.pid for k in cluster.nodes.values() if k.proc is not None)


# -- the row -------------------------------------------------------------------------------------

def run_side(make: Callable[[dict[int, dict[str, str]]], Cluster], zk_server: zookeeper.ZooKeeperServer,
             partitions: int, topic_partitions: int, timeout: float, metrics: bool, logs_to: Path) -> SideResult:
    """One fresh cluster (with each broker's metrics endpoint on a free port when ``metrics``):
    started, measured, stopped, its brokers' logs copied into ``logs_to``."""
    ports = port_pool.free_ports(len(NODES)) if metrics else []
    urls = {n: f"http://127.0.0.1:{port}/metrics" for n, port in zip(NODES, ports)}
    cluster = make({n: {"wirekafka.metrics.listener": f"127.0.0.1:{port}"} for n, port in zip(NODES, ports)})
    workloads.settle_writeback()
    cluster.start()
    result = SideResult(cluster.name)
    try:
        run = ScaleRun(cluster, zk_server, urls, timeout)
        result = run.result
        try:
            run.run(partitions, topic_partitions)
        finally:
            run.close()
    except Exception as exc:  # noqa: BLE001 - the steps done so far are still reported
        log.exception("cluster-scale on %s stopped", cluster.name)
        result.problems.append(f"stopped early by {type(exc).__name__}: {exc}")
    result.problems += cluster_rows.log_problems(cluster)
    try:
        cluster.stop()
    except Exception as exc:  # noqa: BLE001 - a broker that crashed by itself: its log's tail
        result.problems.append(f"stopping the cluster: {type(exc).__name__}: {str(exc)[:2000]}")
    keep_logs(cluster, logs_to)
    drop_chroot(zk_server, cluster.chroot)
    return result


def keep_logs(cluster: Cluster, into: Path) -> None:
    """Copy the brokers' logs out of the side's directory, which bench_row removes for its disk:
    a slow step is diagnosed from them (a 164 s controller failover whose logs went with the
    directory could only be explained by reading the code). They stay with the work directory
    (--keep or --workdir)."""
    into.mkdir(parents=True, exist_ok=True)
    for node, path in cluster.log_paths().items():
        try:
            shutil.copyfile(path, into / f"broker-{node}.log")
        except OSError as exc:
            log.warning("%s broker %d: its log was not kept: %s", cluster.name, node, exc)


def drop_chroot(zk_server: zookeeper.ZooKeeperServer, chroot: str) -> None:
    """Delete a stopped cluster's znodes: ZooKeeper (128 MB heap) holds every znode in memory, and
    the next cluster should not run beside tens of thousands of the last one's."""
    client = KazooClient(hosts=zk_server.connect_string)
    try:
        client.start(timeout=15)
        t0 = time.monotonic()
        client.delete(chroot, recursive=True)
        log.info("deleted %s from ZooKeeper in %.1fs", chroot, time.monotonic() - t0)
    except Exception as exc:  # noqa: BLE001 - only memory is at stake
        log.warning("could not delete %s from ZooKeeper: %s", chroot, exc)
    finally:
        client.stop()
        client.close()


#: (result key, metric, better): the seconds rows, in the table's order.
SECONDS_ROWS = [
    ("answered", "CreateTopics sent -> answered (once the leaders are elected), s", "lower"),
    ("leaders", "create -> every partition has a leader in ZooKeeper, s", "lower"),
    ("acked", "create -> one acks=all record acknowledged on every partition, s", "lower"),
    ("new controller", "kill -9 of the controller -> a new one in ZooKeeper, s", "lower"),
    ("controller acked", "kill -9 of the controller -> every partition acked (records sent after the kill), s",
     "lower"),
    ("controller restart", "controller restarted -> every ISR full (3) in ZooKeeper, s", "lower"),
    ("broker acked", "kill -9 of the non-controller leading most -> every partition it led acked, s", "lower"),
    ("broker restart", "that broker restarted -> every ISR full (catch-up), s", "lower"),
]


def put(report: Report, workload: str, r: SideResult, timeout: float) -> None:
    for key, metric, better in SECONDS_ROWS:
        value = r.seconds.get(key)
        report.set(workload, metric, r.name, f"timeout ({timeout:g} s)" if value == TIMEOUT else value, better, 2)
    report.set(workload, f"Metadata (all topics, one broker) p50, ms ({len(r.metadata_ms)} requests)", r.name,
               percentile(r.metadata_ms, 50), "lower", 2)
    report.set(workload, f"Metadata (all topics, one broker) p99, ms ({len(r.metadata_ms)} requests)", r.name,
               percentile(r.metadata_ms, 99), "lower", 2)
    report.set(workload, "broker RSS after creation, max of the 3, MB", r.name, r.rss_max_mb, "lower", 0)
    report.set(workload, "partitions led by the broker killed in the broker failover", r.name, r.led_partitions, "", 0)
    for step in STEPS:
        if step in r.packets:
            report.set(workload, f"ZooKeeper packets received: {step}", r.name, r.packets[step][0], "lower", 0)
    for step in STEPS:
        if step in r.lateness:
            report.set(workload, f"event-loop lateness p99 / max per broker, ms: {step}", r.name, r.lateness[step],
                       "", 0)
    for problem in r.problems:
        report.note(f"{workload} on {r.name}: {problem}")
    if r.packets:
        report.note(f"{workload} on {r.name}: ZooKeeper packets received / sent per step (less the bench's own "
                    "reads): " + "; ".join(f"{s} {rec:,} / {sent:,}" for s, (rec, sent) in r.packets.items()))


def bench_row(report: Report, zk_server: zookeeper.ZooKeeperServer, workdir: Path, partition_counts: Sequence[int],
              topic_partitions: int, timeout: float, sides: Sequence[str], kafka_heap: str) -> None:
    """The cluster-scale row of scripts/bench.py: per partition count, each of `sides` (wirekafka
    then Kafka, with kafka_heap each) on a fresh cluster in a directory removed afterwards but for
    its brokers' logs (`<side>-scale-<N>-logs`)."""
    # each broker holds a replica of every partition: about one open file each on both brokers
    # (measured at 300 partitions: 320 open on a wirekafka broker, 450 on a Kafka one)
    netprobe.ensure_nofile(max(partition_counts) * 3 // 2 + 2048)
    if "kafka" in sides and kafka_heap != cluster_rows.KAFKA_HEAP:
        report.note(f"cluster-scale: each Kafka broker ran with a {kafka_heap} heap (-Xmx), not the header's")
    for partitions in partition_counts:
        topics = -(-partitions // topic_partitions)
        workload = (f"cluster-scale N={partitions:,}: {topics} topics of up to {topic_partitions} partitions, "
                    "replication 3, min.insync.replicas=2")
        for side in [s for s in ("wirekafka", "kafka") if s in sides]:
            where = workdir / f"{side}-scale-{partitions}"

            def make(overrides: dict[int, dict[str, str]], where: Path = where, side: str = side) -> Cluster:
                if side == "wirekafka":
                    return cluster_rows.WirekafkaClusterRun(where, zk_server.connect_string, overrides)
                return cluster_rows.KafkaClusterRun(where, zk_server.connect_string, kafka_heap)

            log.info("== cluster-scale N=%d on %s", partitions, side)
            try:
                put(report, workload, run_side(make, zk_server, partitions, topic_partitions, timeout,
                                               metrics=side == "wirekafka",
                                               logs_to=where.with_name(f"{where.name}-logs")), timeout)
            except Exception as exc:  # noqa: BLE001 - reported in the table's notes
                log.exception("cluster-scale N=%d failed on %s", partitions, side)
                report.note(f"cluster-scale N={partitions:,} failed on {side}: {type(exc).__name__}: {exc}")
            finally:
                shutil.rmtree(where, ignore_errors=True)
    report.note("cluster-scale: each step's seconds are polled in ZooKeeper (pipelined reads of the partitions not "
                "yet done, every 0.2 s or more) or counted from delivery reports; ZooKeeper packets are mntr's "
                "zk_packets_received over the step less the bench's own reads; event-loop lateness is wirekafka's "
                "1 ms timer (wirekafka_event_loop_lateness_seconds) over the step, per broker as 'broker: p99 / max', "
                "'≤' when the step did not raise the broker's worst since start, 'down' when it was killed. "
                "wirekafka's brokers run with their metrics endpoint on for it, its timer costing each about 7 % "
                "of a core (docs/metrics.md); each cluster's znodes are deleted after it.")
