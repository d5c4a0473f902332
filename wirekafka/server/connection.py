"""One task per connection: read a frame, dispatch it, write the response, in order.

Kafka processes one request per connection at a time (the channel is muted until the response
is sent), so requests here are handled strictly in sequence and responses leave in request order.

A response is either bytes or a list of parts (bytes and file regions, see
protocol/response_parts.py); regions go from the page cache to the socket with os.sendfile, the
seeds' zero-copy transfer, and are closed once sent (or when the connection fails).

Each request holds its size in the request memory pool (queued.max.request.bytes) from the moment
its length is read until it has been handled; while the pool is spent the connection reads
nothing more. A request too big to decode within a few ms (codec.SlowDecode: the decoders build a
Python object per array element) is decoded in a worker thread, so the event loop keeps serving
other connections meanwhile; a produce request's records are never copied (they stay slices of
the frame, protocol/produce_request), so only its count of partitions matters."""

from __future__ import annotations

import logging
import os
import time
from typing import Callable

import trio
from cryptography import x509

from wirekafka.broker.quotas.client_quota_manager import ANONYMOUS
from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.dispatch import dispatch
from wirekafka.broker.handlers.api_versions import unsupported_version_response
from wirekafka.broker.state import BrokerState
from wirekafka.protocol import served_versions as api_versions, codec
from wirekafka.protocol.framing import Frame, FrameError, FrameReader
from wirekafka.security.principal import NoMatchingRule, SslPrincipalMapper
from wirekafka.protocol.response_parts import Part, Region, RegionResponse
from wirekafka.server.idle_connections import IdleConnections
from wirekafka.server.listener_security import PLAINTEXT, ListenerSecurity
from wirekafka.server.memory_pool import RequestMemoryPool
from wirekafka.server import request_log
from wirekafka.server.sasl_authenticator import SASL_HANDSHAKE, SaslServerAuthenticator
from wirekafka.storage.region import FileRegion
from wirekafka.broker.replication.receive import receive_into

log = logging.getLogger(__name__)

UNBOUNDED = RequestMemoryPool(-1)  # queued.max.request.bytes=-1: stateless, so one is shared


