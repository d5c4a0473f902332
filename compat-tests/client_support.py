"""Shared pieces of the stock-client compatibility tests: deterministic record sets, readers that
consume a topic back with each of the three Python clients into one comparable shape, the
checks every scenario repeats (byte-identical records at dense offsets), and a look at the
batches a live broker wrote to disk (to see codecs, producer ids, sequences and exact batch
sizes), and a single raw request for exchanges no client API can express exactly.

Every loop here is bounded by a deadline; a reader that runs out of time returns what it has
and the caller's assertions say what is missing."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import struct
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from wirekafka.protocol import records as wire

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_ATTRIBUTE = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # a batch's attributes & 7
DEFAULT_MESSAGE_MAX_BYTES = 1048588  # Kafka's message.max.bytes default
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Rec:
    """A record as produced: what a consumer must get back, byte for byte."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


@dataclass(frozen=True)
class Got:
    """A record as consumed, normalised across clients."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int
    timestamp_type: str


def now_ms() -> int:
    return int(time.time() * 1000)


# ---- record sets ---------------------------------------------------------------------------
def _value(rng: random.Random, i: int) -> bytes:
    """Mixed compressible text and random bytes, 0..~1.5 KB, so every codec has work to do."""
    text = (b"record %d of a compatibility run; " % i) * rng.randint(0, 30)
    return text + rng.randbytes(rng.randint(0, 500))


def _headers(rng: random.Random, i: int, null_header_values: bool) -> Headers:
    kind = i % 4
    if kind == 0:
        return ()
    if kind == 1:
        return (("trace-id", b"%032x" % rng.getrandbits(128)),)
    if kind == 2:  # several headers, a repeated key (order matters), binary and empty values
        return (("h1", bytes(range(256))), ("h2", b""), ("h1", rng.randbytes(17)), ("ünïcode", "välue".encode()))
    return (("nullable", None),) if null_header_values else (("binary", b"\x00\xff\x00"),)


def make_records(n: int, partitions: int, *, seed: int, base_ts: int | None = None, step_ms: int = 10,
                 null_header_values: bool = False, null_key_and_value: bool = True) -> list[Rec]:
    """n records spread round-robin over partitions, with keys, null keys, null values and
    headers in a fixed mix, and increasing CreateTime timestamps base_ts + i*step_ms.
    Null header values and records with neither key nor value are only for clients that can
    send them (kafka-python and aiokafka refuse the latter)."""
    rng = random.Random(seed)
    base = now_ms() - 600_000 if base_ts is None else base_ts
    out = []
    for i in range(n):
        key = None if i % 5 == 1 else (b"key-%d" % i if i % 2 else rng.randbytes(rng.randint(1, 40)))
        value = None if i % 7 == 3 else _value(rng, i)
        if key is None and value is None and not null_key_and_value:
            key = b""
        out.append(Rec(i % partitions, key, value, _headers(rng, i, null_header_values), base + i * step_ms))
    return out


def by_partition(recs: Iterable[Rec]) -> dict[int, list[Rec]]:
    out: dict[int, list[Rec]] = defaultdict(list)
    for r in recs:
        out[r.partition].append(r)
    return dict(out)


def counts(recs: Iterable[Rec]) -> dict[int, int]:
    return {p: len(rs) for p, rs in by_partition(recs).items()}


def big_payload(n: int, fill: int) -> bytes:
    """n bytes, distinct per fill value, half of them a repeated byte and half a byte ramp."""
    half = n // 2
    return bytes([fill]) * half + (bytes(range(256)) * (n // 256 + 1))[: n - half]


# ---- checks ----------------------------------------------------------------------------------
def assert_dense_offsets(acks: Sequence[tuple[int, int]], sent: Sequence[Rec],
                         start: dict[int, int] | None = None) -> None:
    """Producer acknowledgements (partition, offset), in send order, are start..start+n-1 per partition."""
    assert len(acks) == len(sent)
    next_offset = dict(start or {})
    for (partition, offset), rec in zip(acks, sent):
        assert partition == rec.partition
        expected = next_offset.get(partition, 0)
        assert offset == expected, f"partition {partition}: acknowledged offset {offset}, expected {expected}"
        next_offset[partition] = expected + 1


def assert_same_records(got: Sequence[Got], sent: Sequence[Rec], timestamp_type: str = CREATE_TIME,
                        start: dict[int, int] | None = None) -> None:
    """got holds exactly sent (per partition, in order) at dense offsets, byte-identical in key,
    value, headers and (for CreateTime) timestamp."""
    expected = by_partition(sent)
    actual: dict[int, list[Got]] = defaultdict(list)
    for g in got:
        actual[g.partition].append(g)
    assert sorted(actual) == sorted(expected), f"partitions {sorted(actual)} != {sorted(expected)}"
    for p, recs in expected.items():
        gs = sorted(actual[p], key=lambda g: g.offset)
        first = (start or {}).get(p, 0)
        assert [g.offset for g in gs] == list(range(first, first + len(recs))), f"partition {p} offsets"
        for g, r in zip(gs, recs):
            assert (g.key, g.value, g.headers) == (r.key, r.value, r.headers), f"partition {p} offset {g.offset}"
            assert g.timestamp_type == timestamp_type, f"partition {p} offset {g.offset}"
            if timestamp_type == CREATE_TIME:
                assert g.timestamp == r.timestamp, f"partition {p} offset {g.offset}"


def expected_offset_for_time(recs: Sequence[Rec], target: int) -> int | None:
    """Kafka's ListOffsets rule: the earliest offset whose timestamp is >= target, if any."""
    return next((i for i, r in enumerate(recs) if r.timestamp >= target), None)


