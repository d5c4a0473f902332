"""ListGroups (key 16), v0-5.

- Every classic group this coordinator knows, with protocol type, state (v4+) and type
  "classic" (v5+); state filters match case-insensitively, type filters likewise."""

from __future__ import annotations

from kafka.protocol.admin.groups import ListGroupsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

GROUP_TYPE = "classic"


def handle(ctx: RequestContext, request: object) -> ListGroupsResponse:
    states = {s.lower() for s in (getattr(request, "states_filter", None) or [])}
    types = {t.lower() for t in (getattr(request, "types_filter", None) or [])}
    out = []
    for g in ctx.state.groups.groups.values():
        if states and g.state.value.lower() not in states:
            continue
        if types and GROUP_TYPE not in types:
            continue
        out.append(ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                                                  group_state=g.state.value, group_type=GROUP_TYPE))
    return ListGroupsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE, groups=out)
