"""Produce requests (v3-13) decoded with their records left in the frame.

kafka-python's schema decoder copies each partition's records out of the frame into new bytes:
a 100 MB request costs another 100 MB and ~0.3 s of copying with the GIL held, which no worker
thread can hide from the event loop. This decoder builds the same objects (the schema classes,
attribute for attribute, as the generated decoder sets them) but each partition's records are a
memoryview slice of the frame: no byte of a record is copied (but for SMALL_RECORDS) or looked
at here. What remains is an object per topic and partition, as in Kafka.

Every count and length is checked against the bytes left before it is used, so a frame claiming
2^31 topics or partitions is refused at once; each topic or partition takes at least MIN_TOPIC /
MIN_PARTITION bytes, so the objects built are bounded by the frame's size. Tagged fields (Produce
defines none) are kept as the schema decoder keeps unknown ones, in `unknown_tags` by "_<tag>",
but read in place: the schema decoder copies the rest of the frame for every section that has
one, quadratic in a hostile frame. A null topic name goes to the schema decoder, which keeps it
as it is. Bytes after the request are ignored, as the schema decoder ignores them.
tests/test_codec_counts.py checks this decoder against the schema codec."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafka.protocol.producer.produce import ProduceRequest

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_ZERO_UUID = uuid.UUID(int=0)
_Topic: Any = ProduceRequest.TopicProduceData
_Partition: Any = _Topic.PartitionProduceData
FLEXIBLE_FROM = 9
TOPIC_ID_FROM = 13
MIN_TOPIC = 3  # at the least (flexible): an empty name, an empty partition array, no tags
MIN_PARTITION = 6  # at the least (flexible): index, null records, no tags
# Records shorter than this are copied: a memoryview object (~184 bytes) would outweigh them, and
# a frame of many tiny partitions would decode to ~44x its size instead of ~13x (measured).
SMALL_RECORDS = 128


class Malformed(Exception):
    """The frame is not a produce request of its version: the connection is closed."""


class Unusual(Exception):
    """A null topic name: the schema decoder, which keeps it, reads the frame."""


class OverBudget(Exception):
    """The request has more topics and partitions than the caller allowed (see decode)."""


class _Cursor:
    """A position in the body; every read checks the bytes left."""

    __slots__ = ("data", "pos", "end", "flexible")

    def __init__(self, data: memoryview, flexible: bool) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.flexible = flexible

    def take(self, n: int) -> int:
        """Advance by n bytes; the position before."""
        start = self.pos
        if n < 0 or start + n > self.end:
            raise Malformed(f"a field of {n} bytes runs past the end of the request at {start}")
        self.pos = start + n
        return start

    def uvarint(self) -> int:
        pos = self.pos
        if pos < self.end and self.data[pos] < 0x80:  # one byte: nearly every length and count
            self.pos = pos + 1
            return self.data[pos]
        value = shift = 0
        while True:
            if shift > 28:
                raise Malformed("unsigned varint longer than 5 bytes")
            b = self.data[self.take(1)]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def length(self, nullable_at: int = -1) -> int:
        """A string/bytes length or an array count: -1 for null."""
        if self.flexible:
            return self.uvarint() - 1
        if nullable_at == 2:
            return int(_I16.unpack_from(self.data, self.take(2))[0])
        return int(_I32.unpack_from(self.data, self.take(4))[0])

    def count(self, min_size: int) -> int:
        """An array's element count, refused when the bytes left cannot hold that many."""
        n = self.length()
        if n < 0:
            raise Malformed("null array in a produce request")
        if n * min_size > self.end - self.pos:
            raise Malformed(f"array of {n} elements cannot fit in the {self.end - self.pos} bytes left")
        return n

    def string(self) -> str | None:
        n = self.length(nullable_at=2)
        if n < 0:
            return None
        start = self.take(n)
        return str(self.data[start:start + n], "utf-8")

    def tags(self, owner: Any) -> None:
        """A flexible version's tagged fields, into owner.unknown_tags."""
        if not self.flexible:
            return
        if self.data[self.pos] == 0:
            self.pos += 1
            return
        n = self.uvarint()
        if n * 2 > self.end - self.pos:  # a tag and a size at the least
            raise Malformed(f"{n} tagged fields cannot fit in the {self.end - self.pos} bytes left")
        tags = owner.unknown_tags = {}
        for _ in range(n):
            tag = self.uvarint()
            size = self.uvarint()
            start = self.take(size)
            tags[f"_{tag}"] = bytes(self.data[start:start + size])


def decode(body: memoryview, version: int, budget: int | None = None) -> ProduceRequest:
    """The request in body (after the request header) at version; records are slices of body.
    Raises Malformed, Unusual for a frame the schema decoder must read, or OverBudget once
    more than budget topics and partitions are met (the caller decodes it again elsewhere: the
    objects cost ~2.5 us each, a frame of tiny partitions ~0.4 s per MB)."""
    try:
        return _decode(_Cursor(body, version >= FLEXIBLE_FROM), version, budget)
    except (UnicodeDecodeError, struct.error, IndexError) as exc:
        raise Malformed(repr(exc)) from exc


def _new(cls: Any, version: int) -> Any:
    obj = object.__new__(cls)
    obj._version = version
    obj.tags = None
    obj.unknown_tags = None
    return obj


def _decode(c: _Cursor, version: int, budget: int | None) -> ProduceRequest:
    request = _new(ProduceRequest, version)
    request.transactional_id = c.string()
    request.acks, request.timeout_ms = _ACKS_TIMEOUT.unpack_from(c.data, c.take(6))
    topics = []
    elements = c.count(MIN_TOPIC)
    for _ in range(elements):
        topic = _new(_Topic, version)
        if version >= TOPIC_ID_FROM:
            topic_id = uuid.UUID(bytes=bytes(c.data[c.take(16):c.pos]))
            topic.topic_id = None if topic_id == _ZERO_UUID else topic_id
        else:
            name = c.string()
            if name is None:
                raise Unusual()
            topic.name = name
        partitions = []
        n = c.count(MIN_PARTITION)
        elements += n
        if budget is not None and elements > budget:
            raise OverBudget()
        for _ in range(n):
            partition = _new(_Partition, version)
            partition.index = _I32.unpack_from(c.data, c.take(4))[0]
            size = c.length()
            if size < 0:
                partition.records = None
            else:
                start = c.take(size)
                records = c.data[start:start + size]
                partition.records = records if size >= SMALL_RECORDS else bytes(records)
            c.tags(partition)
            partitions.append(partition)
        topic.partition_data = partitions
        c.tags(topic)
        topics.append(topic)
    request.topic_data = topics
    c.tags(request)
    return request
