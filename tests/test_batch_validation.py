"""Produce's record checks as Kafka 4.3.1 answers them: the request-level ones (Kafka's
ProduceRequest.validateRecords), refused before any log is involved, and the log validator's
per-record ones (LogValidator.validateRecord), with which error, summary and record errors."""

from __future__ import annotations

import struct

import pytest

from wirekafka.broker.replica.batch_validation import AppendPolicy, InvalidRecords, request_records_error, validate_client_batch
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

GOOD = records.build_batch([(b"k", b"v", 1_700_000_000_000)])
ZSTD = records.build_batch([(b"k", b"v" * 50, 1_700_000_000_000)], compression=4)


def _with(data: bytes, at: int, value: bytes) -> bytes:
    return data[:at] + value + data[at + len(value):]


def _legacy(magic: int) -> bytes:
    body = bytes([magic, 0]) + struct.pack(">ii", -1, 1) + b"v"
    message = b"\x00\x00\x00\x00" + body  # the CRC is not looked at here
    return struct.pack(">qi", 0, len(message)) + message


def _answer(version: int, data: bytes | None) -> tuple[ErrorCode, str | None] | None:
    error = request_records_error(version, data)
    return None if error is None else (error.code, error.message)


def test_one_magic_2_batch_passes_and_trailing_partial_bytes_are_not_a_batch() -> None:
    assert _answer(9, GOOD) is None
    assert _answer(9, GOOD + b"\x00" * 5) is None
    assert _answer(9, GOOD + GOOD[:20]) is None  # a size larger than what follows: no batch


def test_no_batch_legacy_formats_and_a_second_batch_are_invalid_record() -> None:
    for data in (None, b"", b"\x00" * 11, GOOD[:30], _legacy(0), _legacy(1), GOOD + GOOD):
        assert _answer(9, data) == (ErrorCode.INVALID_RECORD, None)


def test_unreadable_size_or_magic_is_corrupt_message_worded_for_the_first_batch_only() -> None:
    tiny = _with(GOOD, 8, struct.pack(">i", 10))
    assert _answer(9, tiny) == (ErrorCode.CORRUPT_MESSAGE,
                                "Record size 10 is less than the minimum record overhead (14)")
    assert _answer(9, _with(GOOD, 16, bytes([200]))) == (ErrorCode.CORRUPT_MESSAGE, "Invalid magic found in record: -56")
    assert _answer(9, _with(GOOD, 16, bytes([3]))) == (ErrorCode.CORRUPT_MESSAGE, "Invalid magic found in record: 3")
    assert _answer(9, GOOD + _with(GOOD, 16, bytes([200]))) == (ErrorCode.CORRUPT_MESSAGE, None)


def test_zstd_needs_produce_v7() -> None:
    assert _answer(6, ZSTD) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, None)
    assert _answer(7, ZSTD) is None


# ---- the log validator's per-record checks (Kafka's LogValidator.validateRecord) ----------------
NOW = 1_700_000_000_000
HOUR = 3_600_000
LONG_MAX = 2**63 - 1
GZIP = 1
NO_KEY = "Compacted topic cannot accept message without key in topic partition t-3"
INVALID_TIMESTAMP = "One or more records have been rejected due to invalid timestamp"


def _policy(compacted: bool = False, before: int = LONG_MAX, after: int = HOUR,
            log_append_time: bool = False) -> AppendPolicy:
    return AppendPolicy(max_message_bytes=1 << 20, log_append_time=log_append_time, timestamp_before_ms=before,
                        timestamp_after_ms=after, compacted=compacted, min_insync_replicas=1)


def _batch(entries: list[tuple[bytes | None, int]], compression: int = 0, base_offset: int = 0) -> bytes:
    pad = b"." * 98 if compression else b""  # so that the batch does compress
    data = records.build_batch([(k, b"v%d" % i + pad, ts) for i, (k, ts) in enumerate(entries)],
                               compression=compression, base_offset=base_offset)
    assert records.parse_header(data).compression == compression
    return data


def _claiming_log_append_time(data: bytes, max_timestamp: int) -> bytes:
    out = bytearray(data)
    records.set_log_append_time(out, max_timestamp)
    return bytes(out)


def _rejected(data: bytes, policy: AppendPolicy) -> InvalidRecords:
    with pytest.raises(InvalidRecords) as caught:
        validate_client_batch(data, policy, NOW, "t", 3)
    return caught.value


