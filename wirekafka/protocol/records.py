"""RecordBatch (magic v2) as a view over bytes.

The broker stores and serves batches exactly as producers sent them; it reads the 61-byte
batch header, checks size bounds and the CRC-32C, and patches the base offset and partition
leader epoch in place. Records are only iterated (through kafka-python's record codec, which
also decompresses) where a feature needs them: timestamp look-ups, compaction, internal topics.

Header layout (big-endian):
  0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 | 17 crc u32 |
  21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 | 35 maxTimestamp i64 |
  43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32
The CRC covers everything from the attributes (byte 21) to the end of the batch."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

import crc32c

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_STRUCT = _HEADER  # packs/unpacks the 13 header fields in order
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_BOUNDS = struct.Struct(">qi11xi")  # baseOffset, batchLength, (epoch, magic, crc, attributes), lastOffsetDelta
BOUNDS_SIZE = _BOUNDS.size


class InvalidBatch(Exception):
    """A batch that fails structural checks; `corrupt` distinguishes CRC/size damage."""

    def __init__(self, message: str, corrupt: bool) -> None:
        super().__init__(message)
        self.corrupt = corrupt


@dataclass(slots=True, frozen=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies in a log."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


def peek_offset_and_length(buf: bytes | memoryview, pos: int = 0) -> tuple[int, int]:
    """(baseOffset, batchLength) of the batch at pos; needs 12 bytes."""
    return _OFFSET_AND_LENGTH.unpack_from(buf, pos)


def batch_bounds(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int, int]:
    """(base offset, whole size, last offset) of the batch at pos; needs BOUNDS_SIZE bytes."""
    base, length, last_delta = _BOUNDS.unpack_from(buf, pos)
    return base, LOG_OVERHEAD + length, base + last_delta


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    """CRC-32C from the attributes to the end; over a view, so a 1 MB batch is not copied first."""
    return crc32c.crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def check_integrity(batch: bytes | memoryview) -> BatchHeader:
    """Check one whole batch (exactly its bytes) as Kafka's RecordBatch.ensureValid does: size
    fields, magic, CRC-32C. What log recovery checks: a batch the cleaner rewrote legitimately
    holds fewer records than its offsets span, or none at all."""
    if len(batch) < HEADER_SIZE:
        raise InvalidBatch(f"batch of {len(batch)} bytes is shorter than a v2 header", corrupt=True)
    header = parse_header(batch)
    if header.magic != 2:
        raise InvalidBatch(f"record batch magic {header.magic} is not 2", corrupt=False)
    if header.size != len(batch):
        raise InvalidBatch(
            f"batch length field says {header.size} bytes but {len(batch)} are present", corrupt=True
        )
    if compute_crc(batch) != header.crc:
        raise InvalidBatch("record batch CRC-32C mismatch", corrupt=True)
    return header


def validate_batch(batch: bytes | memoryview) -> BatchHeader:
    """check_integrity, and the offset counts of a batch as a producer sends it."""
    header = check_integrity(batch)
    if header.last_offset_delta < 0 or header.records_count <= 0:
        raise InvalidBatch("record batch has no records", corrupt=False)
    if header.records_count != header.last_offset_delta + 1 and header.compression == 0:
        raise InvalidBatch("record count does not match the last offset delta", corrupt=False)
    return header


def split_batches(data: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """(start, end) of each whole batch in data; stops at a truncated trailing batch."""
    pos = 0
    n = len(data)
    while pos + LOG_OVERHEAD <= n:
        _, length = peek_offset_and_length(data, pos)
        end = pos + LOG_OVERHEAD + length
        if length < HEADER_SIZE - LOG_OVERHEAD or end > n:
            return
        yield pos, end
        pos = end


def assign_offsets(batch: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Patch the fields the leader owns. Neither is covered by the CRC, so it stays valid."""
    _I64.pack_into(batch, 0, base_offset)
    _I32.pack_into(batch, 12, leader_epoch)


def set_log_append_time(batch: bytearray, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with max timestamp = now; these bytes are CRC'd, so re-CRC."""
    (attributes,) = _I16.unpack_from(batch, ATTRIBUTES_OFFSET)
    _I16.pack_into(batch, ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(batch, MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _U32.pack_into(batch, CRC_OFFSET, compute_crc(batch))


@dataclass(slots=True, frozen=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def iter_records(batch: bytes) -> Iterator[Record]:
    """Decode the records of one batch (decompressing if needed). Not for the hot path."""
    from kafka.record.default_records import DefaultRecordBatch

    header = parse_header(batch)
    decoded = DefaultRecordBatch(bytes(batch))
    for rec in decoded:
        timestamp = header.max_timestamp if header.is_log_append_time else rec.timestamp
        yield Record(rec.offset, timestamp, rec.key, rec.value, list(rec.headers))


def build_batch(
    entries: list[tuple[bytes | None, bytes | None, int]],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    headers: list[tuple[str, bytes | None]] | None = None,
    transactional: bool = False,
) -> bytes:
    """Encode one v2 batch of (key, value, timestamp_ms) records — for the broker's own internal
    records (group metadata, committed offsets) and for tests; clients build their own."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=2**31 - 1,
    )
    for i, (key, value, timestamp) in enumerate(entries):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=headers or [])
    batch = bytearray(builder.build())
    _I64.pack_into(batch, 0, base_offset)
    return bytes(batch)


# Control records (transaction markers): key = version i16 (0), type i16 (0 ABORT, 1 COMMIT);
# value = version i16 (0), coordinator epoch i32. Kafka's EndTransactionMarker format.
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
CONTROL_ABORT = 0
CONTROL_COMMIT = 1


@dataclass(slots=True, frozen=True)
class TxnMarker:
    commit: bool
    coordinator_epoch: int


def build_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                       timestamp_ms: int) -> bytes:
    """A control batch holding one COMMIT or ABORT marker, as the transaction coordinator has
    the partition leader write it (transactional and control bits set, base sequence -1)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE, batch_size=2**31 - 1,
    )
    builder.append(0, timestamp=timestamp_ms, headers=[],
                   key=_CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT),
                   value=_MARKER_VALUE.pack(0, coordinator_epoch))
    batch = bytearray(builder.build())
    (attributes,) = _I16.unpack_from(batch, ATTRIBUTES_OFFSET)
    _I16.pack_into(batch, ATTRIBUTES_OFFSET, attributes | CONTROL_MASK)
    _U32.pack_into(batch, CRC_OFFSET, compute_crc(batch))
    return bytes(batch)


def parse_marker(batch: bytes) -> TxnMarker:
    """The marker in a control batch; InvalidBatch if it holds something else."""
    from kafka.record.default_records import DefaultRecordBatch

    for rec in DefaultRecordBatch(bytes(batch)):
        if rec.key is None or len(rec.key) < _CONTROL_KEY.size or rec.value is None \
                or len(rec.value) < _MARKER_VALUE.size:
            break
        _, kind = _CONTROL_KEY.unpack_from(rec.key)
        if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
            break
        _, coordinator_epoch = _MARKER_VALUE.unpack_from(rec.value)
        return TxnMarker(kind == CONTROL_COMMIT, coordinator_epoch)
    raise InvalidBatch("control batch holds no transaction marker", corrupt=False)
