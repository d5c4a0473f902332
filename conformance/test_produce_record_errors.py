"""Records the log's validator rejects (Kafka's RecordValidationException), as Kafka 4.3.1 answers
them: the whole batch is refused with the log start offset, a summary in error_message and, from
Produce v8, one record_errors entry per rejected record (its index in the batch and why).

- A compacted topic needs a key on every record: INVALID_RECORD, "One or more records have been
  rejected due to N record errors in total, and only showing the first three errors at most:
  [RecordError(batchIndex=i, message='...'), ...]", every keyless record listed in record_errors.
- A CreateTime topic checks each record's own timestamp (first timestamp + delta), not the
  header's: a record outside message.timestamp.before/after.max.ms of the broker's clock is
  INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp"; its entry
  names its timestamp, its offset in the client's batch and the allowed range (the broker's clock
  minus before.max.ms, plus after.max.ms; conformance/harness/compare.py normalises that range).
- One record has one error, the key's first; any timestamp error makes the batch
  INVALID_TIMESTAMP, with the key errors still listed.
- A client's batch claiming LogAppendTime: on a LogAppendTime topic every record is refused
  (INVALID_TIMESTAMP, the record printed as Kafka's validator read it); on a CreateTime topic
  every record reads the batch's max timestamp, refused when it is out of range or -1.
"""

from __future__ import annotations

import re
import time

import pytest

from conformance.harness.scenarios import fetch, produce
from conformance.harness.wire import Connection, create_topic, unique
from wirekafka.protocol import records

NONE, INVALID_TIMESTAMP, INVALID_RECORD = 0, 32, 87
GZIP = 1
HOUR = 3_600_000
T0 = 1_700_000_000_000  # Kafka accepts any past timestamp by default (before.max.ms unbounded)
FUTURE = 4_000_000_000_000  # 2096
# Timestamps a record error names are fixed (T0 with before.max.ms 1 h, FUTURE), so that both
# brokers word them alike; those in range are the test's clock and are never named.
INVALID_TIMESTAMP_SUMMARY = "One or more records have been rejected due to invalid timestamp"


def _batch(entries: list[tuple[bytes | None, int]], compression: int = 0) -> bytes:
    """Records with values "v0", "v1", ...; compressed ones padded to 100 bytes, which compress
    (kafka-python leaves a batch uncompressed when compressing would not make it smaller)."""
    pad = b"." * 98 if compression else b""
    data = records.build_batch([(key, b"v%d" % i + pad, ts) for i, (key, ts) in enumerate(entries)],
                               compression=compression)
    assert records.parse_header(data).compression == compression
    return data


def _claiming_log_append_time(data: bytes, max_timestamp: int) -> bytes:
    """The batch with the LogAppendTime attribute and `max_timestamp`, as only a broken or hostile
    client would send it (the CRC made right again)."""
    out = bytearray(data)
    records.set_log_append_time(out, max_timestamp)
    return bytes(out)


def _produce(conn: Connection, topic: str, created, data: bytes, version: int):
    return produce(conn, topic, data, version=version, topic_id=created.topic_id if version >= 13 else None)


def _no_key(topic: str) -> str:
    return f"Compacted topic cannot accept message without key in topic partition {topic}-0"


def _summary(errors: list[tuple[int, str]]) -> str:
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return (f"One or more records have been rejected due to {len(errors)} record errors in total, "
            f"and only showing the first three errors at most: [{shown}]")


def _refused(answer, version: int, code: int, message: str | None,
             errors: list[tuple[int, str]] | None = None) -> None:
    assert (answer.error_code, answer.base_offset, answer.log_append_time_ms) == (code, -1, -1)
    if version >= 5:
        assert answer.log_start_offset == 0
    if version >= 8:
        assert answer.error_message == message
        if errors is not None:
            assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == errors


_RANGE = re.compile(r"^Timestamp (-?\d+) of message with offset (\d+) is out of range\. "
                    r"The timestamp should be within \[(-?\d+), (-?\d+)\]$")


