"""Records of the internal `__transaction_state` topic, in the formats of Kafka 4.3.1's transaction
coordinator, so that a log written by wirekafka is one Kafka (and its tools) can load, and back.

Key (never flexible): int16 record type 0 (Kafka's CoordinatorRecordType.TRANSACTION_LOG, which is
also the only TransactionLogKey version ever written), then the transactional id as an int16-length
string. Kafka's loader skips keys of any other type with a warning.

Value (TransactionLogValue): int16 version, then
  ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32, TransactionStatus int8
  (TxnState id), TransactionPartitions (nullable array of {Topic string, PartitionIds [int32]}),
  TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64.
Version 0 uses classic encodings (int16 string lengths, int32 array lengths, -1 for null).
Version 1 is flexible: compact strings and arrays (length + 1 as an unsigned varint, 0 for null),
an empty tag section after each partitions entry, and after the fields a tag section holding, in
tag order and only when not at their defaults: 0 PreviousProducerId int64 (-1), 1 NextProducerId
int64 (-1), 2 ClientTransactionVersion int16 (0), 3 NextProducerEpoch int16 (-1).

What Kafka 4.3.1 writes (TransactionLog.valueToBytes, checked against a real broker's segments):
version 1 when the cluster's transaction.version feature is >= 1 (a freshly formatted 4.3.1 cluster
is at 2), else version 0; only version 1 carries the previous and next producer ids; it never sets
NextProducerEpoch; partitions are null exactly when the state is Empty and an empty list once a
transaction completed. A null value is a tombstone (an expired transactional id)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable

from wirekafka.broker.coordinator.group_records import _Reader
from wirekafka.broker.coordinator.groups import partition_for as _coordinator_partition_for
from wirekafka.protocol.records import NO_PRODUCER_ID
from wirekafka.protocol.varint import encode_uvarint

TRANSACTION_STATE_TOPIC = "__transaction_state"

#: The int16 every key starts with: CoordinatorRecordType.TRANSACTION_LOG.
KEY_TYPE = 0
#: The value version Kafka 4.3.1 writes at transaction.version >= 1 (its default for new clusters).
VALUE_VERSION = 1
#: The value versions Kafka 4.3.1 reads; any other is skipped by its loader with a warning.
VALUE_VERSIONS = (0, 1)

NO_PRODUCER_EPOCH = -1

_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2
_TAG_NEXT_PRODUCER_EPOCH = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
#: ProducerId, ProducerEpoch, TransactionTimeoutMs, TransactionStatus: the fixed-size head of a value.
_VALUE_HEAD = struct.Struct(">qhib")


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
    raw = transactional_id.encode()
    return _I16.pack(KEY_TYPE) + _I16.pack(len(raw)) + raw


def decode_key(data: bytes) -> TransactionLogKey | None:
    """None for a record type other than the transaction log's (Kafka skips those)."""
    r = _Reader(data)
    if r.i16() != KEY_TYPE:
        return None
    transactional_id = r.string()
    if transactional_id is None:
        raise ValueError("__transaction_state key with a null transactional id")
    return TransactionLogKey(transactional_id)


def _tag(tag: int, payload: bytes) -> bytes:
    return encode_uvarint(tag) + encode_uvarint(len(payload)) + payload


