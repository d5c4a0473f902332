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
- Authorization: DESCRIBE on each topic, asked in name order as the answer is built (topics
  after the one where the partition limit stops are not asked about). A topic named without it
  answers TOPIC_AUTHORIZATION_FAILED with the zero topic id and no partitions, after every other
  topic, whether it exists or not; when every topic is asked for it is left out.
- Every described topic's authorized operations, existing or not (refused ones: the "not
  requested" value)."""

from __future__ import annotations

import uuid

from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.metadata import partition_fields
from wirekafka.broker.metadata.cluster_metadata import INTERNAL_TOPICS, topic_name_error
from wirekafka.protocol.errors import ErrorCode

_Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
_Partition = _Topic.DescribeTopicPartitionsResponsePartition
_Cursor = DescribeTopicPartitionsResponse.Cursor
ZERO_UUID = uuid.UUID(int=0)
NOT_REQUESTED = -2**31  # the schema's default of topic_authorized_operations


def handle(ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    state = ctx.state
    asked = [t.name for t in request.topics]
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    every = not asked
    names = sorted({n for n in ([t.name for t in state.metadata.all_topics()] if every else asked)
                    if n >= cursor_topic})
    if (cursor is not None and not every and cursor.topic_name not in names) or (
            cursor is not None and cursor.partition_index < 0):
        return DescribeTopicPartitionsResponse(version=ctx.version, throttle_time_ms=0, next_cursor=None, topics=[
            _Topic(error_code=ErrorCode.INVALID_REQUEST, name=name, topic_id=ZERO_UUID, is_internal=False,
                   partitions=[], topic_authorized_operations=NOT_REQUESTED) for name in asked])
    remaining = max(min(state.config.int("max.request.partition.size.limit"),
                        request.response_partition_limit), 1)
    reachable = {b.node_id for b in state.metadata.brokers(ctx.listener)}
    topics, refused, next_cursor = [], [], None
    for name in names:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            if not every:
                refused.append(_Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID,
                                      is_internal=False, partitions=[], topic_authorized_operations=NOT_REQUESTED))
            continue
        if remaining <= 0:
            next_cursor = _Cursor(topic_name=name, partition_index=0)
            break
        topic = state.metadata.topic(name)
        if topic is None:
            if not every:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(_Topic(error_code=code, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS,
                                     partitions=[],
                                     topic_authorized_operations=ctx.authorized_operations(ResourceType.TOPIC, name)))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        partitions = [_Partition(error_code=ErrorCode.NONE, eligible_leader_replicas=[], last_known_elr=[],
                                 **partition_fields(ctx, topic, index, reachable)[1]) for index in range(start, upper)]
        topics.append(_Topic(error_code=ErrorCode.NONE, name=name, topic_id=topic.topic_id,
                             is_internal=topic.is_internal, partitions=partitions,
                             topic_authorized_operations=ctx.authorized_operations(ResourceType.TOPIC, name)))
        if upper < len(topic.partitions):
            next_cursor = _Cursor(topic_name=name, partition_index=upper)
            break
        remaining -= len(partitions)
    return DescribeTopicPartitionsResponse(version=ctx.version, throttle_time_ms=0, topics=topics + refused,
                                           next_cursor=next_cursor)

