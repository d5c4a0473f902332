"""A tiny synchronous Kafka protocol client over a raw socket, built on kafka-python's schema
classes: the conformance scenarios speak the protocol directly, with nothing in between."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from typing import Any

from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from conformance import transcript
from wirekafka.protocol import api_versions


class Connection:
    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.settimeout(timeout)
        self._cid = 0
        self._pending: dict[int, Any] = {}

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, request: Any, version: int, expect_response: bool = True) -> int:
        """Send without reading a response; returns the correlation id. The exchange is recorded
        in the transcript when its response is received (at once if none is expected)."""
        self._cid += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._cid, client_id="conformance")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        if expect_response:
            self._pending[self._cid] = request
        else:
            transcript.record(type(request).API_KEY, version, request, None)
        return self._cid

    def receive(self, api_key: int, version: int, correlation_id: int) -> Any:
        """The response to `correlation_id`. If the broker closes the connection instead, the
        request is recorded with no response (it was still exercised) and ConnectionError raised."""
        try:
            (size,) = struct.unpack(">i", self._exact(4))
            payload = self._exact(size)
        except ConnectionError:
            request = self._pending.pop(correlation_id, None)
            if request is not None:
                transcript.record(api_key, request.API_VERSION, request, None)
            raise
        (cid,) = struct.unpack(">i", payload[:4])
        assert cid == correlation_id, f"correlation id {cid} != {correlation_id}"
        cls = api_versions.response_class(api_key)
        flexible = api_key != 18 and cls.flexible_version_q(version)
        body = payload[4 + flexible:]
        if api_key == 18:
            (err,) = struct.unpack(">h", body[:2])
            if err:
                version = 0  # KIP-511: an error answer is a v0 body
        response = cls.decode(body, version=version)
        request = self._pending.pop(correlation_id, None)
        if request is not None:
            transcript.record(api_key, request.API_VERSION, request, response)
        return response

    def call(self, request: Any, version: int) -> Any:
        cid = self.send(request, version)
        return self.receive(type(request).API_KEY, version, cid)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            buf += chunk
        return buf


def unique(prefix: str = "conf") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def metadata(conn: Connection, topics: list[str] | None, version: int = 12, auto_create: bool = False) -> Any:
    req = MetadataRequest(topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                          allow_auto_topic_creation=auto_create, include_topic_authorized_operations=False)
    return conn.call(req, version)


def create_topic(conn: Connection, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                 timeout: float = 30.0) -> Any:
    """Create a topic and wait until every partition has a leader (real Kafka needs a moment)."""
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name=k, value=v)
                 for k, v in (configs or {}).items()])], timeout_ms=30000, validate_only=False)
    resp: CreateTopicsResponse = conn.call(req, 7)
    assert resp.topics[0].error_code == 0, resp
    return wait_for_topic(conn, name, partitions, timeout)


def wait_for_topic(conn: Connection, name: str, partitions: int, timeout: float = 30.0) -> Any:
    """Wait until every partition has a leader that serves it (real Kafka answers
    NOT_LEADER_OR_FOLLOWER for a moment after creation; wirekafka is ready at once)."""
    from kafka.protocol.consumer.offsets import ListOffsetsRequest

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = metadata(conn, [name]).topics[0]
        if t.error_code == 0 and len(t.partitions) == partitions and all(p.leader_id >= 0 for p in t.partitions):
            req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=name, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=p, current_leader_epoch=-1, timestamp=-1) for p in range(partitions)])],
                timeout_ms=10000)
            if all(p.error_code == 0 for p in conn.call(req, 8).topics[0].partitions):
                return t
        time.sleep(0.1)
    raise AssertionError(f"topic {name} is not served after {timeout}s")


TRANSIENT = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def retry_transient(call: Any, code_of: Any, timeout: float = 30.0) -> Any:
    """Repeat a coordinator request while the broker says its coordinator is not ready yet —
    real Kafka creates and loads __consumer_offsets / __transaction_state on first use."""
    deadline = time.monotonic() + timeout
    while True:
        result = call()
        if code_of(result) not in TRANSIENT or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def ensure_group_coordinator(conn: Connection, group: str) -> None:
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    resp = retry_transient(lambda: conn.call(FindCoordinatorRequest(key=group, key_type=0), 3),
                           lambda r: r.error_code)
    assert resp.error_code == 0, resp
