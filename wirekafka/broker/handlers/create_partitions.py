"""CreatePartitions (key 37), v0-3.

- Raises a topic's partition count; the count must grow (INVALID_PARTITIONS otherwise, with
  Kafka's messages); explicit assignments must give one list per new partition naming only
  this node (INVALID_REPLICA_ASSIGNMENT).
- validate_only checks and changes nothing; a topic named twice is INVALID_REQUEST;
  UNKNOWN_TOPIC_OR_PARTITION for a missing topic."""

from __future__ import annotations

from collections import Counter

from kafka.protocol.admin.topics import CreatePartitionsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def _check(ctx: RequestContext, t: object, duplicated: bool) -> None:
    state = ctx.state
    if duplicated:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
    topic = state.metadata.topic(t.name)  # type: ignore[attr-defined]
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist.")  # type: ignore[attr-defined]
    current, count = len(topic.partitions), t.count  # type: ignore[attr-defined]
    if count < current:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS,
                            f"The topic {t.name} currently has {current} partition(s); {count} would not be an increase.")  # type: ignore[attr-defined]
    if count == current:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if t.assignments is not None:  # type: ignore[attr-defined]
        if len(t.assignments) != count - current:  # type: ignore[attr-defined]
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"Attempted to add {count - current} additional partition(s), but only "
                                f"{len(t.assignments)} assignment(s) were specified.")  # type: ignore[attr-defined]
        for a in t.assignments:  # type: ignore[attr-defined]
            if list(a.broker_ids) != [state.node_id]:
                raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                    f"The manual partition assignment includes broker(s) {list(a.broker_ids)} that are not {state.node_id}.")


async def handle(ctx: RequestContext, request: object) -> CreatePartitionsResponse:
    counts = Counter(t.name for t in request.topics)  # type: ignore[attr-defined]
    results = []
    for t in request.topics:  # type: ignore[attr-defined]
        try:
            _check(ctx, t, counts[t.name] > 1)
            if not request.validate_only:  # type: ignore[attr-defined]
                await ctx.state.metadata.add_partitions(ctx.state.metadata.topic(t.name), t.count)
            results.append(_Result(name=t.name, error_code=ErrorCode.NONE, error_message=None))
        except KafkaApiError as exc:
            results.append(_Result(name=t.name, error_code=exc.code, error_message=exc.message))
    return CreatePartitionsResponse(version=ctx.version, throttle_time_ms=0, results=results)
