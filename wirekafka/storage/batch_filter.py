"""The record level of compaction: the records inside one magic-v2 batch, and the batch Kafka's
cleaner writes in its place once some of them are dropped (Kafka's MemoryRecords.filterTo).

Every reader here goes through one bounded stream of records (`stream_records`, over
record_stream and codec_stream), so that no batch is ever inflated whole: a stored compressed
batch may inflate to far more than its size. The produce path's validator reads that stream and
converts a batch to a topic's compression.type record by record (`BatchWriter`, `recompress`);
ListOffsets' search by timestamp reads it (`record_positions`); the cleaner reads each record's
offset, key and whether it has a value (`keyed_records`), then writes the records it keeps
through the same writer (`rewrite`). Fetch never looks inside a batch. A retained record's bytes
from its offset delta on are copied as they are; its length and timestamp delta are written anew.
Kafka's rules for the rewritten batch:
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
from typing import Iterator

import crc32c

from wirekafka.protocol import records
from wirekafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from wirekafka.protocol.varint import decode_varint, encode_varint
from wirekafka.storage import codec_stream
from wirekafka.storage.codec_stream import CODEC_NONE
from wirekafka.storage.key_identity import KEY_DIGEST, MAX_RAW_KEY, KeyedRecord, key_identity
from wirekafka.storage.record_stream import RecordStream, Sink

DELETE_HORIZON_MASK = 0x40
NO_TIMESTAMP = -1


def has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_MASK)


def delete_horizon(header: BatchHeader) -> int | None:
    """The time after which the batch's tombstones (or a marker) may go; None when unset."""
    return header.base_timestamp if has_delete_horizon(header) else None


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


def keyed_records(batch: bytes | memoryview, header: BatchHeader) -> Iterator[KeyedRecord]:
    """(offset delta, key identity, has a value) of each record, read through the bounded stream:
    what the cleaner maps and filters on. The identity is the offset map's (the key itself up to
    MAX_RAW_KEY bytes, else its digest), taken in place for a record in the window and hashed as
    it streams past for a longer one, so no key or value is held whole. The records lying whole in
    the window are walked inline (one-byte varints, and two-byte lengths, decoded in place): this
    loop runs once per record the cleaner reads, twice per dirty one; a record across the
    window's end goes through the stream's own reader, which refills the window and checks it."""
    stream = stream_records(batch, header)
    while True:
        buf, pos = stream.buf, stream.pos
        n = len(buf)
        while pos < n:
            b = buf[pos]
            if b < 0x80:
                length, p = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < n and buf[pos + 1] < 0x80:  # records of 64 B to 8 KiB
                v = (b & 0x7F) | (buf[pos + 1] << 7)
                length, p = (v >> 1) ^ -(v & 1), pos + 2
            else:
                break
            end = p + length
            if length < 6 or end > n:  # 6: the shortest record's fields, so none below runs past it
                break
            # after the attributes byte: a one-byte timestamp delta, an offset delta of one or two
            # bytes (offsets up to 8191 in the batch), a one-byte key length; else the stream's reader
            if buf[p + 1] >= 0x80:
                break
            od = buf[p + 2]
            q = p + 3
            if od >= 0x80:
                if buf[q] >= 0x80:
                    break
                od = (od & 0x7F) | (buf[q] << 7)
                q += 1
            kl = buf[q]
            if kl >= 0x80:
                break
            q += 1
            key_len = (kl >> 1) ^ -(kl & 1)
            if key_len < 0:
                key = None
            else:
                key = buf[q:q + key_len] if key_len <= MAX_RAW_KEY else key_identity(memoryview(buf)[q:q + key_len])
                q += key_len
            if q >= end:
                break
            yield (od >> 1) ^ -(od & 1), key, buf[q] != 1  # a null value's length, -1, is 0x01
            pos = end
        stream.pos = pos
        head = stream.next_head()
        if head is None:
            return
        key_len = head[2]
        if stream.in_window:
            if key_len < 0:
                key = None
            elif key_len <= MAX_RAW_KEY:
                key = stream.buf[stream.key_at:stream.key_at + key_len]
            else:
                key = key_identity(memoryview(stream.buf)[stream.key_at:stream.key_at + key_len])
            yield head[1], key, head[3] != -1
            stream.finish_record()
        else:
            picker = _KeyPicker(stream.key_at - stream.rest, key_len)
            stream.finish_record(picker.take)
            while stream.pending:
                stream.pump(picker.take)
            yield head[1], picker.identity(), picker.has_value()