async def serve_connection(stream: trio.SocketStream, state: BrokerState, listener: str, idle: IdleConnections,
                           on_close: Callable[[], None] = lambda: None, security: ListenerSecurity = PLAINTEXT,
                           pool: RequestMemoryPool = UNBOUNDED) -> None:
    """Serve a connection accepted on listener until it closes; on_close runs after (the
    connection quota's release). On a TLS listener the TLS handshake comes first, on a SASL one
    the client authenticates before its other requests are served. Requests hold their size in
    pool while read and handled."""
    peer = _peer_name(stream)
    auth = security.sasl.authenticator(peer) if security.sasl is not None else None
    channel: trio.abc.Stream = stream if security.tls is None else trio.SSLStream(stream, security.tls(),
                                                                                  server_side=True)
    # Kafka reads frames of at most sasl.server.max.receive.size until a connection is authenticated
    reader = FrameReader(security.sasl_max_receive if auth is not None else state.config.int("socket.request.max.bytes"))
    # Kafka closes a connection with no traffic for connections.max.idle.ms; here that is the
    # time since the last response went out or the last bytes came in.
    idle_s = idle.timeout_s
    held: int | None = None  # what the current request holds in the pool (None: nothing yet)
    sockets, requests = state.metrics.sockets, state.metrics.requests  # requests None: metrics off
    sockets.connections[listener] += 1
    try:
        if isinstance(channel, trio.SSLStream):
            with trio.move_on_after(idle_s) as handshake:
                await channel.do_handshake()
            if handshake.cancelled_caught:
                log.info("closing connection from %s: no TLS handshake within %.0f ms", peer, idle_s * 1000)
                return
        try:
            certificate_principal = _certificate_principal(channel, security.principal_mapper)
        except NoMatchingRule as exc:  # Kafka fails the connection's authentication
            sockets.failed_authentications[listener] += 1
            log.info("closing connection from %s: %s", peer, exc)
            return
        while True:
            if held is None and pool.bounded:
                size = reader.next_frame_size()
                if size is not None:  # reserved before the frame's buffer exists, or waits unread
                    if not pool.try_reserve(size):
                        await pool.reserve(size)
                    held = size
            payload = reader.next_frame()
            if payload is None:
                target = reader.large_frame_target()
                if target is not None:  # the rest of a large request goes straight into its buffer
                    received = 0
                    with trio.move_on_after(idle_s):
                        received = await receive_into(channel, target)
                    if not received:
                        return
                    reader.large_frame_received(received)
                    continue
                data = await idle.receive(channel, stream.socket)
                if data is None:
                    log.debug("closing connection from %s: idle for %.0f ms", peer, idle_s * 1000)
                    return
                if not data:
                    return
                reader.feed(data)
                del data  # not held while the connection waits again
                continue
            if auth is not None:
                verdict = await _authenticate(auth, payload, channel, reader, state, peer, listener)
                if held is not None and verdict is not _SERVE:
                    pool.release(held)
                    held = None
                if verdict is _CLOSE:
                    return
                if verdict is _ANSWERED:
                    continue
            principal = (auth.principal if auth is not None else None) or certificate_principal or ANONYMOUS
            started, size = time.perf_counter(), len(payload)
            if requests is not None:
                requests.in_flight += 1
            try:
                response, mute_until, header = await _handle_frame(payload, state, listener, peer, principal)
                if held is not None:  # handled: its memory goes back before the answer is sent, as in Kafka
                    pool.release(held)
                    held = None
                if isinstance(response, list):
                    await _send_parts(channel, response)
                elif response is not None:
                    await channel.send_all(response)
                del payload, response  # not held while the connection waits for its next request
            finally:
                if requests is not None:
                    requests.in_flight -= 1
            total_ms = (time.perf_counter() - started) * 1000
            if requests is not None:
                requests.finished(header.api_key, header.api_version, total_ms)
            if request_log.enabled():
                request_log.completed(header, peer, listener, state.config.security_protocol(listener), principal,
                                      size, total_ms)
            if mute_until:  # a throttled client's next request waits unread, as Kafka mutes it
                await trio.sleep_until(mute_until)
    except FrameError as exc:
        log.info("closing connection from %s: %s", peer, exc)
    except codec.ProtocolError as exc:
        log.info("closing connection from %s: %s", peer, exc)
    except CloseConnection as exc:
        log.info("closing connection from %s: %s", peer, exc)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:
        # A bug must cost one connection, never the broker.
        log.exception("closing connection from %s after an unexpected error", peer)
    finally:
        sockets.connections[listener] -= 1
        if held is not None:
            pool.release(held)
        on_close()
        with trio.CancelScope(shield=True):
            if isinstance(channel, trio.SSLStream):  # no close_notify exchange with a client that may be gone
                await trio.aclose_forcefully(channel)
            else:
                await stream.aclose()


# What _authenticate did with a frame: it is a request to serve, it was answered, or the
# connection must close.
_SERVE, _ANSWERED, _CLOSE = object(), object(), object()


async def _authenticate(auth: SaslServerAuthenticator, payload: Frame, channel: trio.abc.Stream, reader: FrameReader,
                        state: BrokerState, peer: str, listener: str) -> object:
    """A SASL listener's gate before a frame is served: the exchange until the client is
    authenticated, re-authentication when it asks, and the close of an expired session."""
    if auth.complete:
        if _api_key(payload) == SASL_HANDSHAKE and auth.begin_reauthentication():
            log.debug("%s re-authenticates", peer)
        elif auth.expired():
            log.info("closing connection from %s: its SASL session expired (connections.max.reauth.ms)", peer)
            return _CLOSE
        else:
            return _SERVE
    # the authenticator is this connection's alone: a worker thread may run its step
    frame = payload if isinstance(payload, (bytes, bytearray)) else payload[:]  # a mapping's bytes
    step = await trio.to_thread.run_sync(auth.step, frame) if auth.reads_files else auth.step(frame)
    if step.drop:
        return _CLOSE
    if step.fail:
        state.metrics.sockets.failed_authentications[listener] += 1
        await trio.sleep(state.config.int("connection.failed.authentication.delay.ms") / 1000)
        if step.reply is not None:
            await channel.send_all(step.reply)
        return _CLOSE
    if step.reply is not None:
        await channel.send_all(step.reply)
    if auth.complete:
        state.metrics.sockets.successful_authentications[listener] += 1
        reader.set_max_frame_size(state.config.int("socket.request.max.bytes"))
    return _SERVE if step.dispatch else _ANSWERED


