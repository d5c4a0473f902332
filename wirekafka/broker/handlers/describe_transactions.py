"""DescribeTransactions (key 65), v0: each transactional id's state as Kafka names it
("Ongoing", "CompleteCommit", ...), producer id and epoch, timeout, start time and partitions.
An unknown id is TRANSACTIONAL_ID_NOT_FOUND; COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR
as for the other transaction requests. Each id needs DESCRIBE (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, whether the id is known or not), and the partitions listed
are only those of topics the principal may DESCRIBE, as Kafka filters them."""

from __future__ import annotations

from kafka.protocol.admin.transactions import DescribeTransactionsRequest, DescribeTransactionsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_State = DescribeTransactionsResponse.TransactionState
_Topic = _State.TopicData


def _error(tid: str, code: ErrorCode) -> _State:
    return _State(error_code=code, transactional_id=tid, transaction_state="", transaction_timeout_ms=0,  # schema defaults
                  transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=[])


def _described(ctx: RequestContext, tid: str) -> _State:
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
        return _error(tid, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        meta = ctx.state.transactions.describe(tid)
    except KafkaApiError as exc:
        return _error(tid, exc.code)
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(index)
    visible = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic)
    return _State(error_code=ErrorCode.NONE, transactional_id=tid, transaction_state=meta.state.kafka_name,
                  transaction_timeout_ms=meta.timeout_ms, transaction_start_time_ms=meta.start_ms,
                  producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                  topics=[_Topic(topic=t, partitions=p) for t, p in by_topic.items() if t in visible])


def handle(ctx: RequestContext, request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    states = [_described(ctx, tid) for tid in request.transactional_ids]
    return DescribeTransactionsResponse(version=ctx.version, throttle_time_ms=0, transaction_states=states)
