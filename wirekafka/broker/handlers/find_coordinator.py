"""FindCoordinator (key 10), v0-6.

- Key type 0 (group): this node coordinates every group (it leads every partition of
  __consumer_offsets, which is created on first use). v4+ answers each of several keys.
- Key type 1 (transaction): this node coordinates every transactional id (it leads every
  partition of __transaction_state, created on first use); an empty transactional id is
  INVALID_REQUEST.
- Other key types: INVALID_REQUEST. An empty group id is a group like any other here, as in
  Kafka (JoinGroup is where it is refused).
- error_message as Kafka sets it on success: "NONE" (v1-3, the error's name), "" (v4+)."""

from __future__ import annotations

from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

GROUP, TRANSACTION = 0, 1


async def _lookup(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type == TRANSACTION:
        if not key:
            return ErrorCode.INVALID_REQUEST, None
        await ctx.state.transactions.ensure_topic()
        return ErrorCode.NONE, ""
    if key_type != GROUP:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}"
    await ctx.state.groups.ensure_offsets_topic()
    return ErrorCode.NONE, ""


async def handle(ctx: RequestContext, request: object) -> FindCoordinatorResponse:
    adv = ctx.state.config.advertised_listener
    node = ctx.state.node_id
    key_type = getattr(request, "key_type", GROUP)
    if ctx.version >= 4:
        coordinators = []
        for key in request.coordinator_keys:  # type: ignore[attr-defined]
            code, message = await _lookup(ctx, key, key_type)
            ok = code == ErrorCode.NONE
            coordinators.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=node if ok else -1, host=adv.host if ok else "", port=adv.port if ok else -1,
                error_code=code, error_message=message))
        return FindCoordinatorResponse(version=ctx.version, throttle_time_ms=0, coordinators=coordinators)
    code, message = await _lookup(ctx, request.key, key_type)  # type: ignore[attr-defined]
    ok = code == ErrorCode.NONE
    if ok:
        message = code.name
    return FindCoordinatorResponse(version=ctx.version, throttle_time_ms=0, error_code=code, error_message=message,
                                   node_id=node if ok else -1, host=adv.host if ok else "",
                                   port=adv.port if ok else -1)
