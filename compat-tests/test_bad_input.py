"""Hostile and malformed input: each gets Kafka's error code or a closed connection, and the
broker keeps serving other clients and keeps its data intact."""

from __future__ import annotations

import socket
import struct

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from client_support import recv_exact
from testsupport.broker_process import api_versions_ok
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.records import build_batch


def _connect(broker) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    s.settimeout(10)
    return s


def _call(s: socket.socket, request, response_cls, version: int, correlation_id: int = 1):
    request.with_header(correlation_id=correlation_id, client_id="bad-input-test")
    s.sendall(bytes(request.encode(header=True, framed=True)))
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    payload = recv_exact(s, size)
    (cid,) = struct.unpack(">i", payload[:4])
    assert cid == correlation_id
    flexible = response_cls.flexible_version_q(version)
    return response_cls.decode(payload[4 + flexible:], version=version)


def _closed(s: socket.socket) -> bool:
    """True if the broker closed the connection (EOF or reset) rather than answering."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _still_serving(broker) -> None:
    assert api_versions_ok("127.0.0.1", broker.port)
    with _connect(broker) as s:
        md = _call(s, MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False), MetadataResponse, 12)
        assert md.brokers[0].port == broker.port


@pytest.mark.parametrize("prefix", [struct.pack(">i", -1), struct.pack(">i", -2**31),
                                    struct.pack(">i", 2**31 - 1), struct.pack(">i", 104857601)])
def test_bad_frame_sizes_close_the_connection(broker, prefix: bytes) -> None:
    with _connect(broker) as s:
        s.sendall(prefix + b"\x00" * 16)
        assert _closed(s)
    _still_serving(broker)


def test_unknown_api_key_closes_the_connection(broker) -> None:
    with _connect(broker) as s:
        req = struct.pack(">hhih", 9999, 0, 1, 1) + b"x"
        s.sendall(struct.pack(">i", len(req)) + req)
        assert _closed(s)
    _still_serving(broker)


def test_unsupported_version_of_known_api_closes_the_connection(broker) -> None:
    with _connect(broker) as s:
        req = struct.pack(">hhih", 1, 3, 1, 1) + b"x"  # Fetch v3: below Kafka 4's minimum
        s.sendall(struct.pack(">i", len(req)) + req)
        assert _closed(s)
    _still_serving(broker)


def test_garbage_frame_closes_the_connection(broker) -> None:
    with _connect(broker) as s:
        junk = bytes(range(256)) * 4
        s.sendall(struct.pack(">i", len(junk)) + junk)
        assert _closed(s)
    _still_serving(broker)


def test_truncated_body_closes_the_connection(broker) -> None:
    req = MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name="abc")],
                          allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    req.with_header(correlation_id=3, client_id="x")
    frame = bytes(req.encode(header=True))[:-6]
    with _connect(broker) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        assert _closed(s)
    _still_serving(broker)


def test_frame_split_across_many_writes_still_works(broker) -> None:
    req = ApiVersionsRequest(version=3, client_software_name="x", client_software_version="1")
    req.with_header(correlation_id=11, client_id="slow")
    data = bytes(req.encode(header=True, framed=True))
    with _connect(broker) as s:
        for i in range(len(data)):
            s.sendall(data[i:i + 1])
        (size,) = struct.unpack(">i", recv_exact(s, 4))
        assert struct.unpack(">i", recv_exact(s, size)[:4])[0] == 11


def _produce(s, topic: str, partition: int, records: bytes, version: int = 9):
    req = ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])
    resp = _call(s, req, ProduceResponse, version)
    return resp.responses[0].partition_responses[0]


def _create(s, topic: str) -> None:
    from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

    req = CreateTopicsRequest(version=7, topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=5000, validate_only=False)
    resp = _call(s, req, CreateTopicsResponse, 7)
    assert resp.topics[0].error_code == 0


def test_wrong_crc_is_corrupt_message_and_nothing_is_stored(broker, topic_name: str) -> None:
    with _connect(broker) as s:
        _create(s, topic_name)
        good = build_batch([(b"k", b"v", 1000)])
        assert _produce(s, topic_name, 0, good).base_offset == 0
        bad = bytearray(build_batch([(b"k", b"v2", 1000)]))
        bad[-2] ^= 0x55
        part = _produce(s, topic_name, 0, bytes(bad))
        assert part.error_code == ErrorCode.CORRUPT_MESSAGE
        assert _produce(s, topic_name, 0, good).base_offset == 1  # nothing was appended


def test_produce_to_missing_partition(broker, topic_name: str) -> None:
    with _connect(broker) as s:
        _create(s, topic_name)
        batch = build_batch([(b"k", b"v", 1000)])
        assert _produce(s, topic_name, 7, batch).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _produce(s, topic_name + "-nope", 0, batch).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_past_log_end_is_offset_out_of_range(broker, topic_name: str) -> None:
    with _connect(broker) as s:
        _create(s, topic_name)
        _produce(s, topic_name, 0, build_batch([(b"k", b"v", 1000)] * 3))
        req = FetchRequest(version=12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                           isolation_level=0, session_id=0, session_epoch=-1, topics=[
                               FetchRequest.FetchTopic(topic=topic_name, partitions=[
                                   FetchRequest.FetchTopic.FetchPartition(
                                       partition=0, current_leader_epoch=-1, fetch_offset=10,
                                       last_fetched_epoch=-1, log_start_offset=-1,
                                       partition_max_bytes=1 << 20)])],
                           forgotten_topics_data=[], rack_id="")
        resp = _call(s, req, FetchResponse, 12)
        part = resp.responses[0].partitions[0]
        assert part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert part.high_watermark == -1  # Kafka reports no watermarks with a partition error


def test_one_bad_client_does_not_disturb_another(broker, topic_name: str) -> None:
    with _connect(broker) as good, _connect(broker) as bad:
        _create(good, topic_name)
        bad.sendall(struct.pack(">i", -5))
        assert _produce(good, topic_name, 0, build_batch([(b"k", b"v", 1000)])).error_code == 0
        assert _closed(bad)
