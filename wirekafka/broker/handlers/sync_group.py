"""SyncGroup (key 14), v0-5.

- The leader's assignments are stored and every member receives its own (empty if the leader
  left it out); followers wait for the leader.
- Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID,
  INCONSISTENT_GROUP_PROTOCOL (v5 protocol type/name mismatch), COORDINATOR_LOAD_IN_PROGRESS."""

from __future__ import annotations

from kafka.protocol.consumer.group import SyncGroupResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import KafkaApiError


async def handle(ctx: RequestContext, request: object) -> SyncGroupResponse:
    r = request
    try:
        code, assignment, ptype, pname = await ctx.state.groups.sync(
            r.group_id, r.generation_id, r.member_id, getattr(r, "group_instance_id", None),  # type: ignore[attr-defined]
            getattr(r, "protocol_type", None) if ctx.version >= 5 else None,
            getattr(r, "protocol_name", None) if ctx.version >= 5 else None,
            {a.member_id: a.assignment for a in r.assignments})  # type: ignore[attr-defined]
    except KafkaApiError as exc:
        code, assignment, ptype, pname = exc.code, b"", None, None
    return SyncGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=code, protocol_type=ptype,
                             protocol_name=pname, assignment=assignment)
