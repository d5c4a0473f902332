"""Durability of a live wirekafka process on its own data directory: a clean restart keeps
topics, configs, records and offsets; SIGKILL while an idempotent acks=all producer is
writing loses no acknowledged record and duplicates none; a log damaged after a crash
(garbage appended, last batch torn in half) is recovered to its last valid batch.

Each test owns its broker (broker_factory), restarts it on the same data dir and port, and
bounds every wait with a deadline."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from client_support import (
    LOG_APPEND_TIME,
    Rec,
    active_segment,
    assert_dense_offsets,
    assert_same_records,
    by_partition,
    counts,
    expected_offset_for_time,
    log_batches,
    make_records,
    now_ms,
    raw_call,
    read_confluent,
    read_kafka_python,
    time_probes,
)
from wirekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(150)

_LOG = logging.getLogger("librdkafka")


def _conf(broker, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap, "logger": _LOG, **extra}


def create_topics(broker, topics: Sequence[NewTopic]) -> None:
    admin = AdminClient(_conf(broker))
    for name, future in admin.create_topics(list(topics)).items():
        future.result(15)


def produce(broker, topic: str, recs: Sequence[Rec], **conf: Any) -> list[Any]:
    """Produce in order with an idempotent librdkafka producer; per record the delivery report
    (partition, offset, (timestamp type, timestamp)) or its KafkaError."""
    producer = Producer(_conf(broker, **{"enable.idempotence": True, "linger.ms": 5,
                                         "batch.num.messages": 50, **conf}))
    results: list[Any] = [None] * len(recs)

    def report(i: int):
        def on_delivery(err, msg) -> None:
            results[i] = err if err is not None else (msg.partition(), msg.offset(), msg.timestamp())
        return on_delivery

    for i, r in enumerate(recs):
        producer.produce(topic, value=r.value, key=r.key, partition=r.partition, timestamp=r.timestamp,
                         headers=list(r.headers) or None, on_delivery=report(i))
        producer.poll(0)
    assert producer.flush(30) == 0
    return results


def produce_ok(broker, topic: str, recs: Sequence[Rec], **conf: Any) -> list[tuple[int, int]]:
    results = produce(broker, topic, recs, **conf)
    assert not [r for r in results if isinstance(r, KafkaError)]
    return [(p, o) for p, o, _ in results]


def watermarks(broker, topic: str, partitions: int) -> list[tuple[int, int]]:
    consumer = Consumer(_conf(broker, **{"group.id": f"wm-{topic}", "enable.auto.commit": False}))
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), 10) for p in range(partitions)]
    finally:
        consumer.close()


# ---- clean restart ---------------------------------------------------------------------------
def test_clean_restart_keeps_topics_configs_records_and_offsets(broker_factory, topic_name):
    broker = broker_factory()
    plain, special = f"{topic_name}-plain", f"{topic_name}-special"
    small = {"internal.segment.bytes": "65536"}  # several segments per partition (Kafka's internal config)
    create_topics(broker, [NewTopic(plain, 3, 1, config=small),
                           NewTopic(special, 2, 1, config={"max.message.bytes": "20000",
                                                           "message.timestamp.type": "LogAppendTime", **small})])
    first = make_records(1500, 3, seed=41, null_header_values=True)
    assert_dense_offsets(produce_ok(broker, plain, first, **{"compression.type": "zstd"}), first)
    lat = make_records(200, 2, seed=43)
    lat_results = produce(broker, special, lat, **{"batch.num.messages": 8})  # batches under 20000 bytes
    assert_dense_offsets([(p, o) for p, o, _ in lat_results], lat)
    lat_stamps = {(p, o): ts for p, o, (_, ts) in lat_results}
    assert len(list((broker.data_dir / f"{plain}-0").glob("*.log"))) > 1

    assert broker.stop() == 0, broker.log_tail()
    broker.start()

    md = AdminClient(_conf(broker)).list_topics(timeout=10)
    assert len(md.topics[plain].partitions) == 3 and len(md.topics[special].partitions) == 2
    assert watermarks(broker, plain, 3) == [(0, n) for _, n in sorted(counts(first).items())]
    assert_same_records(read_confluent(broker.bootstrap, plain, counts(first)), first)
    got = read_kafka_python(broker.bootstrap, special, counts(lat))
    assert_same_records(got, lat, timestamp_type=LOG_APPEND_TIME)
    assert {(g.partition, g.offset): g.timestamp for g in got} == lat_stamps
    # The time index came back too.
    consumer = Consumer(_conf(broker, **{"group.id": f"oft-{topic_name}", "enable.auto.commit": False}))
    try:
        part0 = by_partition(first)[0]
        for i in (0, 1, len(part0) // 2, len(part0) - 1):
            [tp] = consumer.offsets_for_times([TopicPartition(plain, 0, part0[i].timestamp)], 10)
            assert tp.offset == expected_offset_for_time(part0, part0[i].timestamp) == i
    finally:
        consumer.close()

    # Configs survived: still LogAppendTime, still a 20000-byte limit.
    [too_big] = produce(broker, special, [Rec(0, b"k", random.Random(1).randbytes(30_000), (), now_ms())])
    assert isinstance(too_big, KafkaError) and too_big.code() == KafkaError.MSG_SIZE_TOO_LARGE
    [ok] = produce(broker, special, [Rec(0, b"k", b"after restart", (), now_ms() - 3_600_000)])
    assert ok[:2] == (0, counts(lat)[0]) and ok[2][0] == TIMESTAMP_LOG_APPEND_TIME

    # New records continue the offsets densely, written by a new producer id.
    more = make_records(600, 3, seed=45)
    start = counts(first)
    assert_dense_offsets(produce_ok(broker, plain, more, **{"compression.type": "lz4"}), more, start=start)
    assert_same_records(read_confluent(broker.bootstrap, plain, counts(more), start=start), more, start=start)
    # Time look-ups span the records from before and after the restart (their times interleave).
    whole = by_partition(first)[1] + by_partition(more)[1]
    consumer = Consumer(_conf(broker, **{"group.id": f"oft2-{topic_name}", "enable.auto.commit": False}))
    try:
        for ts in time_probes(whole):
            [tp] = consumer.offsets_for_times([TopicPartition(plain, 1, ts)], 10)
            expected = expected_offset_for_time(whole, ts)
            assert tp.offset == (-1 if expected is None else expected), ts
    finally:
        consumer.close()
    assert broker.stop() == 0, broker.log_tail()


# ---- SIGKILL while producing ---------------------------------------------------------------
class NumberedProducer(threading.Thread):
    """Produces values b'%08d' % n (n = 0..total-1, partition n % partitions) with an idempotent
    acks=all producer, paced so that a crash lands mid-stream, recording every acknowledgement."""

    def __init__(self, broker, topic: str, partitions: int, total: int) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.partitions = partitions
        self.total = total
        self.conf = _conf(broker, **{"enable.idempotence": True, "acks": "all", "linger.ms": 2,
                                     "batch.num.messages": 100, "message.timeout.ms": 90_000})
        self.acks: list[tuple[int, int, bytes]] = []
        self.errors: list[KafkaError] = []
        self.unflushed = -1
        self.lock = threading.Lock()

    def acked(self) -> int:
        with self.lock:
            return len(self.acks)

    def _on_delivery(self, err, msg) -> None:
        with self.lock:
            if err is not None:
                self.errors.append(err)
            else:
                self.acks.append((msg.partition(), msg.offset(), msg.value()))

    def run(self) -> None:
        producer = Producer(self.conf)
        for n in range(self.total):
            while True:
                try:
                    producer.produce(self.topic, value=b"%08d" % n, key=b"k%d" % n, partition=n % self.partitions,
                                     on_delivery=self._on_delivery)
                    break
                except BufferError:
                    producer.poll(0.1)
            if n % 50 == 49:
                producer.poll(0.005)  # pacing: roughly 10k records a second
        self.unflushed = producer.flush(120)


def _wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_sigkill_while_producing_loses_no_acknowledged_record(broker_factory, topic_name):
    broker = broker_factory()
    # crashes land among segment rolls too (internal.segment.bytes: Kafka's internal config for small segments)
    create_topics(broker, [NewTopic(topic_name, 2, 1, config={"internal.segment.bytes": "32768"})])
    total = 20_000
    producer = NumberedProducer(broker, topic_name, 2, total)
    producer.start()
    for crash_after in (2000, 8000):  # two crashes, the second on a log recovered once already
        _wait_until(lambda: producer.acked() >= crash_after, 60, f"{crash_after} acknowledgements")
        broker.kill()
        assert producer.acked() < total, "the producer finished before the crash: nothing was tested"
        broker.start()
    producer.join(120)
    assert not producer.is_alive()
    assert producer.unflushed == 0 and not producer.errors, producer.errors[:3]

    want = {p: total // 2 for p in range(2)}
    assert watermarks(broker, topic_name, 2) == [(0, total // 2)] * 2
    got = read_confluent(broker.bootstrap, topic_name, want, timeout=60)
    stored = {(g.partition, g.offset): g.value for g in got}
    # Every acknowledged record is where its acknowledgement said, before and after the crash.
    for partition, offset, value in producer.acks:
        assert stored.get((partition, offset)) == value, (partition, offset, value)
    # Idempotence: each number exactly once, in order, in its partition.
    per_partition: dict[int, list[int]] = defaultdict(list)
    for g in sorted(got, key=lambda g: (g.partition, g.offset)):
        per_partition[g.partition].append(int(g.value))
    for p in range(2):
        assert per_partition[p] == list(range(p, total, 2))
    assert len(producer.acks) == total


# ---- idempotent producer state across restarts ----------------------------------------------
@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_producer_state_survives_restart(broker_factory, topic_name, how):
    """After a restart a retry of the producer's last batch is answered with its original
    offset, older or gapped sequences are OUT_OF_ORDER_SEQUENCE_NUMBER, and the next sequence
    appends. A clean shutdown leaves a producer snapshot, which (as Kafka's) keeps only the last
    batch: retries of the four before it are out of order, as Kafka 4.3.1 answers after either kind
    of restart. After a kill -9, wirekafka rebuilds the state by replaying the recovered segment
    and still knows all five: a superset of Kafka's duplicate detection."""
    broker = broker_factory()
    create_topics(broker, [NewTopic(topic_name, 1, 1)])
    init = raw_call(broker, InitProducerIdRequest(version=4, transactional_id=None, transaction_timeout_ms=60000,
                                                  producer_id=-1, producer_epoch=-1), InitProducerIdResponse)
    assert init.error_code == 0 and init.producer_id >= 0
    ts = now_ms()

    def batch(first_seq: int, n: int = 10) -> bytes:
        builder = DefaultRecordBatchBuilder(2, 0, False, init.producer_id, init.producer_epoch, first_seq, 1 << 20)
        for i in range(n):
            builder.append(i, timestamp=ts + first_seq + i, key=b"k", value=b"seq %d" % (first_seq + i), headers=[])
        return bytes(builder.build())

    def send(data: bytes) -> tuple[int, int]:
        T = ProduceRequest.TopicProduceData
        resp = raw_call(broker, ProduceRequest(version=9, transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
            T(name=topic_name, partition_data=[T.PartitionProduceData(index=0, records=data)])]), ProduceResponse)
        part = resp.responses[0].partition_responses[0]
        return part.error_code, part.base_offset

    batches = [batch(10 * k) for k in range(7)]
    for k in range(6):
        assert send(batches[k]) == (0, 10 * k)
    if how == "sigkill":
        broker.kill()
    else:
        assert broker.stop() == 0, broker.log_tail()
    broker.start()
    for k in range(1, 5):
        if how == "sigkill":  # replayed from the log: duplicates, answered with their offsets
            assert send(batches[k]) == (0, 10 * k)
        else:  # from the snapshot: only the last batch is known, as in Kafka
            assert send(batches[k])[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert send(batches[5]) == (0, 50)  # the last batch: a duplicate either way
    assert send(batches[0])[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # older than the five kept
    assert send(batch(70))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
    assert send(batches[6]) == (0, 60)
    assert watermarks(broker, topic_name, 1) == [(0, 70)]
    assert [(b.base_offset, b.base_sequence) for b in log_batches(broker.data_dir, topic_name, 0)] == \
        [(10 * k, 10 * k) for k in range(7)]


# ---- damaged logs --------------------------------------------------------------------------
def _crash_with_records(broker_factory, topic: str, n: int) -> tuple[Any, list[Rec]]:
    """n records in several segments, then SIGKILL."""
    broker = broker_factory()
    create_topics(broker, [NewTopic(topic, 1, 1, config={"internal.segment.bytes": "65536"})])
    recs = make_records(n, 1, seed=51, null_header_values=True)
    assert_dense_offsets(produce_ok(broker, topic, recs, **{"compression.type": "gzip"}), recs)
    assert len(list((broker.data_dir / f"{topic}-0").glob("*.log"))) > 2
    broker.kill()
    return broker, recs


def _check_recovered(broker, topic: str, kept: list[Rec]) -> None:
    """The log ends at the last valid batch, reads back whole, and takes new records next."""
    assert watermarks(broker, topic, 1) == [(0, len(kept))]
    assert_same_records(read_confluent(broker.bootstrap, topic, {0: len(kept)}), kept)
    middle = {0: len(kept) // 2}  # a read from the middle goes through the rebuilt offset index
    assert_same_records(read_kafka_python(broker.bootstrap, topic, {0: len(kept) - middle[0]}, start=middle),
                        kept[middle[0]:], start=middle)
    more = make_records(100, 1, seed=53)
    assert_dense_offsets(produce_ok(broker, topic, more), more, start={0: len(kept)})
    assert_same_records(read_confluent(broker.bootstrap, topic, {0: len(kept) + len(more)}), kept + more)
    assert broker.stop() == 0, broker.log_tail()


def _flipped_copy_of_last_batch(segment: Path, last_size: int) -> bytes:
    data = bytearray(segment.read_bytes()[-last_size:])
    data[-1] ^= 0xFF  # a CRC mismatch
    return bytes(data)


@pytest.mark.parametrize("garbage", ["zeros", "random", "corrupt-batch"])
def test_garbage_appended_to_the_active_segment_is_truncated(broker_factory, topic_name, garbage):
    broker, recs = _crash_with_records(broker_factory, topic_name, 700)
    segment = active_segment(broker.data_dir, topic_name, 0)
    batches = log_batches(broker.data_dir, topic_name, 0)
    assert len(batches) > 1 and batches[-1].next_offset == len(recs)
    tail = {"zeros": bytes(4096), "random": random.Random(7).randbytes(5000),
            "corrupt-batch": _flipped_copy_of_last_batch(segment, batches[-1].size)}[garbage]
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(tail)
    broker.start()
    assert segment.stat().st_size == size, "recovery keeps exactly the valid batches"
    _check_recovered(broker, topic_name, recs)


def test_torn_last_batch_is_truncated(broker_factory, topic_name):
    broker, recs = _crash_with_records(broker_factory, topic_name, 700)
    segment = active_segment(broker.data_dir, topic_name, 0)
    batches = log_batches(broker.data_dir, topic_name, 0)
    assert len(batches) > 1
    last = batches[-1]
    size = segment.stat().st_size
    os.truncate(segment, size - last.size + last.size // 2)
    broker.start()
    # What remains of the segment is its valid batches (an emptied segment may be dropped).
    assert (segment.stat().st_size if segment.exists() else 0) == size - last.size
    _check_recovered(broker, topic_name, recs[: last.base_offset])
