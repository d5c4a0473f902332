"""TransactionPeers: what a broker asks other brokers about transactions, over one kept
connection per broker.

- Markers: a transaction coordinator's COMMIT/ABORT markers for partitions led by other brokers,
  sent as Kafka's coordinator sends them: one WriteTxnMarkers request per leader, holding every
  partition of the transaction it leads.
  Any failure (no leader, the leader unreachable, an error in the answer) is reported as a
  retriable code, so the transaction stays in its Prepare state and the coordinator retries.
- Verification: is a partition in a transaction whose coordinator is another broker? An
  AddPartitionsToTxn v4 verify_only request to the leader of the transactional id's
  __transaction_state partition, as Kafka's AddPartitionsToTxnManager sends it, with its
  mapping of the answers (a fenced producer is INVALID_PRODUCER_EPOCH, no coordinator
  COORDINATOR_NOT_AVAILABLE, an unreachable one NETWORK_EXCEPTION, a refused cluster action
  INVALID_TXN_STATE)."""

from __future__ import annotations

import logging

from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, ClusterMetadata
from wirekafka.broker.replication.peer_client import PeerPool, PeerSecurity, PeerUnavailable, answer_of
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

MARKERS_VERSION = 1
VERIFY_VERSION = 4  # the first AddPartitionsToTxn version for brokers (KIP-890)
_M = WriteTxnMarkersRequest.WritableTxnMarker
_T = _M.WritableTxnMarkerTopic
_Txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
_TxnTopic = _Txn.AddPartitionsToTxnTopic
TopicPartition = tuple[str, int]


class TransactionPeers:
    def __init__(self, metadata: ClusterMetadata, config: BrokerConfig, security: PeerSecurity) -> None:
        self.metadata = metadata
        self._peers = PeerPool(self._broker, config, "txn-peers", security)

    def _broker(self, node: int) -> BrokerInfo | None:
        listener = self._peers.config.inter_broker_listener
        return next((b for b in self.metadata.brokers(listener) if b.node_id == node), None)

    async def write(self, leader: int, tps: list[TopicPartition], producer_id: int, producer_epoch: int,
                    coordinator_epoch: int, commit: bool) -> dict[TopicPartition, ErrorCode]:
        """One transaction's markers for the partitions broker `leader` leads (-1: no leader), in
        one WriteTxnMarkers request; each partition's answer."""
        client = self._peers.client(leader) if leader >= 0 else None
        if client is None:
            return dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        topics: dict[str, list[int]] = {}
        for topic, index in tps:
            topics.setdefault(topic, []).append(index)
        request = WriteTxnMarkersRequest(version=MARKERS_VERSION, markers=[_M(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch, topics=[_T(name=t, partition_indexes=ps) for t, ps in topics.items()])])
        try:
            response = answer_of(await client.send(request), WriteTxnMarkersResponse)
        except PeerUnavailable as exc:
            log.info("transaction markers for %d partition(s): leader %d unreachable: %s", len(tps), leader, exc)
            return dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        answers = {(t.name, p.partition_index): ErrorCode(p.error_code)
                   for m in response.markers for t in m.topics for p in t.partitions}
        return {tp: answers.get(tp, ErrorCode.NOT_LEADER_OR_FOLLOWER) for tp in tps}

    async def verify(self, coordinator: int, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """Each partition's answer from the transaction's coordinator, broker `coordinator` (-1:
        none): NONE when it is in the open transaction."""
        client = self._peers.client(coordinator) if coordinator >= 0 else None
        if client is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        request = AddPartitionsToTxnRequest(version=VERIFY_VERSION, transactions=[_Txn(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=True, topics=[_TxnTopic(name=t, partitions=ps) for t, ps in topics.items()])])
        try:
            response = answer_of(await client.send(request), AddPartitionsToTxnResponse)
        except PeerUnavailable as exc:
            log.info("verifying %s's transaction: coordinator %d unreachable: %s", transactional_id, coordinator, exc)
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        if response.error_code:
            code = ErrorCode(response.error_code)
            return dict.fromkeys(partitions, ErrorCode.INVALID_TXN_STATE
                                 if code is ErrorCode.CLUSTER_AUTHORIZATION_FAILED else code)
        answers = {(t.name, p.partition_index): ErrorCode(p.partition_error_code)
                   for r in response.results_by_transaction for t in r.topic_results for p in t.results_by_partition}
        return {tp: _producer_facing(answers.get(tp, ErrorCode.NONE)) for tp in partitions}


def _producer_facing(code: ErrorCode) -> ErrorCode:
    """Producers expect INVALID_PRODUCER_EPOCH where the coordinator says PRODUCER_FENCED."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code is ErrorCode.PRODUCER_FENCED else code
