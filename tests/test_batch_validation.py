"""Produce's request-level record checks (Kafka's ProduceRequest.validateRecords as Kafka 4.3.1
answers them): what is refused before any log is involved, with which error and words."""

from __future__ import annotations

import struct

from wirekafka.broker.batch_validation import request_records_error
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode

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
