"""Counts read from a frame never make the broker allocate more than the frame can hold, and the
produce decoder (records left in the frame) gives what the schema codec gives, byte for byte."""

from __future__ import annotations

import struct
import time
import tracemalloc
import uuid
from typing import Any, Callable

import pytest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from wirekafka.protocol import codec, produce_request
from wirekafka.protocol.served_versions import request_class

T = ProduceRequest.TopicProduceData
P = T.PartitionProduceData
CLAIM = 2**31 - 1  # a count near the largest an int32 holds


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    flexible = request_class(api_key).flexible_version_q(version)
    return struct.pack(">hhih", api_key, version, 7, 3) + b"cli" + (b"\x00" if flexible else b"") + body


def _sample(version: int) -> ProduceRequest:
    def topic(name: str, tid: uuid.UUID, parts: list[Any]) -> Any:
        return T(name=name, partition_data=parts) if version < 13 else T(topic_id=tid, partition_data=parts)
    return ProduceRequest(version=version, transactional_id="txn-é", acks=-1, timeout_ms=1500, topic_data=[
        topic("orders", uuid.UUID(int=5), [P(index=0, records=b"\x01" * 700), P(index=3, records=None),
                                           P(index=2, records=b"")]),
        topic("ünïcode", uuid.UUID(int=9), [P(index=1, records=bytes(range(256)) * 9), P(index=4, records=b"tiny")]),
        topic("empty", uuid.UUID(int=11), []),
    ])


def _schema_decode(frame: bytes) -> Any:
    header = codec.parse_header(frame)
    return request_class(header.api_key).decode(memoryview(frame)[header.body_offset:], version=header.api_version)


def _encoded(request: Any) -> bytes:
    """A decoded request encoded again (the body alone, as the schema class encodes it)."""
    flexible = request.flexible_version_q(request.version)
    return bytes(ProduceRequest._struct.encode(request, version=request.version, compact=flexible, tagged=flexible))


def _flat(request: Any) -> list[Any]:
    out: list[Any] = [request.version, request.transactional_id, request.acks, request.timeout_ms,
                      request.unknown_tags]
    for td in request.topic_data:
        out += [td.name if request.version < 13 else td.topic_id, td.unknown_tags]
        for pd in td.partition_data:
            out += [pd.index, None if pd.records is None else bytes(pd.records), pd.unknown_tags]
    return out


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_decoder_matches_the_schema_codec(version: int) -> None:
    frame = _frame(0, version, _sample(version).encode(version=version))
    header = codec.parse_header(frame)
    fast = codec.decode_body(header, frame)
    schema = _schema_decode(frame)
    assert type(fast) is type(schema)
    assert _flat(fast) == _flat(schema)
    assert _encoded(fast) == _encoded(schema) == frame[header.body_offset:]  # re-encoded byte for byte
    records = fast.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is frame  # a slice of the frame, not a copy
    assert fast.topic_data[1].partition_data[1].records == b"tiny"  # small records are copied: cheaper


@pytest.mark.parametrize("version", [9, 13])
def test_unknown_tagged_fields_are_kept_as_the_schema_codec_keeps_them(version: int) -> None:
    body = bytearray(_sample(version).encode(version=version))
    # the request's own tagged fields (its last byte): two unknown tags
    body[-1:] = _uvarint(2) + _uvarint(4) + _uvarint(3) + b"abc" + _uvarint(40) + _uvarint(0)
    frame = _frame(0, version, bytes(body))
    fast = codec.decode_body(codec.parse_header(frame), frame)
    assert fast.unknown_tags == {"_4": b"abc", "_40": b""}
    assert _flat(fast) == _flat(_schema_decode(frame))


def _produce_prefix(version: int) -> bytes:
    """A produce body up to its topic count: no transactional id, acks=1, 1 s timeout."""
    if version >= 9:
        return _uvarint(0) + struct.pack(">hi", 1, 1000)
    return struct.pack(">hhi", -1, 1, 1000)


def _count(version: int, n: int) -> bytes:
    return _uvarint(n + 1) if version >= 9 else struct.pack(">i", n)


def _refused_cheaply(decode: Callable[[], Any]) -> None:
    """Refused with little memory and CPU: a decode sized by the claimed count would take minutes
    of CPU. CPU time, not wall time, so that other processes on a loaded machine do not count."""
    tracemalloc.start()
    started = time.process_time()
    try:
        with pytest.raises(codec.ProtocolError):
            decode()
        elapsed = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 64 * 1024