def _out_of_range(ts: int, offset: int, lo: int = NOW - HOUR, hi: int = NOW + HOUR) -> str:
    return (f"Timestamp {ts} of message with offset {offset} is out of range. "
            f"The timestamp should be within [{lo}, {hi}]")


@pytest.mark.parametrize("compression", [0, GZIP])
def test_compacted_topic_lists_every_keyless_record_and_words_the_first_three(compression: int) -> None:
    two = _rejected(_batch([(b"a", NOW), (None, NOW), (b"b", NOW), (None, NOW)], compression), _policy(compacted=True))
    assert (two.code, two.record_errors) == (ErrorCode.INVALID_RECORD, [(1, NO_KEY), (3, NO_KEY)])
    assert two.message == ("One or more records have been rejected due to 2 record errors in total, and only showing "
                           f"the first three errors at most: [RecordError(batchIndex=1, message='{NO_KEY}'), "
                           f"RecordError(batchIndex=3, message='{NO_KEY}')]")
    five = _rejected(_batch([(None, NOW)] * 5, compression), _policy(compacted=True))
    assert five.record_errors == [(i, NO_KEY) for i in range(5)]
    assert five.message.startswith("One or more records have been rejected due to 5 record errors in total")
    assert five.message.count("RecordError(") == 3
    keyed = _batch([(b"a", NOW), (b"", NOW)], compression)  # an empty key is a key
    assert validate_client_batch(keyed, _policy(compacted=True), NOW, "t", 3).records_count == 2


def test_each_record_timestamp_is_checked_once_the_header_says_one_may_be_out_of_range() -> None:
    stamps = [NOW, NOW - 2 * HOUR, NOW + 1000, NOW + 2 * HOUR, NOW - 3 * HOUR]
    refused = _rejected(_batch([(b"k", ts) for ts in stamps], base_offset=40), _policy(before=HOUR))
    assert (refused.code, refused.message) == (ErrorCode.INVALID_TIMESTAMP, INVALID_TIMESTAMP)
    # the offset is the client's (base offset + delta): Kafka words it before assigning offsets
    assert refused.record_errors == [(1, _out_of_range(stamps[1], 41)), (3, _out_of_range(stamps[3], 43)),
                                     (4, _out_of_range(stamps[4], 44))]
    # only the first record too old: found through the header's first timestamp
    refused = _rejected(_batch([(b"k", NOW - 2 * HOUR), (b"l", NOW)]), _policy(before=HOUR))
    assert refused.record_errors == [(0, _out_of_range(NOW - 2 * HOUR, 0))]
    # -1 is no timestamp and never checked
    assert validate_client_batch(_batch([(b"k", -1), (b"l", NOW)]), _policy(before=HOUR), NOW, "t", 3)


def test_records_in_range_pass_whatever_the_header_claims_and_the_header_decides_decoding() -> None:
    lying = bytearray(_batch([(b"k", NOW), (b"l", NOW + 1)]))
    struct.pack_into(">q", lying, records.MAX_TIMESTAMP_OFFSET, NOW + 5 * HOUR)
    struct.pack_into(">I", lying, records.CRC_OFFSET, records.compute_crc(lying))
    assert validate_client_batch(bytes(lying), _policy(), NOW, "t", 3).max_timestamp == NOW + 5 * HOUR
    # deliberate deviation: first and max timestamps in range, an older record between them is
    # not looked at (Kafka refuses it); on a compacted topic, where records are read anyway, it is
    out_of_order = _batch([(b"k", NOW), (b"l", NOW - 2 * HOUR), (b"m", NOW)])
    assert validate_client_batch(out_of_order, _policy(before=HOUR), NOW, "t", 3)
    assert _rejected(out_of_order, _policy(before=HOUR, compacted=True)).record_errors == \
        [(1, _out_of_range(NOW - 2 * HOUR, 1))]


def test_a_keyless_record_is_refused_for_its_key_and_any_timestamp_error_makes_it_invalid_timestamp() -> None:
    data = _batch([(b"a", NOW), (None, NOW - 2 * HOUR), (b"b", NOW - 2 * HOUR), (None, NOW)])
    refused = _rejected(data, _policy(compacted=True, before=HOUR))
    assert (refused.code, refused.message) == (ErrorCode.INVALID_TIMESTAMP, INVALID_TIMESTAMP)
    assert refused.record_errors == [(1, NO_KEY), (2, _out_of_range(NOW - 2 * HOUR, 2)), (3, NO_KEY)]


