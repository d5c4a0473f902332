"""DeleteGroups (key 42), v0-2.

- Deletes Empty groups with their committed offsets (tombstones in __consumer_offsets).
- GROUP_ID_NOT_FOUND for unknown groups (the empty id too, as in Kafka 4), NON_EMPTY_GROUP for
  groups with members.
- A group named twice is answered once, as Kafka takes the distinct names.
- DELETE on each group, as Kafka's KafkaApis checks it: the refused groups are answered
  GROUP_AUTHORIZATION_FAILED after the others."""

from __future__ import annotations

from kafka.protocol.admin.groups import DeleteGroupsRequest, DeleteGroupsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Result = DeleteGroupsResponse.DeletableGroupResult


def _delete(ctx: RequestContext, group_id: str) -> ErrorCode:
    try:
        ctx.state.groups.delete_group(group_id)
    except KafkaApiError as exc:
        return exc.code
    return ErrorCode.NONE


def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    wanted = list(dict.fromkeys(request.groups_names))
    deletable = ctx.authorized_names(AclOperation.DELETE, ResourceType.GROUP, wanted)
    results = [_Result(group_id=g, error_code=_delete(ctx, g)) for g in wanted if g in deletable]
    results += [_Result(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in wanted
                if g not in deletable]
    return DeleteGroupsResponse(version=ctx.version, throttle_time_ms=0, results=results)
