"""DeleteGroups (key 42), v0-2.

- Deletes Empty groups with their committed offsets (tombstones in __consumer_offsets).
- GROUP_ID_NOT_FOUND for unknown groups (the empty id too, as in Kafka 4), NON_EMPTY_GROUP for
  groups with members."""

from __future__ import annotations

from kafka.protocol.admin.groups import DeleteGroupsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def handle(ctx: RequestContext, request: object) -> DeleteGroupsResponse:
    results = []
    for group_id in request.groups_names:  # type: ignore[attr-defined]
        code = ErrorCode.NONE
        try:
            ctx.state.groups.delete_group(group_id)
        except KafkaApiError as exc:
            code = exc.code
        results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=code))
    return DeleteGroupsResponse(version=ctx.version, throttle_time_ms=0, results=results)
