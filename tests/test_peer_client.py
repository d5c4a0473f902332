"""PeerClient against a fake peer in this process: framing, correlation, timeouts, reconnects.

The fake peer decodes requests and encodes responses with the broker's own codec, so what it
sends is what a wirekafka leader sends; each test scripts how it misbehaves. The real broker is
exercised in compat-tests/test_peer_client_real_broker.py."""

from __future__ import annotations

import functools
import os
import random
import struct
from typing import Awaitable, Callable

import pytest
import trio
import trio.testing
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replication import peer_client as peer_client_module
from wirekafka.broker.replication.peer_client import (PeerClient, PeerPool, PeerProtocolError, PeerSasl, PeerSecurity,
                                                      PeerUnavailable, SetupTimeout)
from wirekafka.config.loader import build_config
from wirekafka.protocol import codec

Reply = Callable[[trio.SocketStream, codec.Request, int], Awaitable[None]]


async def _read_frame(stream: trio.SocketStream) -> bytes | None:
    buf = bytearray()
    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        buf += chunk
    return bytes(buf[4:])


class FakePeer:
    """Serves on 127.0.0.1:<ephemeral>; ``reply(stream, request, connection_number)`` answers."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.connections = 0
        self.requests: list[codec.Request] = []
        self.port = 0

    async def _serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        number = self.connections
        async with stream:
            while True:
                try:
                    frame = await _read_frame(stream)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return  # the client dropped the connection (or a reply closed it)
                if frame is None:
                    return
                header = codec.parse_header(frame)
                request = codec.Request(header, codec.decode_body(header, frame))
                self.requests.append(request)
                try:
                    await self.reply(stream, request, number)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

    async def start(self, nursery: trio.Nursery) -> "FakePeer":
        listeners = await nursery.start(functools.partial(trio.serve_tcp, self._serve, 0, host="127.0.0.1"))
        self.port = listeners[0].socket.getsockname()[1]
        return self


def _api_versions_response(request: codec.Request, correlation_id: int | None = None) -> bytes:
    body = ApiVersionsResponse(version=request.api_version, error_code=0, api_keys=[], throttle_time_ms=0)
    cid = request.header.correlation_id if correlation_id is None else correlation_id
    return codec.encode_response(request.api_key, request.api_version, cid, body)


async def answer(stream: trio.SocketStream, request: codec.Request, _number: int) -> None:
    """Answers ApiVersions; anything else goes unanswered."""
    if request.api_key == 18:
        await stream.send_all(_api_versions_response(request))


def run_with_peer(reply: Reply, test: Callable[[FakePeer], Awaitable[None]]) -> FakePeer:
    async def main() -> FakePeer:
        async with trio.open_nursery() as nursery:
            peer = await FakePeer(reply).start(nursery)
            with trio.fail_after(10):
                await test(peer)
            nursery.cancel_scope.cancel()
        return peer

    return trio.run(main)


def client(peer: FakePeer, request_timeout_s: float = 5.0, **kw) -> PeerClient:
    return PeerClient("127.0.0.1", peer.port, "peer-test", 2.0, request_timeout_s, **kw)


def _fetch_request(version: int) -> FetchRequest:
    return FetchRequest(version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 30,
                        isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                        topics=[FetchRequest.FetchTopic(topic="t", partitions=[
                            FetchRequest.FetchTopic.FetchPartition(
                                partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                log_start_offset=-1, partition_max_bytes=1 << 30)])],
                        forgotten_topics_data=[])


def test_round_trip_header_versions_and_client_id() -> None:
    """ApiVersions v0 (header v1) and v3 (request header v2, response header v0 whatever the
    body); Fetch v12 (flexible both ways). The peer sees our client id and rising correlation ids."""
    async def reply(stream, request, _n):
        if request.api_key == 18:
            await stream.send_all(_api_versions_response(request))
        else:
            body = FetchResponse(version=request.api_version, throttle_time_ms=0, error_code=0, session_id=0,
                                 responses=[], node_endpoints=[])
            await stream.send_all(codec.encode_response(1, request.api_version, request.header.correlation_id, body))

    async def test(peer):
        async with client(peer) as c:
            assert not c.connected
            assert (await c.send(ApiVersionsRequest(version=0))).error_code == 0
            assert c.connected
            r = await c.send(ApiVersionsRequest(version=3, client_software_name="wirekafka",
                                                client_software_version="0"))
            assert isinstance(r, ApiVersionsResponse) and r.version == 3
            r = await c.send(_fetch_request(12))
            assert isinstance(r, FetchResponse) and r.version == 12 and r.responses == []

    peer = run_with_peer(reply, test)
    assert peer.connections == 1
    assert [r.header.client_id for r in peer.requests] == ["peer-test"] * 3
    ids = [r.header.correlation_id for r in peer.requests]
    assert ids == sorted(set(ids))
    assert [(r.api_key, r.api_version) for r in peer.requests] == [(18, 0), (18, 3), (1, 12)]


def test_large_fetch_response_in_small_pieces_keeps_raw_records() -> None:
    """An 8 MB records field, sent in uneven pieces, comes back as the same bytes (raw, not
    decoded into messages)."""
    records = os.urandom(8 * 1024 * 1024)

    async def reply(stream, request, _n):
        part = FetchResponse.FetchableTopicResponse.PartitionData(
            partition_index=0, error_code=0, high_watermark=10, last_stable_offset=10, log_start_offset=0,
            aborted_transactions=None, preferred_read_replica=-1, records=records)
        body = FetchResponse(version=request.api_version, throttle_time_ms=0, error_code=0, session_id=0,
                             responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])],
                             node_endpoints=[])
        frame = codec.encode_response(1, request.api_version, request.header.correlation_id, body)
        rng = random.Random(7)
        pos = 0
        while pos < len(frame):
            n = rng.choice((1, 3, 700, 65536, 1 << 20))
            await stream.send_all(frame[pos:pos + n])
            pos += n

    async def test(peer):
        async with client(peer) as c:
            for version in (12, 16):
                r = await c.send(_fetch_request(version))
                got = r.responses[0].partitions[0].records
                assert isinstance(got, (bytes, memoryview)) and bytes(got) == records

    run_with_peer(reply, test)


def test_correlation_mismatch_drops_the_connection() -> None:
    async def reply(stream, request, number):
        wrong = request.header.correlation_id + 1000 if number == 1 else None
        await stream.send_all(_api_versions_response(request, wrong))

    async def test(peer):
        async with client(peer) as c:
            with pytest.raises(PeerProtocolError, match="correlation id"):
                await c.send(ApiVersionsRequest(version=3))
            assert not c.connected
            assert (await c.send(ApiVersionsRequest(version=3))).error_code == 0

    assert run_with_peer(reply, test).connections == 2


def test_request_timeout_then_reconnect() -> None:
    async def reply(stream, request, number):
        if number == 1:
            await trio.sleep_forever()
        await answer(stream, request, number)

    async def test(peer):
        async with client(peer, request_timeout_s=0.3) as c:
            start = trio.current_time()
            with pytest.raises(PeerUnavailable, match="within 0.3s"):
                await c.send(ApiVersionsRequest(version=3))
            assert 0.3 <= trio.current_time() - start < 5
            assert not c.connected
            assert (await c.send(ApiVersionsRequest(version=3))).error_code == 0

    assert run_with_peer(reply, test).connections == 2


def test_a_request_can_set_its_own_timeout() -> None:
    async def reply(stream, request, number):
        await trio.sleep_forever()

    async def test(peer):
        async with client(peer, request_timeout_s=30.0) as c:
            start = trio.current_time()
            with pytest.raises(PeerUnavailable, match="within 0.3s"):
                await c.send(ApiVersionsRequest(version=3), timeout_s=0.3)
            assert 0.3 <= trio.current_time() - start < 5

    run_with_peer(reply, test)


def test_ready_opens_the_connection_that_the_next_send_uses() -> None:
    async def test(peer):
        async with client(peer) as c:
            await c.ready()
            assert c.connected and peer.requests == []
            await c.ready()  # already open: nothing more
            assert (await c.send(ApiVersionsRequest(version=3))).error_code == 0

    assert run_with_peer(answer, test).connections == 1


def test_a_login_cut_short_leaves_no_half_open_connection() -> None:
    """A caller bounding ready() (ControlledShutdown's controller.socket.timeout.ms) cancels it
    mid-login: the connection is dropped, and the next attempt logs in afresh."""
    async def reply(stream, request, number):
        if number == 1:
            await trio.sleep_forever()  # never answers the SaslHandshake
        await stream.send_all(codec.encode_response(request.api_key, request.api_version,
                                                    request.header.correlation_id, _sasl_answer(request)))

    async def test(peer):
        async with client(peer, security=PeerSecurity(sasl=PeerSasl("PLAIN", {"username": "u", "password": "p"}))) as c:
            with trio.move_on_after(0.3):
                await c.ready()
            assert not c.connected
            await c.ready()
            assert c.connected

    peer = run_with_peer(reply, test)
    assert peer.connections == 2
    assert [r.api_key for r in peer.requests] == [17, 17, 36]


def _sasl_answer(request: codec.Request):
    if request.api_key == 17:
        return SaslHandshakeResponse(version=request.api_version, error_code=0, mechanisms=["PLAIN"])
    return SaslAuthenticateResponse(version=request.api_version, error_code=0, error_message=None,
                                    auth_bytes=b"", session_lifetime_ms=0)


def test_peer_closing_mid_frame_is_peer_unavailable() -> None:
    async def reply(stream, request, number):
        frame = _api_versions_response(request)
        if number == 1:
            await stream.send_all(frame[:len(frame) // 2])
            await stream.aclose()
            return
        await stream.send_all(frame)

    async def test(peer):
        async with client(peer) as c:
            with pytest.raises(PeerUnavailable, match="closed by the peer"):
                await c.send(ApiVersionsRequest(version=3))
            assert (await c.send(ApiVersionsRequest(version=3))).error_code == 0

    run_with_peer(reply, test)


@pytest.mark.parametrize("size", [-1, 2, 1025])
def test_bad_frame_size_is_a_protocol_error(size: int) -> None:
    async def reply(stream, request, number):
        if number == 1:
            await stream.send_all(struct.pack(">i", size) + b"\0" * 8)
        else:
            await answer(stream, request, number)

    async def test(peer):
        async with client(peer, max_response_bytes=1024) as c:
            with pytest.raises(PeerProtocolError, match="frame of"):
                await c.send(ApiVersionsRequest(version=0))
            assert (await c.send(ApiVersionsRequest(version=0))).error_code == 0

    run_with_peer(reply, test)


def test_undecodable_body_is_a_protocol_error() -> None:
    async def reply(stream, request, _n):
        junk = struct.pack(">i", request.header.correlation_id) + b"\x00\x00\x00\x05\xff"
        await stream.send_all(struct.pack(">i", len(junk)) + junk)

    async def test(peer):
        async with client(peer) as c:
            with pytest.raises(PeerProtocolError, match="cannot decode"):
                await c.send(ApiVersionsRequest(version=0))
            assert not c.connected

    run_with_peer(reply, test)


def test_cancelled_request_does_not_leave_a_stale_response_behind() -> None:
    """A caller cancelled while waiting drops the connection: the late answer to the cancelled
    request is never taken for the answer to the next one."""
    release = trio.Event()

    async def reply(stream, request, number):
        if number == 1:
            await release.wait()
        await answer(stream, request, number)

    async def test(peer):
        async with client(peer) as c:
            with trio.move_on_after(0.2):
                await c.send(ApiVersionsRequest(version=0))
            release.set()
            assert not c.connected
            r = await c.send(ApiVersionsRequest(version=0))
            assert r.error_code == 0

    peer = run_with_peer(reply, test)
    assert peer.connections == 2


def test_requests_from_several_tasks_are_serialised() -> None:
    async def reply(stream, request, number):
        await trio.sleep(0.01)
        await answer(stream, request, number)

    async def test(peer):
        results = []
        async with client(peer) as c:
            async def one():
                results.append(await c.send(ApiVersionsRequest(version=0)))
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(one)
        assert len(results) == 5

    assert run_with_peer(reply, test).connections == 1


def test_produce_with_acks_0_expects_no_response() -> None:
    async def test(peer):
        async with client(peer) as c:
            req = ProduceRequest(version=9, transactional_id=None, acks=0, timeout_ms=1000, topic_data=[])
            assert await c.send(req) is None
            assert (await c.send(ApiVersionsRequest(version=0))).error_code == 0

    peer = run_with_peer(answer, test)
    assert [r.api_key for r in peer.requests] == [0, 18]


def test_aclose_fails_the_request_in_flight_and_later_sends() -> None:
    async def reply(stream, request, number):
        await trio.sleep_forever()

    async def test(peer):
        c = client(peer)
        failed = []

        async def waiting():
            with pytest.raises(trio.ClosedResourceError):
                await c.send(ApiVersionsRequest(version=0))
            failed.append(True)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting)
            await trio.testing.wait_all_tasks_blocked()
            await c.aclose()
        assert failed == [True]
        with pytest.raises(trio.ClosedResourceError):
            await c.send(ApiVersionsRequest(version=0))

    run_with_peer(reply, test)


def test_connection_refused_and_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refused():
        with socket_bound_not_listening() as port:
            c = PeerClient("127.0.0.1", port, "peer-test", 5.0, 5.0)
            with trio.fail_after(3):
                with pytest.raises(PeerUnavailable, match="cannot connect") as info:
                    await c.send(ApiVersionsRequest(version=0))
            assert isinstance(info.value.__cause__, OSError)

    trio.run(refused)

    async def hang(*_a, **_k):
        await trio.sleep_forever()

    monkeypatch.setattr(peer_client_module.trio, "open_tcp_stream", hang)

    async def timeout():
        c = PeerClient("127.0.0.1", 9, "peer-test", 0.2, 5.0)
        with pytest.raises(PeerUnavailable, match="no connection within 0.2s"):
            await c.send(ApiVersionsRequest(version=0))

    trio.run(timeout)

    async def growing():
        """Kafka's setup timeout: each failed attempt doubles the next one's (20% jitter), up to the cap."""
        c = PeerClient("127.0.0.1", 9, "peer-test", SetupTimeout(0.1, 0.3), 5.0)
        waited = []
        for _ in range(4):
            started = trio.current_time()
            with pytest.raises(PeerUnavailable, match="no connection within"):
                await c.send(ApiVersionsRequest(version=0))
            waited.append(trio.current_time() - started)
        eps = 1e-9  # the mock clock's sums of float seconds
        bounds = [(0.08, 0.12), (0.16, 0.24), (0.24, 0.3), (0.24, 0.3)]  # the cap, less its jitter, at the end
        assert all(low - eps <= w <= high + eps for w, (low, high) in zip(waited, bounds)), waited

    trio.run(growing, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_setup_timeout_grows_from_its_first_value_to_its_cap() -> None:
    kafka_defaults = SetupTimeout(10.0, 30.0)
    # the exponent stops where the doubling reaches the cap; the jitter still applies there
    for failures, low, high in [(0, 8.0, 12.0), (1, 16.0, 24.0), (2, 24.0, 30.0), (9, 24.0, 30.0)]:
        assert all(low - 1e-9 <= kafka_defaults.after(failures) <= high + 1e-9 for _ in range(50)), failures
    assert SetupTimeout(5.0, 5.0).after(3) == 5.0  # no room to grow: always the first value, no jitter


def test_request_without_version_is_a_programming_error() -> None:
    async def main():
        c = PeerClient("127.0.0.1", 9, "peer-test", 1.0, 1.0)
        with pytest.raises(ValueError, match="no version"):
            await c.send(ApiVersionsRequest())

    trio.run(main)


class socket_bound_not_listening:
    """A port that refuses connections: bound (so nobody else takes it) but not listening."""

    def __enter__(self) -> int:
        import socket
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def test_api_versions_error_answer_in_v0_layout() -> None:
    """A broker that does not serve our ApiVersions version answers UNSUPPORTED_VERSION with a v0
    body (KIP-511); kafka-python's ApiVersionsResponse.decode falls back to v0 on an error code."""
    async def reply(stream, request, _n):
        body = ApiVersionsResponse(version=0, error_code=35, api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)])
        await stream.send_all(codec.encode_response(18, 0, request.header.correlation_id, body))

    async def test(peer):
        async with client(peer) as c:
            r = await c.send(ApiVersionsRequest(version=3, client_software_name="p", client_software_version="0"))
            assert r.error_code == 35 and r.version == 0
            assert [(k.api_key, k.max_version) for k in r.api_keys] == [(18, 2)]

    run_with_peer(reply, test)


def test_a_pool_bounds_its_requests_by_the_key_it_is_given(tmp_path) -> None:
    """Kafka 3.9's channel to the controller times requests out by controller.socket.timeout.ms;
    the other pools by request.timeout.ms."""
    config = build_config({"log.dirs": str(tmp_path), "controller.socket.timeout.ms": "2500",
                           "request.timeout.ms": "7000"})
    peer = BrokerInfo(1, "127.0.0.1", 9)
    controller = PeerPool(lambda node: peer, config, "controller", PeerSecurity(),
                          request_timeout_key="controller.socket.timeout.ms")
    markers = PeerPool(lambda node: peer, config, "txn-markers", PeerSecurity())
    assert controller.client(1).request_timeout_s == 2.5
    assert markers.client(1).request_timeout_s == 7.0
