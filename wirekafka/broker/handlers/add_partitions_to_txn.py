"""AddPartitionsToTxn (key 24), v0-5.

- v0-3 (clients): one transaction; its partitions join the open transaction (or open it). A
  partition of an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION and then every other partition
  OPERATION_NOT_ATTEMPTED, with nothing added, as Kafka answers; a coordinator error (fenced
  producer, CONCURRENT_TRANSACTIONS, ...) is reported on every partition.
- v4+ (brokers, KIP-890): several transactions, each add or verify_only (is the partition in the
  transaction?); the top-level error is for the request as a whole.
- PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588)."""

from __future__ import annotations

from kafka.protocol.producer.transaction import AddPartitionsToTxnResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.transactions import fenced_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Result = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
_TopicResult = _Result.AddPartitionsToTxnTopicResult
_PartResult = _TopicResult.AddPartitionsToTxnPartitionResult


def _shape(codes: dict[tuple[str, int], ErrorCode]) -> list[_TopicResult]:
    by_topic: dict[str, list[_PartResult]] = {}
    for (topic, index), code in codes.items():
        by_topic.setdefault(topic, []).append(_PartResult(partition_index=index, partition_error_code=code))
    return [_TopicResult(name=t, results_by_partition=parts) for t, parts in by_topic.items()]


async def _one(ctx: RequestContext, transactional_id: str, producer_id: int, producer_epoch: int,
               topics: list, verify_only: bool) -> dict[tuple[str, int], ErrorCode]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    unknown = {tp for tp in wanted if not _exists(ctx, *tp)}
    if unknown:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    coordinator = ctx.state.transactions
    try:
        if verify_only:
            return coordinator.verify_only(transactional_id, producer_id, producer_epoch, wanted)
        await coordinator.add_partitions(transactional_id, producer_id, producer_epoch, wanted)
        code = ErrorCode.NONE
    except KafkaApiError as exc:
        code = fenced_error(exc.code, ctx.version, 2)
    return {tp: code for tp in wanted}


def _exists(ctx: RequestContext, topic: str, index: int) -> bool:
    t = ctx.state.metadata.topic(topic)
    return t is not None and 0 <= index < len(t.partitions)


async def handle(ctx: RequestContext, request: object) -> AddPartitionsToTxnResponse:
    r = request
    v = ctx.version
    if v < 4:
        codes = await _one(ctx, r.v3_and_below_transactional_id, r.v3_and_below_producer_id,  # type: ignore[attr-defined]
                           r.v3_and_below_producer_epoch, r.v3_and_below_topics, verify_only=False)  # type: ignore[attr-defined]
        return AddPartitionsToTxnResponse(version=v, throttle_time_ms=0, results_by_topic_v3_and_below=_shape(codes))
    results = []
    for txn in r.transactions:  # type: ignore[attr-defined]
        codes = await _one(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics,
                           verify_only=txn.verify_only)
        results.append(_Result(transactional_id=txn.transactional_id, topic_results=_shape(codes)))
    return AddPartitionsToTxnResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                      results_by_transaction=results)
