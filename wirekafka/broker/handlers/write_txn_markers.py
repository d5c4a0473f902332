"""WriteTxnMarkers (key 27), v1-2: the inter-broker request a transaction coordinator sends
partition leaders to write COMMIT/ABORT markers. Served as Kafka serves it: each partition
answers its own error (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH for an older producer
epoch, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch). Markers that reach
__consumer_offsets settle the producer's pending transactional offsets."""

from __future__ import annotations

from kafka.protocol.producer.transaction import WriteTxnMarkersResponse

from wirekafka.broker.context import RequestContext

_Marker = WriteTxnMarkersResponse.WritableTxnMarkerResult
_Topic = _Marker.WritableTxnMarkerTopicResult
_Part = _Topic.WritableTxnMarkerPartitionResult


async def handle(ctx: RequestContext, request: object) -> WriteTxnMarkersResponse:
    results = []
    for m in request.markers:  # type: ignore[attr-defined]
        topics = []
        for t in m.topics:
            parts = []
            for index in t.partition_indexes:
                code = await ctx.state.write_txn_marker(t.name, index, m.producer_id, m.producer_epoch,
                                                        m.coordinator_epoch, m.transaction_result)
                parts.append(_Part(partition_index=index, error_code=code))
            topics.append(_Topic(name=t.name, partitions=parts))
        results.append(_Marker(producer_id=m.producer_id, topics=topics))
    return WriteTxnMarkersResponse(version=ctx.version, markers=results)


