"""InitProducerId (key 22), v0-5 (as Kafka 4.3.1 advertises).

- Without a transactional id: a new producer id with epoch 0, whatever id/epoch the client
  offers (Kafka does the same for idempotent producers). Ids come from persisted blocks, so
  none is reused after a restart.
- With a transactional id: the transaction coordinator's answer (a bumped epoch that fences the
  older producer, CONCURRENT_TRANSACTIONS while an open transaction is being aborted,
  INVALID_TRANSACTION_TIMEOUT, PRODUCER_FENCED — INVALID_PRODUCER_EPOCH before v4, KIP-588).
- Authorization, before anything else: WRITE on the transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer needs IDEMPOTENT_WRITE on the
  cluster or WRITE on some topic (by resource type: literal, prefixed or "*"), else
  CLUSTER_AUTHORIZATION_FAILED. A refusal carries producer id and epoch -1."""

from __future__ import annotations

from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.transactions import fenced_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def _refusal(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    """Kafka's authorization of the request, None when it may go on."""
    if transactional_id is not None:
        if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return None
    if ctx.authorized_cluster(AclOperation.IDEMPOTENT_WRITE) or \
            ctx.authorized_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _answer(ctx: RequestContext, code: ErrorCode, producer_id: int = -1, epoch: int = -1) -> InitProducerIdResponse:
    return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0, error_code=code, producer_id=producer_id,
                                  producer_epoch=epoch)


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    r = request
    refused = _refusal(ctx, r.transactional_id)
    if refused is not None:
        return _answer(ctx, refused)
    if r.transactional_id is None:
        return _answer(ctx, ErrorCode.NONE, await ctx.state.metadata.allocate_producer_id(), 0)
    try:
        pid, epoch = await ctx.state.transactions.init_producer_id(
            r.transactional_id, r.transaction_timeout_ms,
            getattr(r, "producer_id", -1), getattr(r, "producer_epoch", -1))
    except KafkaApiError as exc:
        return _answer(ctx, fenced_error(exc.code, ctx.version, 4))
    return _answer(ctx, ErrorCode.NONE, pid, epoch)
