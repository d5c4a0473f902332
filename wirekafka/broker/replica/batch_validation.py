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
- then Kafka's per-record checks (LogValidator.validateRecord), every error collected with the
  record's index in the batch, at most one per record: on a compacted topic a record needs a key
  (INVALID_RECORD; a keyless record is not checked further); on a CreateTime topic each record's
  own timestamp (first timestamp + delta), unless -1, must lie within
  message.timestamp.before/after.max.ms of the broker's clock (INVALID_TIMESTAMP); a client's
  batch must not claim LogAppendTime on a LogAppendTime topic, nor claim it without a time on a
  CreateTime one, where its records all read its max timestamp (INVALID_TIMESTAMP).
  Records are decoded (storage/batch_filter's raw walker) only for compacted topics, which must,
  and when the header's first or max timestamp is out of range or it claims LogAppendTime.
  Deliberate deviation, to keep other batches undecoded: when the header's first and max
  timestamps are in range the records are trusted to be, so a record with an explicit timestamp
  earlier than the first one and older than message.timestamp.before.max.ms (unbounded by
  default), or later than a max timestamp the client understated, is accepted where Kafka refuses
  it. On compacted topics every record is checked, as Kafka does.

What the producer is told follows Kafka's three kinds of failure: a batch refused before the log
is involved (`RefusedBeforeLog`: the produce request's own checks, corrupt or too large) is
answered with log_start_offset -1 and no message; records the log's validator rejects
(`InvalidRecords`, Kafka's RecordValidationException) with the log start offset, Kafka's summary
message and the per-record errors (Produce v8+ `record_errors`); any other error with the log
start offset and no message."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage import batch_filter


class RefusedBeforeLog(KafkaApiError):
    """Refused before the partition's log is involved: no log start offset and, unless
    `explained`, no message."""

    explained = False


class TransactionNotVerified(RefusedBeforeLog):
    """A transactional batch for a partition outside the producer's transaction: Kafka's
    verification refuses it before the log, with a message (INVALID_TXN_STATE)."""

    explained = True


class InvalidRecords(KafkaApiError):
    """Records the log's validator rejects (Kafka's RecordValidationException): the one kind of
    produce error Kafka explains, with each rejected record's index in the batch and why."""

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors

    @classmethod
    def of(cls, record_errors: list[tuple[int, str]], timestamp_error: bool) -> "InvalidRecords":
        """Kafka's summary (LogValidator.processRecordErrors): any timestamp error makes the
        whole batch INVALID_TIMESTAMP; otherwise INVALID_RECORD listing up to three errors as
        Java prints a List of ProduceResponse.RecordError."""
        if timestamp_error:
            return cls(ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp",
                       record_errors)
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
        return cls(ErrorCode.INVALID_RECORD,
                   f"One or more records have been rejected due to {len(record_errors)} record errors in total, "
                   f"and only showing the first three errors at most: [{shown}]", record_errors)


@dataclass(slots=True, frozen=True)
class AppendPolicy:
    """The topic settings a client batch is checked against."""

    max_message_bytes: int
    log_append_time: bool
    timestamp_before_ms: int
    timestamp_after_ms: int
    compacted: bool
    min_insync_replicas: int
    # compression.type: the codec batches are stored with (None: "producer", as sent) and the
    # level of compression.<codec>.level for it (None: no level for that codec)
    codec: int | None = None
    compression_level: int | None = None

    @classmethod
    def from_values(cls, value) -> "AppendPolicy":  # value(name) -> the topic's effective config
        compression = value("compression.type")
        codec = _TOPIC_CODECS.get(compression)
        level_key = f"compression.{compression}.level"
        return cls(
            max_message_bytes=int(value("max.message.bytes")),
            log_append_time=value("message.timestamp.type") == "LogAppendTime",
            timestamp_before_ms=int(value("message.timestamp.before.max.ms")),
            timestamp_after_ms=int(value("message.timestamp.after.max.ms")),
            compacted="compact" in value("cleanup.policy"),
            min_insync_replicas=int(value("min.insync.replicas")),
            codec=codec,
            compression_level=int(value(level_key)) if compression in ("gzip", "lz4", "zstd") else None,
        )


# compression.type -> Kafka's codec id ("producer" keeps the producer's: absent here)
_TOPIC_CODECS = {"uncompressed": batch_filter.CODEC_NONE, "gzip": batch_filter.CODEC_GZIP,
                 "snappy": batch_filter.CODEC_SNAPPY, "lz4": batch_filter.CODEC_LZ4, "zstd": batch_filter.CODEC_ZSTD}


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


def starts_transactional(data: bytes | memoryview | None) -> bool:
    """Whether a partition's records begin with a whole transactional batch (Kafka's produce
    authorization looks at the first batch of each partition; a legacy or incomplete one is not
    transactional)."""
    if data is None or len(data) < records.HEADER_SIZE or data[records.MAGIC_OFFSET] != 2:
        return False
    _, length = records.peek_offset_and_length(data)
    return (records.LOG_OVERHEAD + length <= len(data)
            and bool(data[records.ATTRIBUTES_OFFSET + 1] & records.TRANSACTIONAL_MASK))


def validate_client_batch(data: bytes | memoryview | None, policy: AppendPolicy, now_ms: int,
                          topic: str = "", partition: int = 0) -> records.BatchHeader:
    """Structural and policy checks on the batch that starts a partition's records (bytes after
    it, short of a second batch, are dropped as Kafka's trimInvalidBytes drops them: the caller
    appends `header.size` bytes); raises KafkaApiError. `topic` and `partition` only word errors."""
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
    if policy.compacted or _timestamps_need_records(header, policy, now_ms):
        errors, timestamp_error = _record_errors(batch, header, policy, now_ms, topic, partition)
        if errors:
            raise InvalidRecords.of(errors, timestamp_error)
    return header


def _java_long(n: int) -> int:
    """n as Java's 64-bit arithmetic leaves it (wrapped)."""
    return ((n + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _timestamps_need_records(header: records.BatchHeader, policy: AppendPolicy, now_ms: int) -> bool:
    """Whether a record of the batch may fail Kafka's timestamp checks, judged on the header: its
    first and max timestamps (a producer's first record's and largest), or a LogAppendTime claim.
    Python's exact integers make this a superset of Java's wrapping check."""
    if header.is_log_append_time:
        return True  # every record has the max timestamp, or the claim itself is refused
    if policy.log_append_time:
        return False
    for ts in (header.base_timestamp, header.max_timestamp):
        if ts != -1 and (now_ms - ts > policy.timestamp_before_ms or ts - now_ms > policy.timestamp_after_ms):
            return True
    return False


def _record_errors(batch: bytes | memoryview, header: records.BatchHeader, policy: AppendPolicy, now_ms: int,
                   topic: str, partition: int) -> tuple[list[tuple[int, str]], bool]:
    """Kafka's per-record checks (LogValidator.validateRecord) on every record of the batch:
    (index in the batch, Kafka's message) for each record refused, and whether any was refused
    for its timestamp. A record the walker cannot read makes the batch INVALID_RECORD, as
    Kafka's record iterator does."""
    create_time = not policy.log_append_time
    claimed = header.is_log_append_time  # a client's LogAppendTime batch: every record reads max_timestamp
    # the CreateTime range, clamped to Java longs: inside it Java's wrapping check cannot differ
    lo = max(now_ms - policy.timestamp_before_ms, _LONG_MIN)
    hi = min(now_ms + policy.timestamp_after_ms, _LONG_MAX)
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    try:
        section = batch_filter.records_section(batch, header)
    except Exception as exc:  # noqa: BLE001 - any codec's failure to decompress
        raise KafkaApiError(ErrorCode.INVALID_RECORD, f"cannot decompress the records: {exc}") from exc
    count = 0
    last_end = 0
    key_index = batch_filter.KEY
    try:
        for record in batch_filter.iter_records(section):
            if record[batch_filter.END] <= last_end or record[batch_filter.END] > len(section) \
                    or count == header.records_count:
                raise IndexError("record sizes do not match the batch")
            last_end = record[batch_filter.END]
            index = count
            count += 1
            if policy.compacted and record[key_index] is None:
                errors.append((index, "Compacted topic cannot accept message without key in topic partition "
                                      f"{topic}-{partition}"))
                continue
            if claimed:
                ts = header.max_timestamp
            elif create_time:
                ts = header.base_timestamp + record[batch_filter.TIMESTAMP_DELTA]
                if lo <= ts <= hi:
                    continue
                ts = _java_long(ts)
            else:
                continue
            if create_time and ts != -1:
                diff = _java_long(now_ms - ts)
                if diff > policy.timestamp_before_ms or _java_long(-diff) > policy.timestamp_after_ms:
                    offset = _java_long(header.base_offset + record[batch_filter.OFFSET_DELTA])
                    errors.append((index, f"Timestamp {ts} of message with offset {offset} is out of range. "
                                          "The timestamp should be within "
                                          f"[{_java_long(now_ms - policy.timestamp_before_ms)}, "
                                          f"{_java_long(now_ms + policy.timestamp_after_ms)}]"))
                    timestamp_error = True
            elif claimed:
                shown = _record_string(section, header, record, ts, policy)
                errors.append((index, f"Invalid timestamp type in message {shown}. "
                                      "Producer should not set timestamp type to LogAppendTime."))
                timestamp_error = True
    except IndexError as exc:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "the batch's records cannot be read") from exc
    if count != header.records_count:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "the batch's record count does not match its records")
    return errors, timestamp_error


def _record_string(section: bytes, header: records.BatchHeader, record: batch_filter.RawRecord, ts: int,
                   policy: AppendPolicy) -> str:
    """A record as Kafka's validator prints it: a compressed batch kept in the producer's codec is
    read with key and value skipped (PartialDefaultRecord: sizes, -1 for null); an uncompressed
    one, or one the topic's compression.type has recompressed, whole (DefaultRecord: 0 bytes for
    null)."""
    key_size, value_size = batch_filter.key_value_sizes(section, record)
    offset = _java_long(header.base_offset + record[batch_filter.OFFSET_DELTA])
    if header.compression and policy.codec in (None, header.compression):
        return f"PartialDefaultRecord(offset={offset}, timestamp={ts}, key={key_size} bytes, value={value_size} bytes)"
    return (f"DefaultRecord(offset={offset}, timestamp={ts}, key={max(key_size, 0)} bytes, "
            f"value={max(value_size, 0)} bytes)")
