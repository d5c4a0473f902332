"""FindCoordinator (key 10), v0-6.

- Key type 0 (group): the coordinator is the leader of the group's partition of
  __consumer_offsets, which is created on first use. v4+ answers each of several keys.
- Key type 1 (transaction): the leader of the transactional id's partition of
  __transaction_state, created on first use; an empty transactional id is INVALID_REQUEST.
- A partition without a leader yet (a cluster electing one), or an internal topic that cannot be
  created yet (fewer live brokers than its replication factor): COORDINATOR_NOT_AVAILABLE, for
  v4+ in the key's own entry (the generic error answer has no per-key entry: Java's producer then
  took an empty entry for coordinator node 0 and failed its I/O thread).
- Other key types: INVALID_REQUEST. An empty group id is a group like any other here, as in
  Kafka (JoinGroup is where it is refused).
- error_message as Kafka sets it on success: "NONE" (v1-3, the error's name), "" (v4+).
- Authorization before anything else (the internal topic is not created for a refused key):
  DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), answered with no node; v4+ refuses each key alone."""

from __future__ import annotations

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, leader_of
from wirekafka.broker.coordinator.transactions import TXN_TOPIC
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

GROUP, TRANSACTION = 0, 1
NO_NODE = BrokerInfo(-1, "", -1)
# the resource a key type names, and the error when DESCRIBE on it is refused
_REFUSAL = {GROUP: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
            TRANSACTION: (ResourceType.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                          "Transactional Id authorization failed.")}


async def _lookup(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, str | None, BrokerInfo]:
    refusal = _REFUSAL.get(key_type)
    if refusal is not None and not ctx.authorized(AclOperation.DESCRIBE, refusal[0], key):
        return refusal[1], refusal[2], NO_NODE
    state = ctx.state
    try:
        if key_type == TRANSACTION:
            if not key:
                return ErrorCode.INVALID_REQUEST, None, NO_NODE
            await state.transactions.ensure_topic()
            topic_name, index = TXN_TOPIC, state.transactions.partition_of(key)
        elif key_type == GROUP:
            await state.groups.ensure_offsets_topic()
            topic_name, index = OFFSETS_TOPIC, state.groups.partition_of(key)
        else:
            return ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}", NO_NODE
    except KafkaApiError as exc:  # the internal topic could not be created yet (too few brokers, say)
        return exc.code, None, NO_NODE
    leader = leader_of(state.metadata, topic_name, index)
    node = next((b for b in state.metadata.brokers(ctx.listener) if b.node_id == leader), None)
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, NO_NODE
    return ErrorCode.NONE, "", node


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    key_type = getattr(request, "key_type", GROUP)
    if ctx.version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            code, message, node = await _lookup(ctx, key, key_type)
            coordinators.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=node.node_id, host=node.host, port=node.port, error_code=code,
                error_message=message))
        return FindCoordinatorResponse(version=ctx.version, throttle_time_ms=0, coordinators=coordinators)
    code, message, node = await _lookup(ctx, request.key, key_type)
    if code == ErrorCode.NONE:
        message = code.name
    return FindCoordinatorResponse(version=ctx.version, throttle_time_ms=0, error_code=code, error_message=message,
                                   node_id=node.node_id, host=node.host, port=node.port)
