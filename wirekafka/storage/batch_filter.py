"""The record level of compaction: the records inside one magic-v2 batch, and the batch Kafka's
cleaner writes in its place once some of them are dropped (Kafka's MemoryRecords.filterTo).

The cleaner comes here, and the produce path's validator for the checks Kafka makes per record
(a key on every record of a compacted topic; timestamps, when the batch header says one may be out
of range); fetch never looks inside a batch. Records are walked on the raw bytes (varints decoded
in place, no record objects), and a retained record is copied byte for byte; only its timestamp
delta is re-encoded when the batch's base timestamp changes. Kafka's rules for the rewritten batch:
- nothing dropped and no delete horizon to set: the original batch, bytes unchanged;
- otherwise a new batch with the same base offset, last offset delta (so a producer's last
  sequence survives), producer id/epoch/base sequence, leader epoch and flags, the codec
  re-applied; its base timestamp is the delete horizon when one is set (attribute bit 0x40, so
  tombstones and markers of empty transactions are dropped after delete.retention.ms), else the
  first retained record's timestamp; its max timestamp the largest retained one (or the log
  append time);
- every record dropped but the batch must stay (a producer's last batch, the last batch of the
  cleaning round): the header alone, no records, no compression, base timestamp -1, the
  original max timestamp."""

from __future__ import annotations

import struct
from typing import Final, Iterator

import crc32c
import kafka.codec as codecs
import zstandard

from wirekafka.protocol import records
from wirekafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from wirekafka.protocol.varint import encode_uvarint

DELETE_HORIZON_MASK = 0x40
NO_TIMESTAMP = -1
CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = range(5)


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_MASK)


def delete_horizon(header: BatchHeader) -> int | None:
    """The time after which the batch's tombstones (or a marker) may go; None when unset."""
    return header.base_timestamp if has_delete_horizon(header) else None


# codec id -> (compress, decompress), Kafka's compression ids; none (0) is the identity
_CODECS = {
    CODEC_GZIP: (codecs.gzip_encode, codecs.gzip_decode),
    CODEC_SNAPPY: (codecs.snappy_encode, codecs.snappy_decode),
    CODEC_LZ4: (codecs.lz4_encode, codecs.lz4_decode),
    CODEC_ZSTD: (codecs.zstd_encode, codecs.zstd_decode),
}


def _codec(codec: int) -> tuple:
    try:
        return _CODECS[codec]
    except KeyError:
        raise records.InvalidBatch(f"unknown compression codec {codec}", corrupt=True) from None


def _decompress(codec: int, data: bytes) -> bytes:
    return data if codec == CODEC_NONE else _codec(codec)[1](data)


def _compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """data compressed with codec; level as Kafka's compression.<codec>.level (None: the
    library's default, -1 for gzip: zlib's default, 6)."""
    if codec == CODEC_NONE:
        return data
    if level is not None:
        if codec == CODEC_GZIP:
            return codecs.gzip_encode(data, compresslevel=6 if level == -1 else level)
        if codec == CODEC_LZ4:
            return codecs.lz4_encode(data, compression_level=level)
        if codec == CODEC_ZSTD:
            return zstandard.ZstdCompressor(level=level).compress(data)
    return _codec(codec)[0](data)


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
    """A zigzag varint (Kafka's record fields)."""
    return encode_uvarint((value << 1) ^ (value >> 63))


def _skip_varint(buf: bytes, pos: int) -> int:
    while buf[pos] & 0x80:
        pos += 1
    return pos + 1


# A record as the cleaner sees it: (start, rest, end, timestamp delta, offset delta, key, has value).
# start is its length varint, rest its offset delta (everything from there on is copied as is).
RawRecord = tuple[int, int, int, int, int, "bytes | None", bool]
# the positions as literals, so that a type checker knows each field's type
START: Final = 0
REST: Final = 1
END: Final = 2
TIMESTAMP_DELTA: Final = 3
OFFSET_DELTA: Final = 4
KEY: Final = 5
HAS_VALUE: Final = 6


def iter_records(section: bytes) -> Iterator[RawRecord]:
    """Each record of a decompressed records section, decoded in place. Single-byte varints (and
    two-byte lengths, records of 64 B to 8 KiB) are decoded inline: this loop runs once per
    record the cleaner reads, twice per dirty one."""
    pos = 0
    end_all = len(section)
    while pos < end_all:
        start = pos
        b = section[pos]
        if b < 0x80:
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif section[pos + 1] < 0x80:  # records of 64 B to 8 KiB
            v = (b & 0x7F) | (section[pos + 1] << 7)
            length, pos = (v >> 1) ^ -(v & 1), pos + 2
        else:
            length, pos = _varint(section, pos)
        end = pos + length
        b = section[pos + 1]
        if b < 0x80:
            timestamp_delta, rest = (b >> 1) ^ -(b & 1), pos + 2
        else:
            timestamp_delta, rest = _varint(section, pos + 1)
        b = section[rest]
        if b < 0x80:
            offset_delta, p = (b >> 1) ^ -(b & 1), rest + 1
        else:
            offset_delta, p = _varint(section, rest)
        b = section[p]
        if b < 0x80:
            key_len, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            key_len, p = _varint(section, p)
        if key_len < 0:
            key = None
        else:
            key = section[p:p + key_len]
            p += key_len
        yield start, rest, end, timestamp_delta, offset_delta, key, section[p] != 1  # value length -1 is 0x01
        pos = end


