"""OffsetDelete (key 47), v0.

- Deletes committed offsets of a group (tombstones in __consumer_offsets).
- GROUP_ID_NOT_FOUND for an unknown group; GROUP_SUBSCRIBED_TO_TOPIC for partitions of topics
  the group's active consumers subscribe to."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetDeleteResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Topic = OffsetDeleteResponse.OffsetDeleteResponseTopic
_Part = _Topic.OffsetDeleteResponsePartition


def handle(ctx: RequestContext, request: object) -> OffsetDeleteResponse:
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]  # type: ignore[attr-defined]
    try:
        codes = ctx.state.groups.delete_offsets(request.group_id, wanted)  # type: ignore[attr-defined]
    except KafkaApiError as exc:
        return OffsetDeleteResponse(version=ctx.version, error_code=exc.code, throttle_time_ms=0, topics=[])
    return OffsetDeleteResponse(version=ctx.version, error_code=ErrorCode.NONE, throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_Part(partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
                                        for p in t.partitions])
        for t in request.topics])  # type: ignore[attr-defined]
