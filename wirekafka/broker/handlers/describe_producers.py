"""DescribeProducers (key 61), v0: the producers a partition remembers (idempotent and
transactional): id, epoch, last sequence, last timestamp, coordinator epoch, and the first
offset of the open transaction (-1 if none).

Per topic, in Kafka's order: an illegal name INVALID_TOPIC_EXCEPTION, then READ on the topic
(TOPIC_AUTHORIZATION_FAILED, which tells nothing of whether it exists), then a topic that does
not exist UNKNOWN_TOPIC_OR_PARTITION, each on every partition asked with Kafka's message; a
partition beyond the topic's UNKNOWN_TOPIC_OR_PARTITION without one, as Kafka answers."""

from __future__ import annotations

from kafka.protocol.admin.transactions import DescribeProducersRequest, DescribeProducersResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import topic_name_error
from wirekafka.protocol.errors import ErrorCode

_Topic = DescribeProducersResponse.TopicResponse
_Part = _Topic.PartitionResponse
_Producer = _Part.ProducerState
_TOPIC_AUTHORIZATION_FAILED = "Topic authorization failed."
_UNKNOWN_TOPIC = "This server does not host this topic-partition."


def _topic_error(ctx: RequestContext, name: str) -> tuple[ErrorCode, str] | None:
    """The error every partition of the topic gets, None when its partitions are looked at."""
    invalid = topic_name_error(name)
    if invalid:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, invalid
    if not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, _TOPIC_AUTHORIZATION_FAILED
    if ctx.state.metadata.topic(name) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC
    return None


def _partition(ctx: RequestContext, name: str, index: int) -> _Part:
    topic = ctx.state.metadata.topic(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return _Part(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None,
                     active_producers=[])
    partition = topic.partitions[index]
    if partition is None or not partition.is_leader:
        return _Part(partition_index=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message=None,
                     active_producers=[])
    return _Part(partition_index=index, error_code=ErrorCode.NONE, error_message=None, active_producers=[
        _Producer(producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                  coordinator_epoch=e.coordinator_epoch, current_txn_start_offset=e.current_txn_first_offset)
        for pid, e in sorted(partition.producers.entries.items())])


def handle(ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    topics = []
    for t in request.topics:
        error = _topic_error(ctx, t.name)
        if error is not None:
            parts = [_Part(partition_index=i, error_code=error[0], error_message=error[1], active_producers=[])
                     for i in t.partition_indexes]
        else:
            parts = [_partition(ctx, t.name, i) for i in t.partition_indexes]
        topics.append(_Topic(name=t.name, partitions=parts))
    return DescribeProducersResponse(version=ctx.version, throttle_time_ms=0, topics=topics)
