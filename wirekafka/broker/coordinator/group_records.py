"""Records of the internal `__consumer_offsets` topic, in Kafka's group-coordinator schemas
(`wirekafka.protocol.coordinator_records`), so that Kafka's own tools can read the topic.

Keys begin with an int16 record type: 1 = OffsetCommitKey (group, topic, partition; 0, the legacy
type, reads the same), 2 = GroupMetadataKey (group). Values begin with an int16 version;
wirekafka writes OffsetCommitValue v3 (offset, leader epoch, metadata, commit timestamp) — or v1
(offset, metadata, commit and expire timestamps), as Kafka does, for an offset committed with a
retention time (OffsetCommit v2-4) — and GroupMetadataValue v3 (protocol type, generation,
protocol, leader, state timestamp, members with instance id, client id/host, timeouts,
subscription, assignment). A null value (tombstone) deletes the key. Reading accepts the value
versions Kafka 4 writes (0-4; the flexible v4 with its tagged fields). This module keeps the
broker's own types for these records; the schemas give the bytes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wirekafka.protocol import coordinator_records as cr

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
EXPIRING_OFFSET_VALUE_VERSION = 1  # the one version with an expire timestamp
GROUP_VALUE_VERSION = 3
#: Record type 0 is Kafka's LegacyOffsetCommitKey, the same fields as OffsetCommitKey.
_OFFSET_KEY_TYPES = (0, OFFSET_KEY_VERSION)


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None  # from OffsetCommit v2-4's retention_time_ms
    # Where the record is in __consumer_offsets (-1 until written): not part of the value, but
    # what decides between a transactional and a plain commit of one partition (newer_than).
    record_offset: int = field(default=-1, compare=False)

    def newer_than(self, other: "OffsetValue | None") -> bool:
        """Kafka's rule (OffsetMetadataManager.replayEndTransactionMarker; olderThan in the old
        GroupMetadata) for an offset about to take effect: the record later in the log wins, not
        the one that took effect last. A plain commit written between a transaction's offset
        record and its COMMIT marker stays; the cleaner keeps the later record, so replay after
        cleaning answers as before."""
        return other is None or other.record_offset < self.record_offset


@dataclass
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: list[MemberValue]


def encode_offset_key(k: OffsetKey) -> bytes:
    return cr.encode_key(cr.OffsetCommitKey(group=k.group, topic=k.topic, partition=k.partition))


def encode_group_key(k: GroupKey) -> bytes:
    return cr.encode_key(cr.GroupMetadataKey(group=k.group))


def encode_offset_value(v: OffsetValue) -> bytes:
    if v.expire_timestamp is not None:  # no leader epoch in v1: OffsetCommit v2-4 carry none either
        return cr.encode_value(cr.OffsetCommitValue(
            offset=v.offset, metadata=v.metadata, commit_timestamp=v.commit_timestamp,
            expire_timestamp=v.expire_timestamp), EXPIRING_OFFSET_VALUE_VERSION)
    return cr.encode_value(cr.OffsetCommitValue(
        offset=v.offset, leader_epoch=v.leader_epoch, metadata=v.metadata,
        commit_timestamp=v.commit_timestamp), OFFSET_VALUE_VERSION)


def encode_group_value(v: GroupValue) -> bytes:
    members = [cr.GroupMetadataValue.MemberMetadata(
        member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout=m.rebalance_timeout, session_timeout=m.session_timeout,
        subscription=m.subscription, assignment=m.assignment) for m in v.members]
    return cr.encode_value(cr.GroupMetadataValue(
        protocol_type=v.protocol_type, generation=v.generation, protocol=v.protocol, leader=v.leader,
        current_state_timestamp=v.state_timestamp, members=members), GROUP_VALUE_VERSION)


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """None for key versions this broker does not own (e.g. share or streams records)."""
    record_type = cr.record_type(data)
    if record_type in _OFFSET_KEY_TYPES:
        k = cr.read(cr.OffsetCommitKey, data, 0)
        return OffsetKey(k.group or "", k.topic or "", k.partition)
    if record_type == GROUP_KEY_VERSION:
        return GroupKey(cr.read(cr.GroupMetadataKey, data, 0).group or "")
    return None


def _readable(schema: Any, data: bytes) -> Any:
    """A value read at its own version, or at the newest this codec knows for a later one
    (Kafka only adds tagged fields from there)."""
    return cr.read(schema, data, min(cr.record_type(data), schema.max_version))


def decode_offset_value(data: bytes) -> OffsetValue:
    v = _readable(cr.OffsetCommitValue, data)
    expire_ts = v.expire_timestamp if v.version == EXPIRING_OFFSET_VALUE_VERSION else None
    return OffsetValue(v.offset, v.leader_epoch, v.metadata or "", v.commit_timestamp, expire_ts)


def decode_group_value(data: bytes) -> GroupValue:
    v = _readable(cr.GroupMetadataValue, data)
    members = [MemberValue(m.member_id or "", m.group_instance_id, m.client_id or "", m.client_host or "",
                           m.rebalance_timeout, m.session_timeout, m.subscription or b"", m.assignment or b"")
               for m in v.members or []]
    return GroupValue(v.protocol_type or "", v.generation, v.protocol, v.leader, v.current_state_timestamp, members)
