"""Exactly-once with Kafka's own Java jobs on a three-broker cluster under broker kill -9s
(issue 35), on wirekafka and on Kafka 3.9.1 (ZooKeeper mode) with the same settings:

- Kafka's TransactionalMessageCopier (org.apache.kafka.tools, the 4.3.1 client jars), one process
  per input partition as Kafka's system test transactions_test.py runs it: group mode, offsets sent
  to each transaction with the consumer's group metadata, random aborts. The copiers share one
  consumer group; each has its own transactional id, picked so that the three transaction
  coordinators are the three brokers, so that every copier's offsets reach a transaction
  coordinated elsewhere than its group (and one where they coincide). Each broker is killed once
  and restarted while they copy: the group's coordinator, then a copier's transaction coordinator,
  then an output partition's leader (or, where one of those was killed already, the broker not yet
  killed, which still coordinates a copier's transactions). A copier that exits non-zero is restarted
  (bounded), as the system test's copier service does. The output read with read_committed must
  hold each input partition's records exactly once, in order, and nothing else.
- A Kafka Streams word count with processing.guarantee=exactly_once_v2
  (compat-tests/java/WordCountEos.java): lines are written at a steady rate while three brokers
  are killed in turn (the application's group coordinator, a repartition partition's leader, an
  output partition's leader: each broker once, so whoever coordinates its transactions is hit
  too); the last committed count of every word must be exactly the number of times it occurs in
  the input.

Kills are triggered by progress (records copied, lines written), never by the clock, and every
wait polls a condition with a deadline. Before each kill every partition of every topic (the
internal ones included) has its full ISR, so no kill can leave a partition without an in-sync
replica. No broker may exit by itself. Jobs run on Java's source-file launcher and Kafka's
classpath (scripts/realkafka.py tool_command) with small heaps: the machine has two cores."""

from __future__ import annotations

import json
import logging
import select
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from conformance.harness.wire import Connection
from faults.clusters import NODES, SETTINGS as FAULT_SETTINGS, create_topic
from scripts import realkafka
from testsupport.cluster import WirekafkaCluster, every_broker_knows_the_cluster, wait_for
from testsupport.watermarks import high_watermarks
from wirekafka.broker.coordinator.group_model import partition_for

# method="thread": a client call that never returns ends the test with a stack dump
pytestmark = [pytest.mark.java, pytest.mark.zookeeper, pytest.mark.slow, pytest.mark.timeout(300, method="thread")]

log = logging.getLogger(__name__)
_LIBRDKAFKA = logging.getLogger("librdkafka")

# Both clusters run the nemesis suite's settings, with the minimum ISRs said out loud: otherwise the
# Kafka launcher's single-node defaults (min.insync.replicas and transaction.state.log.min.isr 1)
# would differ from wirekafka's, which are Kafka's own (1 and 2).
SETTINGS = {**FAULT_SETTINGS, "min.insync.replicas": "2", "transaction.state.log.min.isr": "2",
            "default.replication.factor": "3"}
INTERNAL_PARTITIONS = int(SETTINGS["offsets.topic.num.partitions"])
assert INTERNAL_PARTITIONS == int(SETTINGS["transaction.state.log.num.partitions"])
OFFSETS_TOPIC, TXN_TOPIC = "__consumer_offsets", "__transaction_state"

# One long-lived JVM per job: the client compiler alone and the serial collector keep its CPU low.
JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
WORD_COUNT = Path(__file__).resolve().parent / "java" / "WordCountEos.java"

PARTITIONS = 3
COPIER_RECORDS = 3000  # 1,000 per input partition
COPIER_TXN_SIZE = 10  # many small transactions: each kill lands among them
COPIER_RESTARTS = 5  # per copier; the system test restarts copiers without a limit
COPIER_KILLS_AT = (0.1, 0.35, 0.6)  # fractions of the records copied
STREAMS_LINES = 2400
STREAMS_RATE = 80.0  # lines a second: the input arrives over 30 s, through the kills
STREAMS_RESTARTS = 3
STREAMS_KILLS_AT = (0.2, 0.45, 0.7)  # fractions of the lines written
WORDS = tuple(f"w{n:02d}" for n in range(37))


# ---- the two kinds of cluster ------------------------------------------------------------------

