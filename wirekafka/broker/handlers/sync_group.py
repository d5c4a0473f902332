"""SyncGroup (key 14), v0-5.

- The leader's assignments are stored and every member receives its own (empty if the leader
  left it out); followers wait for the leader.
- v5+: protocol type and name are mandatory and must match the group's; the answer carries
  them. A missing or different one is INCONSISTENT_GROUP_PROTOCOL, checked first, as Kafka does.
- Then READ on the group: GROUP_AUTHORIZATION_FAILED (no protocol type or name, no assignment).
- Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID,
  COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

from typing import cast

from kafka.protocol.consumer.group import SyncGroupRequest, SyncGroupResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

PROTOCOL_FIELDS_FROM = 5


def _error(ctx: RequestContext, code: ErrorCode) -> SyncGroupResponse:
    return SyncGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=code, protocol_type=None,
                             protocol_name=None, assignment=b"")


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    r = request
    if ctx.version >= PROTOCOL_FIELDS_FROM and (r.protocol_type is None or r.protocol_name is None):
        return _error(ctx, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, r.group_id):
        return _error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    try:
        code, assignment, ptype, pname = await ctx.state.groups.sync(
            r.group_id, r.generation_id, r.member_id, getattr(r, "group_instance_id", None),
            r.protocol_type if ctx.version >= PROTOCOL_FIELDS_FROM else None,
            r.protocol_name if ctx.version >= PROTOCOL_FIELDS_FROM else None,
            # kafka-python types the field bytes | ApiData; a decoded request holds the bytes
            {a.member_id: cast(bytes, a.assignment) for a in r.assignments})
    except KafkaApiError as exc:
        code, assignment, ptype, pname = exc.code, b"", None, None
    return SyncGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=code, protocol_type=ptype,
                             protocol_name=pname, assignment=assignment)
