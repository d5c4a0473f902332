"""EndTxn (key 26), v0-5: commit or abort the open transaction. The answer comes once the
decision is durable and every partition has its marker. PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v2 (KIP-588). v5 is transaction version 2 (KIP-890 part 2), as
Kafka 4.3.1 serves it (coordinator/txn_metadata.py): every EndTxn moves the producer to the next
epoch (a new producer id, epoch 0, once the epoch is exhausted) and the answer carries the ids to
use; a retry carries the epoch before the bump (CONCURRENT_TRANSACTIONS while the markers are
pending, the ids in use once complete); a producer may abort a transaction it never wrote to.
Without WRITE on the transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (producer id and
epoch -1), before the coordinator is asked."""

from __future__ import annotations

from kafka.protocol.producer.transaction import EndTxnRequest, EndTxnResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.transactions import fenced_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


async def handle(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    r = request
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, r.transactional_id):
        return EndTxnResponse(version=ctx.version, throttle_time_ms=0,
                              error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                              producer_epoch=-1)
    try:
        pid, epoch = await ctx.state.transactions.end_txn(
            r.transactional_id, r.producer_id, r.producer_epoch, r.committed,
            bump_epoch=ctx.version >= 5)
        code = ErrorCode.NONE
    except KafkaApiError as exc:
        code = fenced_error(exc.code, ctx.version, 2)
        pid, epoch = -1, -1
    return EndTxnResponse(version=ctx.version, throttle_time_ms=0, error_code=code, producer_id=pid,
                          producer_epoch=epoch)
