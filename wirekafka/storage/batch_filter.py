"""The record level of compaction: the records inside one magic-v2 batch, and the batch Kafka's
cleaner writes in its place once some of them are dropped (Kafka's MemoryRecords.filterTo).

The cleaner comes here; the produce path's validator reads records as a bounded stream
(`stream_records`, over record_stream and codec_stream) and converts a batch to a topic's
compression.type record by record (`BatchWriter`, `recompress`); ListOffsets' search by
timestamp reads the same stream (`record_positions`); fetch never looks inside a batch. Records are walked on the raw bytes (varints decoded in place, no record objects), and a
retained record is copied byte for byte; only its timestamp delta is re-encoded when the batch's
base timestamp changes. The cleaner still decompresses a batch whole (`records_section`): it
reads batches this broker accepted, in a process of its own. Kafka's rules for the rewritten batch:
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

from wirekafka.protocol import records
from wirekafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from wirekafka.protocol.varint import decode_varint, encode_varint
from wirekafka.storage import codec_stream
from wirekafka.storage.codec_stream import CODEC_NONE
from wirekafka.storage.record_stream import RecordStream, Sink

DELETE_HORIZON_MASK = 0x40
NO_TIMESTAMP = -1


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_MASK)


def delete_horizon(header: BatchHeader) -> int | None:
    """The time after which the batch's tombstones (or a marker) may go; None when unset."""
    return header.base_timestamp if has_delete_horizon(header) else None


def _decompress(codec: int, data: bytes) -> bytes:
    """data decompressed whole: for the cleaner, which reads batches this broker validated."""
    if codec == CODEC_NONE:
        return data
    try:
        source = codec_stream.inflater(codec, data)
    except codec_stream.UnknownCodec as exc:
        raise records.InvalidBatch(str(exc), corrupt=True) from None
    parts = []
    while chunk := source.read(1 << 20):
        parts.append(chunk)
    return b"".join(parts)


def _compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """data compressed with codec, as the streaming BatchWriter compresses it (so a batch
    compressed whole and one converted record by record are the same bytes); level as Kafka's
    compression.<codec>.level (None: the library's default, -1 for gzip: zlib's default, 6)."""
    if codec == CODEC_NONE:
        return data
    try:
        out = codec_stream.deflater(codec, level)
    except codec_stream.UnknownCodec as exc:
        raise records.InvalidBatch(str(exc), corrupt=True) from None
    out.write(data)
    return out.finish()


def records_section(batch: bytes | memoryview, header: BatchHeader) -> bytes:
    """The batch's records, decompressed."""
    return _decompress(header.compression, bytes(batch[HEADER_SIZE:header.size]))


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
            length, pos = decode_varint(section, pos)
        end = pos + length
        b = section[pos + 1]
        if b < 0x80:
            timestamp_delta, rest = (b >> 1) ^ -(b & 1), pos + 2
        else:
            timestamp_delta, rest = decode_varint(section, pos + 1)
        b = section[rest]
        if b < 0x80:
            offset_delta, p = (b >> 1) ^ -(b & 1), rest + 1
        else:
            offset_delta, p = decode_varint(section, rest)
        b = section[p]
        if b < 0x80:
            key_len, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            key_len, p = decode_varint(section, p)
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
    key_len, p = decode_varint(section, p)
    value_len, _ = decode_varint(section, p + max(key_len, 0))
    return key_len, value_len


def encoded(section: bytes, record: RawRecord, timestamp_delta: int) -> bytes:
    """The record's bytes with timestamp_delta (the same bytes when it is unchanged)."""
    if timestamp_delta == record[TIMESTAMP_DELTA]:
        return section[record[START]:record[END]]
    body = b"\x00" + encode_varint(timestamp_delta) + section[record[REST]:record[END]]
    return encode_varint(len(body)) + body


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


def stream_records(batch: bytes | memoryview, header: BatchHeader) -> RecordStream:
    """The batch's records as a bounded stream: an uncompressed section is walked where it lies
    (it is no longer than the batch), a compressed one through its codec's inflater.
    codec_stream.UnknownCodec for compression bits naming no codec."""
    section = batch[HEADER_SIZE:header.size]
    if header.compression == CODEC_NONE:
        return RecordStream(None, bytes(section))
    return RecordStream(codec_stream.inflater(header.compression, section))