class Broker(Protocol):
    def kill(self) -> None: ...
    def start(self) -> object: ...
    def alive(self) -> bool: ...


@dataclass
class Cluster:
    """A running three-broker cluster of either kind, seen the same way: its nodes, a bootstrap
    naming all of them (a client must find the others when one is down) and its ZooKeeper
    chroot, where both kinds keep Kafka's ZooKeeper layout (registrations, partition states)."""

    kind: str
    nodes: dict[int, Broker]
    bootstrap: str
    zk: KazooClient
    kills: list[int] = field(default_factory=list)
    down: set[int] = field(default_factory=set)  # killed and not yet started again

    def registered(self) -> set[int]:
        return {int(c) for c in self.zk.get_children("/brokers/ids")}

    def state(self, topic: str, partition: int) -> dict | None:
        try:
            data, _ = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        except NoNodeError:
            return None
        return json.loads(data)

    def leader(self, topic: str, partition: int) -> int:
        state = self.state(topic, partition)
        return -1 if state is None else state["leader"]

    def group_coordinator(self, group: str) -> int:
        return self.leader(OFFSETS_TOPIC, partition_for(group, INTERNAL_PARTITIONS))

    def txn_coordinator(self, transactional_id: str) -> int:
        return self.leader(TXN_TOPIC, partition_for(transactional_id, INTERNAL_PARTITIONS))

    def lagging(self) -> list[str]:
        """Every partition of every topic (internal ones included) without a leader or a full ISR."""
        short = []
        for topic in self.zk.get_children("/brokers/topics"):
            data, _ = self.zk.get(f"/brokers/topics/{topic}")
            for p, replicas in json.loads(data)["partitions"].items():
                state = self.state(topic, int(p))
                if state is None or state["leader"] < 0 or set(state["isr"]) != set(replicas):
                    short.append(f"{topic}-{p}")
        return short

    def crashed(self) -> list[int]:
        """Brokers that are not running, other than one the test killed and has not restarted yet."""
        return [n for n, b in self.nodes.items() if n not in self.down and not b.alive()]

    def bounce(self, node: int) -> None:
        """kill -9 `node`, wait until ZooKeeper drops its registration (the controller then moves
        its leaderships), start it again and wait until it registers."""
        assert not self.crashed(), f"brokers {self.crashed()} exited by themselves"
        log.info("%s: kill -9 broker %d (kill %d)", self.kind, node, len(self.kills) + 1)
        self.down.add(node)
        self.nodes[node].kill()
        self.kills.append(node)
        wait_for(lambda: node not in self.registered(), 30, f"broker {node}'s registration to expire", 0.1)
        self.nodes[node].start()
        self.down.discard(node)
        wait_for(lambda: node in self.registered(), 60, f"broker {node} to register again", 0.1)

    def wait_settled(self, timeout: float = 90.0) -> None:
        """Until every partition has a leader and its full ISR (a restarted broker caught up)."""
        wait_for(lambda: not self.lagging(), timeout, f"full ISRs on {self.kind}", 0.2)


@pytest.fixture(params=["wirekafka", pytest.param("kafka39", marks=pytest.mark.realkafka)])
def eos_cluster(request: pytest.FixtureRequest, tmp_path: Path, zookeeper: str) -> Iterator[Cluster]:
    """A three-broker wirekafka cluster or a three-broker Kafka 3.9.1 cluster, each on its own
    chroot of the session's ZooKeeper, with the same settings. The wirekafka cluster's stop fails
    the test if a broker had exited by itself."""
    if request.param == "wirekafka":
        wk = WirekafkaCluster(tmp_path, zookeeper, overrides=SETTINGS)
        with wk:
            bootstrap = ",".join(b.bootstrap for b in wk.brokers.values())
            zk = KazooClient(hosts=zookeeper + wk.chroot)
            zk.start(timeout=15)
            try:
                yield Cluster("wirekafka", dict(wk.brokers), bootstrap, zk)
            finally:
                zk.stop()
                zk.close()
        return
    chroot = f"/eos-k39-{tmp_path.name}"
    brokers = realkafka.start_zk_cluster(zookeeper + chroot, NODES, workdir=tmp_path, heap="256m",
                                         version=realkafka.KAFKA_ZK_VERSION, overrides=SETTINGS)
    zk = KazooClient(hosts=zookeeper + chroot)
    try:
        wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in brokers]), 60,
                 "every Kafka 3.9 broker naming all brokers and the controller")
        zk.start(timeout=15)
        cluster = Cluster("kafka39", {b.broker_id: b for b in brokers}, ",".join(b.bootstrap for b in brokers), zk)
        yield cluster
        assert not cluster.crashed(), f"Kafka brokers {cluster.crashed()} exited by themselves"
    finally:
        zk.stop()
        zk.close()
        realkafka.stop_all(brokers)


