"""DescribeTopicPartitions (key 75), v0, as a Kafka 4 broker answers it (KIP-966; Kafka 4's admin
client describes topics with it).

- The topics asked for (none: every topic), from the cursor's topic on, in name order; partitions
  from the cursor's partition of that topic, at most min(response_partition_limit,
  max.request.partition.size.limit) of them in all, at least one. When that limit stops the
  answer inside a topic, next_cursor names the next partition; when it stops at a topic's
  boundary, the next topic's partition 0.
- A partition's leader, leader epoch, replicas, in-sync replicas and offline replicas as Metadata
  gives them, with no error code (a leader not reachable on the request's listener is -1); no
  eligible leader replicas (ELR is not enabled), so both ELR lists are empty.
- A topic asked for that does not exist: UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION
  for an invalid name, with no partitions.
- A cursor whose topic is not among the topics asked for, or with a negative partition:
  INVALID_REQUEST for every topic asked for.
- Every topic's authorized operations: all of them (there is no authorizer)."""

from __future__ import annotations

import uuid

from kafka.protocol.admin.topics import DescribeTopicPartitionsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.metadata import TOPIC_OPERATIONS, partition_fields
from wirekafka.broker.metadata import INTERNAL_TOPICS, topic_name_error
from wirekafka.protocol.errors import ErrorCode

_Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
_Partition = _Topic.DescribeTopicPartitionsResponsePartition
_Cursor = DescribeTopicPartitionsResponse.Cursor
ZERO_UUID = uuid.UUID(int=0)
ALL_TOPIC_OPERATIONS = sum(1 << op for op in TOPIC_OPERATIONS)


def handle(ctx: RequestContext, request: object) -> DescribeTopicPartitionsResponse:
    state = ctx.state
    asked = [t.name for t in request.topics]  # type: ignore[attr-defined]
    cursor = request.cursor  # type: ignore[attr-defined]
    cursor_topic = cursor.topic_name if cursor is not None else ""
    every = not asked
    names = sorted({n for n in ([t.name for t in state.metadata.all_topics()] if every else asked)
                    if n >= cursor_topic})
    if (cursor is not None and not every and cursor.topic_name not in names) or (
            cursor is not None and cursor.partition_index < 0):
        return DescribeTopicPartitionsResponse(version=ctx.version, throttle_time_ms=0, next_cursor=None, topics=[
            _Topic(error_code=ErrorCode.INVALID_REQUEST, name=name, topic_id=ZERO_UUID, is_internal=False,
                   partitions=[], topic_authorized_operations=-2**31) for name in asked])
    remaining = max(min(state.config.int("max.request.partition.size.limit"),
                        request.response_partition_limit), 1)  # type: ignore[attr-defined]
    reachable = {b.node_id for b in state.metadata.brokers(ctx.listener)}
    topics, next_cursor = [], None
    for name in names:
        if remaining <= 0:
            next_cursor = _Cursor(topic_name=name, partition_index=0)
            break
        topic = state.metadata.topic(name)
        if topic is None:
            if not every:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(_Topic(error_code=code, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS,
                                     partitions=[], topic_authorized_operations=ALL_TOPIC_OPERATIONS))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        partitions = [_Partition(error_code=ErrorCode.NONE, eligible_leader_replicas=[], last_known_elr=[],
                                 **partition_fields(ctx, topic, index, reachable)[1]) for index in range(start, upper)]
        topics.append(_Topic(error_code=ErrorCode.NONE, name=name, topic_id=topic.topic_id,
                             is_internal=topic.is_internal, partitions=partitions,
                             topic_authorized_operations=ALL_TOPIC_OPERATIONS))
        if upper < len(topic.partitions):
            next_cursor = _Cursor(topic_name=name, partition_index=upper)
            break
        remaining -= len(partitions)
    return DescribeTopicPartitionsResponse(version=ctx.version, throttle_time_ms=0, topics=topics,
                                           next_cursor=next_cursor)

