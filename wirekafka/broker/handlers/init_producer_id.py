"""InitProducerId (key 22), v0-5 (as Kafka 4.3.1 advertises).

- Without a transactional id: a new producer id with epoch 0, whatever id/epoch the client
  offers (Kafka does the same for idempotent producers). Ids come from persisted blocks, so
  none is reused after a restart.
- With a transactional id: the transaction coordinator's answer (a bumped epoch that fences the
  older producer, CONCURRENT_TRANSACTIONS while an open transaction is being aborted,
  INVALID_TRANSACTION_TIMEOUT, PRODUCER_FENCED — INVALID_PRODUCER_EPOCH before v4, KIP-588)."""

from __future__ import annotations

from kafka.protocol.producer.transaction import InitProducerIdResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.transactions import fenced_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


async def handle(ctx: RequestContext, request: object) -> InitProducerIdResponse:
    r = request
    if r.transactional_id is None:  # type: ignore[attr-defined]
        return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                      producer_id=await ctx.state.metadata.allocate_producer_id(), producer_epoch=0)
    try:
        pid, epoch = await ctx.state.transactions.init_producer_id(
            r.transactional_id, r.transaction_timeout_ms,  # type: ignore[attr-defined]
            getattr(r, "producer_id", -1), getattr(r, "producer_epoch", -1))
    except KafkaApiError as exc:
        return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0,
                                      error_code=fenced_error(exc.code, ctx.version, 4), producer_id=-1,
                                      producer_epoch=-1)
    return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                  producer_id=pid, producer_epoch=epoch)
