"""TransactionPeers: what a broker asks other brokers about transactions, over one kept
connection per broker.

- Markers: a transaction coordinator's COMMIT/ABORT markers for partitions led by other brokers,
  sent as Kafka's coordinator sends them: a WriteTxnMarkers request per leader, holding every
  partition of the transaction it leads, together with the markers of the other transactions
  queued for that leader while its previous request was in flight (peer_batches.py).
  Any failure (no leader, the leader unreachable, an error in the answer) is reported as a
  retriable code, so the transaction stays in its Prepare state and the coordinator retries.
- Verification: is a partition in a transaction whose coordinator is another broker? An
  AddPartitionsToTxn v4 verify_only request to the leader of the transactional id's
  __transaction_state partition, as Kafka's AddPartitionsToTxnManager sends it, with its
  mapping of the answers (a fenced producer is INVALID_PRODUCER_EPOCH, no coordinator
  COORDINATOR_NOT_AVAILABLE, an unreachable one NETWORK_EXCEPTION, a refused cluster action
  INVALID_TXN_STATE); the questions queued for one coordinator meanwhile share a request, as
  that manager batches them."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, ClusterMetadata
from wirekafka.broker.replication.peer_batches import PeerBatches
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
Answers = dict[TopicPartition, ErrorCode]


@dataclass(frozen=True)
class MarkerOrder:
    """One transaction's markers for the partitions one leader holds."""

    tps: list[TopicPartition]
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


@dataclass(frozen=True)
class Verification:
    """Are these partitions in transactional_id's open transaction, of this producer?"""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]


class TransactionPeers:
    def __init__(self, metadata: ClusterMetadata, config: BrokerConfig, security: PeerSecurity) -> None:
        self.metadata = metadata
        self._peers = PeerPool(self._broker, config, "txn-peers", security)
        self._markers: PeerBatches[MarkerOrder, Answers] = PeerBatches(
            self._send_markers, lambda order: dict.fromkeys(order.tps, ErrorCode.NOT_LEADER_OR_FOLLOWER))
        self._verifications: PeerBatches[Verification, Answers] = PeerBatches(
            self._send_verifications, lambda question: dict.fromkeys(question.partitions, ErrorCode.NETWORK_EXCEPTION))

    def _broker(self, node: int) -> BrokerInfo | None:
        listener = self._peers.config.inter_broker_listener
        return next((b for b in self.metadata.brokers(listener) if b.node_id == node), None)

    async def write(self, leader: int, tps: list[TopicPartition], producer_id: int, producer_epoch: int,
                    coordinator_epoch: int, commit: bool) -> Answers:
        """One transaction's markers for the partitions broker `leader` leads (-1: no leader), in
        the next WriteTxnMarkers request to it; each partition's answer."""
        if leader < 0:
            return dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        order = MarkerOrder(tps, producer_id, producer_epoch, coordinator_epoch, commit)
        return await self._markers.ask(leader, producer_id, order)

    async def _send_markers(self, leader: int, orders: list[MarkerOrder]) -> list[Answers]:
        """One WriteTxnMarkers request of every order (one producer's at most once); the answer
        of each, matched by producer id as the response carries them."""
        unanswered = [dict.fromkeys(order.tps, ErrorCode.NOT_LEADER_OR_FOLLOWER) for order in orders]
        client = self._peers.client(leader)
        if client is None:
            return unanswered
        request = WriteTxnMarkersRequest(version=MARKERS_VERSION, markers=[_M(
            producer_id=order.producer_id, producer_epoch=order.producer_epoch, transaction_result=order.commit,
            coordinator_epoch=order.coordinator_epoch,
            topics=[_T(name=t, partition_indexes=ps) for t, ps in _by_topic(order.tps).items()])
            for order in orders])
        try:
            response = answer_of(await client.send(request), WriteTxnMarkersResponse)
        except PeerUnavailable as exc:
            log.info("markers of %d transaction(s): leader %d unreachable: %s", len(orders), leader, exc)
            return unanswered
        by_producer = {m.producer_id: {(t.name, p.partition_index): ErrorCode(p.error_code)
                                       for t in m.topics for p in t.partitions} for m in response.markers}
        return [{tp: by_producer.get(order.producer_id, {}).get(tp, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                 for tp in order.tps} for order in orders]

    async def verify(self, coordinator: int, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition]) -> Answers:
        """Each partition's answer from the transaction's coordinator, broker `coordinator` (-1:
        none): NONE when it is in the open transaction."""
        if coordinator < 0:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        question = Verification(transactional_id, producer_id, producer_epoch, partitions)
        return await self._verifications.ask(coordinator, transactional_id, question)

    async def _send_verifications(self, coordinator: int, questions: list[Verification]) -> list[Answers]:
        """One AddPartitionsToTxn verify_only request of every question (one transactional id's
        at most once); the answer of each, matched by transactional id."""
        client = self._peers.client(coordinator)
        if client is None:
            return [dict.fromkeys(q.partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE) for q in questions]
        request = AddPartitionsToTxnRequest(version=VERIFY_VERSION, transactions=[_Txn(
            transactional_id=q.transactional_id, producer_id=q.producer_id, producer_epoch=q.producer_epoch,
            verify_only=True, topics=[_TxnTopic(name=t, partitions=ps) for t, ps in _by_topic(q.partitions).items()])
            for q in questions])
        try:
            response = answer_of(await client.send(request), AddPartitionsToTxnResponse)
        except PeerUnavailable as exc:
            log.info("verifying %d transaction(s): coordinator %d unreachable: %s", len(questions), coordinator, exc)
            return [dict.fromkeys(q.partitions, ErrorCode.NETWORK_EXCEPTION) for q in questions]
        if response.error_code:
            code = ErrorCode(response.error_code)
            code = ErrorCode.INVALID_TXN_STATE if code is ErrorCode.CLUSTER_AUTHORIZATION_FAILED else code
            return [dict.fromkeys(q.partitions, code) for q in questions]
        by_id = {r.transactional_id: {(t.name, p.partition_index): ErrorCode(p.partition_error_code)
                                      for t in r.topic_results for p in t.results_by_partition}
                 for r in response.results_by_transaction}
        return [{tp: _producer_facing(by_id.get(q.transactional_id, {}).get(tp, ErrorCode.NONE))
                 for tp in q.partitions} for q in questions]


def _by_topic(tps: list[TopicPartition]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, index in tps:
        topics.setdefault(topic, []).append(index)
    return topics


def _producer_facing(code: ErrorCode) -> ErrorCode:
    """Producers expect INVALID_PRODUCER_EPOCH where the coordinator says PRODUCER_FENCED."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code is ErrorCode.PRODUCER_FENCED else code
