"""Checks a client's record batch must pass before it is appended (Kafka's LogValidator and the
produce path's checks), with the topic's settings looked up once per topic per request.

- exactly one magic-2 batch per partition (INVALID_RECORD), within max.message.bytes
  (MESSAGE_TOO_LARGE), with a matching CRC-32C and consistent length fields (CORRUPT_MESSAGE);
- no control batches from clients (INVALID_RECORD); transactional batches are refused
  (INVALID_TXN_STATE) until transactions exist;
- CreateTime timestamps within message.timestamp.before/after.max.ms (INVALID_TIMESTAMP), checked
  on the batch's first and max timestamps without decoding records;
- compacted topics need a key on every record (INVALID_RECORD): the one check that decodes."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


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


def validate_client_batch(data: bytes | memoryview | None, policy: AppendPolicy, now_ms: int) -> records.BatchHeader:
    """Structural and policy checks on one partition's records; raises KafkaApiError."""
    if not data:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "produce request has no record batch")
    if len(data) < records.LOG_OVERHEAD:
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, "record batch is truncated")
    _, length = records.peek_offset_and_length(data)
    if records.LOG_OVERHEAD + length < len(data):
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "produce requests must contain exactly one record batch")
    if len(data) > policy.max_message_bytes:
        raise KafkaApiError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"the record batch of {len(data)} bytes exceeds max.message.bytes={policy.max_message_bytes}",
        )
    try:
        header = records.validate_batch(data)
    except records.InvalidBatch as exc:
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE if exc.corrupt else ErrorCode.INVALID_RECORD, str(exc)) from exc
    if header.is_control:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "clients are not allowed to write control records")
    if not policy.log_append_time:
        for ts in (header.base_timestamp, header.max_timestamp):
            if ts >= 0 and (now_ms - ts > policy.timestamp_before_ms or ts - now_ms > policy.timestamp_after_ms):
                raise KafkaApiError(ErrorCode.INVALID_TIMESTAMP, f"timestamp {ts} is out of range")
    if policy.compacted and any(r.key is None for r in records.iter_records(bytes(data))):
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "compacted topic cannot accept a record without a key")
    return header