def _api_key(frame: Frame) -> int:
    return int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1


async def _send_parts(channel: trio.abc.Stream, parts: list[Part]) -> None:
    """Send bytes and file regions in order; adjacent bytes go out in one call. A region goes out
    with sendfile on a plaintext connection; TLS must encrypt it, so it is read (in a worker
    thread, as any file read) and sent as bytes."""
    try:
        pending = bytearray()
        for part in parts:
            if isinstance(part, (bytes, bytearray)):
                pending += part
                continue
            if pending:
                await channel.send_all(pending)
                pending = bytearray()
            if isinstance(channel, trio.SocketStream):
                await _sendfile(channel.socket, part)
            else:
                await channel.send_all(await trio.to_thread.run_sync(part.read))
        if pending:
            await channel.send_all(pending)
    finally:
        for part in parts:
            if isinstance(part, FileRegion):
                part.close()


async def _sendfile(sock: trio.socket.SocketType, region: Region) -> None:
    """os.sendfile on the non-blocking socket, waiting for room when the socket buffer is full."""
    out = sock.fileno()
    offset, remaining = region.position, region.length
    while remaining:
        try:
            sent = os.sendfile(out, region.fd, offset, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if sent == 0:  # the file shrank under us: the frame can no longer be completed
            raise trio.BrokenResourceError(f"segment region ended {remaining} bytes early")
        offset += sent
        remaining -= sent
        await trio.lowlevel.checkpoint()


async def _handle_frame(payload: Frame, state: BrokerState, listener: str, peer: str, principal: str
                        ) -> tuple[bytes | list[Part] | None, float, codec.RequestHeader]:
    """The encoded response (None: none is sent), until when the connection stays muted, and the
    request's header."""
    header = codec.parse_header(payload)
    if not api_versions.is_served(header.api_key, header.api_version):
        if header.api_key == codec.API_VERSIONS_KEY:
            return (codec.encode_response(header.api_key, 0, header.correlation_id, unsupported_version_response()),
                    0.0, header)
        raise codec.ProtocolError(f"unsupported api {header.api_key} v{header.api_version}")
    try:
        body = codec.decode_body(header, payload, quick=True)
    except codec.SlowDecode:  # the worker gives the loop the GIL back every switch interval (5 ms)
        body = await trio.to_thread.run_sync(codec.decode_body, header, payload)
    ctx = RequestContext(state, header, listener, peer, principal, request_size=len(payload))
    response = await dispatch(ctx, body)
    if response is None:
        return None, ctx.mute_until, header
    if isinstance(response, RegionResponse):
        try:
            return codec.encode_response_parts(header.api_key, header.api_version, header.correlation_id,
                                               response), ctx.mute_until, header
        except BaseException:
            for region in response.regions():
                region.close()
            raise
    return (codec.encode_response(header.api_key, header.api_version, header.correlation_id, response),
            ctx.mute_until, header)


def _certificate_principal(channel: trio.abc.Stream, mapper: SslPrincipalMapper) -> str | None:
    """A TLS client's name as Kafka's default principal builder gives it: the certificate's
    subject (RFC 2253) through ssl.principal.mapping.rules; None without a client certificate.
    Raises NoMatchingRule."""
    if not isinstance(channel, trio.SSLStream):
        return None
    der = channel.getpeercert(binary_form=True)
    return mapper.name(x509.load_der_x509_certificate(der).subject.rfc4514_string()) if der else None


def _peer_name(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