def read_records(batch: bytes | memoryview, header: BatchHeader) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of each record, the batch read through the bounded stream: each
    record is held whole, as Kafka's readers hold one, never the batch (the coordinators load their
    topics so, where a client allowed to write them could have stored a batch that inflates far)."""
    stream = stream_records(batch, header)
    while (head := stream.next_head()) is not None:
        if stream.in_window:
            body: bytes | bytearray | memoryview = memoryview(stream.buf)[stream.rest:stream.rest + head[4]]
            stream.finish_record()
        else:
            collected = bytearray()
            stream.finish_record(collected.extend)
            while stream.pending:
                stream.pump(collected.extend)
            body = collected
        _, p = decode_varint(body, 0)  # the offset delta, known from the head
        key_len, p = decode_varint(body, p)
        key = None if key_len < 0 else bytes(body[p:p + key_len])
        p += max(key_len, 0)
        value_len, p = decode_varint(body, p)
        value = None if value_len < 0 else bytes(body[p:p + value_len])
        yield header.base_offset + head[1], key, value


class _KeyPicker:
    """A long record's key identity and value length, picked from its bytes (from the offset
    delta on) as they stream past in pieces."""

    __slots__ = ("_skip", "_left", "_short", "_digest", "_value_head")

    def __init__(self, skip: int, key_len: int) -> None:
        self._skip = skip  # the offset delta's and key length's bytes
        self._left = max(key_len, 0)
        self._short: bytearray | None = bytearray() if 0 <= key_len <= MAX_RAW_KEY else None
        self._digest = KEY_DIGEST() if key_len > MAX_RAW_KEY else None
        self._value_head = b""  # the value length's first byte

    def take(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        if self._skip:
            n = min(self._skip, len(view))
            self._skip -= n
            view = view[n:]
        if self._left and len(view):
            n = min(self._left, len(view))
            if self._short is not None:
                self._short += view[:n]
            elif self._digest is not None:
                self._digest.update(view[:n])
            self._left -= n
            view = view[n:]
        if not self._skip and not self._left and len(view) and not self._value_head:
            self._value_head = bytes(view[:1])

    def identity(self) -> bytes | None:
        if self._digest is not None:
            return self._digest.digest()
        return None if self._short is None else bytes(self._short)

    def has_value(self) -> bool:
        """A null value's length is -1, one zigzag byte: 0x01 (every other length differs in it)."""
        return self._value_head != b"\x01"


class BatchTooLarge(Exception):
    """A converted batch over its size limit (Kafka's RecordTooLargeException after conversion)."""


class BatchWriter:
    """The batch Kafka's LogValidator builds when a topic's compression.type differs from the
    producer's, written record by record through a streaming compressor: the same offsets,
    producer id/epoch/sequence, flags and records (record timestamps kept, deltas from a base
    timestamp that is the first record's), the max timestamp the largest record's (or the log
    append time). The compressed output is bounded by max_size (the whole batch, as Kafka
    compares it with max.message.bytes): past it, writing stops and finish raises BatchTooLarge,
    so a batch that inflates without end costs no more than max_size. The cleaner writes its
    batches here too, with a delete horizon as the base timestamp when one is set."""

    def __init__(self, header: BatchHeader, codec: int, level: int | None, max_size: int,
                 delete_horizon: int | None = None) -> None:
        self._header = header
        self._codec = codec
        self._out: codec_stream.Deflater | None = codec_stream.deflater(codec, level)
        self._max_body = max_size - HEADER_SIZE
        self._horizon = delete_horizon
        self._base_timestamp: int | None = delete_horizon
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
        if self._horizon is not None:
            attributes |= DELETE_HORIZON_MASK
        return _assemble(header, attributes, base, max_timestamp, self._count, body)


def recompress(batch: bytes | memoryview, header: BatchHeader, codec: int, level: int | None,
               max_size: int = (1 << 31) - 1) -> bytes:
    """The batch with its records compressed with codec (none: uncompressed) instead of the
    producer's (see BatchWriter), streamed record by record; BatchTooLarge past max_size,
    record_stream.MalformedRecords or codec_stream.CorruptStream for records that do not read."""
    return _write_records(batch, header, BatchWriter(header, codec, level, max_size), None)


def rewrite(batch: bytes | memoryview, header: BatchHeader, keep: bytearray, horizon_ms: int | None) -> bytes:
    """The cleaner's batch in place of the original (see the module docstring): the records whose
    byte in keep (one per record, in order) is set, in the batch's own codec. horizon_ms: the
    delete horizon to carry (new or the batch's own), or None."""
    return _write_records(batch, header, BatchWriter(header, header.compression, None, 1 << 31, horizon_ms), keep)


def _write_records(batch: bytes | memoryview, header: BatchHeader, writer: BatchWriter,
                   keep: bytearray | None) -> bytes:
    """The batch's records streamed into writer (those keep marks, or all), with their timestamps."""
    stream = stream_records(batch, header)
    append_time = header.is_log_append_time
    index = 0
    while (head := stream.next_head()) is not None:
        sink = None
        if keep is None or keep[index]:
            timestamp = header.max_timestamp if append_time else header.base_timestamp + head[0]
            sink = writer.start_record(timestamp, head[4])
        index += 1
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
