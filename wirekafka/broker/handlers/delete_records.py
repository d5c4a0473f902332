"""DeleteRecords (key 21), v0-2.

- Moves a partition's log start offset up to the requested offset (-1: the high watermark);
  segments wholly below it are deleted at once; Fetch below it then answers OFFSET_OUT_OF_RANGE
  and ListOffsets EARLIEST returns it. The log-start checkpoint is written before answering, so
  the new start survives a crash or restart.
- An offset at or below the current log start changes nothing and succeeds; low_watermark is
  the resulting log start offset.
- Errors as Kafka's ReplicaManager/Partition: UNKNOWN_TOPIC_OR_PARTITION; INVALID_TOPIC_EXCEPTION
  for internal topics; POLICY_VIOLATION when cleanup.policy lacks "delete"; OFFSET_OUT_OF_RANGE
  for an offset below -1 or above the high watermark (low_watermark -1 with any error).
- Authorization: DELETE on each topic, asked once per topic; a topic without it answers
  TOPIC_AUTHORIZATION_FAILED (low_watermark -1) at each partition, whether it exists or not.
- No purgatory: with one replica the low watermark is final when the answer is sent."""

from __future__ import annotations

from kafka.protocol.admin.topics import DeleteRecordsResponse

from wirekafka.broker.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.partition import Partition
from wirekafka.broker.state import BrokerState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

HIGH_WATERMARK = -1
_Topic = DeleteRecordsResponse.DeleteRecordsTopicResult
_Part = _Topic.DeleteRecordsPartitionResult


async def _delete_before(state: BrokerState, topic: str, index: int, requested: int) -> tuple[Partition, bool]:
    """Move the log start of one partition; returns it and whether the start moved."""
    partition = state.metadata.partition(topic, index)
    t = state.metadata.topic(topic)
    if t.is_internal:
        raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {topic}")
    if "delete" not in state.metadata.topic_config_value(t, "cleanup.policy").split(","):
        raise KafkaApiError(ErrorCode.POLICY_VIOLATION,
                            f"Records of partition {topic}-{index} can not be deleted due to the configured policy")
    offset = partition.high_watermark if requested == HIGH_WATERMARK else requested
    if offset < 0 or offset > partition.high_watermark:
        raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE)
    if offset <= partition.log_start_offset:
        return partition, False
    await state.replicas.delete_records(partition, offset)
    return partition, True


async def handle(ctx: RequestContext, request: object) -> DeleteRecordsResponse:
    state = ctx.state
    topics = []
    moved = False
    for t in request.topics:  # type: ignore[attr-defined]
        parts = []
        allowed = ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            if not allowed:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                partition, changed = await _delete_before(state, t.name, p.partition_index, p.offset)
                moved |= changed
                parts.append(_Part(partition_index=p.partition_index, low_watermark=partition.log_start_offset,
                                   error_code=ErrorCode.NONE))
            except KafkaApiError as exc:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1, error_code=exc.code))
        topics.append(_Topic(name=t.name, partitions=parts))
    if moved:
        await state.checkpoint()
    return DeleteRecordsResponse(version=ctx.version, throttle_time_ms=0, topics=topics)