def encode_value(value: TransactionLogValue, version: int = VALUE_VERSION) -> bytes:
    """The record value, as Kafka writes it at ``version`` (version 0 cannot carry the tagged
    fields and drops them, as Kafka does when transaction.version is 0)."""
    if version not in VALUE_VERSIONS:
        raise ValueError(f"cannot write __transaction_state value version {version}")
    if value.state is TxnState.EMPTY and value.partitions:
        raise ValueError(f"an Empty transaction has no partitions, got {value.partitions}")
    flexible = version >= 1
    out = bytearray(_I16.pack(version))
    out += _VALUE_HEAD.pack(value.producer_id, value.producer_epoch, value.timeout_ms, value.state)
    if value.state is TxnState.EMPTY:
        out += encode_uvarint(0) if flexible else _I32.pack(-1)
    else:
        out += encode_uvarint(len(value.partitions) + 1) if flexible else _I32.pack(len(value.partitions))
        for entry in value.partitions:
            topic = entry.topic.encode()
            out += encode_uvarint(len(topic) + 1) if flexible else _I16.pack(len(topic))
            out += topic
            ids = entry.partition_ids
            out += encode_uvarint(len(ids) + 1) if flexible else _I32.pack(len(ids))
            out += struct.pack(f">{len(ids)}i", *ids)
            if flexible:
                out += encode_uvarint(0)  # the entry's (empty) tag section
    out += _I64.pack(value.last_update_timestamp_ms) + _I64.pack(value.start_timestamp_ms)
    if flexible:
        tags = []
        if value.previous_producer_id != NO_PRODUCER_ID:
            tags.append(_tag(_TAG_PREVIOUS_PRODUCER_ID, _I64.pack(value.previous_producer_id)))
        if value.next_producer_id != NO_PRODUCER_ID:
            tags.append(_tag(_TAG_NEXT_PRODUCER_ID, _I64.pack(value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append(_tag(_TAG_CLIENT_TRANSACTION_VERSION, _I16.pack(value.client_transaction_version)))
        if value.next_producer_epoch != NO_PRODUCER_EPOCH:
            tags.append(_tag(_TAG_NEXT_PRODUCER_EPOCH, _I16.pack(value.next_producer_epoch)))
        out += encode_uvarint(len(tags))
        for tag in tags:
            out += tag
    return bytes(out)


def _read_tags(r: _Reader, value: TransactionLogValue) -> None:
    """Fill the tagged fields; unknown tags are skipped (Kafka's metadata drops them too)."""
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        payload = r.data[r.pos:r.pos + size]
        if len(payload) != size:
            raise ValueError(f"tagged field {tag} runs past the end of the value")
        r.pos += size
        if tag in (_TAG_PREVIOUS_PRODUCER_ID, _TAG_NEXT_PRODUCER_ID):
            if size != _I64.size:
                raise ValueError(f"tagged field {tag} has {size} bytes, not 8")
            if tag == _TAG_PREVIOUS_PRODUCER_ID:
                (value.previous_producer_id,) = _I64.unpack(payload)
            else:
                (value.next_producer_id,) = _I64.unpack(payload)
        elif tag in (_TAG_CLIENT_TRANSACTION_VERSION, _TAG_NEXT_PRODUCER_EPOCH):
            if size != _I16.size:
                raise ValueError(f"tagged field {tag} has {size} bytes, not 2")
            if tag == _TAG_CLIENT_TRANSACTION_VERSION:
                (value.client_transaction_version,) = _I16.unpack(payload)
            else:
                (value.next_producer_epoch,) = _I16.unpack(payload)


def decode_value(data: bytes | None) -> TransactionLogValue | None:
    """None for a tombstone. Raises UnknownValueVersion for versions Kafka 4.3.1 cannot read, and
    ValueError for an unknown state id or truncated data. Partitions stored with an Empty state
    are ignored, as Kafka's loader ignores them."""
    if data is None:
        return None
    r = _Reader(data)
    try:
        version = r.i16()
        if version not in VALUE_VERSIONS:
            raise UnknownValueVersion(version)
        flexible = version >= 1
        producer_id, producer_epoch, timeout_ms, status = _VALUE_HEAD.unpack_from(data, r.pos)
        r.pos += _VALUE_HEAD.size
        state = TxnState(status)
        partitions = []
        for _ in range(max(r.array_len(flexible), 0)):
            topic = r.string(flexible)
            if topic is None:
                raise ValueError("__transaction_state value with a null topic")
            count = r.array_len(flexible)
            if count < 0:
                raise ValueError(f"__transaction_state value with null partition ids for {topic}")
            ids = list(struct.unpack_from(f">{count}i", data, r.pos))
            r.pos += 4 * count
            r.skip_tags(flexible)
            partitions.append(TxnPartitions(topic, ids))
        value = TransactionLogValue(
            producer_id, producer_epoch, timeout_ms, state, last_update_timestamp_ms=r.i64(),
            start_timestamp_ms=r.i64(), partitions=[] if state is TxnState.EMPTY else partitions)
        if flexible:
            _read_tags(r, value)
    except (struct.error, IndexError) as exc:
        raise ValueError(f"truncated __transaction_state value: {exc}") from exc
    return value