def _timestamp_errors(answer, before_ms: int, after_ms: int, started_ms: int) -> list[tuple[int, int, int]]:
    """(batch index, timestamp, offset) of each timestamp entry, after checking its allowed range
    is the broker's clock (between the scenario's start and now) minus before, plus after."""
    out = []
    for e in answer.record_errors:
        m = _RANGE.match(e.batch_index_error_message)
        if m is None:
            continue
        ts, offset, lo, hi = map(int, m.groups())
        assert started_ms - 5_000 <= lo + before_ms <= time.time() * 1000 + 5_000
        assert hi - lo == before_ms + after_ms
        out.append((e.batch_index, ts, offset))
    return out


@pytest.mark.parametrize("version", range(3, 14))
def test_compacted_topic_refuses_every_record_without_key(target, version):
    """Two keyless records among keyed ones: both listed, by index; keyed records alone are fine."""
    name = unique()
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, name, configs={"cleanup.policy": "compact"})
        refused = _produce(conn, name, created, _batch([(b"a", T0), (None, T0), (b"b", T0), (b"c", T0),
                                                        (None, T0 + 1)]), version)
        errors = [(1, _no_key(name)), (4, _no_key(name))]
        _refused(refused, version, INVALID_RECORD, _summary(errors), errors)
        kept = _produce(conn, name, created, _batch([(b"a", T0), (b"b", T0)]), version)
        assert (kept.error_code, kept.base_offset) == (NONE, 0)
        assert fetch(conn, name, 0).high_watermark == 2


@pytest.mark.parametrize("compression", [0, GZIP], ids=["uncompressed", "gzip"])
def test_compacted_topic_lists_every_keyless_record_but_words_three(target, compression):
    name = unique()
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, name, configs={"cleanup.policy": "compact"})
        refused = _produce(conn, name, created, _batch([(None, T0)] * 4 + [(b"k", T0), (None, T0)],
                                                       compression), 9)
        errors = [(i, _no_key(name)) for i in (0, 1, 2, 3, 5)]
        _refused(refused, 9, INVALID_RECORD, _summary(errors), errors)
        assert fetch(conn, name, 0).high_watermark == 0


