"""DescribeGroups (key 15), v0-6.

- State, protocol type and selected protocol, and every member (id, instance id, client id and
  host, metadata for the selected protocol, assignment); authorized operations (v3+) when asked:
  the group operations (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS) the principal
  may do — all of them without an authorizer, as Kafka 4 answers.
- DESCRIBE on each group, as Kafka's KafkaApis checks it: the refused groups come first, in
  request order, GROUP_AUTHORIZATION_FAILED with no state and no operations.
- The others are answered in the coordinator's order: grouped by their partition of
  __consumer_offsets, the partitions in the iteration order of Kafka's HashMap of them, each
  partition's groups in request order.
- An unknown group (the empty id included): v0-5 answer state "Dead" with no error (and the
  operations when asked); v6 answers GROUP_ID_NOT_FOUND with a message and no operations."""

from __future__ import annotations

from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.metadata import NOT_REQUESTED
from wirekafka.broker.coordinator.group_model import GroupState
from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC
from wirekafka.jvm import TopicPartitionKey, java_hash, java_hashmap_order
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

NOT_FOUND_ERROR_FROM = 6
OPERATIONS_FROM = 3
_Group = DescribeGroupsResponse.DescribedGroup
_Member = _Group.DescribedGroupMember


def _error(group_id: str, code: ErrorCode, state: str = "", message: str | None = None) -> _Group:
    return _Group(error_code=code, error_message=message, group_id=group_id, group_state=state, protocol_type="",
                  protocol_data="", members=[], authorized_operations=NOT_REQUESTED)


def _operations(ctx: RequestContext, group_id: str) -> set[int]:
    """The group operations the principal may do, as the response's bit field takes them."""
    bits = ctx.authorized_operations(ResourceType.GROUP, group_id)
    return {op for op in range(32) if bits >> op & 1}


def _describe(ctx: RequestContext, group_id: str, with_ops: bool) -> _Group:
    try:
        ctx.state.groups.check_available(group_id, allow_empty_id=True)
        g = ctx.state.groups.groups.get(group_id)
    except KafkaApiError as exc:
        return _error(group_id, exc.code)
    if g is None and ctx.version >= NOT_FOUND_ERROR_FROM:
        return _error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, "Dead", f"Group {group_id} not found.")
    operations = _operations(ctx, group_id) if with_ops else NOT_REQUESTED
    if g is None:
        return _Group(error_code=ErrorCode.NONE, error_message=None, group_id=group_id, group_state="Dead",
                      protocol_type="", protocol_data="", members=[], authorized_operations=operations)
    # Kafka describes a group's protocol and members' metadata only once it is Stable; while
    # it rebalances, members come with their last assignment and no metadata.
    stable = g.state is GroupState.STABLE
    members = [_Member(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                       client_host=m.client_host, member_metadata=m.metadata_for(g.protocol) if stable else b"",
                       member_assignment=m.assignment) for m in g.members.values()]
    return _Group(error_code=ErrorCode.NONE, error_message=None, group_id=group_id,
                  group_state=g.state.value, protocol_type=g.protocol_type or "",
                  protocol_data=(g.protocol or "") if stable else "", members=members,
                  authorized_operations=operations)


def _coordinator_order(ctx: RequestContext, group_ids: list[str]) -> list[str]:
    """`group_ids` as Kafka's coordinator answers them: per partition of __consumer_offsets, in
    the order of a java.util.HashMap keyed by TopicPartition."""
    by_partition: dict[int, list[str]] = {}
    for group_id in group_ids:
        by_partition.setdefault(ctx.state.groups.partition_of(group_id), []).append(group_id)
    order = java_hashmap_order(by_partition, hash=lambda p: java_hash(TopicPartitionKey(OFFSETS_TOPIC, p)))
    return [group_id for p in order for group_id in by_partition[p]]


def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    with_ops = ctx.version >= OPERATIONS_FROM and bool(getattr(request, "include_authorized_operations", False))
    wanted = request.groups
    describable = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.GROUP, wanted)
    refused = [_error(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in wanted if g not in describable]
    described = [_describe(ctx, g, with_ops) for g in _coordinator_order(ctx, [g for g in wanted if g in describable])]
    return DescribeGroupsResponse(version=ctx.version, throttle_time_ms=0, groups=refused + described)
