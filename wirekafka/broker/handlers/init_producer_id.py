"""InitProducerId (key 22), v0-5 (as Kafka 4.3.1 advertises).

- Without a transactional id: a new producer id with epoch 0, whatever id/epoch the client
  offers (Kafka does the same for idempotent producers). Ids come from persisted blocks, so
  none is reused after a restart.
- With a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, because transactions are not
  implemented; the error is fatal in clients, instead of an endless retry."""

from __future__ import annotations

from kafka.protocol.producer.transaction import InitProducerIdResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode


async def handle(ctx: RequestContext, request: object) -> InitProducerIdResponse:
    if request.transactional_id is not None:  # type: ignore[attr-defined]
        return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0,
                                      error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                  producer_id=await ctx.state.metadata.allocate_producer_id(), producer_epoch=0)