def record_positions(batch: bytes | memoryview, header: BatchHeader) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record, read through the bounded stream: what a search by
    timestamp needs, without inflating a compressed batch whole (a stored batch may inflate to
    far more than its size). A LogAppendTime batch's records all carry its max timestamp."""
    stream = stream_records(batch, header)
    append_time = header.is_log_append_time
    while (head := stream.next_head()) is not None:
        # given before the record's remainder is read: a reader that stops here reads no more
        yield header.base_offset + head[1], header.max_timestamp if append_time else header.base_timestamp + head[0]
        stream.finish_record()
        while stream.pending:
            stream.pump()


class BatchTooLarge(Exception):
    """A converted batch over its size limit (Kafka's RecordTooLargeException after conversion)."""


class BatchWriter:
    """The batch Kafka's LogValidator builds when a topic's compression.type differs from the
    producer's, written record by record through a streaming compressor: the same offsets,
    producer id/epoch/sequence, flags and records (record timestamps kept, deltas from a base
    timestamp that is the first record's), the max timestamp the largest record's (or the log
    append time). The compressed output is bounded by max_size (the whole batch, as Kafka
    compares it with max.message.bytes): past it, writing stops and finish raises BatchTooLarge,
    so a batch that inflates without end costs no more than max_size."""

    def __init__(self, header: BatchHeader, codec: int, level: int | None, max_size: int) -> None:
        self._header = header
        self._codec = codec
        self._out: codec_stream.Deflater | None = codec_stream.deflater(codec, level)
        self._max_body = max_size - HEADER_SIZE
        self._base_timestamp: int | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._count = 0

    @property
    def overflowed(self) -> bool:
        return self._out is None

    def start_record(self, timestamp: int, body_len: int) -> Sink | None:
        """Write a record's new length, attributes and timestamp delta; the sink its bytes from
        the offset delta on (body_len of them) go to, None once the batch is too large."""
        if self._out is None:
            return None
        if self._base_timestamp is None:
            self._base_timestamp = timestamp
        self._max_timestamp = max(self._max_timestamp, timestamp)
        self._count += 1
        delta = encode_varint(timestamp - self._base_timestamp)
        self._write(encode_varint(1 + len(delta) + body_len) + b"\x00" + delta)
        return self._write

    def _write(self, data: bytes | memoryview) -> None:
        if self._out is None:
            return
        self._out.write(data)
        if self._out.size > self._max_body:
            self._out = None  # the compressor's state goes now, not at the end of the records

    def finish(self) -> bytes:
        if self._out is None:
            raise BatchTooLarge()
        body = self._out.finish()
        if len(body) > self._max_body:
            raise BatchTooLarge()
        header = self._header
        base = header.base_timestamp if self._base_timestamp is None else self._base_timestamp
        max_timestamp = header.max_timestamp if header.is_log_append_time else self._max_timestamp
        attributes = (header.attributes & ~(DELETE_HORIZON_MASK | records.COMPRESSION_MASK)) | self._codec
        return _assemble(header, attributes, base, max_timestamp, self._count, body)


def recompress(batch: bytes | memoryview, header: BatchHeader, codec: int, level: int | None,
               max_size: int = (1 << 31) - 1) -> bytes:
    """The batch with its records compressed with codec (none: uncompressed) instead of the
    producer's (see BatchWriter), streamed record by record; BatchTooLarge past max_size,
    record_stream.MalformedRecords or codec_stream.CorruptStream for records that do not read."""
    stream = stream_records(batch, header)
    writer = BatchWriter(header, codec, level, max_size)
    while (head := stream.next_head()) is not None:
        timestamp = header.max_timestamp if header.is_log_append_time else header.base_timestamp + head[0]
        sink = writer.start_record(timestamp, head[4])
        stream.finish_record(sink)
        while stream.pending:
            stream.pump(sink)
    return writer.finish()


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
