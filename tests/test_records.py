"""RecordBatch v2 header parsing, CRC-32C validation and in-place patching."""

from __future__ import annotations

import struct

import pytest

from wirekafka.protocol import records
from wirekafka.protocol.records import build_batch, validate_batch


def _batch(n: int = 3, ts: int = 1_000) -> bytes:
    return build_batch([(b"k%d" % i, b"v%d" % i, ts + i) for i in range(n)])


def test_header_fields() -> None:
    b = build_batch([(b"a", b"1", 10), (b"b", None, 30), (None, b"3", 20)], base_offset=40)
    h = validate_batch(b)
    assert h.base_offset == 40 and h.last_offset == 42 and h.next_offset == 43
    assert h.records_count == 3 and h.magic == 2 and h.size == len(b)
    assert h.base_timestamp == 10 and h.max_timestamp == 30
    assert not h.is_control and not h.is_transactional and h.compression == 0
    assert h.crc == records.compute_crc(b)


def test_crc_mismatch_is_corrupt() -> None:
    b = bytearray(_batch())
    b[-1] ^= 0xFF
    with pytest.raises(records.InvalidBatch) as info:
        validate_batch(bytes(b))
    assert info.value.corrupt


def test_length_field_mismatch_is_corrupt() -> None:
    b = _batch()
    with pytest.raises(records.InvalidBatch) as info:
        validate_batch(b[:-1])
    assert info.value.corrupt


def test_wrong_magic_is_invalid_not_corrupt() -> None:
    b = bytearray(_batch())
    b[records.MAGIC_OFFSET] = 1
    with pytest.raises(records.InvalidBatch) as info:
        validate_batch(bytes(b))
    assert not info.value.corrupt


def test_too_short() -> None:
    with pytest.raises(records.InvalidBatch):
        validate_batch(b"\x00" * 20)


def test_assign_offsets_keeps_crc_valid() -> None:
    b = bytearray(_batch())
    records.assign_offsets(b, 1234, 7)
    h = validate_batch(bytes(b))
    assert h.base_offset == 1234 and h.partition_leader_epoch == 7
    assert [r.offset for r in records.iter_records(bytes(b))] == [1234, 1235, 1236]


def test_log_append_time_rewrites_crc() -> None:
    b = bytearray(_batch())
    records.set_log_append_time(b, 99_999)
    h = validate_batch(bytes(b))
    assert h.is_log_append_time and h.max_timestamp == 99_999
    assert {r.timestamp for r in records.iter_records(bytes(b))} == {99_999}


def test_split_batches_stops_at_truncated_tail() -> None:
    a, b = _batch(2), _batch(4)
    data = a + b + b[:30]
    assert list(records.split_batches(data)) == [(0, len(a)), (len(a), len(a) + len(b))]


def test_last_sequence_wraps() -> None:
    b = bytearray(build_batch([(None, b"x", 1)] * 3, producer_id=5, producer_epoch=0,
                              base_sequence=2**31 - 2))
    h = validate_batch(bytes(b))
    assert h.base_sequence == 2**31 - 2 and h.last_sequence == 0


def test_records_carry_headers() -> None:
    b = build_batch([(b"k", b"v", 5)], headers=[("h1", b"x"), ("h2", None)])
    (rec,) = records.iter_records(b)
    assert rec.headers == [("h1", b"x"), ("h2", None)]
    assert struct.unpack(">q", b[:8])[0] == 0


def test_batch_bounds_agree_with_the_full_header() -> None:
    """The fetch path's 27-byte read gives the same boundaries as the whole header."""
    from wirekafka.protocol import records as r

    for n, base in ((1, 0), (5, 10), (300, 2**40)):
        batch = r.build_batch([(b"k", b"v" * 50, 0)] * n, base_offset=base)
        h = r.parse_header(batch)
        assert r.batch_bounds(batch[: r.BOUNDS_SIZE]) == (h.base_offset, h.size, h.last_offset)
