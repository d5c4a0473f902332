"""A tiny synchronous Kafka protocol client over a raw socket, built on kafka-python's schema
classes: the conformance scenarios speak the protocol directly, with nothing in between."""

from __future__ import annotations

import hashlib
import re
import socket
import ssl
import struct
import time
from typing import Any, Callable, TypeVar

from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.metadata.metadata import MetadataRequest

from conformance.harness import transcript
from wirekafka.protocol import served_versions as api_versions

T = TypeVar("T")


class Connection:
    def __init__(self, bootstrap: str, timeout: float = 30.0, tls: ssl.SSLContext | None = None,
                 client_id: str = "conformance") -> None:
        """A connection to bootstrap; over TLS (an SSL listener) when tls is given. Its requests
        carry client_id (client quotas are looked up by it)."""
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        self.sock.settimeout(timeout)
        self._cid = 0
        self.client_id = client_id
        self._pending: dict[int, transcript.Exchange] = {}

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, request: Any, version: int, expect_response: bool = True) -> int:
        """Send without reading a response; returns the correlation id. The exchange takes its
        place in the transcript now, in send order; its response is filled in by receive()."""
        self._cid += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._cid, client_id=self.client_id)
        exchange = transcript.sent(type(request).API_KEY, version, request)
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        if expect_response:
            self._pending[self._cid] = exchange
        return self._cid

    def call_claiming(self, request: Any, body_version: int, claimed_version: int) -> Any:
        """Send `request` encoded at `body_version` under a header (v2, flexible) that claims
        `claimed_version`, as a client newer than the broker would, and return the answer."""
        self._cid += 1
        api_key = type(request).API_KEY
        exchange = transcript.sent(api_key, claimed_version, request)
        client = b"conformance"
        header = struct.pack(">hhih", api_key, claimed_version, self._cid, len(client)) + client + b"\x00"
        frame = header + bytes(request.encode(version=body_version))
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        self._pending[self._cid] = exchange
        return self.receive(api_key, claimed_version, self._cid)

    def receive(self, api_key: int, version: int, correlation_id: int) -> Any:
        """The response to `correlation_id`. If the broker closes the connection instead, the
        request stays in the transcript with no response and ConnectionError is raised."""
        try:
            (size,) = struct.unpack(">i", self._exact(4))
            payload = self._exact(size)
        except ConnectionError:
            self._pending.pop(correlation_id, None)  # recorded at send, left without an answer
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
        exchange = self._pending.pop(correlation_id, None)
        if exchange is not None:
            exchange.response = response
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


_scenario: str | None = None
_counter = 0
_slugs: dict[str, str] = {}  # slug -> the scenario it was made from, to catch two that collide
MAX_NAME = 249  # Kafka's longest legal topic name


def begin_scenario(scenario: str) -> None:
    """Names from unique() derive from `scenario` (a test id without its target) from now on,
    so that real Kafka and wirekafka see the same topic and group names in the same order."""
    global _scenario, _counter
    path, _, test = scenario.partition("::")
    module = path.rpartition("/")[2].removesuffix(".py")
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{module}-{test}").strip("-")
    if len(slug) > MAX_NAME - 20:
        slug = f"{slug[:MAX_NAME - 40]}-{hashlib.sha1(slug.encode()).hexdigest()[:10]}"
    owner = _slugs.setdefault(slug, scenario)
    if owner != scenario:
        raise ValueError(f"scenarios {owner!r} and {scenario!r} would share topic names ({slug})")
    _scenario, _counter = slug, 0


def owned(name: str) -> bool:
    """Whether unique() made `name` for the current scenario."""
    return _scenario is not None and re.fullmatch(rf"[^-]+-{re.escape(_scenario)}-\d+", name) is not None


def unique(prefix: str = "conf") -> str:
    """A topic or group name of its own for this scenario: the same on every broker, never reused
    by another scenario in the session (each scenario runs once per broker). `prefix` has no "-"."""
    global _counter
    if _scenario is None:
        raise RuntimeError("unique() needs a scenario; conformance/conftest.py begins one per test")
    _counter += 1
    return f"{prefix}-{_scenario}-{_counter}"


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


def poll(attempt: Callable[[], T], done: Callable[[T], bool], timeout: float = 30.0,
         interval: float = 0.1) -> T:
    """Repeat `attempt` until `done` accepts its result or `timeout` seconds pass, and return the
    last result. Only the last round's exchanges are recorded: how many rounds a broker needs
    before it is ready is timing, the answer it settles on is behaviour."""
    deadline = time.monotonic() + timeout
    with transcript.settle() as rounds:
        while True:
            rounds.attempt()
            result = attempt()
            if done(result) or time.monotonic() > deadline:
                return result
            time.sleep(interval)


def settled(attempt: Callable[[], T], expected: T, timeout: float = 10.0) -> T:
    """attempt() once it returns `expected`, or its last answer after `timeout` seconds. Real
    Kafka applies an accepted change (a config, an ACL) through its metadata log a moment after
    answering the request, so a read sent at once may still show the state before it."""
    return poll(attempt, lambda got: got == expected, timeout)


def wait_for_topic(conn: Connection, name: str, partitions: int, timeout: float = 30.0) -> Any:
    """Wait until every partition has a leader that serves it (real Kafka answers
    NOT_LEADER_OR_FOLLOWER for a moment after creation; wirekafka is ready at once)."""
    from kafka.protocol.consumer.offsets import ListOffsetsRequest

    def attempt() -> tuple[Any, bool]:
        t = metadata(conn, [name]).topics[0]
        if t.error_code or len(t.partitions) != partitions or any(p.leader_id < 0 for p in t.partitions):
            return t, False
        req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name=name, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=p, current_leader_epoch=-1, timestamp=-1) for p in range(partitions)])],
            timeout_ms=10000)
        return t, all(p.error_code == 0 for p in conn.call(req, 8).topics[0].partitions)

    topic, ready = poll(attempt, lambda result: result[1], timeout)
    if not ready:
        raise AssertionError(f"topic {name} is not served after {timeout}s")
    return topic


TRANSIENT = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def retry_transient(call: Callable[[], T], code_of: Callable[[T], int], timeout: float = 30.0) -> T:
    """Repeat a coordinator request while the broker says its coordinator is not ready yet —
    real Kafka creates and loads __consumer_offsets / __transaction_state on first use."""
    return poll(call, lambda result: code_of(result) not in TRANSIENT, timeout, interval=0.2)


def ensure_group_coordinator(conn: Connection, group: str) -> None:
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    resp = retry_transient(lambda: conn.call(FindCoordinatorRequest(key=group, key_type=0), 3),
                           lambda r: r.error_code)
    assert resp.error_code == 0, resp
    # real Kafka names the coordinator before it has loaded its __consumer_offsets partition and
    # answers group requests NOT_COORDINATOR meanwhile: a scenario that runs first on a fresh
    # broker would see that. Wait for an answer, off the compared record.
    from kafka.protocol.consumer.group import OffsetFetchRequest

    with transcript.unrecorded():
        loaded = retry_transient(lambda: conn.call(OffsetFetchRequest(group_id=group, topics=None), 3),
                                 lambda r: r.error_code)
    assert loaded.error_code == 0, loaded