def test_bounds_are_worded_as_java_longs_wrap() -> None:
    refused = _rejected(_batch([(b"k", NOW - 1)]), _policy(before=0, after=LONG_MAX))
    assert refused.record_errors == [(0, _out_of_range(NOW - 1, 0, NOW, NOW + LONG_MAX - 2**64))]
    refused = _rejected(_batch([(b"k", -5)]), _policy(before=HOUR))  # only -1 means "no timestamp"
    assert refused.record_errors == [(0, _out_of_range(-5, 0))]


@pytest.mark.parametrize("compression", [0, GZIP])
def test_a_client_batch_claiming_log_append_time(compression: int) -> None:
    """Kafka reads every record of it at the batch's max timestamp. A LogAppendTime topic refuses
    each record, printed as Kafka's validator read it: compressed with key and value skipped
    (sizes, -1 for null), uncompressed whole (null as 0 bytes)."""
    claimed = _claiming_log_append_time(_batch([(b"ab", NOW), (None, NOW + 5)], compression), NOW + 9)
    refused = _rejected(claimed, _policy(log_append_time=True))
    if compression:
        shown = [f"PartialDefaultRecord(offset=0, timestamp={NOW + 9}, key=2 bytes, value=100 bytes)",
                 f"PartialDefaultRecord(offset=1, timestamp={NOW + 9}, key=-1 bytes, value=100 bytes)"]
    else:
        shown = [f"DefaultRecord(offset=0, timestamp={NOW + 9}, key=2 bytes, value=2 bytes)",
                 f"DefaultRecord(offset=1, timestamp={NOW + 9}, key=0 bytes, value=2 bytes)"]
    assert (refused.code, refused.message) == (ErrorCode.INVALID_TIMESTAMP, INVALID_TIMESTAMP)
    assert refused.record_errors == [
        (i, f"Invalid timestamp type in message {s}. Producer should not set timestamp type to LogAppendTime.")
        for i, s in enumerate(shown)]
    # a CreateTime topic: the max timestamp is every record's, checked; -1 is refused as a claim
    assert validate_client_batch(claimed, _policy(), NOW, "t", 3)
    late = _claiming_log_append_time(_batch([(b"ab", NOW), (b"c", NOW)], compression), NOW + 2 * HOUR)
    assert _rejected(late, _policy()).record_errors == [(0, _out_of_range(NOW + 2 * HOUR, 0, NOW - LONG_MAX)),
                                                        (1, _out_of_range(NOW + 2 * HOUR, 1, NOW - LONG_MAX))]
    unset = _rejected(_claiming_log_append_time(_batch([(b"ab", NOW)], compression), -1), _policy())
    assert unset.record_errors == [(0, f"Invalid timestamp type in message {shown[0].split('(')[0]}(offset=0, "
                                       f"timestamp=-1, key=2 bytes, value={100 if compression else 2} bytes). "
                                       "Producer should not set timestamp type to LogAppendTime.")]


def test_unreadable_records_are_invalid_record_without_words() -> None:
    """A CRC-valid batch whose records cannot be walked (a negative record length; fewer records
    than its count says): INVALID_RECORD, not an explained rejection, and no endless loop."""
    bad = bytearray(_batch([(None, NOW)]))
    bad[records.HEADER_SIZE] = 0x01  # the first record's length: zigzag -1
    struct.pack_into(">I", bad, records.CRC_OFFSET, records.compute_crc(bad))
    miscounted = bytearray(_batch([(b"a", NOW), (b"b", NOW)], GZIP))
    struct.pack_into(">i", miscounted, 57, 3)  # records count
    struct.pack_into(">I", miscounted, records.CRC_OFFSET, records.compute_crc(miscounted))
    for data in (bytes(bad), bytes(miscounted)):
        with pytest.raises(KafkaApiError) as caught:
            validate_client_batch(data, _policy(compacted=True), NOW, "t", 3)
        assert caught.value.code == ErrorCode.INVALID_RECORD and not isinstance(caught.value, InvalidRecords)
