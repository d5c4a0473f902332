"""Log compaction (cleanup.policy=compact): what the log cleaner leaves of a compacted topic, read
back with Fetch and ListOffsets once cleaning has settled.

How the scenarios stay deterministic on both brokers:
- Segments roll by segment.ms, which Kafka measures with record timestamps (the incoming batch's
  max timestamp minus the segment's first batch timestamp): every batch is produced over the
  wire with explicit CreateTime timestamps, and each segment's batches lie a minute after the
  previous segment's, so the segment layout is the same wherever the clock stands. The
  timestamps are fixed (November 2023; Kafka accepts any past timestamp by default), so the
  records read back carry the same timestamps on both brokers.
- The cleaner looks for work every log.cleaner.backoff.ms (1 s in both brokers'
  server.properties, scripts/realkafka.py). A round that started while segments were still
  being produced would leave traces that depend on timing (a tombstone kept by an early round
  keeps its delete horizon in its batch after a later round removed it), so a topic is created
  with min.cleanable.dirty.ratio=1, which no log exceeds, and set to 0.01 once every segment is
  written: each phase of a scenario is cleaned by exactly one round.
- Reads are polled until that round is done, and only the settled read is recorded
  (wire.poll): every cleanable segment holds a record that supersedes an older one, so a read
  with no repeated key below the active segment shows the round covered all of them.
- What a cleaner stamps into a batch is normalised by conformance/harness/compare.py: the delete horizon
  (its clock + delete.retention.ms, in the base timestamp) and the bytes of a re-compressed
  batch (each broker's compression library); the records are compared whole, decoded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from conformance.harness.scenarios import fetch, list_offsets, produce
from conformance.harness.wire import Connection, create_topic, poll, retry_transient, unique
from wirekafka.protocol import records

T0 = 1_700_000_000_000   # the first segment's first timestamp
SEGMENT_STEP_MS = 60_000  # from one segment's timestamps to the next one's
SEGMENT_MS = 30_000
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
EARLIEST, LATEST = -2, -1

Rec = tuple[str, str | None, list[tuple[str, bytes | None]]]  # key, value (None: tombstone), headers


@dataclass(frozen=True)
class Batch:
    codec: int
    records: list[Rec]
    idempotent: bool = False  # written by the scenario's idempotent producer (sequence 0)


def _compact_topic(conn: Connection, delete_retention_ms: int) -> str:
    """A compacted topic that is never dirty enough to clean until _start_cleaning."""
    name = unique()
    create_topic(conn, name, configs={
        "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1", "segment.ms": str(SEGMENT_MS),
        "delete.retention.ms": str(delete_retention_ms)})
    return name


def _start_cleaning(conn: Connection, topic: str) -> None:
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[R(resource_type=2, resource_name=topic, configs=[
        R.AlterableConfig(name="min.cleanable.dirty.ratio", config_operation=0, value="0.01")])],
        validate_only=False)
    assert conn.call(req, 1).responses[0].error_code == 0


def _value(v: str | None) -> bytes | None:
    """A value long enough that every codec shrinks the batch (the producer's builder sends a
    batch uncompressed when compressing would not save space)."""
    return None if v is None else f"{v}:{'x' * 60}".encode()


def _encode(batch: Batch, timestamp: int, producer: tuple[int, int] = (-1, -1)) -> bytes:
    pid, epoch = producer if batch.idempotent else (-1, -1)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=batch.codec, is_transactional=False,
                                        producer_id=pid, producer_epoch=epoch,
                                        base_sequence=0 if batch.idempotent else -1, batch_size=2**31 - 1)
    for i, (key, value, headers) in enumerate(batch.records):
        builder.append(i, timestamp=timestamp + i, key=key.encode(),
                       value=_value(value), headers=headers)
    return bytes(builder.build())


def _produce_segments(conn: Connection, topic: str, segments: list[list[Batch]], first_segment: int = 0,
                      producer: tuple[int, int] = (-1, -1)) -> list[int]:
    """Produce each segment's batches (one request each); returns each segment's base offset.
    A segment's batches are 10 ms apart, the segments SEGMENT_STEP_MS apart: each first batch of
    a segment rolls the log."""
    bases = []
    for s, batches in enumerate(segments, start=first_segment):
        for b, batch in enumerate(batches):
            res = produce(conn, topic, _encode(batch, T0 + s * SEGMENT_STEP_MS + 10 * b, producer))
            assert res.error_code == 0, res
            if b == 0:
                bases.append(res.base_offset)
    return bases


def _read(conn: Connection, topic: str) -> tuple[list[Any], list[tuple[int, str, str | None, list]]]:
    """Fetch from offset 0 to the high watermark (a fetch reads one segment at most): the answers
    and the records they hold as (offset, key, value, headers)."""
    answers, out, offset = [], [], 0
    while True:
        part = fetch(conn, topic, offset)
        assert part.error_code == 0, part
        answers.append(part)
        data = bytes(part.records or b"")
        for start, end in records.split_batches(data):
            header = records.parse_header(data, start)
            offset = header.next_offset
            for r in records.iter_records(data[start:end]):
                out.append((r.offset, r.key.decode(), None if r.value is None else r.value.decode().split(":")[0],
                            [(k, v) for k, v in r.headers]))
        if not data or offset >= part.high_watermark:
            return answers, out


def _batches(answers: list[Any]) -> list[records.BatchHeader]:
    out = []
    for part in answers:
        data = bytes(part.records or b"")
        out += [records.parse_header(data, start) for start, _ in records.split_batches(data)]
    return out


def _repeated_keys(read: list[tuple[int, str, str | None, list]], below: int) -> set[str]:
    seen: set[str] = set()
    repeated = set()
    for offset, key, _, _ in read:
        if offset < below:
            (repeated if key in seen else seen).add(key)
    return repeated


def _settled_read(conn: Connection, topic: str, done) -> tuple[list[Any], list[tuple[int, str, str | None, list]]]:
    """Poll the whole read until `done(records)`; only the settled read is recorded."""
    result = poll(lambda: _read(conn, topic), lambda r: done(r[1]), timeout=60, interval=0.5)
    assert done(result[1]), f"cleaning did not settle within 60 s: {result[1]}"
    return result


def _init_idempotent(conn: Connection) -> tuple[int, int]:
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                producer_epoch=-1)
    res = retry_transient(lambda: conn.call(req, 4), lambda r: r.error_code)
    assert res.error_code == 0, res
    return res.producer_id, res.producer_epoch


H1 = [("src", b"s0")]
H2 = [("h1", b"x"), ("h2", None)]

# Offsets (in brackets) as produced; the comments name what the cleaner must do with each batch.
UPDATES: list[list[Batch]] = [
    [Batch(NONE, [("k1", "a", []), ("k2", "a", H1), ("k3", "a", [])]),             # [0-2] all superseded: gone
     Batch(GZIP, [("k1", "b", []), ("k4", "b", H2), ("k5", "b", [])])],            # [3-5] all superseded: gone
    [Batch(LZ4, [("k2", "c", H1), ("k6", "c", []), ("k1", None, [])]),             # [6-8] k2 stays, re-compressed
     Batch(NONE, [("k3", "d", []), ("k10", "d", [])], idempotent=True)],           # [9-10] emptied, kept: the
    #                                                                                 producer's last batch
    [Batch(ZSTD, [("k4", "e", H2), ("k5", None, []), ("k8", "e", [])]),            # [11-13] k8 goes, tombstone
     Batch(NONE, [("k15", None, []), ("k16", "w", H1)]),                           # [14-15] kept whole, with a
     #                                                                                delete horizon
     Batch(SNAPPY, [("k1", "f", []), ("k6", "f", H1), ("k9", None, [])])],         # [16-18] all kept, horizon
    [Batch(NONE, [("k3", "g", []), ("k10", "g", H2), ("k7", "g", []), ("k13", "g", [])]),  # [19-22] k7 goes:
     #                                                                                rebuilt, no horizon
     Batch(GZIP, [("k8", "h", []), ("k8", "i", H1), ("k11", None, []), ("k7", "z", [])])],  # [23-26] first k8
    #                                                                                 goes, horizon
    [Batch(NONE, [("k2", "j", []), ("k12", "j", H2)])],                            # [27-28] active: not cleaned
]


def test_compaction_keeps_the_latest_record_of_each_key(target):
    """Keys updated many times across segments, tombstones, headers, every compression codec,
    an idempotent producer's batch: once the cleaner has cleaned everything below the active
    segment, each key's latest record is left there (tombstones too: delete.retention.ms is a
    day), the active segment is untouched, and the offsets, log start and log end are unchanged."""
    with Connection(target.bootstrap) as conn:
        topic = _compact_topic(conn, delete_retention_ms=86_400_000)
        producer = _init_idempotent(conn)
        bases = _produce_segments(conn, topic, UPDATES, producer=producer)
        assert bases == [0, 6, 11, 19, 27]
        active = bases[-1]
        _start_cleaning(conn, topic)
        answers, read = _settled_read(conn, topic, lambda rs: not _repeated_keys(rs, active))
        assert [(o, k, v) for o, k, v, _ in read] == [
            (6, "k2", "c"), (11, "k4", "e"), (12, "k5", None), (14, "k15", None), (15, "k16", "w"),
            (16, "k1", "f"), (17, "k6", "f"), (18, "k9", None), (19, "k3", "g"), (20, "k10", "g"),
            (22, "k13", "g"), (24, "k8", "i"), (25, "k11", None), (26, "k7", "z"), (27, "k2", "j"),
            (28, "k12", "j")]
        assert {o: h for o, _, _, h in read}[17] == H1
        empty = [b for b in _batches(answers) if b.records_count == 0]
        assert [(b.base_offset, b.last_offset, b.producer_id) for b in empty] == [(9, 10, producer[0])]
        assert list_offsets(conn, topic, EARLIEST).offset == 0
        assert list_offsets(conn, topic, LATEST).offset == 29
        # The first record at or after a time: a removed record's time finds the next survivor.
        assert list_offsets(conn, topic, T0 + 1).offset == 6
        assert list_offsets(conn, topic, T0 + SEGMENT_STEP_MS + 1).offset == 11
        assert list_offsets(conn, topic, T0 + 3 * SEGMENT_STEP_MS + 10).offset == 24


TOMBSTONES: list[list[Batch]] = [
    [Batch(NONE, [("k1", "a", []), ("k2", "a", H1), ("k3", "a", [])]),             # [0-2]
     Batch(GZIP, [("k4", "b", H2), ("k5", "b", [])])],                             # [3-4]
    [Batch(NONE, [("k1", None, []), ("k2", "c", [])]),                             # [5-6]
     Batch(LZ4, [("k3", None, []), ("k6", None, [])])],                            # [7-8]
    [Batch(ZSTD, [("k4", None, H1), ("k7", "d", [])]),                             # [9-10]
     Batch(NONE, [("k2", "e", [])])],                                              # [11]
    [Batch(SNAPPY, [("k5", None, []), ("k8", "f", [])])],                          # [12-13]
    [Batch(NONE, [("k7", None, []), ("k9", "g", [])])],                            # [14-15] active at first
]
AFTER_HORIZON: list[list[Batch]] = [[Batch(NONE, [("k8", "h", []), ("k10", None, [])])]]  # [16-17]


def test_compaction_removes_tombstones_after_delete_retention(target):
    """A tombstone the cleaner kept gets a delete horizon (delete.retention.ms after that round);
    a later round — which runs only when the log has new dirty data — removes the tombstones
    whose horizon has passed, and with them every trace of their keys. Tombstones that round
    sees for the first time stay, with a horizon of their own."""
    retention_ms = 2_000
    with Connection(target.bootstrap) as conn:
        topic = _compact_topic(conn, delete_retention_ms=retention_ms)
        bases = _produce_segments(conn, topic, TOMBSTONES)
        assert bases == [0, 5, 9, 12, 14]
        _start_cleaning(conn, topic)
        # The first round: superseded records go, tombstones stay and get a delete horizon.
        _, read = _settled_read(conn, topic, lambda rs: not _repeated_keys(rs, bases[-1]))
        assert [(o, k, v) for o, k, v, _ in read] == [
            (5, "k1", None), (7, "k3", None), (8, "k6", None), (9, "k4", None), (10, "k7", "d"), (11, "k2", "e"),
            (12, "k5", None), (13, "k8", "f"), (14, "k7", None), (15, "k9", "g")]
        time.sleep(retention_ms / 1000 + 1)  # every horizon set so far has passed
        (active,) = _produce_segments(conn, topic, AFTER_HORIZON, first_segment=len(TOMBSTONES))
        assert active == 16
        expired = {k for batches in TOMBSTONES[:-1] for b in batches for k, v, _ in b.records if v is None}
        answers, read = _settled_read(conn, topic, lambda rs: not _repeated_keys(rs, active) and not any(
            v is None and k in expired for o, k, v, _ in rs if o < bases[-1]))
        assert [(o, k, v) for o, k, v, _ in read] == [
            (11, "k2", "e"), (13, "k8", "f"), (14, "k7", None), (15, "k9", "g"), (16, "k8", "h"), (17, "k10", None)]
        assert list_offsets(conn, topic, EARLIEST).offset == 0
        assert list_offsets(conn, topic, LATEST).offset == 18
