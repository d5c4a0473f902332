"""JoinGroup (key 11), v0-9 — classic group protocol; see broker/groups.py for the state machine.

- v4+: a member joining without a member id gets MEMBER_ID_REQUIRED and its new id (KIP-394).
- v5+: static members (group_instance_id, KIP-345); FENCED_INSTANCE_ID for a stale instance.
- Errors: INVALID_SESSION_TIMEOUT, INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID,
  COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID.
- Waits (long-poll) until the rebalance completes; the leader receives the members' metadata.
- A static leader that restarts into a Stable group gets the members with SkipAssignment (v9):
  it must not reassign, and nobody else rebalances.
- READ on the group first: GROUP_AUTHORIZATION_FAILED with Kafka's error shape (no member id,
  generation -1, protocol name "" before v7 and null from v7)."""

from __future__ import annotations

from typing import cast

from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.group_model import JoinResult
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def client_host(ctx: RequestContext) -> str:
    return "/" + ctx.peer.rsplit(":", 1)[0] if ctx.peer else ""


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    r = request
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, r.group_id):
        return _response(ctx, JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    try:
        result = await ctx.state.groups.join(
            r.group_id, r.member_id, getattr(r, "group_instance_id", None),
            ctx.client_id, client_host(ctx), r.session_timeout_ms,
            r.rebalance_timeout_ms if ctx.version >= 1 else r.session_timeout_ms,
            # kafka-python types the field bytes | ApiData; a decoded request holds the bytes
            r.protocol_type, [(p.name, cast(bytes, p.metadata)) for p in r.protocols],
            require_known_member_id=ctx.version >= 4)
    except KafkaApiError as exc:
        result = JoinResult(exc.code, member_id=r.member_id)
    return _response(ctx, result)


def _response(ctx: RequestContext, result: JoinResult) -> JoinGroupResponse:
    ok = result.error == ErrorCode.NONE
    return JoinGroupResponse(
        version=ctx.version, throttle_time_ms=0, error_code=result.error, generation_id=result.generation,
        protocol_type=result.protocol_type, protocol_name=result.protocol if ok or ctx.version >= 7 else "",
        leader=result.leader, skip_assignment=result.skip_assignment, member_id=result.member_id,
        members=[JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
                 for m, i, md in result.members])