@pytest.mark.parametrize("version", [3, 8, 9, 12, 13])
def test_a_claimed_topic_count_beyond_the_frame_is_refused_before_decoding(version: int) -> None:
    frame = _frame(0, version, _produce_prefix(version) + _count(version, CLAIM) + b"\x00" * 64)
    _refused_cheaply(lambda: codec.decode_body(codec.parse_header(frame), frame))


@pytest.mark.parametrize("version", [3, 9, 13])
def test_a_claimed_partition_count_beyond_the_frame_is_refused_before_decoding(version: int) -> None:
    topic = uuid.UUID(int=1).bytes if version >= 13 else (_uvarint(2) + b"t" if version >= 9 else b"\x00\x01t")
    frame = _frame(0, version, _produce_prefix(version) + _count(version, 1) + topic + _count(version, CLAIM)
                   + b"\x00" * 64)
    _refused_cheaply(lambda: codec.decode_body(codec.parse_header(frame), frame))


def test_a_claimed_tagged_field_count_beyond_the_frame_is_refused() -> None:
    frame = _frame(0, 9, _produce_prefix(9) + _count(9, 0) + _uvarint(CLAIM) + b"\x00" * 16)
    _refused_cheaply(lambda: codec.decode_body(codec.parse_header(frame), frame))


@pytest.mark.parametrize("size", [CLAIM, 65])
def test_records_longer_than_the_frame_are_refused(size: int) -> None:
    body = (_produce_prefix(9) + _count(9, 1) + _uvarint(2) + b"t" + _count(9, 1) + struct.pack(">i", 0)
            + _uvarint(size + 1) + b"\x00" * 64)
    frame = _frame(0, 9, body)
    _refused_cheaply(lambda: codec.decode_body(codec.parse_header(frame), frame))


@pytest.mark.parametrize("version", [1, 9, 12])
def test_schema_decoded_requests_refuse_a_huge_count_without_allocating_for_it(version: int) -> None:
    """kafka-python's generated decoders append element by element (nothing is sized by the count
    up front), so a claimed count costs at most what the frame's bytes decode to."""
    valid = _frame(MetadataRequest.API_KEY, version, MetadataRequest(version=version, topics=[]).encode(version=version))
    codec.decode_body(codec.parse_header(valid), valid)  # the decoder is generated at its first use
    frame = _frame(MetadataRequest.API_KEY, version, _count(version, CLAIM) + b"\x00" * 32)
    _refused_cheaply(lambda: codec.decode_body(codec.parse_header(frame), frame))


def test_quick_decoding_declines_many_partitions_and_big_other_requests() -> None:
    many = _sample(9)
    many.topic_data[0].partition_data = [P(index=i, records=None) for i in range(codec.QUICK_ELEMENTS + 1)]
    frame = _frame(0, 9, many.encode(version=9))
    header = codec.parse_header(frame)
    with pytest.raises(codec.SlowDecode):
        codec.decode_body(header, frame, quick=True)
    assert len(codec.decode_body(header, frame).topic_data[0].partition_data) == codec.QUICK_ELEMENTS + 1
    big = b"\x00" * (100 << 20)  # a 100 MB produce request is decoded at once: nothing is copied
    one = ProduceRequest(version=9, transactional_id=None, acks=1, timeout_ms=1000,
                         topic_data=[T(name="t", partition_data=[P(index=0, records=big)])])
    frame = _frame(0, 9, one.encode(version=9))
    decoded = codec.decode_body(codec.parse_header(frame), frame, quick=True)
    records = decoded.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is frame  # a view of the frame, not a copy
    assert len(records) == len(big)
    topics = MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name=f"topic-{i}")
                                                 for i in range(2000)], allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False)
    frame = _frame(MetadataRequest.API_KEY, 12, topics.encode(version=12))
    with pytest.raises(codec.SlowDecode):
        codec.decode_body(codec.parse_header(frame), frame, quick=True)


def test_a_null_topic_name_is_left_to_the_schema_codec_which_refuses_it() -> None:
    """Kafka's reader refuses a null in the non-nullable topic name (protocol/field_rules.py)."""
    body = _produce_prefix(3) + _count(3, 1) + struct.pack(">h", -1) + _count(3, 0)
    frame = _frame(0, 3, body)
    with pytest.raises(produce_request.Unusual):
        produce_request.decode(memoryview(frame)[codec.parse_header(frame).body_offset:], 3)
    assert _schema_decode(frame).topic_data[0].name is None
    with pytest.raises(codec.ProtocolError, match="non-nullable field Name was serialized as null"):
        codec.decode_body(codec.parse_header(frame), frame)
