"""The record level of compaction: the records inside one magic-v2 batch, and the batch Kafka's
cleaner writes in its place once some of them are dropped (Kafka's MemoryRecords.filterTo).

Only the cleaner comes here: the produce and fetch paths never look inside a batch. Records are
walked on the raw bytes (varints decoded in place, no record objects), and a retained record is
copied byte for byte; only its timestamp delta is re-encoded when the batch's base timestamp
changes. Kafka's rules for the rewritten batch:
- nothing dropped and no delete horizon to set: the original batch, bytes unchanged;
- otherwise a new batch with the same base offset, last offset delta (so a producer's last
  sequence survives), producer id/epoch/base sequence, leader epoch and flags, the codec
  re-applied; its base timestamp is the delete horizon when one is set (attribute bit 0x40, so
  tombstones and markers of empty transactions are dropped after delete.retention.ms), else the
  first retained record's timestamp; its max timestamp the largest retained one (or the log
  append time);
- every record dropped but the batch must stay (a producer's last batch, the last batch of the
  cleaning round): the header alone, no records, no compression."""

from __future__ import annotations

import struct
from typing import Iterator

import crc32c
import kafka.codec as codecs

from wirekafka.protocol import records
from wirekafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader

DELETE_HORIZON_MASK = 0x40
CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = range(5)


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_MASK)


def delete_horizon(header: BatchHeader) -> int | None:
    """The time after which the batch's tombstones (or a marker) may go; None when unset."""
    return header.base_timestamp if has_delete_horizon(header) else None


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == CODEC_NONE:
        return data
    if codec == CODEC_GZIP:
        return codecs.gzip_decode(data)
    if codec == CODEC_SNAPPY:
        return codecs.snappy_decode(data)
    if codec == CODEC_LZ4:
        return codecs.lz4_decode(data)
    if codec == CODEC_ZSTD:
        return codecs.zstd_decode(data)
    raise records.InvalidBatch(f"unknown compression codec {codec}", corrupt=True)


def _compress(codec: int, data: bytes) -> bytes:
    if codec == CODEC_NONE:
        return data
    if codec == CODEC_GZIP:
        return codecs.gzip_encode(data)
    if codec == CODEC_SNAPPY:
        return codecs.snappy_encode(data)
    if codec == CODEC_LZ4:
        return codecs.lz4_encode(data)
    return codecs.zstd_encode(data)


def records_section(batch: bytes | memoryview, header: BatchHeader) -> bytes:
    """The batch's records, decompressed."""
    return _decompress(header.compression, bytes(batch[HEADER_SIZE:header.size]))


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's record fields) at pos: (value, position after it)."""
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def iter_keys(section: bytes) -> Iterator[tuple[int, bytes | None]]:
    """(offset delta, key) of each record in a decompressed records section: all the offset map
    needs, without the values."""
    pos = 0
    end_all = len(section)
    while pos < end_all:
        length, pos = _varint(section, pos)
        end = pos + length
        _, p = _varint(section, pos + 1)  # skip attributes, timestamp delta
        offset_delta, p = _varint(section, p)
        key_len, p = _varint(section, p)
        yield offset_delta, (None if key_len < 0 else section[p:p + key_len])
        pos = end


class RawRecord:
    """One record as its bytes and the fields the cleaner decides on."""

    __slots__ = ("section", "start", "rest", "end", "timestamp_delta", "offset_delta", "key", "has_value")

    def __init__(self, section: bytes, start: int, rest: int, end: int, timestamp_delta: int, offset_delta: int,
                 key: bytes | None, has_value: bool) -> None:
        self.section = section
        self.start = start  # its length varint
        self.rest = rest  # its offset delta: everything from here on is copied as is
        self.end = end
        self.timestamp_delta = timestamp_delta
        self.offset_delta = offset_delta
        self.key = key
        self.has_value = has_value

    def encoded(self, timestamp_delta: int) -> bytes:
        """The record's bytes with timestamp_delta (the same bytes when it is unchanged)."""
        if timestamp_delta == self.timestamp_delta:
            return self.section[self.start:self.end]
        body = b"\x00" + _encode_varint(timestamp_delta) + self.section[self.rest:self.end]
        return _encode_varint(len(body)) + body


def iter_records(section: bytes) -> Iterator[RawRecord]:
    pos = 0
    end_all = len(section)
    while pos < end_all:
        start = pos
        length, pos = _varint(section, pos)
        end = pos + length
        timestamp_delta, rest = _varint(section, pos + 1)
        offset_delta, p = _varint(section, rest)
        key_len, p = _varint(section, p)
        key = None if key_len < 0 else section[p:p + key_len]
        p += max(key_len, 0)
        value_len, p = _varint(section, p)
        yield RawRecord(section, start, rest, end, timestamp_delta, offset_delta, key, value_len >= 0)
        pos = end


def record_timestamp(header: BatchHeader, record: RawRecord) -> int:
    """The timestamp a reader sees: the log append time for such batches, else base + delta."""
    return header.max_timestamp if header.is_log_append_time else header.base_timestamp + record.timestamp_delta


def rebuild(header: BatchHeader, retained: list[RawRecord], horizon_ms: int | None) -> bytes:
    """A batch of the retained records (at least one) in place of the original: see the module
    docstring. horizon_ms: the delete horizon to carry (new or the batch's own), or None."""
    timestamps = [record_timestamp(header, r) for r in retained]
    base_timestamp = horizon_ms if horizon_ms is not None else timestamps[0]
    body = b"".join(r.encoded(ts - base_timestamp) for r, ts in zip(retained, timestamps))
    body = _compress(header.compression, body)
    max_timestamp = header.max_timestamp if header.is_log_append_time else max(timestamps)
    attributes = header.attributes & ~DELETE_HORIZON_MASK
    if horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    return _assemble(header, attributes, base_timestamp, max_timestamp, len(retained), body)


def empty_batch(header: BatchHeader) -> bytes:
    """Kafka's writeEmptyHeader: the batch kept for its offsets and producer metadata alone."""
    attributes = header.attributes & (records.TIMESTAMP_TYPE_MASK | records.TRANSACTIONAL_MASK | records.CONTROL_MASK)
    return _assemble(header, attributes, header.max_timestamp, header.max_timestamp, 0, b"")


def _assemble(header: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
              body: bytes) -> bytes:
    out = bytearray(HEADER_SIZE)
    records.HEADER_STRUCT.pack_into(out, 0, header.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body),
                      header.partition_leader_epoch, 2, 0, attributes, header.last_offset_delta, base_timestamp,
                      max_timestamp, header.producer_id, header.producer_epoch, header.base_sequence, count)
    out += body
    struct.pack_into(">I", out, records.CRC_OFFSET, crc32c.crc32c(memoryview(out)[records.ATTRIBUTES_OFFSET:]))
    return bytes(out)
