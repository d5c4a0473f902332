"""A fast encoder for the common ProduceResponse, the hottest answer the broker writes.

The schema codec builds a container object per topic and partition and walks the schema to
encode them: about a third of a small produce request's broker-side cost (cProfile; figures in
docs/perf/BENCHMARKS.md). This module writes the same bytes directly for the shape of every answer
wirekafka gives today — per-record errors (v8+, the records Kafka's log validator rejected) but no
current-leader hint and no node endpoints — at every version it serves (Produce v3-13, Kafka's
ProduceResponse.json), and `tests/test_produce_response.py` checks it byte for byte against the
schema codec. An answer that needs the tagged fields (leader hints once replication exists) must be
built with the codec's ProduceResponse instead.

The object quacks like a kafka-python ApiMessage (encode, flexible_version_q), so the connection
frames it like any response."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from wirekafka.protocol.varint import encode_uvarint

FLEXIBLE_FROM = 9  # compact strings/arrays and tagged fields
TOPIC_ID_FROM = 13  # topics by id instead of name
ERRORS_FROM = 8  # record_errors and error_message

# Partition fields by version: index, error_code, base_offset, log_append_time_ms;
# log_start_offset (v5+). Every served version (v3+) has throttle_time_ms.
_PART_V3 = (struct.Struct(">ihqq"), 4)
_PART_V5 = (struct.Struct(">ihqqq"), 5)
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
# by flexible: an empty record_errors array, a null string
_NO_RECORD_ERRORS = (_I32.pack(0), b"\x01")
_NULL_STRING = (b"\xff\xff", b"\x00")


@dataclass(slots=True)
class PartitionAnswer:
    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    error_message: str | None = None
    # (batch index, message): the records of the batch Kafka's log validator rejected (v8+)
    record_errors: tuple[tuple[int, str | None], ...] = ()


@dataclass(slots=True)
class TopicAnswer:
    name: str | None
    topic_id: uuid.UUID | None
    partitions: list[PartitionAnswer]


def _string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return b"\x00" if flexible else b"\xff\xff"
    data = s.encode()
    return (encode_uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def _count(n: int, flexible: bool) -> bytes:
    return encode_uvarint(n + 1) if flexible else _I32.pack(n)


def _record_errors(errors: tuple[tuple[int, str | None], ...], flexible: bool) -> bytes:
    """record_errors (v8+): each record's batch index and message (and, flexible, no tags)."""
    out = [_count(len(errors), flexible)]
    for batch_index, message in errors:
        out.append(_I32.pack(batch_index))
        out.append(_string(message, flexible))
        if flexible:
            out.append(b"\x00")
    return b"".join(out)


class FastProduceResponse:
    """ProduceResponse body for answers without leader hints or node endpoints."""

    __slots__ = ("topics", "throttle_time_ms")

    def __init__(self, topics: list[TopicAnswer], throttle_time_ms: int = 0) -> None:
        self.topics = topics
        self.throttle_time_ms = throttle_time_ms

    @staticmethod
    def flexible_version_q(version: int) -> bool:
        return version >= FLEXIBLE_FROM

    def encode(self, version: int) -> bytes:
        flexible = version >= FLEXIBLE_FROM
        part, nfields = _PART_V5 if version >= 5 else _PART_V3
        no_errors, null = _NO_RECORD_ERRORS[flexible], _NULL_STRING[flexible]
        out = [_count(len(self.topics), flexible)]
        for t in self.topics:
            if version >= TOPIC_ID_FROM:
                out.append((t.topic_id or uuid.UUID(int=0)).bytes)
            else:
                out.append(_string(t.name, flexible))
            out.append(_count(len(t.partitions), flexible))
            for p in t.partitions:
                fields = (p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset)
                out.append(part.pack(*fields[:nfields]))
                if version >= ERRORS_FROM:
                    out.append(_record_errors(p.record_errors, flexible) if p.record_errors else no_errors)
                    out.append(null if p.error_message is None else _string(p.error_message, flexible))
                if flexible:
                    out.append(b"\x00")  # partition tagged fields
            if flexible:
                out.append(b"\x00")  # topic tagged fields
        out.append(_I32.pack(self.throttle_time_ms))
        if flexible:
            out.append(b"\x00")  # top-level tagged fields (no node endpoints)
        return b"".join(out)
