"""confluent-kafka workloads: throughput (produce then consume back) and fixed-rate latency.

Every load is bounded twice: by a record count and by a deadline; whatever was acked or read by
the deadline is what the figure is computed from (and the shortfall is logged). Records go
round-robin over the partitions, and every client is connected (and has its producer id) before
its clock starts, so the figures are about moving data, not about client start-up.

Throughput producers run with ``delivery.report.only.error``: the Python callback per record would
otherwise bound both brokers at the client (2 cores, one of them the broker's). A record counts as
acked when it was produced, reported no error and was no longer queued after ``flush()``.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.benchlib.brokers import Broker, cpu_seconds, stored_bytes

log = logging.getLogger(__name__)

#: How many distinct payloads are cycled through: ~2 MB of 1 KB records, more than one 1 MB batch,
#: and prime, so round-robin over any partition count still gives each partition every payload
#: in turn: compression never sees the same record twice in a batch.
PAYLOAD_POOL = 2053
#: A one-partition topic every producer writes one record to before its clock starts.
WARM_TOPIC = "bench-warm-up"


@dataclass(frozen=True)
class LoadSpec:
    """One throughput configuration; rows vary one field from :data:`BASE`."""

    record_size: int = 1024
    partitions: int = 3
    producers: int = 1
    acks: str = "all"
    compression: str = "none"
    records: int = 200_000

    @property
    def idempotent(self) -> bool:
        # librdkafka refuses enable.idempotence with acks other than all.
        return self.acks == "all"


BASE = LoadSpec()


@dataclass(frozen=True)
class ProducedTopic:
    """A throughput row's topic on one broker, as produce_topic left it."""

    topic: str
    produce_mbps: float
    acked: int


@dataclass(frozen=True)
class Read:
    """One read of a whole topic by read_back."""

    mbps: float
    broker_cpu: float | None  # the broker's CPU seconds during the read
    records: int
    payload_bytes: int