def _victim(cluster: Cluster, role: Callable[[], int], what: str) -> int:
    """The broker holding `role` now if it was not killed yet, else the first one never killed.
    Each broker is killed once: one never killed still holds every leadership it had at the
    start, so whichever broker coordinated the job's group or transactions then is hit while it
    does, and a broker just restarted (leading nothing yet) is never the target."""
    holder = role()
    if holder in cluster.nodes and holder not in cluster.kills:
        log.info("%s: the %s is broker %d", cluster.kind, what, holder)
        return holder
    victim = next(n for n in sorted(cluster.nodes) if n not in cluster.kills)
    log.info("%s: the %s is broker %d, killed already; killing broker %d", cluster.kind, what, holder, victim)
    return victim


def _find_coordinators(cluster: Cluster, keys: list[tuple[str, int]]) -> None:
    """FindCoordinator for each (key, key type): the first one creates __consumer_offsets or
    __transaction_state, whose leaders then decide which broker coordinates what."""
    first = next(iter(cluster.nodes.values()))
    for key, key_type in keys:
        with Connection(first.bootstrap) as conn:  # type: ignore[attr-defined]
            wait_for(lambda: conn.call(FindCoordinatorRequest(key=key, key_type=key_type), 3).error_code == 0, 60,
                     f"a coordinator for {key}", 0.2)


# ---- reading -------------------------------------------------------------------------------------

