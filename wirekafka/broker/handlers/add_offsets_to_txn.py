"""AddOffsetsToTxn (key 25), v0-4: the group's partition of __consumer_offsets joins the
transaction, so that TxnOffsetCommit may write there and the markers reach it.

- PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).
- Authorization first, as Kafka's: WRITE on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group (GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from kafka.protocol.producer.transaction import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC
from wirekafka.broker.coordinator.transactions import fenced_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def _refusal(ctx: RequestContext, transactional_id: str, group_id: str) -> ErrorCode:
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return ErrorCode.NONE


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    r = request
    code = _refusal(ctx, r.transactional_id, r.group_id)
    if code == ErrorCode.NONE:
        try:
            await ctx.state.groups.ensure_offsets_topic()
            partition = ctx.state.groups.partition_of(r.group_id)
            await ctx.state.transactions.add_partitions(r.transactional_id, r.producer_id,
                                                        r.producer_epoch, [(OFFSETS_TOPIC, partition)])
        except KafkaApiError as exc:
            code = fenced_error(exc.code, ctx.version, 2)
    return AddOffsetsToTxnResponse(version=ctx.version, throttle_time_ms=0, error_code=code)
