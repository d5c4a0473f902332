"""Checks a client's record batch must pass before it is appended (Kafka's LogValidator and the
produce path's checks), with the topic's settings looked up once per topic per request.

First the request-level checks Kafka makes before any log is involved (ProduceRequest's
validateRecords; `request_records_error`): the records must start with a complete magic-2 batch
and hold no second one (INVALID_RECORD), sizes and magic must be readable (CORRUPT_MESSAGE), and
ZStandard needs Produce v7+ (UNSUPPORTED_COMPRESSION_TYPE). Such a partition is answered with
no offsets and no log start offset. Then, on the first batch, per topic settings:
- within max.message.bytes (MESSAGE_TOO_LARGE), with a matching CRC-32C and consistent length
  fields (CORRUPT_MESSAGE);
- no control batches from clients (INVALID_RECORD) (transactional batches are checked against
  the transaction coordinator by the replica manager);
- CreateTime timestamps within message.timestamp.before/after.max.ms (INVALID_TIMESTAMP), checked
  on the batch's first and max timestamps without decoding records;
- compacted topics need a key on every record (INVALID_RECORD): the one check that decodes.

What the producer is told follows Kafka's three kinds of failure: a batch refused before the log
is involved (`RefusedBeforeLog`: the produce request's own checks, corrupt or too large) is
answered with log_start_offset -1 and no message; records the log's validator rejects
(`InvalidRecords`, Kafka's RecordValidationException) with the log start offset and the message;
any other error with the log start offset and no message."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


class RefusedBeforeLog(KafkaApiError):
    """Refused before the partition's log is involved: no log start offset and, unless
    `explained`, no message."""

    explained = False


class TransactionNotVerified(RefusedBeforeLog):
    """A transactional batch for a partition outside the producer's transaction: Kafka's
    verification refuses it before the log, with a message (INVALID_TXN_STATE)."""

    explained = True


class InvalidRecords(KafkaApiError):
    """Records the log's validator rejects: the one kind of produce error Kafka explains."""


@dataclass(slots=True, frozen=True)
class AppendPolicy:
    """The topic settings a client batch is checked against."""

    max_message_bytes: int
    log_append_time: bool
    timestamp_before_ms: int
    timestamp_after_ms: int
    compacted: bool
    min_insync_replicas: int

    @classmethod
    def from_values(cls, value) -> "AppendPolicy":  # value(name) -> the topic's effective config
        return cls(
            max_message_bytes=int(value("max.message.bytes")),
            log_append_time=value("message.timestamp.type") == "LogAppendTime",
            timestamp_before_ms=int(value("message.timestamp.before.max.ms")),
            timestamp_after_ms=int(value("message.timestamp.after.max.ms")),
            compacted="compact" in value("cleanup.policy"),
            min_insync_replicas=int(value("min.insync.replicas")),
        )


ZSTD = 4
ZSTD_FROM_VERSION = 7
_MIN_LEGACY_RECORD_SIZE = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest valid size field
_HEADER_UP_TO_MAGIC = records.MAGIC_OFFSET + 1


def _next_batch_end(data: bytes | memoryview, pos: int) -> int | None:
    """End of the batch at `pos`, or None when no complete batch starts there, read as Kafka's
    record iterator reads it (so a legacy message set has "batches" too); raises KafkaApiError
    (CORRUPT_MESSAGE, with Kafka's words) for an impossible size or magic."""
    remaining = len(data) - pos
    if remaining < records.LOG_OVERHEAD:
        return None
    _, size = records.peek_offset_and_length(data, pos)
    if size < _MIN_LEGACY_RECORD_SIZE:
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, f"Record size {size} is less than the minimum record "
                                                       f"overhead ({_MIN_LEGACY_RECORD_SIZE})")
    if remaining < _HEADER_UP_TO_MAGIC:
        return None
    magic = data[pos + records.MAGIC_OFFSET]
    if magic > 2:
        signed = magic - 256 if magic > 127 else magic  # as Kafka reads (and words) the byte
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {signed}")
    end = pos + records.LOG_OVERHEAD + size
    return end if end <= len(data) else None


def request_records_error(version: int, data: bytes | memoryview | None) -> KafkaApiError | None:
    """The error Kafka answers for a produce request's records before appending, or None.
    Kafka 4.3.1 words a damaged first batch (size, magic) but not a damaged second one."""
    try:
        first_end = _next_batch_end(data or b"", 0)
    except KafkaApiError as exc:
        return exc
    if data is None or first_end is None:
        return KafkaApiError(ErrorCode.INVALID_RECORD)  # no complete batch at all
    if data[records.MAGIC_OFFSET] != 2:
        return KafkaApiError(ErrorCode.INVALID_RECORD)  # a legacy (magic 0/1) message set
    if version < ZSTD_FROM_VERSION and data[records.ATTRIBUTES_OFFSET + 1] & records.COMPRESSION_MASK == ZSTD:
        return KafkaApiError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    try:
        if _next_batch_end(data, first_end) is not None:
            return KafkaApiError(ErrorCode.INVALID_RECORD)  # more than one batch
    except KafkaApiError as exc:
        return KafkaApiError(exc.code)
    return None


def validate_client_batch(data: bytes | memoryview | None, policy: AppendPolicy, now_ms: int) -> records.BatchHeader:
    """Structural and policy checks on the batch that starts a partition's records (bytes after
    it, short of a second batch, are dropped as Kafka's trimInvalidBytes drops them: the caller
    appends `header.size` bytes); raises KafkaApiError."""
    if not data:
        raise RefusedBeforeLog(ErrorCode.INVALID_RECORD, "produce request has no record batch")
    if len(data) < records.LOG_OVERHEAD:
        raise RefusedBeforeLog(ErrorCode.CORRUPT_MESSAGE, "record batch is truncated")
    _, length = records.peek_offset_and_length(data)
    size = records.LOG_OVERHEAD + length
    batch = memoryview(data)[:size] if size < len(data) else data
    if len(batch) > policy.max_message_bytes:
        raise RefusedBeforeLog(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"the record batch of {len(batch)} bytes exceeds max.message.bytes={policy.max_message_bytes}",
        )
    try:
        header = records.validate_batch(batch)
    except records.InvalidBatch as exc:
        raise RefusedBeforeLog(ErrorCode.CORRUPT_MESSAGE if exc.corrupt else ErrorCode.INVALID_RECORD,
                               str(exc)) from exc
    if header.is_control:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "clients are not allowed to write control records")
    if not policy.log_append_time:
        for ts in (header.base_timestamp, header.max_timestamp):
            if ts >= 0 and (now_ms - ts > policy.timestamp_before_ms or ts - now_ms > policy.timestamp_after_ms):
                raise InvalidRecords(ErrorCode.INVALID_TIMESTAMP, f"timestamp {ts} is out of range")
    if policy.compacted and any(r.key is None for r in records.iter_records(bytes(batch))):
        raise InvalidRecords(ErrorCode.INVALID_RECORD, "compacted topic cannot accept a record without a key")
    return header