def time_probes(recs: Sequence[Rec]) -> list[int]:
    """Timestamps worth asking offsets_for_times about: before the first record, each of a
    sample of records exactly, between neighbours, and after the last."""
    stamps = sorted({r.timestamp for r in recs})
    probes = [stamps[0] - 1000, stamps[0] - 1, stamps[-1], stamps[-1] + 1, stamps[-1] + 60_000]
    for ts in stamps[:: max(1, len(stamps) // 15)]:
        probes += [ts, ts + 1, ts - 1]
    return probes


# ---- readers ---------------------------------------------------------------------------------
def _need_more(have: dict[int, int], want: dict[int, int]) -> bool:
    return any(have.get(p, 0) < n for p, n in want.items())


def _end_offsets(want: dict[int, int], start: dict[int, int] | None) -> dict[int, int]:
    """Per partition, the offset one past the last expected record."""
    return {p: (start or {}).get(p, 0) + n for p, n in want.items()}


def read_confluent(bootstrap: str, topic: str, want: dict[int, int], *, start: dict[int, int] | None = None,
                   timeout: float = 30.0) -> list[Got]:
    """Consume want[p] records from each partition p (from offset start[p], default 0) with
    librdkafka, assigned partitions and no group offsets."""
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": False,
                         "logger": logging.getLogger("librdkafka.consumer")})
    end = _end_offsets(want, start)
    consumer.assign([TopicPartition(topic, p, (start or {}).get(p, 0)) for p in want])
    got: list[Got] = []
    have: dict[int, int] = defaultdict(int)
    deadline = time.monotonic() + timeout
    try:
        while _need_more(have, want) and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                if msg.error():
                    raise AssertionError(f"consumer error {msg.error()}")
                ts_type, ts = msg.timestamp()
                got.append(Got(msg.partition(), msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ()),
                               ts, LOG_APPEND_TIME if ts_type == TIMESTAMP_LOG_APPEND_TIME else CREATE_TIME))
                if msg.offset() < end[msg.partition()]:
                    have[msg.partition()] += 1
    finally:
        consumer.close()
    return got


def read_kafka_python(bootstrap: str, topic: str, want: dict[int, int], *, start: dict[int, int] | None = None,
                      timeout: float = 30.0) -> list[Got]:
    """The same with kafka-python (no group: assign and seek)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    end = _end_offsets(want, start)
    tps = {p: TopicPartition(topic, p) for p in want}
    consumer.assign(list(tps.values()))
    for p, tp in tps.items():
        consumer.seek(tp, (start or {}).get(p, 0))
    got: list[Got] = []
    have: dict[int, int] = defaultdict(int)
    deadline = time.monotonic() + timeout
    try:
        while _need_more(have, want) and time.monotonic() < deadline:
            for tp, batch in consumer.poll(timeout_ms=500).items():
                for m in batch:
                    got.append(Got(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()), m.timestamp,
                                   LOG_APPEND_TIME if m.timestamp_type == 1 else CREATE_TIME))
                    if m.offset < end[m.partition]:
                        have[m.partition] += 1
    finally:
        consumer.close()
    return got


def read_aiokafka(bootstrap: str, topic: str, want: dict[int, int], *, start: dict[int, int] | None = None,
                  timeout: float = 30.0) -> list[Got]:
    """The same with aiokafka, on a private event loop."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Got]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        end = _end_offsets(want, start)
        try:
            tps = {p: TopicPartition(topic, p) for p in want}
            consumer.assign(list(tps.values()))
            for p, tp in tps.items():
                consumer.seek(tp, (start or {}).get(p, 0))
            got: list[Got] = []
            have: dict[int, int] = defaultdict(int)
            deadline = time.monotonic() + timeout
            while _need_more(have, want) and time.monotonic() < deadline:
                for tp, batch in (await consumer.getmany(timeout_ms=500)).items():
                    for m in batch:
                        got.append(Got(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()), m.timestamp,
                                       LOG_APPEND_TIME if m.timestamp_type == 1 else CREATE_TIME))
                        if m.offset < end[m.partition]:
                            have[m.partition] += 1
            return got
        finally:
            await consumer.stop()

    return asyncio.run(run())


