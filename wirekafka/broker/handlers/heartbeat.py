"""Heartbeat (key 12), v0-4.

- Keeps a member alive; REBALANCE_IN_PROGRESS tells it to rejoin.
- READ on the group first: GROUP_AUTHORIZATION_FAILED.
- Errors: UNKNOWN_MEMBER_ID (also for an unknown group, and from v3 for an unknown group
  instance id), ILLEGAL_GENERATION, FENCED_INSTANCE_ID, COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    r = request
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, r.group_id):
        return HeartbeatResponse(version=ctx.version, throttle_time_ms=0,
                                 error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    code = ErrorCode.NONE
    try:
        ctx.state.groups.heartbeat(r.group_id, r.generation_id, r.member_id,
                                   getattr(r, "group_instance_id", None))
    except KafkaApiError as exc:
        code = exc.code
    return HeartbeatResponse(version=ctx.version, throttle_time_ms=0, error_code=code)
