"""ListGroups (key 16), v0-5.

- Every classic group this coordinator knows, with protocol type, state (v4+) and type
  "classic" (v5+); state filters match case-insensitively, type filters likewise.
- Authorization, as Kafka's KafkaApis: DESCRIBE on the cluster lists every group; without it
  only the groups the principal may DESCRIBE are listed (never an error)."""

from __future__ import annotations

from kafka.protocol.admin.groups import ListGroupsRequest, ListGroupsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

GROUP_TYPE = "classic"


def handle(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    states = {s.lower() for s in (getattr(request, "states_filter", None) or [])}
    types = {t.lower() for t in (getattr(request, "types_filter", None) or [])}
    groups = list(ctx.state.groups.groups.values())
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        describable = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.GROUP, [g.group_id for g in groups])
        groups = [g for g in groups if g.group_id in describable]
    out = []
    for g in groups:
        if states and g.state.value.lower() not in states:
            continue
        if types and GROUP_TYPE not in types:
            continue
        out.append(ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                                                  group_state=g.state.value, group_type=GROUP_TYPE))
    return ListGroupsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE, groups=out)
