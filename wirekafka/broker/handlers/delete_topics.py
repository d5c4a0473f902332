"""DeleteTopics (key 20), v1-6.

- By name (v1-5) or by name or topic id (v6+); the topic leaves the metadata at once and its
  partition directories are removed in a worker thread before the answer.
- UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID; TOPIC_DELETION_DISABLED when
  delete.topic.enable=false; internal topics cannot be deleted (INVALID_REQUEST)."""

from __future__ import annotations

import uuid

from kafka.protocol.admin.topics import DeleteTopicsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

ZERO_UUID = uuid.UUID(int=0)
_Result = DeleteTopicsResponse.DeletableTopicResult


async def handle(ctx: RequestContext, request: object) -> DeleteTopicsResponse:
    state = ctx.state
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]  # type: ignore[attr-defined]
    else:
        wanted = [(name, None) for name in request.topic_names]  # type: ignore[attr-defined]
    results = []
    for name, topic_id in wanted:
        if name is not None:
            topic = state.metadata.topic(name)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            topic = state.metadata.topic_by_id(topic_id) if topic_id else None
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        code, message = ErrorCode.NONE, None
        if topic is None:
            code = missing
        elif not state.config.bool("delete.topic.enable"):
            code, message = ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled."
        elif topic.is_internal:
            code, message = ErrorCode.INVALID_REQUEST, f"Internal topic {topic.name} cannot be deleted."
        else:
            await state.delete_topic(topic.name)
        results.append(_Result(name=topic.name if topic else name, topic_id=topic.topic_id if topic else (topic_id or ZERO_UUID),
                               error_code=code, error_message=message))
    return DeleteTopicsResponse(version=ctx.version, throttle_time_ms=0, responses=results)
