"""One transactional id's state (Kafka's TransactionMetadata) and the rules EndTxn is judged by,
kept apart from the coordinator that writes the transitions so both stay readable.

Transaction version 2 (KIP-890 part 2), as Kafka 4.3.1 serves it: an EndTxn at v5 moves the
producer to the next epoch; the transaction remembers the version of the client that last added
to it or ended it (ClientTransactionVersion in the log) because a retry looks different under
each version. Under version 1 a retried EndTxn repeats the producer's epoch; under version 2 it
carries the epoch before the bump, one less than the coordinator's. A producer whose epoch
cannot be bumped again (Short.MaxValue - 1 reached) gets a new producer id when its transaction
ends: the id is allocated with the decision (NextProducerId in the Prepare record) and taken at
completion with epoch 0, the old id becoming the previous one (a retry from it is still known)."""

from __future__ import annotations

from dataclasses import dataclass, field

from wirekafka.broker.coordinator import txn_records as tr
from wirekafka.broker.coordinator.txn_records import TxnState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

NO_PRODUCER_ID = -1
NO_EPOCH = -1
MAX_EPOCH = 32767  # Short.MaxValue: an epoch this high is exhausted
TV2 = 2  # the transaction version whose EndTxn bumps the epoch
TopicPartition = tuple[str, int]
_PREPARING = {True: TxnState.PREPARE_COMMIT, False: TxnState.PREPARE_ABORT}
_DONE = {True: TxnState.COMPLETE_COMMIT, False: TxnState.COMPLETE_ABORT}


@dataclass
class TransactionMetadata:
    """One transactional id's state, as Kafka's TransactionMetadata keeps it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_EPOCH
    client_transaction_version: int = 0  # 2 once the producer ends transactions with EndTxn v5
    # the id the producer moves to when this transaction completes (its epoch is exhausted)
    next_producer_id: int = NO_PRODUCER_ID
    pending: bool = False  # a transition is being written: CONCURRENT_TRANSACTIONS meanwhile

    def to_record(self) -> tr.TransactionLogValue:
        return tr.TransactionLogValue(
            producer_id=self.producer_id, producer_epoch=self.producer_epoch, timeout_ms=self.timeout_ms,
            state=self.state, last_update_timestamp_ms=self.update_ms, start_timestamp_ms=self.start_ms,
            partitions=tr.group_partitions(self.partitions), previous_producer_id=self.previous_producer_id,
            next_producer_id=self.next_producer_id, client_transaction_version=self.client_transaction_version)

    @property
    def epoch_exhausted(self) -> bool:
        """Kafka's isProducerEpochExhausted: one more bump would reach Short.MaxValue."""
        return self.producer_epoch >= MAX_EPOCH - 1


def end_txn_goes_ahead(meta: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                       tv2_request: bool) -> bool:
    """Kafka's checks of an EndTxn against the transaction: True when a decision is to be written
    (an open transaction, or under version 2 the abort of one that holds nothing), False for a
    retry of the decision already completed (answered with the producer id and epoch in use);
    raises KafkaApiError otherwise."""
    if meta.pending:  # first, so a producer moving to its next id is not fenced meanwhile (KAFKA-18660)
        raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
    tv2_meta = meta.client_transaction_version >= TV2
    retry_bump = tv2_meta and producer_epoch + 1 == meta.producer_epoch
    retry_overflow = (tv2_meta and producer_id == meta.previous_producer_id and producer_epoch == MAX_EPOCH - 1
                      and meta.producer_epoch == 0)
    if producer_id != meta.producer_id and not retry_overflow:
        raise KafkaApiError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    current = producer_epoch == meta.producer_epoch
    if not tv2_meta or meta.state in (TxnState.ONGOING, TxnState.EMPTY):
        valid = current
    elif meta.state in _PREPARING.values():
        valid = retry_bump  # under version 2 the same epoch would be the next transaction's
    else:
        valid = retry_bump or retry_overflow or current
    if not valid:
        raise KafkaApiError(ErrorCode.PRODUCER_FENCED)
    if meta.state is TxnState.ONGOING:
        return True
    retry = (retry_bump or retry_overflow) if tv2_request else current
    if tv2_request and not commit and not retry and meta.state in (TxnState.EMPTY, *_DONE.values()):
        return True  # version 2: a producer may abort a transaction it never wrote to
    if meta.state is _DONE[commit] and retry:
        return False
    if meta.state is _PREPARING[commit]:
        raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
    raise KafkaApiError(ErrorCode.INVALID_TXN_STATE)


def completed(meta: TransactionMetadata, now_ms: int) -> TransactionMetadata:
    """Kafka's prepareComplete: the transaction's state once its markers are written; a producer
    whose epoch was exhausted moves to the producer id allocated with the decision, at epoch 0."""
    done = TransactionMetadata(
        meta.transactional_id, meta.producer_id, meta.producer_epoch, meta.timeout_ms,
        TxnState.COMPLETE_COMMIT if meta.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT,
        set(), meta.start_ms, now_ms, meta.previous_producer_id, meta.last_producer_epoch,
        meta.client_transaction_version)
    if meta.client_transaction_version >= TV2 and meta.next_producer_id != NO_PRODUCER_ID:
        done.producer_id, done.producer_epoch = meta.next_producer_id, 0
        done.previous_producer_id = meta.producer_id
    return done
