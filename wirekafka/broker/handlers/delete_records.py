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
- No purgatory: with one replica the low watermark is final when the answer is sent.
- One answer per partition (the last offset asked for it counts), grouped by topic, in the order
  of Kafka's hash maps (kafka_grouped; kafka_immutable_grouped when no partition could be acted on)."""

from __future__ import annotations

from kafka.protocol.admin.topics import DeleteRecordsRequest, DeleteRecordsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.replica.partition import Partition
from wirekafka.jvm import TopicPartitionKey, kafka_grouped, kafka_immutable_grouped
from wirekafka.broker.state import BrokerState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

HIGH_WATERMARK = -1
_Topic = DeleteRecordsResponse.DeleteRecordsTopicResult
_Part = _Topic.DeleteRecordsPartitionResult


async def _delete_before(state: BrokerState, topic: str, index: int, requested: int) -> tuple[Partition, bool]:
    """Move the log start of one partition; returns it and whether the start moved."""
    partition = state.metadata.partition(topic, index)
    t = state.metadata.topic(topic)
    if t is None:  # partition() has refused an unknown topic
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
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


def _exists(state: BrokerState, topic: str, index: int) -> bool:
    """Kafka's metadataCache.contains: the partition exists in the cluster (led here or not)."""
    t = state.metadata.topic(topic)
    return t is not None and 0 <= index < len(t.partitions)


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    state = ctx.state
    allowed: dict[str, bool] = {}
    refused: dict[TopicPartitionKey, _Part] = {}  # not authorized, or no such partition
    offsets: dict[TopicPartitionKey, int] = {}  # the last offset asked for each partition, as Kafka keeps it
    for t in request.topics:
        if t.name not in allowed:
            allowed[t.name] = ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            key = TopicPartitionKey(t.name, p.partition_index)
            if not allowed[t.name]:
                refused[key] = _Part(partition_index=p.partition_index, low_watermark=-1,
                                     error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif not _exists(state, t.name, p.partition_index):
                refused[key] = _Part(partition_index=p.partition_index, low_watermark=-1,
                                     error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                offsets[key] = p.offset
    results: dict[TopicPartitionKey, _Part] = {}
    moved = False
    for key, offset in offsets.items():
        try:
            partition, changed = await _delete_before(state, key.topic, key.partition, offset)
            moved |= changed
            results[key] = _Part(partition_index=key.partition, low_watermark=partition.log_start_offset,
                                 error_code=ErrorCode.NONE)
        except KafkaApiError as exc:
            results[key] = _Part(partition_index=key.partition, low_watermark=-1, error_code=exc.code)
    if moved:
        await state.checkpoint()
    if results:
        grouped = kafka_grouped({**results, **refused})
    else:  # Kafka merges the refusals into an empty immutable Map: its order, not a mutable one's
        grouped = kafka_immutable_grouped(refused)
    return DeleteRecordsResponse(version=ctx.version, throttle_time_ms=0,
                                 topics=[_Topic(name=name, partitions=parts) for name, parts in grouped])
