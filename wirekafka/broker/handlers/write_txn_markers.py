"""WriteTxnMarkers (key 27), v1-2: the inter-broker request a transaction coordinator sends
partition leaders to write COMMIT/ABORT markers. Served as Kafka serves it: each partition
answers its own error (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH for an older producer
epoch, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch). Markers that reach
__consumer_offsets settle the producer's pending transactional offsets. Only a broker may send
it: ALTER or CLUSTER_ACTION on the cluster (Kafka asks for ALTER first), else every partition
CLUSTER_AUTHORIZATION_FAILED and nothing written."""

from __future__ import annotations

import trio
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

_Order = WriteTxnMarkersRequest.WritableTxnMarker
_Marker = WriteTxnMarkersResponse.WritableTxnMarkerResult
_Topic = _Marker.WritableTxnMarkerTopicResult
_Part = _Topic.WritableTxnMarkerPartitionResult


def _refused(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(version=ctx.version, markers=[
        _Marker(producer_id=m.producer_id, topics=[
            _Topic(name=t.name, partitions=[_Part(partition_index=i, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                                            for i in t.partition_indexes]) for t in m.topics])
        for m in request.markers])


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    """Every marker of the request written at once (a coordinator batches the markers of many
    transactions into one request, and each waits for its replication), answered in order."""
    if not (ctx.authorized_cluster(AclOperation.ALTER) or ctx.authorized_cluster(AclOperation.CLUSTER_ACTION)):
        return _refused(ctx, request)
    codes: dict[tuple[int, int, int], ErrorCode] = {}  # (marker, topic, partition) position -> answer

    async def write(at: tuple[int, int, int], name: str, index: int, m: _Order) -> None:
        codes[at] = await ctx.state.write_txn_marker(name, index, m.producer_id, m.producer_epoch,
                                                     m.coordinator_epoch, m.transaction_result)

    async with trio.open_nursery() as nursery:
        for i, m in enumerate(request.markers):
            for j, t in enumerate(m.topics):
                for k, index in enumerate(t.partition_indexes):
                    nursery.start_soon(write, (i, j, k), t.name, index, m)
    return WriteTxnMarkersResponse(version=ctx.version, markers=[
        _Marker(producer_id=m.producer_id, topics=[
            _Topic(name=t.name, partitions=[_Part(partition_index=index, error_code=codes[(i, j, k)])
                                            for k, index in enumerate(t.partition_indexes)])
            for j, t in enumerate(m.topics)])
        for i, m in enumerate(request.markers)])
