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
  Records are read only for compacted topics, which must, when the header's first or max
  timestamp is out of range or it claims LogAppendTime, and when the topic's compression.type
  differs from the producer's codec (the batch is then stored converted to it, as Kafka's
  LogValidator rebuilds it, and refused MESSAGE_TOO_LARGE if that outgrows max.message.bytes);
  any other batch stays bytes. They are read as a stream (`inspect_records`, over
  storage/record_stream): a compressed batch may inflate to gigabytes, and Kafka, which streams
  record by record, refuses such a bomb without holding it, so nothing here holds more than a
  window of it either; the broker runs the reading in slices between other connections' work.
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
from typing import Generator

from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage import batch_filter, codec_stream, record_stream


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
_TOPIC_CODECS = {"uncompressed": codec_stream.CODEC_NONE, "gzip": codec_stream.CODEC_GZIP,
                 "snappy": codec_stream.CODEC_SNAPPY, "lz4": codec_stream.CODEC_LZ4, "zstd": codec_stream.CODEC_ZSTD}


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


def check_client_batch(data: bytes | memoryview | None, policy: AppendPolicy) -> tuple[bytes | memoryview,
                                                                                   records.BatchHeader]:
    """Structural checks on the batch that starts a partition's records: (the batch's bytes,
    its header). Bytes after it, short of a second batch, are dropped as Kafka's trimInvalidBytes
    drops them. Raises KafkaApiError; reads no record."""
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
    return batch, header


def converts(header: records.BatchHeader, policy: AppendPolicy) -> bool:
    """Whether the topic's compression.type makes the batch be stored recompressed."""
    return policy.codec is not None and policy.codec != header.compression


def needs_inspection(header: records.BatchHeader, policy: AppendPolicy, now_ms: int) -> bool:
    """Whether the broker must read the batch's records: a compacted topic, a timestamp the
    header puts out of range (or a LogAppendTime claim), or a conversion. Any other batch stays
    bytes, unread."""
    return policy.compacted or converts(header, policy) or _timestamps_need_records(header, policy, now_ms)


def validate_client_batch(data: bytes | memoryview | None, policy: AppendPolicy, now_ms: int,
                          topic: str = "", partition: int = 0) -> records.BatchHeader:
    """check_client_batch, then the record checks of inspect_records run to their end in one go,
    without the conversion (tools and tests; the broker runs inspections in slices): the batch's
    header. `topic` and `partition` only word errors."""
    batch, header = check_client_batch(data, policy)
    if needs_inspection(header, policy, now_ms):
        for _ in inspect_records(batch, header, policy, now_ms, topic, partition, convert=False):
            pass
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


# Records per slice of an inspection: the driver may serve other connections between slices.
_SLICE_RECORDS = 256


