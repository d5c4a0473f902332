"""RemoteMarkers: a transaction coordinator's COMMIT/ABORT markers for partitions led by other
brokers, sent as Kafka's coordinator sends them: a WriteTxnMarkers request to the partition's
leader (one connection per broker, kept). Any failure — no leader, the leader unreachable, an
error in the answer — is reported as a retriable code, so the transaction stays in its Prepare
state and the coordinator retries."""

from __future__ import annotations

import logging

from kafka.protocol.producer.transaction import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, ClusterMetadata
from wirekafka.broker.replication.peer_client import PeerPool, PeerSecurity, PeerUnavailable, answer_of
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

MARKERS_VERSION = 1
_M = WriteTxnMarkersRequest.WritableTxnMarker
_T = _M.WritableTxnMarkerTopic


class RemoteMarkers:
    def __init__(self, metadata: ClusterMetadata, config: BrokerConfig, security: PeerSecurity) -> None:
        self.metadata = metadata
        self._peers = PeerPool(self._broker, config, "txn-markers", security)

    def _broker(self, node: int) -> BrokerInfo | None:
        listener = self._peers.config.inter_broker_listener
        return next((b for b in self.metadata.brokers(listener) if b.node_id == node), None)

    async def write(self, tp: tuple[str, int], producer_id: int, producer_epoch: int, coordinator_epoch: int,
                    commit: bool) -> ErrorCode:
        topic = self.metadata.topic(tp[0])
        if topic is None or not 0 <= tp[1] < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        leader = self.metadata.partition_view(topic, tp[1]).leader
        client = self._peers.client(leader) if leader >= 0 else None
        if client is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        request = WriteTxnMarkersRequest(version=MARKERS_VERSION, markers=[_M(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch, topics=[_T(name=tp[0], partition_indexes=[tp[1]])])])
        try:
            response = answer_of(await client.send(request), WriteTxnMarkersResponse)
        except PeerUnavailable as exc:
            log.info("transaction marker for %s-%d: leader %d unreachable: %s", tp[0], tp[1], leader, exc)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode(response.markers[0].topics[0].partitions[0].error_code)
