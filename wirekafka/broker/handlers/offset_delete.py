"""OffsetDelete (key 47), v0.

- Deletes committed offsets of a group (tombstones in __consumer_offsets).
- Authorization, as Kafka's KafkaApis checks it: without DELETE on the group the answer is
  GROUP_AUTHORIZATION_FAILED with no topics; a topic without READ is TOPIC_AUTHORIZATION_FAILED
  on each partition (whether it exists or not).
- UNKNOWN_TOPIC_OR_PARTITION for topics and partitions that do not exist; these and the refused
  ones come first, the coordinator's answers are added to them per topic.
- The coordinator is asked even when no partition is left: GROUP_ID_NOT_FOUND for an unknown
  group (the whole answer, with no topics); GROUP_SUBSCRIBED_TO_TOPIC for partitions of topics
  the group's active consumers subscribe to."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetDeleteRequest, OffsetDeleteResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Topic = OffsetDeleteResponse.OffsetDeleteResponseTopic
_Part = _Topic.OffsetDeleteResponsePartition


def _error(ctx: RequestContext, code: ErrorCode) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(version=ctx.version, error_code=code, throttle_time_ms=0, topics=[])


def _sort_out(ctx: RequestContext, request: OffsetDeleteRequest, answer: dict[str, list[_Part]]) -> list[tuple[str, int]]:
    """Answer the partitions refused or unknown; return the others, (topic, partition)."""
    readable = ctx.authorized_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in request.topics})
    valid = []
    for t in request.topics:
        topic = ctx.state.metadata.topic(t.name)
        for p in t.partitions:
            if t.name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append((t.name, p.partition_index))
                continue
            answer.setdefault(t.name, []).append(_Part(partition_index=p.partition_index, error_code=code))
    return valid


def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return _error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    answer: dict[str, list[_Part]] = {}
    valid = _sort_out(ctx, request, answer)
    try:
        codes = ctx.state.groups.offsets.delete_offsets(request.group_id, valid)
    except KafkaApiError as exc:
        return _error(ctx, exc.code)
    for name, partition in valid:
        answer.setdefault(name, []).append(_Part(partition_index=partition, error_code=codes[(name, partition)]))
    return OffsetDeleteResponse(version=ctx.version, error_code=ErrorCode.NONE, throttle_time_ms=0, topics=[
        _Topic(name=name, partitions=parts) for name, parts in answer.items()])