@dataclass(frozen=True)
class LatencyResult:
    samples_ms: list[float]
    sent: int

    def percentile(self, p: float) -> float | None:
        """Nearest-rank percentile (p in 0..100); None without samples."""
        if not self.samples_ms:
            return None
        ordered = sorted(self.samples_ms)
        rank = max(1, -(-len(ordered) * p // 100))  # ceil
        return ordered[int(rank) - 1]


def make_payloads(size: int, count: int = PAYLOAD_POOL, seed: int = 42) -> list[bytes]:
    """``count`` distinct text payloads of exactly ``size`` bytes, the same on every run.

    Words drawn from a small vocabulary: compressible like real event data (random bytes would
    make the lz4/zstd rows measure nothing but CPU; one repeated value would compress absurdly)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(512)]
    payloads = []
    for i in range(count):
        words = [f"{i:08d}"]
        length = len(words[0])
        while length < size:
            word = rng.choice(vocabulary)
            words.append(word)
            length += len(word) + 1
        payloads.append(" ".join(words).encode()[:size])
    return payloads


def new_topic_name(prefix: str) -> str:
    return f"bench-{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int, timeout: float = 30.0, replication: int = 1,
                 config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    topic = NewTopic(name, partitions, replication, config=config or {})
    admin.create_topics([topic], operation_timeout=timeout)[name].result(timeout)
    wait_for_leaders(bootstrap, name, partitions, timeout)


def ensure_topic(bootstrap: str, name: str, partitions: int, timeout: float = 30.0) -> None:
    """Create ``name`` unless it exists; either way return once it has its leaders."""
    try:
        create_topic(bootstrap, name, partitions, timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
        wait_for_leaders(bootstrap, name, partitions, timeout)


def wait_for_leaders(bootstrap: str, topic: str, partitions: int, timeout: float) -> None:
    """Block until every partition of ``topic`` has a leader (Kafka elects them asynchronously).

    A Metadata request that fails as a whole is asked again until the deadline (logged): in a
    cluster, a broker that has not yet seen a topic another broker just created may answer so
    (wirekafka's cluster mode answers TOPIC_ALREADY_EXISTS for the whole request then)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    deadline = time.monotonic() + timeout
    while True:
        try:
            md = admin.list_topics(topic, timeout=max(1.0, deadline - time.monotonic())).topics.get(topic)
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise
            log.warning("Metadata for %s failed, asking again: %s", topic, exc)
            time.sleep(0.1)
            continue
        if (md is not None and md.error is None and len(md.partitions) == partitions
                and all(p.leader >= 0 and p.error is None for p in md.partitions.values())):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no leader for every partition after {timeout:g}s")
        time.sleep(0.1)


def delete_topic(bootstrap: str, name: str) -> None:
    """Best effort: keeps disk and page cache from growing row after row."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    try:
        admin.delete_topics([name], operation_timeout=30)[name].result(30)
    except KafkaException as exc:
        log.warning("could not delete topic %s: %s", name, exc)


def _producer_config(bootstrap: str, spec: LoadSpec, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "acks": spec.acks, "enable.idempotence": spec.idempotent,
            "compression.type": spec.compression, "linger.ms": 5, "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000, "log_level": 3, **extra}


class _Errors:
    """Counts failed deliveries across producer threads (delivery callbacks run in poll/flush)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: KafkaError | None = None
        self._lock = threading.Lock()

    def on_delivery(self, err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            with self._lock:
                self.count += 1
                self.first = self.first or err


def produce(bootstrap: str, topic: str, spec: LoadSpec, payloads: list[bytes], deadline: float) -> tuple[float, int]:
    """Send ``spec.records`` records from ``spec.producers`` Producers, one thread each; every
    Producer has its own librdkafka instance, connections and producer id, as separate
    applications would (the Python threads feeding them share the GIL).

    Returns (seconds from the common start to the last producer's final delivery report, acked)."""
    errors = _Errors()
    producers = [Producer(_producer_config(bootstrap, spec, **{"delivery.report.only.error": True,
                                                                "on_delivery": errors.on_delivery}))
                 for _ in range(spec.producers)]
    for p in producers:
        _ready(p, bootstrap, topic)
    shares = [spec.records // spec.producers + (i < spec.records % spec.producers) for i in range(spec.producers)]
    acked = [0] * spec.producers
    failures: list[BaseException] = []
    start = threading.Barrier(spec.producers + 1)

    def run(i: int) -> None:
        start.wait()
        try:
            produced = _send(producers[i], topic, spec.partitions, payloads, shares[i], offset=i * 7919,
                             deadline=deadline)
            left = producers[i].flush(max(0.5, deadline - time.monotonic()))
            acked[i] = produced - left
        except Exception as exc:  # noqa: BLE001 - re-raised on the calling thread below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"producer-{i}") for i in range(spec.producers)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if failures:
        raise failures[0]
    total = sum(acked) - errors.count
    if errors.count:
        log.warning("%d deliveries failed, first: %s", errors.count, errors.first)
    if total < spec.records:
        log.warning("only %d of %d records acked before the deadline", total, spec.records)
    return elapsed, total


def _ready(producer: Producer, bootstrap: str, topic: str) -> None:
    """Bring a new producer to its steady state before the clock starts: one acked record to a
    side topic opens the connection to the leader (librdkafka's bootstrap connection is a separate
    one) and, if idempotent, gets the producer id. Without it a run can include librdkafka's
    500 ms producer-id retry timer, whichever broker it talks to."""
    ensure_topic(bootstrap, WARM_TOPIC, 1)
    producer.produce(WARM_TOPIC, b"warm-up")
    if producer.flush(30):
        raise TimeoutError("warm-up record not acknowledged within 30s")
    producer.list_topics(topic, timeout=10)


def _send(producer: Producer, topic: str, partitions: int, payloads: list[bytes], count: int, offset: int,
          deadline: float) -> int:
    """produce() ``count`` records, backing off while librdkafka's queue is full; the count sent.

    Records go round-robin over the partitions, so every partition gets its share at any size.
    (librdkafka's sticky partitioner for keyless records would put a small run into one
    partition, and a consumer's fetch would then long-poll the empty ones.)"""
    pool = len(payloads)
    for i in range(count):
        value = payloads[(offset + i) % pool]
        partition = (offset + i) % partitions
        while True:
            try:
                producer.produce(topic, value, partition=partition)
                break
            except BufferError:
                producer.poll(0.005)
                if time.monotonic() > deadline:
                    return i
        if i & 1023 == 0:
            producer.poll(0)
            if time.monotonic() > deadline:
                return i + 1
    return count


CONSUMER_QUEUE_BACKOFF_MS = 10  # see consume(); reported with the table's settings
CONSUME_READS = 9  # reads of each throughput row's topic, interleaved across brokers (bench.py)
# produces of each throughput row, interleaved across brokers (bench.py): one produce of 500 MB
# took 0.6 s or 1.3 s on the same broker depending on whether the VM's host had already backed the
# page cache's new pages with memory (see docs/perf/BENCHMARKS.md), so one sample can decide a row
PRODUCE_RUNS = 3


def consume(bootstrap: str, topic: str, partitions: int, expected: int, deadline: float,
            isolation: str = "read_uncommitted", partition_fetch_bytes: int | None = None) -> tuple[float, int, int]:
    """Read ``topic`` from the beginning with one assign()ed consumer until ``expected`` records.

    Returns (seconds, records, payload bytes). The clock starts once the consumer is connected to
    the leader (a ListOffsets goes there first), so it covers fetching, not the client's start-up.

    ``fetch.queue.backoff.ms`` is lowered from librdkafka's 1,000 ms: a broker that fills the
    client's prefetch queue (``queued.max.messages.kbytes``) faster than this Python loop drains it
    otherwise makes librdkafka stop fetching for a whole second, and a 500 MB read (~0.6 s of
    consuming) took either ~0.6 s or ~1.6 s depending on whether that pause fell inside it, on
    both brokers. The row is meant to measure the broker, not that pause.

    ``partition_fetch_bytes`` sets ``max.partition.fetch.bytes`` (librdkafka's default: 1 MiB), so
    that fewer, larger fetches show the broker's cost per request apart from its cost per byte."""
    config = {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
              "enable.auto.commit": False, "fetch.max.bytes": 50 * 1024 * 1024, "log_level": 3,
              "fetch.queue.backoff.ms": CONSUMER_QUEUE_BACKOFF_MS, "isolation.level": isolation}
    if partition_fetch_bytes is not None:
        config["max.partition.fetch.bytes"] = partition_fetch_bytes
    consumer = Consumer(config)
    try:
        consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got = nbytes = 0
        t0 = time.perf_counter()
        while got < expected and time.monotonic() < deadline:
            # consume() waits for the full count or the timeout: never ask for more than is left.
            for msg in consumer.consume(min(10_000, expected - got), 0.5):
                if msg.error() is None:
                    got += 1
                    nbytes += len(msg.value())
        elapsed = time.perf_counter() - t0
    finally:
        consumer.close()
    if got < expected:
        log.warning("only %d of %d records consumed before the deadline", got, expected)
    return elapsed, got, nbytes


def settle_writeback() -> None:
    """Write every dirty page back to disk (sync(2)), so what runs next does not share the machine
    with the kernel's writeback of what ran before."""
    t0 = time.monotonic()
    os.sync()
    log.info("sync: dirty pages written back in %.1fs", time.monotonic() - t0)


def produce_topic(broker: Broker, spec: LoadSpec, payloads: list[bytes], timeout: float) -> ProducedTopic:
    """Create a topic and produce ``spec`` into it; the caller reads it back and deletes it."""
    topic = new_topic_name("tput")
    create_topic(broker.bootstrap, topic, spec.partitions)
    seconds, acked = produce(broker.bootstrap, topic, spec, payloads, time.monotonic() + timeout)
    log.info("%s: %d records (%.1f MB payload) acked in %.2fs; %.1f MB of segments on disk", broker.name, acked,
             acked * spec.record_size / 1e6, seconds, stored_bytes(broker, topic) / 1e6)
    return ProducedTopic(topic, acked * spec.record_size / seconds / 1e6, acked)


def read_back(broker: Broker, produced: ProducedTopic, partitions: int, timeout: float,
              isolation: str = "read_uncommitted", partition_fetch_bytes: int | None = None) -> Read:
    """One whole read of ``produced`` with one consumer, and the broker's CPU during it."""
    cpu0 = cpu_seconds(broker.pid)
    seconds, records, nbytes = consume(broker.bootstrap, produced.topic, partitions, produced.acked,
                                       time.monotonic() + timeout, isolation, partition_fetch_bytes)
    cpu1 = cpu_seconds(broker.pid)
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    log.info("%s: %d records (%.1f MB payload) consumed in %.2fs, broker CPU %s s", broker.name, records,
             nbytes / 1e6, seconds, "?" if cpu is None else f"{cpu:.2f}")
    return Read(nbytes / seconds / 1e6, cpu, records, nbytes)


def cpu_per_gb(reads: list[Read]) -> float | None:
    """The broker's CPU seconds per GB (1e9 bytes) of record payload delivered over these reads:
    its consume cost, which the MB/s rows cannot show while one Python client bounds both brokers.
    Summed, not per read: /proc counts CPU in 10 ms ticks, a few dozen in one read."""
    if not reads or any(r.broker_cpu is None for r in reads):
        return None
    delivered = sum(r.payload_bytes for r in reads)
    return sum(r.broker_cpu or 0.0 for r in reads) / (delivered / 1e9) if delivered else None


def median_read(reads: list[Read]) -> Read:
    return sorted(reads, key=lambda r: r.mbps)[len(reads) // 2]


def warm_up(bootstrap: str, payloads: list[bytes], timeout: float = 120.0) -> None:
    """First use of a fresh broker, outside any figure: a small produce and read back, and the
    first group-coordinator lookup (every consumer here has a group.id, which librdkafka requires,
    and the first lookup creates __consumer_offsets with its 50 partitions)."""
    spec = replace(BASE, records=1000)
    topic, acked = fill_topic(bootstrap, spec, payloads, timeout)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-warm-up", "log_level": 3})
    deadline = time.monotonic() + timeout
    try:
        while True:  # OffsetFetch needs the coordinator; Kafka loads it a moment after creating it
            try:
                consumer.committed([TopicPartition(topic, 0)], timeout=max(1.0, deadline - time.monotonic()))
                break
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise
                log.debug("coordinator not ready: %s", exc)
                time.sleep(0.2)
    finally:
        consumer.close()
    consume(bootstrap, topic, spec.partitions, acked, time.monotonic() + timeout)
    delete_topic(bootstrap, topic)


def fill_topic(bootstrap: str, spec: LoadSpec, payloads: list[bytes], timeout: float) -> tuple[str, int]:
    """A new topic holding ``spec``'s records (produced untimed); returns (topic, acked)."""
    topic = new_topic_name("data")
    create_topic(bootstrap, topic, spec.partitions)
    _, acked = produce(bootstrap, topic, spec, payloads, time.monotonic() + timeout)
    return topic, acked


def latency(bootstrap: str, rate: float, seconds: float, size: int, payloads: list[bytes], replication: int = 1,
            topic_config: dict[str, str] | None = None) -> LatencyResult:
    """Send 1 KB records at a fixed ``rate`` for ``seconds`` (acks=all, idempotent, linger 0) and
    time each from produce() to its delivery report. The topic (3 partitions) is created with
    ``replication`` and ``topic_config`` (a cluster row: 3 and min.insync.replicas=2).

    Sends follow a fixed schedule (not "next after the previous ack"), so a slow ack does not
    lower the offered load; the time is measured from the actual send."""
    spec = replace(BASE, record_size=size)
    topic = new_topic_name("latency")
    create_topic(bootstrap, topic, spec.partitions, replication=replication, config=topic_config)
    samples: list[float] = []
    producer = Producer(_producer_config(bootstrap, spec, **{"linger.ms": 0}))
    try:
        producer.produce(topic, payloads[0])  # warm-up: connection, metadata, producer id
        producer.flush(10)
        count = int(rate * seconds)
        interval = 1.0 / rate
        pool = len(payloads)
        next_send = time.perf_counter()
        for i in range(count):
            while (wait := next_send - time.perf_counter()) > 0.001:
                producer.poll(wait)  # serves delivery reports as they arrive, without spinning
            sent_at = time.perf_counter()

            def on_delivery(err: KafkaError | None, _msg: object, sent_at: float = sent_at) -> None:
                if err is None:
                    samples.append((time.perf_counter() - sent_at) * 1000)

            producer.produce(topic, payloads[i % pool], partition=i % spec.partitions, on_delivery=on_delivery)
            producer.poll(0)
            next_send += interval
        left = producer.flush(30)
        if left:
            log.warning("%d latency records still unacknowledged after 30s", left)
    finally:
        delete_topic(bootstrap, topic)
    return LatencyResult(samples, int(rate * seconds))
