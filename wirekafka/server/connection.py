"""One task per connection: read a frame, dispatch it, write the response, in order.

Kafka processes one request per connection at a time (the channel is muted until the response
is sent), so requests here are handled strictly in sequence and responses leave in request order."""

from __future__ import annotations

import logging

import trio

from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.dispatch import dispatch
from wirekafka.broker.handlers.api_versions import unsupported_version_response
from wirekafka.broker.state import BrokerState
from wirekafka.protocol import api_versions, codec
from wirekafka.protocol.framing import FrameError, FrameReader

log = logging.getLogger(__name__)

RECEIVE_SIZE = 1 << 16


class Shutdown:
    """Lets shutdown interrupt connections that are idle (waiting for a request) at once,
    while connections in the middle of a request finish it first."""

    def __init__(self) -> None:
        self.started = False
        self._idle: set[trio.CancelScope] = set()

    def begin(self) -> None:
        self.started = True
        for scope in self._idle:
            scope.cancel()

    async def receive(self, stream: trio.SocketStream) -> bytes:
        """Read from stream; b"" on EOF or when shutdown began while waiting."""
        if self.started:
            return b""
        scope = trio.CancelScope()
        self._idle.add(scope)
        try:
            with scope:
                return await stream.receive_some(RECEIVE_SIZE)
            return b""
        finally:
            self._idle.discard(scope)


async def serve_connection(stream: trio.SocketStream, state: BrokerState, shutdown: Shutdown) -> None:
    peer = _peer_name(stream)
    reader = FrameReader(state.config.int("socket.request.max.bytes"))
    try:
        while True:
            payload = reader.next_frame()
            if payload is None:
                data = await shutdown.receive(stream)
                if not data:
                    return
                reader.feed(data)
                continue
            response = await _handle_frame(payload, state, peer)
            if response is not None:
                await stream.send_all(response)
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
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def _handle_frame(payload: bytes, state: BrokerState, peer: str) -> bytes | None:
    header = codec.parse_header(payload)
    if not api_versions.is_supported(header.api_key, header.api_version):
        if header.api_key == codec.API_VERSIONS_KEY:
            return codec.encode_response(header.api_key, 0, header.correlation_id, unsupported_version_response())
        raise codec.ProtocolError(f"unsupported api {header.api_key} v{header.api_version}")
    body = codec.decode_body(header, payload)
    ctx = RequestContext(state, header, peer)
    response = await dispatch(ctx, body)
    if response is None:
        return None
    return codec.encode_response(header.api_key, header.api_version, header.correlation_id, response)


def _peer_name(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
