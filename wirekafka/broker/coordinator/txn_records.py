"""Records of the internal `__transaction_state` topic, in the formats of Kafka 4.3.1's transaction
coordinator, so that a log written by wirekafka is one Kafka (and its tools) can load, and back.
The bytes come from Kafka's own schemas (`wirekafka.protocol.coordinator_records`); this module
keeps the broker's types for them and Kafka's rules on what is written and read.

Key (never flexible): int16 record type 0 (Kafka's CoordinatorRecordType.TRANSACTION_LOG, which is
also the only TransactionLogKey version ever written), then the transactional id as an int16-length
string. Kafka's loader skips keys of any other type with a warning.

Value: int16 version, then TransactionLogValue at that version (schemas/TransactionLogValue.json):
version 0 in classic encodings; version 1 flexible, with PreviousProducerId, NextProducerId,
ClientTransactionVersion and NextProducerEpoch as tagged fields, written only when not at their
defaults.

What Kafka 4.3.1 writes (TransactionLog.valueToBytes, checked against a real broker's segments):
version 1 when the cluster's transaction.version feature is >= 1 (a freshly formatted 4.3.1 cluster
is at 2), else version 0; only version 1 carries the previous and next producer ids; it never sets
NextProducerEpoch; partitions are null exactly when the state is Empty and an empty list once a
transaction completed. A null value is a tombstone (an expired transactional id)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable

from wirekafka.broker.coordinator.group_model import partition_for as _coordinator_partition_for
from wirekafka.protocol import coordinator_records as cr
from wirekafka.protocol.records import NO_PRODUCER_ID

TRANSACTION_STATE_TOPIC = "__transaction_state"

#: The int16 every key starts with: CoordinatorRecordType.TRANSACTION_LOG.
KEY_TYPE = 0
#: The value version Kafka 4.3.1 writes at transaction.version >= 1 (its default for new clusters).
VALUE_VERSION = 1
#: The value versions Kafka 4.3.1 reads; any other is skipped by its loader with a warning.
VALUE_VERSIONS = (0, 1)

NO_PRODUCER_EPOCH = -1


class TxnState(IntEnum):
    """A transaction's state, valued by the id Kafka stores in TransactionStatus."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name Kafka reports for the state (DescribeTransactions, ListTransactions filters)."""
        return "".join(word.capitalize() for word in self.name.split("_"))


class UnknownValueVersion(ValueError):
    """A value version Kafka 4.3.1 cannot read either; its loader logs and skips such records,
    so callers should do the same (decode_value's None already means a tombstone)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"unknown __transaction_state value version {version}")
        self.version = version


@dataclass(frozen=True)
class TransactionLogKey:
    transactional_id: str


@dataclass
class TxnPartitions:
    """One entry of TransactionPartitions (Kafka's PartitionsSchema): a topic and its partitions,
    kept in the order they were read so that re-encoding reproduces the bytes."""

    topic: str
    partition_ids: list[int]


@dataclass
class TransactionLogValue:
    """A transactional id's metadata as stored. ``partitions`` is empty for an Empty transaction,
    which the encoder writes as Kafka does (null); the tagged fields only exist from version 1."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    partitions: list[TxnPartitions] = field(default_factory=list)
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    client_transaction_version: int = 0


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The __transaction_state partition owning a transactional id: TransactionStateManager.partitionFor
    is Utils.abs(transactionalId.hashCode()) % partitions, the group coordinator's rule too."""
    return _coordinator_partition_for(transactional_id, num_partitions)


def group_partitions(topic_partitions: Iterable[tuple[str, int]]) -> list[TxnPartitions]:
    """The TransactionPartitions entries for a set of (topic, partition): one entry per topic.
    Kafka's order comes from Java hash sets, so readers must not depend on it; this one is sorted."""
    by_topic: dict[str, set[int]] = {}
    for topic, partition in topic_partitions:
        by_topic.setdefault(topic, set()).add(partition)
    return [TxnPartitions(topic, sorted(ids)) for topic, ids in sorted(by_topic.items())]


def encode_key(transactional_id: str) -> bytes:
    return cr.encode_key(cr.TransactionLogKey(transactional_id=transactional_id))


def decode_key(data: bytes) -> TransactionLogKey | None:
    """None for a record type other than the transaction log's (Kafka skips those)."""
    if cr.record_type(data) != KEY_TYPE:
        return None
    transactional_id = cr.read(cr.TransactionLogKey, data, 0).transactional_id
    if transactional_id is None:
        raise ValueError("__transaction_state key with a null transactional id")
    return TransactionLogKey(transactional_id)


def encode_value(value: TransactionLogValue, version: int = VALUE_VERSION) -> bytes:
    """The record value, as Kafka writes it at ``version`` (version 0 cannot carry the tagged
    fields and drops them, as Kafka does when transaction.version is 0)."""
    if version not in VALUE_VERSIONS:
        raise ValueError(f"cannot write __transaction_state value version {version}")
    if value.state is TxnState.EMPTY and value.partitions:
        raise ValueError(f"an Empty transaction has no partitions, got {value.partitions}")
    partitions = None if value.state is TxnState.EMPTY else [
        cr.TransactionLogValue.PartitionsSchema(topic=p.topic, partition_ids=p.partition_ids) for p in value.partitions]
    return cr.encode_value(cr.TransactionLogValue(
        producer_id=value.producer_id, producer_epoch=value.producer_epoch, transaction_timeout_ms=value.timeout_ms,
        transaction_status=value.state, transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=value.last_update_timestamp_ms,
        transaction_start_timestamp_ms=value.start_timestamp_ms, previous_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id, next_producer_epoch=value.next_producer_epoch,
        client_transaction_version=value.client_transaction_version), version)


def _partitions(stored: list | None) -> list[TxnPartitions]:
    """TransactionPartitions as read; ValueError for the nulls Kafka's schema does not allow."""
    partitions = []
    for entry in stored or []:
        if entry.topic is None:
            raise ValueError("__transaction_state value with a null topic")
        if entry.partition_ids is None:
            raise ValueError(f"__transaction_state value with null partition ids for {entry.topic}")
        partitions.append(TxnPartitions(entry.topic, list(entry.partition_ids)))
    return partitions


def decode_value(data: bytes | None) -> TransactionLogValue | None:
    """None for a tombstone. Raises UnknownValueVersion for versions Kafka 4.3.1 cannot read, and
    ValueError for an unknown state id or truncated data. Partitions stored with an Empty state
    are ignored, as Kafka's loader ignores them; so are tagged fields Kafka 4.3.1 does not know."""
    if data is None:
        return None
    version = cr.record_type(data)
    if version not in VALUE_VERSIONS:
        raise UnknownValueVersion(version)
    v = cr.read(cr.TransactionLogValue, data, version)
    state = TxnState(v.transaction_status)
    partitions = _partitions(v.transaction_partitions)
    return TransactionLogValue(
        v.producer_id, v.producer_epoch, v.transaction_timeout_ms, state,
        last_update_timestamp_ms=v.transaction_last_update_timestamp_ms,
        start_timestamp_ms=v.transaction_start_timestamp_ms,
        partitions=[] if state is TxnState.EMPTY else partitions, previous_producer_id=v.previous_producer_id,
        next_producer_id=v.next_producer_id, next_producer_epoch=v.next_producer_epoch,
        client_transaction_version=v.client_transaction_version)
