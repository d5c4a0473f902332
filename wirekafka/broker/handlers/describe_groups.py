"""DescribeGroups (key 15), v0-6.

- State, protocol type and selected protocol, and every member (id, instance id, client id and
  host, metadata for the selected protocol, assignment); authorized operations (v3+) when asked:
  with no authorizer, every group operation (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
  ALTER_CONFIGS), as Kafka 4 answers.
- An unknown group (the empty id included): v0-5 answer state "Dead" with no error (and the
  operations when asked); v6 answers GROUP_ID_NOT_FOUND with a message and no operations."""

from __future__ import annotations

from kafka.protocol.admin.groups import DescribeGroupsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.groups import GroupState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

GROUP_OPERATIONS = {3, 6, 8, 10, 11}  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
NOT_FOUND_ERROR_FROM = 6
_Group = DescribeGroupsResponse.DescribedGroup
_Member = _Group.DescribedGroupMember


def handle(ctx: RequestContext, request: object) -> DescribeGroupsResponse:
    with_ops = bool(getattr(request, "include_authorized_operations", False))
    operations = GROUP_OPERATIONS if with_ops else None
    out = []
    for group_id in request.groups:  # type: ignore[attr-defined]
        try:
            ctx.state.groups.check_available(group_id, allow_empty_id=True)
            g = ctx.state.groups.groups.get(group_id)
        except KafkaApiError as exc:
            out.append(_Group(error_code=exc.code, error_message=None, group_id=group_id, group_state="",
                              protocol_type="", protocol_data="", members=[], authorized_operations=None))
            continue
        if g is None:
            if ctx.version >= NOT_FOUND_ERROR_FROM:
                out.append(_Group(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {group_id} not found.",
                                  group_id=group_id, group_state="Dead", protocol_type="", protocol_data="",
                                  members=[], authorized_operations=None))
            else:
                out.append(_Group(error_code=ErrorCode.NONE, error_message=None, group_id=group_id, group_state="Dead",
                                  protocol_type="", protocol_data="", members=[], authorized_operations=operations))
            continue
        # Kafka describes a group's protocol and members' metadata only once it is Stable; while
        # it rebalances, members come with their last assignment and no metadata.
        stable = g.state is GroupState.STABLE
        members = [_Member(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                           client_host=m.client_host, member_metadata=m.metadata_for(g.protocol) if stable else b"",
                           member_assignment=m.assignment) for m in g.members.values()]
        out.append(_Group(error_code=ErrorCode.NONE, error_message=None, group_id=group_id,
                          group_state=g.state.value, protocol_type=g.protocol_type or "",
                          protocol_data=(g.protocol or "") if stable else "", members=members,
                          authorized_operations=operations))
    return DescribeGroupsResponse(version=ctx.version, throttle_time_ms=0, groups=out)