def key_value_sizes(section: bytes, record: RawRecord) -> tuple[int, int]:
    """The record's key and value lengths as encoded (-1 for null)."""
    p = _skip_varint(section, record[REST])  # the offset delta
    key_len, p = _varint(section, p)
    value_len, _ = _varint(section, p + max(key_len, 0))
    return key_len, value_len


def encoded(section: bytes, record: RawRecord, timestamp_delta: int) -> bytes:
    """The record's bytes with timestamp_delta (the same bytes when it is unchanged)."""
    if timestamp_delta == record[TIMESTAMP_DELTA]:
        return section[record[START]:record[END]]
    body = b"\x00" + _encode_varint(timestamp_delta) + section[record[REST]:record[END]]
    return _encode_varint(len(body)) + body


def record_timestamp(header: BatchHeader, record: RawRecord) -> int:
    """The timestamp a reader sees: the log append time for such batches, else base + delta."""
    return header.max_timestamp if header.is_log_append_time else header.base_timestamp + record[TIMESTAMP_DELTA]


def rebuild(header: BatchHeader, section: bytes, retained: list[RawRecord], horizon_ms: int | None,
            codec: int | None = None, level: int | None = None) -> bytes:
    """A batch of the retained records of section in place of the original: see the module
    docstring. horizon_ms: the delete horizon to carry (new or the batch's own), or None. codec
    and level: compress anew with those (a topic's compression.type) instead of the batch's codec."""
    timestamps = [record_timestamp(header, r) for r in retained]
    base_timestamp = horizon_ms if horizon_ms is not None else timestamps[0] if timestamps else header.base_timestamp
    body = b"".join(encoded(section, r, ts - base_timestamp) for r, ts in zip(retained, timestamps))
    codec = header.compression if codec is None else codec
    max_timestamp = header.max_timestamp if header.is_log_append_time else max(timestamps, default=header.max_timestamp)
    attributes = (header.attributes & ~(DELETE_HORIZON_MASK | records.COMPRESSION_MASK)) | codec
    if horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    return _assemble(header, attributes, base_timestamp, max_timestamp, len(retained),
                     _compress(codec, body, level))


def recompress(batch: bytes | memoryview, header: BatchHeader, codec: int, level: int | None) -> bytes:
    """The batch with its records compressed with codec (none: uncompressed) instead of the
    producer's, as Kafka's LogValidator writes it when a topic's compression.type differs: the
    same offsets, producer id/epoch/sequence, flags and records (record timestamps kept, deltas
    from a base timestamp that is the first record's), the max timestamp the largest record's
    (or the log append time)."""
    section = records_section(batch, header)
    return rebuild(header, section, list(iter_records(section)), None, codec, level)


def compress(batch: bytes | memoryview, header: BatchHeader, codec: int, level: int | None = None) -> bytes:
    """An uncompressed batch with its records section compressed as it is: what recompress
    gives for such a batch, without decoding and re-encoding every record (the coordinators
    build their batches uncompressed, then compress them as Kafka writes them)."""
    if header.compression:
        raise ValueError("compress takes an uncompressed batch")
    attributes = (header.attributes & ~records.COMPRESSION_MASK) | codec
    return _assemble(header, attributes, header.base_timestamp, header.max_timestamp, header.records_count,
                     _compress(codec, bytes(batch[HEADER_SIZE:header.size]), level))


def empty_batch(header: BatchHeader) -> bytes:
    """Kafka's writeEmptyHeader: the batch kept for its offsets and producer metadata alone; no
    base timestamp (-1), the original max timestamp."""
    attributes = header.attributes & (records.TIMESTAMP_TYPE_MASK | records.TRANSACTIONAL_MASK | records.CONTROL_MASK)
    return _assemble(header, attributes, NO_TIMESTAMP, header.max_timestamp, 0, b"")


def _assemble(header: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
              body: bytes) -> bytes:
    out = bytearray(HEADER_SIZE)
    records.HEADER_STRUCT.pack_into(out, 0, header.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body),
                      header.partition_leader_epoch, 2, 0, attributes, header.last_offset_delta, base_timestamp,
                      max_timestamp, header.producer_id, header.producer_epoch, header.base_sequence, count)
    out += body
    struct.pack_into(">I", out, records.CRC_OFFSET, crc32c.crc32c(memoryview(out)[records.ATTRIBUTES_OFFSET:]))
    return bytes(out)
