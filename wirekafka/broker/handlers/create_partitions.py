"""CreatePartitions (key 37), v0-3.

- Raises a topic's partition count; the count must grow: INVALID_PARTITIONS otherwise, with
  Kafka's two messages (equal count / smaller count).
- Explicit assignments: exactly one replica list per new partition, and each list must be this
  node alone: INVALID_REPLICA_ASSIGNMENT with Kafka's messages for a wrong number of lists, an
  empty list, an unknown broker id and a repeated broker id (checked in that order, per list).
- validate_only checks and changes nothing. A topic named twice in a request gets one
  INVALID_REQUEST "Duplicate topic name." answer; a missing topic UNKNOWN_TOPIC_OR_PARTITION
  (no message, as Kafka).
- New partitions start empty at offset 0 with leader epoch 0, like the topic's first ones.
- Authorization, as Kafka's ControllerApis checks it: ALTER on each topic; a topic without it is
  TOPIC_AUTHORIZATION_FAILED (no message) whether it exists or not, listed after the duplicates
  and before the topics checked further."""

from __future__ import annotations

from collections import Counter

from kafka.protocol.admin.topics import CreatePartitionsRequest, CreatePartitionsResponse

from wirekafka.broker.quotas import mutation_quota
from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import Topic
from wirekafka.broker.state import BrokerState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

# Kafka's controller mutation quota fails topics outright (THROTTLING_QUOTA_EXCEEDED) from this version
STRICT_QUOTA_FROM = 3

_Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def _check_assignment(state: BrokerState, broker_ids: list[int]) -> None:
    if not broker_ids:
        raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(broker_ids):
        if broker != state.node_id:
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"The manual partition assignment includes broker {broker}, but no such broker is "
                                "registered.")
        if broker == previous:
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker


def _check(state: BrokerState, t: CreatePartitionsRequest.CreatePartitionsTopic) -> Topic:
    """The topic to grow, or KafkaApiError with Kafka's code and message."""
    name, count, assignments = t.name, t.count, t.assignments
    topic = state.metadata.topic(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = len(topic.partitions)
    if count == current:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if count < current:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS,
                            f"The topic {name} currently has {current} partition(s); {count} would not be an increase.")
    if assignments is not None:
        if len(assignments) != count - current:
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"Attempted to add {count - current} additional partition(s), but only "
                                f"{len(assignments)} assignment(s) were specified.")
        for a in assignments:
            _check_assignment(state, list(a.broker_ids))
    return topic


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    state = ctx.state
    counts = Counter(t.name for t in request.topics)
    results = [_Result(name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name.")
               for name, n in counts.items() if n > 1]
    alterable = ctx.authorized_names(AclOperation.ALTER, ResourceType.TOPIC,
                                     [name for name, n in counts.items() if n == 1])
    results += [_Result(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None)
                for name, n in counts.items() if n == 1 and name not in alterable]
    permits = mutation_quota.permits(ctx, STRICT_QUOTA_FROM)
    for t in request.topics:
        if counts[t.name] > 1 or t.name not in alterable:
            continue
        try:
            topic = _check(state, t)
            permits.take(t.count - len(topic.partitions))
            if not request.validate_only:
                await state.metadata.add_partitions(topic, t.count)
            results.append(_Result(name=t.name, error_code=ErrorCode.NONE, error_message=None))
        except KafkaApiError as exc:
            results.append(_Result(name=t.name, error_code=exc.code, error_message=exc.message))
    return CreatePartitionsResponse(version=ctx.version, throttle_time_ms=mutation_quota.throttle(ctx, permits),
                                    results=results)