# ---- one protocol request on a plain socket ------------------------------------------------------
def recv_exact(s: socket.socket, n: int) -> bytes:
    """Exactly n bytes from s; ConnectionError if the broker closes first."""
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


def raw_call(broker, request: Any, response_cls: Any, correlation_id: int = 1) -> Any:
    """Send one request built with kafka-python's protocol classes (at the version it was
    built with) and decode the answer: for exchanges no client API can express exactly."""
    version = request.version
    request.with_header(correlation_id=correlation_id, client_id="compat-tests")
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.settimeout(10)
        s.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", recv_exact(s, 4))
        payload = recv_exact(s, size)
    assert struct.unpack(">i", payload[:4])[0] == correlation_id
    flexible = response_cls.flexible_version_q(version)  # response header v1: one empty tag buffer
    return response_cls.decode(payload[4 + flexible:], version=version)


# ---- the log on disk -------------------------------------------------------------------------
def log_batches(data_dir: Path, topic: str, partition: int) -> list[wire.BatchHeader]:
    """Headers of every batch in a partition's segment files, in offset order (the broker
    writes each batch with one write call, so a batch is either wholly there or not yet)."""
    out = []
    for path in sorted((Path(data_dir) / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        pos = 0
        while pos + wire.HEADER_SIZE <= len(data):
            header = wire.parse_header(data, pos)
            if pos + header.size > len(data):
                break
            out.append(header)
            pos += header.size
    return out


def active_segment(data_dir: Path, topic: str, partition: int) -> Path:
    return sorted((Path(data_dir) / f"{topic}-{partition}").glob("*.log"))[-1]


# ---- sizing a record to an exact batch size ---------------------------------------------------
def _varint_len(n: int) -> int:
    z = (n << 1) ^ (n >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def single_record_batch_size(key_len: int, value_len: int) -> int:
    """Bytes of an uncompressed v2 batch holding one record without headers (as stored,
    including the 12-byte offset and length prefix)."""
    body = 1 + 1 + 1 + _varint_len(key_len) + key_len + _varint_len(value_len) + value_len + 1
    return wire.HEADER_SIZE + _varint_len(body) + body


def value_len_for_batch(batch_size: int, key_len: int) -> int:
    """The value length that makes a one-record uncompressed batch exactly batch_size bytes."""
    for value_len in range(batch_size - wire.HEADER_SIZE, batch_size - wire.HEADER_SIZE - 32, -1):
        if single_record_batch_size(key_len, value_len) == batch_size:
            return value_len
    raise ValueError(f"no value length gives a {batch_size}-byte batch")


def assert_one_idempotent_producer_on_disk(broker, topic: str, recs) -> None:
    """Every stored batch comes from one producer id/epoch, with sequences equal to offsets and
    no gaps: the broker stored each idempotent batch exactly once."""
    producer_ids = set()
    for partition, prs in by_partition(recs).items():
        batches = log_batches(broker.data_dir, topic, partition)
        assert len(batches) > 1
        producer_ids |= {(b.producer_id, b.producer_epoch) for b in batches}
        sequence = 0
        for b in batches:  # sequences run on without gaps or repeats across the partition
            assert b.base_sequence == sequence == b.base_offset
            sequence += b.records_count
        assert sequence == len(prs)
    [(pid, epoch)] = producer_ids
    assert pid >= 0 and epoch == 0  # a fresh producer id starts at epoch 0
