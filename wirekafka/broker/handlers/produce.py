"""Produce (key 0), v0-13 (v0-2 carry magic-2 batches only, as in Kafka 4).

- Topics by name (v3-12) or topic id (v13+).
- Each partition's records must be exactly one magic-2 batch (INVALID_RECORD otherwise); its size
  must not exceed the topic's max.message.bytes (MESSAGE_TOO_LARGE); its CRC-32C must match and
  its length fields must fit (CORRUPT_MESSAGE). Control batches from clients are INVALID_RECORD.
- CreateTime timestamps outside message.timestamp.before/after.max.ms are INVALID_TIMESTAMP
  (checked on the batch's first and max timestamps, without decoding records).
- Compacted topics require every record to have a key (INVALID_RECORD): the one case where
  records are decoded here.
- LogAppendTime topics get the broker's time stamped into the batch header.
- Idempotent batches go through the partition's producer state (duplicates answered with their
  original offset).
- acks=0 gets no response; if any partition failed the connection is closed, as Kafka does.
- Batches are stored as received: no recompression to the topic's compression.type.
- Not implemented: transactional batches (INVALID_TXN_STATE)."""

from __future__ import annotations

from kafka.protocol.producer.produce import ProduceResponse

from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.state import Topic
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_TopicResp = ProduceResponse.TopicProduceResponse
_PartResp = _TopicResp.PartitionProduceResponse


def _error(index: int, code: ErrorCode, message: str | None = None, log_start: int = -1) -> _PartResp:
    return _PartResp(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                     log_start_offset=log_start, record_errors=[], error_message=message)


def _validate(ctx: RequestContext, topic: Topic, data: bytes | None) -> records.BatchHeader:
    """Structural and policy checks on one partition's records; raises KafkaApiError."""
    state = ctx.state
    if not data:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "produce request has no record batch")
    max_bytes = int(state.topic_config_value(topic, "max.message.bytes"))
    if len(data) < records.LOG_OVERHEAD:
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, "record batch is truncated")
    _, length = records.peek_offset_and_length(data)
    if records.LOG_OVERHEAD + length < len(data):
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "produce requests must contain exactly one record batch")
    if len(data) > max_bytes:
        raise KafkaApiError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"the record batch of {len(data)} bytes exceeds max.message.bytes={max_bytes}",
        )
    try:
        header = records.validate_batch(data)
    except records.InvalidBatch as exc:
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE if exc.corrupt else ErrorCode.INVALID_RECORD, str(exc)) from exc
    if header.is_control:
        raise KafkaApiError(ErrorCode.INVALID_RECORD, "clients are not allowed to write control records")
    if header.is_transactional:
        raise KafkaApiError(ErrorCode.INVALID_TXN_STATE, "transactions are not supported by this broker")
    if state.topic_config_value(topic, "message.timestamp.type") == "CreateTime":
        now = state.now_ms()
        before = int(state.topic_config_value(topic, "message.timestamp.before.max.ms"))
        after = int(state.topic_config_value(topic, "message.timestamp.after.max.ms"))
        for ts in (header.base_timestamp, header.max_timestamp):
            if ts >= 0 and (now - ts > before or ts - now > after):
                raise KafkaApiError(ErrorCode.INVALID_TIMESTAMP, f"timestamp {ts} is out of range")
    if "compact" in state.topic_config_value(topic, "cleanup.policy"):
        if any(r.key is None for r in records.iter_records(data)):
            raise KafkaApiError(ErrorCode.INVALID_RECORD, "compacted topic cannot accept a record without a key")
    return header


def _produce_partition(ctx: RequestContext, topic: Topic | None, index: int, data: bytes | None,
                       unknown: ErrorCode) -> _PartResp:
    if topic is None or not 0 <= index < len(topic.partitions):
        return _error(index, unknown)
    partition = topic.partitions[index]
    try:
        header = _validate(ctx, topic, data)
        append_time = ctx.state.now_ms() if ctx.state.topic_config_value(
            topic, "message.timestamp.type") == "LogAppendTime" else None
        result = partition.append(data, header, append_time)  # type: ignore[arg-type]
    except KafkaApiError as exc:
        return _error(index, exc.code, exc.message, partition.log_start_offset)
    return _PartResp(index=index, error_code=ErrorCode.NONE, base_offset=result.base_offset,
                     log_append_time_ms=result.log_append_time, log_start_offset=partition.log_start_offset,
                     record_errors=[], error_message=None)


def handle(ctx: RequestContext, request: object) -> ProduceResponse | None:
    v = ctx.version
    state = ctx.state
    acks = request.acks  # type: ignore[attr-defined]
    responses = []
    for td in request.topic_data:  # type: ignore[attr-defined]
        if v >= 13:
            topic = state.topics_by_id.get(td.topic_id)
            unknown = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            topic = state.topics.get(td.name)
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        parts = []
        for pd in td.partition_data:
            if acks not in (-1, 0, 1):
                parts.append(_error(pd.index, ErrorCode.INVALID_REQUIRED_ACKS))
            else:
                parts.append(_produce_partition(ctx, topic, pd.index, pd.records, unknown))
        responses.append(_TopicResp(name=td.name, topic_id=td.topic_id, partition_responses=parts))
    if acks == 0:
        if any(p.error_code for t in responses for p in t.partition_responses):
            raise CloseConnection("acks=0 produce failed")
        return None
    return ProduceResponse(version=v, responses=responses, throttle_time_ms=0, node_endpoints=[])