def inspect_records(batch: bytes | memoryview, header: records.BatchHeader, policy: AppendPolicy, now_ms: int,
                    topic: str, partition: int, convert: bool = True) -> Generator[None, None, bytes | None]:
    """Kafka's per-record checks (LogValidator.validateRecord) and, when the topic's codec
    differs, the conversion to it, in one streaming pass over the records; a generator that
    yields between slices of the work (every few hundred records, every piece of a long record),
    so that a batch inflating to gigabytes holds no more than a window and the event loop between
    slices. Returns the converted batch, or None when the batch is stored as sent (or `convert`
    is false: the checks alone).

    What it raises, in Kafka's order: a record that cannot be read, the wrong number of records,
    or anything after the last one, at once (INVALID_RECORD: Kafka's iterator, which reads
    records_count records and then one byte more; a stream that cannot be decompressed is the same
    here); after the last record, the per-record errors as InvalidRecords, each with the record's
    index; then a converted batch over max.message.bytes (MESSAGE_TOO_LARGE, Kafka's
    RecordTooLargeException: refused before the log, no message)."""
    create_time = not policy.log_append_time
    claimed = header.is_log_append_time  # a client's LogAppendTime batch: every record reads max_timestamp
    # the CreateTime range, clamped to Java longs: inside it Java's wrapping check cannot differ
    lo = max(now_ms - policy.timestamp_before_ms, _LONG_MIN)
    hi = min(now_ms + policy.timestamp_after_ms, _LONG_MAX)
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    writer = batch_filter.BatchWriter(header, policy.codec, policy.compression_level, policy.max_message_bytes) \
        if convert and policy.codec is not None and converts(header, policy) else None
    try:
        stream = batch_filter.stream_records(batch, header)
        count = 0
        records_count, compacted = header.records_count, policy.compacted
        base_timestamp, max_timestamp = header.base_timestamp, header.max_timestamp
        while (head := stream.next_head()) is not None:
            if count == records_count:
                raise record_stream.MalformedRecords("records still remaining")
            count += 1
            ts = max_timestamp if claimed else base_timestamp + head[0]
            sink = writer.start_record(ts, head[4]) if writer is not None else None
            stream.finish_record(sink)
            while stream.pending:
                yield
                stream.pump(sink)
            if not count % _SLICE_RECORDS:
                yield
            if (compacted and head[2] < 0) or claimed or (create_time and not lo <= ts <= hi):
                error = _record_error(head, ts, header, policy, now_ms, topic, partition, lo, hi, create_time, claimed)
                if error is not None:
                    errors.append((count - 1, error[0]))
                    timestamp_error |= error[1]
        if count != header.records_count or not stream.at_end():
            raise record_stream.MalformedRecords("the batch's record count does not match its records")
    except (record_stream.MalformedRecords, codec_stream.CorruptStream, codec_stream.UnknownCodec) as exc:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, f"the batch's records cannot be read: {exc}") from exc
    if errors:
        raise InvalidRecords.of(errors, timestamp_error)
    if writer is None:
        return None
    try:
        return writer.finish()
    except batch_filter.BatchTooLarge:
        raise RefusedBeforeLog(ErrorCode.MESSAGE_TOO_LARGE, f"the converted record batch exceeds "
                                                            f"max.message.bytes={policy.max_message_bytes}") from None


def _record_error(head: record_stream.Head, ts: int, header: records.BatchHeader, policy: AppendPolicy, now_ms: int,
                  topic: str, partition: int, lo: int, hi: int, create_time: bool,
                  claimed: bool) -> tuple[str, bool] | None:
    """Kafka's message for a record it refuses, and whether for its timestamp; None if it passes.
    On a compacted topic a keyless record is refused for that alone."""
    if policy.compacted and head[2] < 0:
        return f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}", False
    if not claimed and (not create_time or lo <= ts <= hi):
        return None
    ts = _java_long(ts)
    if create_time and ts != -1:
        diff = _java_long(now_ms - ts)
        if diff > policy.timestamp_before_ms or _java_long(-diff) > policy.timestamp_after_ms:
            offset = _java_long(header.base_offset + head[1])
            return (f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp should be within "
                    f"[{_java_long(now_ms - policy.timestamp_before_ms)}, "
                    f"{_java_long(now_ms + policy.timestamp_after_ms)}]"), True
        return None
    if claimed:
        shown = _record_string(head, header, ts, policy)
        return f"Invalid timestamp type in message {shown}. Producer should not set timestamp type to LogAppendTime.", \
            True
    return None


def _record_string(head: record_stream.Head, header: records.BatchHeader, ts: int, policy: AppendPolicy) -> str:
    """A record as Kafka's validator prints it: a compressed batch kept in the producer's codec is
    read with key and value skipped (PartialDefaultRecord: sizes, -1 for null); an uncompressed
    one, or one the topic's compression.type has recompressed, whole (DefaultRecord: 0 bytes for
    null). A value length hidden behind a key longer than the stream's window reads -1."""
    key_size = head[2]
    value_size = -1 if head[3] is None else head[3]
    offset = _java_long(header.base_offset + head[1])
    if header.compression and policy.codec in (None, header.compression):
        return f"PartialDefaultRecord(offset={offset}, timestamp={ts}, key={key_size} bytes, value={value_size} bytes)"
    return (f"DefaultRecord(offset={offset}, timestamp={ts}, key={max(key_size, 0)} bytes, "
            f"value={max(value_size, 0)} bytes)")
