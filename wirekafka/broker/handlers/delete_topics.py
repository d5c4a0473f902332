"""DeleteTopics (key 20), v1-6.

- By name (v1-5); by name or by topic id (v6+), with Kafka's checks: both or neither given is
  INVALID_REQUEST, and so is a name or id named twice (one "Duplicate topic name." / "Duplicate
  topic id." answer per duplicate), or a name that maps to an id also given.
- Missing topics: UNKNOWN_TOPIC_OR_PARTITION by name, UNKNOWN_TOPIC_ID by id.
- delete.topic.enable=false refuses the whole request, as Kafka's controller does: every entry
  gets TOPIC_DELETION_DISABLED (v3+) or INVALID_REQUEST "Topic deletion is disabled." (v1-2).
- Authorization, as Kafka's ControllerApis checks it: DELETE on the cluster, or else DELETE on
  each topic. A topic refused by name is TOPIC_AUTHORIZATION_FAILED before its existence is
  looked at when the client may not DESCRIBE it (so a missing topic answers the same), after it
  otherwise; a topic refused by id answers with its name only when the client may DESCRIBE it
  (an unknown id is UNKNOWN_TOPIC_ID: ids are not secret). A name mapping to an id also given is
  told only when the topic may be deleted.
- The topic leaves the metadata at once (its partitions go offline, waking long-poll fetches);
  its partition directories are removed in a worker thread before the answer.

Deliberate deviation: Kafka 4 deletes internal topics when asked (only the CLI refuses);
wirekafka answers INVALID_REQUEST for them, because its group coordinator keeps its state in
__consumer_offsets and has no way to drop it mid-flight.
Not implemented: removing the committed offsets of a deleted topic from consumer groups (Kafka's
coordinator does that on partition deletion)."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Callable

from kafka.protocol.admin.topics import DeleteTopicsRequest, DeleteTopicsResponse

from wirekafka.broker.quotas import mutation_quota
from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import Topic
from wirekafka.broker.state import BrokerState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

# Kafka's controller mutation quota fails topics outright (THROTTLING_QUOTA_EXCEEDED) from this version
STRICT_QUOTA_FROM = 5

ZERO_UUID = uuid.UUID(int=0)
_Result = DeleteTopicsResponse.DeletableTopicResult
REFUSED = "Topic authorization failed."


def _result(name: str | None, topic_id: uuid.UUID | None, code: ErrorCode, message: str | None = None) -> _Result:
    return _Result(name=name, topic_id=topic_id or ZERO_UUID, error_code=code, error_message=message)


def _requested(ctx: RequestContext, request: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    """(name, id) pairs as the client gave them; before v6 only names."""
    if ctx.version >= 6:
        return [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
    return [(name, ZERO_UUID) for name in request.topic_names]


def _disabled(ctx: RequestContext, wanted: list[tuple[str | None, uuid.UUID]]) -> DeleteTopicsResponse:
    if ctx.version < 3:
        code, message = ErrorCode.INVALID_REQUEST, "Topic deletion is disabled."
    else:
        code, message = ErrorCode.TOPIC_DELETION_DISABLED, None
    return DeleteTopicsResponse(version=ctx.version, throttle_time_ms=0,
                                responses=[_result(n, i, code, message) for n, i in wanted])


def _permission(ctx: RequestContext) -> Callable[[AclOperation, str], bool]:
    """may(operation, name): DELETE on the cluster allows everything, as in Kafka."""
    cluster = ctx.authorized_cluster(AclOperation.DELETE)

    def may(operation: AclOperation, name: str) -> bool:
        return cluster or ctx.authorized(operation, ResourceType.TOPIC, name)
    return may


async def _delete(state: BrokerState, topic: Topic) -> _Result:
    if topic.is_internal:
        return _result(topic.name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                       f"Internal topic {topic.name} cannot be deleted on wirekafka.")
    await state.delete_topic(topic.name)
    return _result(topic.name, topic.topic_id, ErrorCode.NONE)


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    state = ctx.state
    wanted = _requested(ctx, request)
    if not state.config.bool("delete.topic.enable"):
        return _disabled(ctx, wanted)
    results: list[_Result] = []
    by_name: list[str] = []
    by_id: list[uuid.UUID] = []
    for name, topic_id in wanted:
        if name is None and topic_id == ZERO_UUID:
            results.append(_result(None, None, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."))
        elif name is not None and topic_id != ZERO_UUID:
            results.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST,
                                   "You may not specify both topic name and topic id."))
        elif name is not None:
            by_name.append(name)
        else:
            by_id.append(topic_id)
    names, ids = Counter(by_name), Counter(by_id)
    results += [_result(n, None, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for n, c in names.items() if c > 1]
    results += [_result(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.") for i, c in ids.items() if c > 1]
    may = _permission(ctx)
    doomed: dict[uuid.UUID, Topic] = {}
    for topic_id in (i for i, c in ids.items() if c == 1):
        topic = state.metadata.topic_by_id(topic_id)
        if topic is None:
            results.append(_result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID,
                                   "This server does not host this topic ID."))
        elif not may(AclOperation.DELETE, topic.name):
            shown = topic.name if may(AclOperation.DESCRIBE, topic.name) else None
            results.append(_result(shown, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, REFUSED))
        else:
            doomed[topic_id] = topic
    for name in (n for n, c in names.items() if c == 1):
        if not may(AclOperation.DESCRIBE, name):
            results.append(_result(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, REFUSED))
            continue
        topic = state.metadata.topic(name)
        if topic is None:
            results.append(_result(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   "This server does not host this topic-partition."))
        elif not may(AclOperation.DELETE, name):
            results.append(_result(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, REFUSED))
        elif topic.topic_id in doomed:
            del doomed[topic.topic_id]
            results.append(_result(name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                                   "The provided topic name maps to an ID that was already supplied."))
        else:
            doomed[topic.topic_id] = topic
    permits = mutation_quota.permits(ctx, STRICT_QUOTA_FROM)
    for topic in doomed.values():
        try:
            permits.take(len(topic.partitions))
        except KafkaApiError as exc:
            results.append(_result(topic.name, topic.topic_id, exc.code, exc.message))
            continue
        results.append(await _delete(state, topic))
    return DeleteTopicsResponse(version=ctx.version, throttle_time_ms=mutation_quota.throttle(ctx, permits),
                                responses=results)