def _read(bootstrap: str, topic: str, isolation: str, timeout: float = 90.0,
          start: dict[int, int] | None = None) -> dict[int, list[tuple[str | None, str]]]:
    """Every (key, value) of each partition from `start` (else the beginning), read with
    `isolation` until the consumer reports the end at or beyond the high watermark it saw first:
    with read_committed the last stable offset caught up, so a hanging transaction is a
    TimeoutError here, never a short read."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-reader-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation, "logger": _LIBRDKAFKA})
    try:
        ends = high_watermarks(consumer, topic, range(PARTITIONS))
        firsts = start or {}
        consumer.assign([TopicPartition(topic, p, firsts.get(p, OFFSET_BEGINNING)) for p in range(PARTITIONS)])
        out: dict[int, list[tuple[str | None, str]]] = {p: [] for p in range(PARTITIONS)}
        reached = {p for p, end in ends.items() if end == 0 or firsts.get(p, -1) >= end}
        deadline = time.monotonic() + timeout
        while len(reached) < PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{isolation} read of {topic} reached the end of {sorted(reached)} only "
                                   f"(high watermarks {ends}): a transaction left open?")
            for msg in consumer.consume(500, 1.0):
                error = msg.error()
                if error is None:
                    key = msg.key()
                    out[msg.partition()].append((None if key is None else key.decode(), msg.value().decode()))
                elif error.code() == KafkaError._PARTITION_EOF and msg.offset() >= ends[msg.partition()]:
                    reached.add(msg.partition())
        return out
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset of each partition (-1001, librdkafka's invalid offset, for none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "logger": _LIBRDKAFKA})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        return {tp.partition: tp.offset for tp in got}
    finally:
        consumer.close()


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-ends-{topic}", "logger": _LIBRDKAFKA})
    try:
        return high_watermarks(consumer, topic, range(PARTITIONS))
    finally:
        consumer.close()


# ---- Kafka's TransactionalMessageCopier ------------------------------------------------------------

class Copier:
    """One copier slot: a TransactionalMessageCopier process with its own transactional id,
    restarted (at most COPIER_RESTARTS times) whenever it exits non-zero. Its stdout is JSON
    status lines; what each run reported as processed (committed) is kept."""

    def __init__(self, cluster: Cluster, args: list[str], name: str, log_path: Path) -> None:
        self.cluster, self.args, self.name, self.log_path = cluster, args, name, log_path
        self.proc: subprocess.Popen[str] | None = None
        self.restarts = 0
        self.exits: list[int] = []
        self.processed_before = 0  # by the earlier runs of this slot
        self.processed = 0  # by the current run
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        log.info("%s: starting copier %s (run %d)", self.cluster.kind, self.name, len(self.exits) + 1)
        self.processed_before += self.processed
        self.processed = 0
        with open(self.log_path, "ab") as stderr:
            self.proc = subprocess.Popen(realkafka.tool_command(COPIER, self.args, jvm_opts=JVM_OPTS),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True)
        self._reader = threading.Thread(target=self._read_status, args=(self.proc,), daemon=True,
                                        name=f"copier-{self.name}-stdout")
        self._reader.start()

    def _read_status(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with open(self.log_path, "a") as out:
            for line in proc.stdout:
                try:
                    status = json.loads(line)
                except ValueError:
                    status = {}
                if "totalProcessed" in status and proc is self.proc:
                    self.processed = max(self.processed, int(status["totalProcessed"]))
                if status.get("stage") != "ProcessLoop":  # the loop's line repeats every poll
                    out.write(line)

    def copied(self) -> int:
        return self.processed_before + self.processed

    def supervise(self) -> bool:
        """Restart the copier if it failed; True once it has exited 0."""
        assert self.proc is not None
        code = self.proc.poll()
        if code is None:
            return False
        if len(self.exits) < self.restarts + 1:
            self.exits.append(code)
            log.info("%s: copier %s exited with %d", self.cluster.kind, self.name, code)
        if code == 0:
            return True
        assert self.restarts < COPIER_RESTARTS, f"copier {self.name} failed {len(self.exits)} times:\n{self.tail()}"
        self.restarts += 1
        self.start()
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _transactional_ids(cluster: Cluster, prefix: str) -> list[str]:
    """One transactional id per broker, each coordinated by that broker (the leader of its
    __transaction_state partition): found by trying prefix-0, prefix-1, ... in order. Should
    some broker lead no partition of __transaction_state (Kafka's assignment spreads the leaders
    of its 5 partitions over all 3 brokers, but nothing here depends on it), the ids left are
    the next ones tried, coordinated wherever they are."""
    chosen: dict[int, str] = {}
    for n in range(500):
        tid = f"{prefix}-{n}"
        coordinator = cluster.txn_coordinator(tid)
        if coordinator in cluster.nodes and coordinator not in chosen:
            chosen[coordinator] = tid
            if len(chosen) == len(cluster.nodes):
                break
    tids = [chosen[node] for node in sorted(chosen)]
    if len(tids) < len(cluster.nodes):
        log.warning("%s: __transaction_state is led by brokers %s only", cluster.kind, sorted(chosen))
        tids += [t for t in (f"{prefix}-x{n}" for n in range(len(cluster.nodes))) if t not in tids]
    return tids[:len(cluster.nodes)]


def test_transactional_message_copiers_are_exactly_once_through_broker_kills(eos_cluster: Cluster,
                                                                             tmp_path: Path) -> None:
    cluster = eos_cluster
    source, sink, group = "copier-input", "copier-output", "eos-copier-group"
    create_topic(cluster.bootstrap, source, PARTITIONS)
    create_topic(cluster.bootstrap, sink, PARTITIONS)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "logger": _LIBRDKAFKA})
    for i in range(COPIER_RECORDS):
        producer.produce(source, key=b"k%d" % i, value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(60) == 0
    inputs = _read(cluster.bootstrap, source, "read_uncommitted")
    assert sum(len(records) for records in inputs.values()) == COPIER_RECORDS

    _find_coordinators(cluster, [(group, 0), (f"{group}-tx", 1)])
    cluster.wait_settled()
    tids = _transactional_ids(cluster, "eos-copier")
    log.info("%s: group %s coordinated by %d; transactional ids %s coordinated by %s", cluster.kind, group,
             cluster.group_coordinator(group), tids, [cluster.txn_coordinator(t) for t in tids])
    copiers = [Copier(cluster, ["--broker-list", cluster.bootstrap, "--input-topic", source, "--input-partition",
                                str(i), "--output-topic", sink, "--transactional-id", tid, "--consumer-group", group,
                                "--transaction-size", str(COPIER_TXN_SIZE), "--transaction-timeout", "20000",
                                "--use-group-metadata", "--group-mode", "--enable-random-aborts"],
                      tid, tmp_path / f"{tid}.log") for i, tid in enumerate(tids)]
    roles: list[tuple[Callable[[], int], str]] = [
        (lambda: cluster.group_coordinator(group), "group coordinator"),
        (lambda: cluster.txn_coordinator(tids[0]), f"transaction coordinator of {tids[0]}"),
        (lambda: cluster.leader(sink, 0), f"leader of {sink}-0"),
    ]
    done: set[int] = set()

    def supervise() -> int:
        done.update(i for i, c in enumerate(copiers) if i not in done and c.supervise())
        return sum(c.copied() for c in copiers)

    try:
        for copier in copiers:
            copier.start()
        for (role, what), fraction in zip(roles, COPIER_KILLS_AT):
            wait_for(lambda: supervise() >= fraction * COPIER_RECORDS or len(done) == len(copiers), 120,
                     f"copiers to copy {fraction:.0%} of the input", 0.1)
            assert len(done) < len(copiers), f"the copiers finished before kill {len(cluster.kills) + 1}"
            cluster.wait_settled()
            assert len(done) < len(copiers), f"the copiers finished before kill {len(cluster.kills) + 1}"
            log.info("%s: %d of %d records copied", cluster.kind, supervise(), COPIER_RECORDS)
            cluster.bounce(_victim(cluster, role, what))
        wait_for(lambda: supervise() >= 0 and len(done) == len(copiers), 150, "every copier to finish", 0.2)
        log.info("%s: copiers done, killed %s; restarts %s, exits %s", cluster.kind, cluster.kills,
                 [c.restarts for c in copiers], [c.exits for c in copiers])
    finally:
        for copier in copiers:
            copier.stop()

    ends = {p: len(records) for p, records in inputs.items()}  # the input holds no transaction
    assert _committed(cluster.bootstrap, group, source) == ends
    output = _read(cluster.bootstrap, sink, "read_committed")
    assert {p: [v for _, v in records] for p, records in output.items()} == {
        p: [v for _, v in records] for p, records in inputs.items()}, "each input record once, in order"
    assert sorted(cluster.kills) == sorted(cluster.nodes), "each broker killed once"
    assert not cluster.crashed()


# ---- Kafka Streams word count, exactly_once_v2 ----------------------------------------------------

def _line(n: int) -> str:
    """Line n of the input: 2 to 9 words of WORDS, a fixed function of n."""
    return " ".join(WORDS[(n * 7 + j * j * 3 + j) % len(WORDS)] for j in range(2 + n % 8))


class PacedProducer(threading.Thread):
    """Writes STREAMS_LINES lines at STREAMS_RATE a second (idempotent, acks=all), so that the
    application processes them through the kills; counts what was written."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name=f"paced-producer-{topic}", daemon=True)
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "logger": _LIBRDKAFKA})
        self.sent = 0
        self.failed = 0

    def _delivered(self, err, msg) -> None:  # noqa: ANN001 - librdkafka's callback
        if err is not None:
            self.failed += 1

    def run(self) -> None:
        start = time.monotonic()
        for n in range(STREAMS_LINES):
            due = start + n / STREAMS_RATE
            while (wait := due - time.monotonic()) > 0:  # never a negative timeout: librdkafka's "forever"
                self.producer.poll(min(wait, 0.05))
            self.producer.produce(self.topic, key=b"line-%d" % n, value=_line(n).encode(), on_delivery=self._delivered)
            self.producer.poll(0)
            self.sent = n + 1


