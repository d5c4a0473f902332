"""AddPartitionsToTxn (key 24), v0-5.

- v0-3 (clients): one transaction; its partitions join the open transaction (or open it). A
  partition of an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION and then every other partition
  OPERATION_NOT_ATTEMPTED, with nothing added, as Kafka answers; a coordinator error (fenced
  producer, CONCURRENT_TRANSACTIONS, ...) is reported on every partition.
- v4+ (brokers, KIP-890): several transactions, each add or verify_only (is the partition in the
  transaction?); the top-level error is for the request as a whole.
- PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).
- Authorization, as Kafka's: v0-3 need WRITE on the transactional id (else every partition
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and WRITE on each topic: a partition of a topic the
  principal may not write, existing or not, is TOPIC_AUTHORIZATION_FAILED (which tells nothing of
  its existence) and fails the request like an unknown one. An internal topic is never
  authorized for a client, so adding one is TOPIC_AUTHORIZATION_FAILED even without an
  authorizer, as in Kafka. v4+ come from brokers: CLUSTER_ACTION on the cluster, else the
  top-level CLUSTER_AUTHORIZATION_FAILED with no results."""

from __future__ import annotations

from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import INTERNAL_TOPICS
from wirekafka.jvm import java_hashmap_order
from wirekafka.broker.coordinator.transactions import fenced_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Result = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
_TopicResult = _Result.AddPartitionsToTxnTopicResult
_PartResult = _TopicResult.AddPartitionsToTxnPartitionResult
# v3 and below: the same fields, in the schema's own (top-level) classes
_V3TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
_V3PartResult = _V3TopicResult.AddPartitionsToTxnPartitionResult


def _by_topic(codes: dict[tuple[str, int], ErrorCode]) -> dict[str, list[tuple[int, ErrorCode]]]:
    by_topic: dict[str, list[tuple[int, ErrorCode]]] = {}
    for (topic, index), code in codes.items():
        by_topic.setdefault(topic, []).append((index, code))
    return by_topic


def _shape(codes: dict[tuple[str, int], ErrorCode]) -> list[_TopicResult]:
    return [_TopicResult(name=t, results_by_partition=[_PartResult(partition_index=i, partition_error_code=c)
                                                       for i, c in parts])
            for t, parts in _by_topic(codes).items()]


def _shape_v3(codes: dict[tuple[str, int], ErrorCode]) -> list[_V3TopicResult]:
    return [_V3TopicResult(name=t, results_by_partition=[_V3PartResult(partition_index=i, partition_error_code=c)
                                                         for i, c in parts])
            for t, parts in _by_topic(codes).items()]


async def _one(ctx: RequestContext, transactional_id: str, producer_id: int, producer_epoch: int,
               topics: list, verify_only: bool) -> dict[tuple[str, int], ErrorCode]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    if ctx.version < 4 and not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in wanted}
    refused = _refused(ctx, wanted)
    if refused:
        # Kafka collects this answer in hash maps: its topics come in java.util.HashMap order
        order = java_hashmap_order(t for t, _ in wanted)
        return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED)
                for tp in sorted(wanted, key=lambda tp: order.index(tp[0]))}
    coordinator = ctx.state.transactions
    try:
        if verify_only:
            return coordinator.verify_only(transactional_id, producer_id, producer_epoch, wanted)
        await coordinator.add_partitions(transactional_id, producer_id, producer_epoch, wanted)
        code = ErrorCode.NONE
    except KafkaApiError as exc:
        code = fenced_error(exc.code, ctx.version, 2)
    return {tp: code for tp in wanted}


def _refused(ctx: RequestContext, wanted: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """The partitions that fail the request before the coordinator sees it: those of topics a
    client may not write (internal topics included; a broker's v4+ request was authorized as a
    whole), then those that do not exist."""
    names = {t for t, _ in wanted}
    writable = names if ctx.version >= 4 else \
        ctx.authorized_names(AclOperation.WRITE, ResourceType.TOPIC, names - INTERNAL_TOPICS)
    refused = {}
    for tp in wanted:
        if tp[0] not in writable:
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not _exists(ctx, *tp):
            refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return refused


def _exists(ctx: RequestContext, topic: str, index: int) -> bool:
    t = ctx.state.metadata.topic(topic)
    return t is not None and 0 <= index < len(t.partitions)


async def handle(ctx: RequestContext, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    r = request
    v = ctx.version
    if v < 4:
        codes = await _one(ctx, r.v3_and_below_transactional_id, r.v3_and_below_producer_id,
                           r.v3_and_below_producer_epoch, r.v3_and_below_topics, verify_only=False)
        return AddPartitionsToTxnResponse(version=v, throttle_time_ms=0, results_by_topic_v3_and_below=_shape_v3(codes))
    if not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
        return AddPartitionsToTxnResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          results_by_transaction=[])
    results = []
    for txn in r.transactions:
        codes = await _one(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics,
                           verify_only=txn.verify_only)
        results.append(_Result(transactional_id=txn.transactional_id, topic_results=_shape(codes)))
    return AddPartitionsToTxnResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                      results_by_transaction=results)
