"""Records of the internal `__consumer_offsets` topic, in Kafka's group-coordinator schemas, so
that Kafka's own tools can read the topic.

Keys begin with an int16 version: 1 = OffsetCommitKey (group, topic, partition), 2 =
GroupMetadataKey (group). Values begin with an int16 version; wirekafka writes OffsetCommitValue
v3 (offset, leader epoch, metadata, commit timestamp) — or v1 (offset, metadata, commit and
expire timestamps), as Kafka does, for an offset committed with a retention time (OffsetCommit
v2-4) — and GroupMetadataValue v3 (protocol type,
generation, protocol, leader, state timestamp, members with instance id, client id/host,
timeouts, subscription, assignment). A null value (tombstone) deletes the key. Reading accepts
the value versions Kafka 4 writes (0-4; the flexible v4 with its tagged fields)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
EXPIRING_OFFSET_VALUE_VERSION = 1  # the one version with an expire timestamp
GROUP_VALUE_VERSION = 3


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> "_Writer":
        self.parts.append(struct.pack(">h", v))
        return self

    def i32(self, v: int) -> "_Writer":
        self.parts.append(struct.pack(">i", v))
        return self

    def i64(self, v: int) -> "_Writer":
        self.parts.append(struct.pack(">q", v))
        return self

    def string(self, v: str | None) -> "_Writer":
        if v is None:
            return self.i16(-1)
        b = v.encode()
        self.i16(len(b))
        self.parts.append(b)
        return self

    def bytes_(self, v: bytes | None) -> "_Writer":
        if v is None:
            return self.i32(-1)
        self.i32(len(v))
        self.parts.append(bytes(v))
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _unpack(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def i16(self) -> int:
        return self._unpack(">h")

    def i32(self) -> int:
        return self._unpack(">i")

    def i64(self) -> int:
        return self._unpack(">q")

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def string(self, compact: bool = False) -> str | None:
        n = self.uvarint() - 1 if compact else self.i16()
        if n < 0:
            return None
        v = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return v

    def bytes_(self, compact: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if compact else self.i32()
        if n < 0:
            return None
        v = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return v

    def array_len(self, compact: bool) -> int:
        return self.uvarint() - 1 if compact else self.i32()

    def skip_tags(self, compact: bool) -> None:
        if compact:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.pos += self.uvarint()


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
    return _Writer().i16(OFFSET_KEY_VERSION).string(k.group).string(k.topic).i32(k.partition).done()


def encode_group_key(k: GroupKey) -> bytes:
    return _Writer().i16(GROUP_KEY_VERSION).string(k.group).done()


def encode_offset_value(v: OffsetValue) -> bytes:
    if v.expire_timestamp is not None:  # no leader epoch in v1: OffsetCommit v2-4 carry none either
        return (_Writer().i16(EXPIRING_OFFSET_VALUE_VERSION).i64(v.offset).string(v.metadata)
                .i64(v.commit_timestamp).i64(v.expire_timestamp).done())
    return (_Writer().i16(OFFSET_VALUE_VERSION).i64(v.offset).i32(v.leader_epoch).string(v.metadata)
            .i64(v.commit_timestamp).done())


def encode_group_value(v: GroupValue) -> bytes:
    w = (_Writer().i16(GROUP_VALUE_VERSION).string(v.protocol_type).i32(v.generation).string(v.protocol)
         .string(v.leader).i64(v.state_timestamp).i32(len(v.members)))
    for m in v.members:
        (w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
         .i32(m.rebalance_timeout).i32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment))
    return w.done()


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """None for key versions this broker does not own (e.g. share or streams records)."""
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.string() or "", r.string() or "", r.i32())
    if version == 2:
        return GroupKey(r.string() or "")
    return None


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.i16()
    compact = version >= 4
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string(compact) or ""
    commit_ts = r.i64()
    expire_ts = r.i64() if version == EXPIRING_OFFSET_VALUE_VERSION else None
    return OffsetValue(offset, leader_epoch, metadata, commit_ts, expire_ts)


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(data)
    version = r.i16()
    compact = version >= 4
    protocol_type = r.string(compact) or ""
    generation = r.i32()
    protocol = r.string(compact)
    leader = r.string(compact)
    state_ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.array_len(compact)):
        member_id = r.string(compact) or ""
        instance = r.string(compact) if version >= 3 else None
        client_id = r.string(compact) or ""
        client_host = r.string(compact) or ""
        rebalance = r.i32() if version >= 1 else -1
        session = r.i32()
        subscription = r.bytes_(compact) or b""
        assignment = r.bytes_(compact) or b""
        r.skip_tags(compact)
        members.append(MemberValue(member_id, instance, client_id, client_host, rebalance, session,
                                   subscription, assignment))
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, members)
