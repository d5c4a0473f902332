"""LeaveGroup (key 13), v0-5.

- v0-2: one member id; v3+: a batch of members by member id and/or group instance id, each
  answered on its own (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
- Leaving triggers a rebalance of the remaining members (or empties the group).
- READ on the group first: GROUP_AUTHORIZATION_FAILED, with no member answers."""

from __future__ import annotations

from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def handle(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    r = request
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, r.group_id):
        return LeaveGroupResponse(version=ctx.version, throttle_time_ms=0,
                                  error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[])
    if ctx.version >= 3:
        wanted: list[tuple[str, str | None]] = [(m.member_id, m.group_instance_id) for m in r.members]
    else:
        wanted = [(r.member_id, None)]
    try:
        codes = ctx.state.groups.leave(r.group_id, wanted)
    except KafkaApiError as exc:
        return LeaveGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=exc.code, members=[])
    if ctx.version >= 3:
        return LeaveGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE, members=[
            LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=c)
            for (m, i), c in zip(wanted, codes)])
    return LeaveGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=codes[0], members=[])