class StreamsApp:
    """The word count's process, restarted (at most STREAMS_RESTARTS times) if it exits by itself."""

    def __init__(self, cluster: Cluster, args: list[str], log_path: Path) -> None:
        self.cluster, self.args, self.log_path = cluster, args, log_path
        self.proc: subprocess.Popen[str] | None = None
        self.restarts = 0
        self.exits: list[int] = []

    def start(self, timeout: float = 120.0) -> None:
        """Start it and wait until Streams is RUNNING (compiling the source and starting a JVM
        takes a while on a busy machine)."""
        with open(self.log_path, "ab") as stderr:
            self.proc = subprocess.Popen(realkafka.tool_command(str(WORD_COUNT), self.args, jvm_opts=JVM_OPTS),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline().strip() if ready else ""
        assert line == "running", f"the word count did not start in {timeout:g}s:\n{self.tail()}"

    def supervise(self) -> None:
        assert self.proc is not None
        code = self.proc.poll()
        if code is None:
            return
        self.exits.append(code)
        log.info("%s: the word count exited with %d", self.cluster.kind, code)
        assert self.restarts < STREAMS_RESTARTS, f"the word count failed {len(self.exits)} times:\n{self.tail()}"
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        """Close its stdin (it closes Streams and exits); kill it if it does not within 40 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(40)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _caught_up(bootstrap: str, app_id: str, source: str, repartition: str, input_ends: dict[int, int]) -> bool:
    """Has the application processed everything? Its input offsets are committed to the input's
    end (so every repartition record made from the input is committed: EOS v2 commits them in
    one transaction), and past its committed repartition offsets a read_committed reader finds
    no record (so the counts of every repartitioned word are committed with them)."""
    try:
        if _committed(bootstrap, app_id, source) != input_ends:
            return False
        committed = _committed(bootstrap, app_id, repartition)
        if any(offset < 0 for offset in committed.values()):
            return False
        left = _read(bootstrap, repartition, "read_committed", 60, start=committed)
    except (KafkaException, TimeoutError) as exc:  # a commit in flight (UNSTABLE_OFFSET_COMMIT): ask again
        log.info("not caught up yet: %s", exc)
        return False
    return not any(left.values())


def test_streams_exactly_once_v2_word_count_through_broker_kills(eos_cluster: Cluster, tmp_path: Path) -> None:
    cluster = eos_cluster
    app_id, source, sink = "eos-wordcount", "wordcount-input", "wordcount-output"
    repartition = f"{app_id}-words-repartition"  # named by WordCountEos's Grouped.with("words", ...)
    create_topic(cluster.bootstrap, source, PARTITIONS)
    create_topic(cluster.bootstrap, sink, PARTITIONS)
    app = StreamsApp(cluster, [cluster.bootstrap, app_id, source, sink, str(tmp_path / "streams-state")],
                     tmp_path / "wordcount.log")
    producer = PacedProducer(cluster.bootstrap, source)
    roles: list[tuple[Callable[[], int], str]] = [
        (lambda: cluster.group_coordinator(app_id), "application's group coordinator"),
        (lambda: cluster.leader(repartition, 0), f"leader of {repartition}-0"),
        (lambda: cluster.leader(sink, 1), f"leader of {sink}-1"),
    ]
    try:
        app.start()
        producer.start()
        for (role, what), fraction in zip(roles, STREAMS_KILLS_AT):
            wait_for(lambda: app.supervise() is None and producer.sent >= fraction * STREAMS_LINES, 120,
                     f"{fraction:.0%} of the lines written", 0.1)
            cluster.wait_settled()
            log.info("%s: %d of %d lines written", cluster.kind, producer.sent, STREAMS_LINES)
            # each broker once: whichever broker coordinates the application's transactions is killed too
            cluster.bounce(_victim(cluster, role, what))
        producer.join(120)
        assert not producer.is_alive()
        assert producer.producer.flush(120) == 0
        lines = _read(cluster.bootstrap, source, "read_uncommitted")
        input_ends = {p: len(records) for p, records in lines.items()}
        wait_for(lambda: app.supervise() is None and _caught_up(cluster.bootstrap, app_id, source, repartition,
                                                                input_ends),
                 150, "the word count to process every line", 0.5)
        output = _read(cluster.bootstrap, sink, "read_committed")
        log.info("%s: word count done, killed %s; app restarts %d (exits %s); %d lines not delivered",
                 cluster.kind, cluster.kills, app.restarts, app.exits, producer.failed)
    finally:
        app.stop()

    expected = Counter(word for records in lines.values() for _, line in records for word in line.split())
    assert sum(len(records) for records in lines.values()) == STREAMS_LINES - producer.failed
    last: dict[str, int] = {}
    for records in output.values():  # a word's counts all go to one partition, in order
        for word, count in records:
            assert word is not None
            last[word] = int(count)
    assert last == dict(expected)
    assert sorted(cluster.kills) == sorted(cluster.nodes), "each broker killed once"
    assert not cluster.crashed()