@pytest.mark.parametrize("version", [3, 7, 8, 9, 12, 13])
def test_out_of_range_timestamps_are_refused_record_by_record(target, version):
    """Records too old (before.max.ms 1 h) and too new (after.max.ms, Kafka 4's default 1 h), the
    first record in range, two too-old ones before the max: every such record listed with its own
    timestamp and offset, so Kafka checks each record, not the header's first and max."""
    name = unique()
    started = int(time.time() * 1000)
    now = started
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, name, configs={"message.timestamp.before.max.ms": str(HOUR)})
        stamps = [now, T0, now + 1000, FUTURE, T0 - HOUR]
        refused = _produce(conn, name, created, _batch([(b"k%d" % i, ts) for i, ts in enumerate(stamps)]),
                           version)
        _refused(refused, version, INVALID_TIMESTAMP, INVALID_TIMESTAMP_SUMMARY)
        if version >= 8:
            assert len(refused.record_errors) == 3
            assert _timestamp_errors(refused, HOUR, HOUR, started) == [(1, stamps[1], 1), (3, stamps[3], 3),
                                                                        (4, stamps[4], 4)]
        kept = _produce(conn, name, created, _batch([(b"k", now), (b"l", now - HOUR // 2)]), version)
        assert (kept.error_code, kept.base_offset) == (NONE, 0)


@pytest.mark.parametrize("compression", [0, GZIP], ids=["uncompressed", "gzip"])
def test_a_too_old_first_record_is_refused_alone(target, compression):
    """The first record out of range, the rest (and the max timestamp) in range."""
    name = unique()
    started = int(time.time() * 1000)
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, name, configs={"message.timestamp.before.max.ms": str(HOUR)})
        refused = _produce(conn, name, created, _batch([(b"a", T0), (b"b", started)], compression), 9)
        _refused(refused, 9, INVALID_TIMESTAMP, INVALID_TIMESTAMP_SUMMARY)
        assert _timestamp_errors(refused, HOUR, HOUR, started) == [(0, T0, 0)]
        assert fetch(conn, name, 0).high_watermark == 0


def test_compacted_topic_with_bad_timestamps_is_invalid_timestamp_and_lists_both(target):
    """A keyless record is refused for its key only (even if its timestamp is out of range too);
    one timestamp error makes the whole answer INVALID_TIMESTAMP."""
    name = unique()
    started = int(time.time() * 1000)
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, name, configs={"cleanup.policy": "compact",
                                                    "message.timestamp.before.max.ms": str(HOUR)})
        refused = _produce(conn, name, created, _batch([(b"a", started), (None, T0), (b"b", T0), (None, started)]), 9)
        _refused(refused, 9, INVALID_TIMESTAMP, INVALID_TIMESTAMP_SUMMARY)
        assert [e.batch_index for e in refused.record_errors] == [1, 2, 3]
        assert refused.record_errors[0].batch_index_error_message == _no_key(name)
        assert refused.record_errors[2].batch_index_error_message == _no_key(name)
        assert _timestamp_errors(refused, HOUR, HOUR, started) == [(2, T0, 2)]


@pytest.mark.parametrize("compression", [0, GZIP], ids=["uncompressed", "gzip"])
def test_log_append_time_claimed_by_a_client(target, compression):
    """On a LogAppendTime topic every record of such a batch is refused, printed as the validator
    read it (an uncompressed record whole, a compressed one with key and value skipped); on a
    CreateTime topic its records read the batch's max timestamp: -1 is refused as a claim, an
    out-of-range time as a timestamp."""
    with Connection(target.bootstrap) as conn:
        name = unique()
        created = create_topic(conn, name, configs={"message.timestamp.type": "LogAppendTime"})
        claimed = _claiming_log_append_time(_batch([(b"ab", T0), (None, T0 + 5)], compression), T0 + 9)
        refused = _produce(conn, name, created, claimed, 9)
        shown = ["PartialDefaultRecord(offset=0, timestamp=1700000000009, key=2 bytes, value=100 bytes)",
                 "PartialDefaultRecord(offset=1, timestamp=1700000000009, key=-1 bytes, value=100 bytes)"] \
            if compression else \
                ["DefaultRecord(offset=0, timestamp=1700000000009, key=2 bytes, value=2 bytes)",
                 "DefaultRecord(offset=1, timestamp=1700000000009, key=0 bytes, value=2 bytes)"]
        _refused(refused, 9, INVALID_TIMESTAMP, INVALID_TIMESTAMP_SUMMARY, [
            (i, f"Invalid timestamp type in message {s}. Producer should not set timestamp type to LogAppendTime.")
            for i, s in enumerate(shown)])

        name = unique()
        started = int(time.time() * 1000)
        created = create_topic(conn, name)
        refused = _produce(conn, name, created, _claiming_log_append_time(_batch([(b"a", T0)], compression), -1), 9)
        kind = "PartialDefaultRecord" if compression else "DefaultRecord"
        _refused(refused, 9, INVALID_TIMESTAMP, INVALID_TIMESTAMP_SUMMARY, [
            (0, f"Invalid timestamp type in message {kind}(offset=0, timestamp=-1, key=1 bytes, "
                f"value={100 if compression else 2} bytes). "
                "Producer should not set timestamp type to LogAppendTime.")])
        refused = _produce(conn, name, created,
                           _claiming_log_append_time(_batch([(b"a", started), (b"b", started)], compression),
                                                     FUTURE), 9)
        _refused(refused, 9, INVALID_TIMESTAMP, INVALID_TIMESTAMP_SUMMARY)
        assert _timestamp_errors(refused, 2**63 - 1, HOUR, started) == [(0, FUTURE, 0), (1, FUTURE, 1)]
        assert fetch(conn, name, 0).high_watermark == 0
