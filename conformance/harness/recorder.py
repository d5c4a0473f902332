"""A recording proxy between Kafka clients and one real Kafka broker.

Each client connection gets its own connection to Kafka; every request and response frame is
appended to one event list at the moment the proxy reads it, before it is passed on, so the
list's order is a causal order: a response a client acted on is always listed before the
request it sent next. Responses are forwarded as `client_view` presents them (addresses pointing
at the proxy, only what wirekafka serves); the events keep what Kafka actually sent.

`ProxyThread` runs the proxy's trio loop in a thread, so a session can drive blocking clients
(confluent-kafka, kafka-python, subprocesses) from the calling thread."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

import trio

from conformance.harness import client_view, frames
from conformance.recordings import CLOSE, REQUEST, RESPONSE, Event
from conformance.harness.stream_frames import FrameStream

log = logging.getLogger(__name__)


class RecordingProxy:
    """Forwards client connections to ``upstream`` and records their frames in ``events``."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.events: list[Event] = []
        self.listener: tuple[str, int] | None = None
        self.open_connections = 0
        self.failures: list[str] = []
        self._next_conn = 0

    async def serve(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on a free 127.0.0.1 port (reported through task_status) until cancelled."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.listener = ("127.0.0.1", listeners[0].socket.getsockname()[1])
        task_status.started(self.listener)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, client: trio.SocketStream) -> None:
        conn, self._next_conn = self._next_conn, self._next_conn + 1
        self.open_connections += 1
        pending: dict[int, frames.RequestHead] = {}
        try:
            async with await trio.open_tcp_stream(*self.upstream) as kafka, client:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._requests, conn, client, kafka, pending, nursery.cancel_scope)
                    nursery.start_soon(self._responses, conn, kafka, client, pending, nursery.cancel_scope)
        except Exception as exc:  # noqa: BLE001 - sorted below: a peer going away, or a proxy bug
            if _only_disconnects(exc):
                log.info("connection %d ended: %r", conn, exc)
            else:
                log.exception("connection %d failed", conn)
                self.failures.append(f"connection {conn}: {exc!r}")
        finally:
            self.events.append(Event(conn, CLOSE))
            self.open_connections -= 1

    async def _requests(self, conn: int, client: trio.SocketStream, kafka: trio.SocketStream,
                        pending: dict[int, frames.RequestHead], scope: trio.CancelScope) -> None:
        reader = FrameStream(client)
        while (frame := await reader.next_frame()) is not None:
            head = frames.request_head(frame)
            expects = frames.expects_response(frame)
            if expects:
                pending[head.correlation_id] = head
            self.events.append(Event(conn, REQUEST, head.api_key, head.version, head.correlation_id, frame, expects))
            await kafka.send_all(frames.size_prefixed(frame))
        scope.cancel()  # the client closed: so does its connection to Kafka

    async def _responses(self, conn: int, kafka: trio.SocketStream, client: trio.SocketStream,
                         pending: dict[int, frames.RequestHead], scope: trio.CancelScope) -> None:
        reader = FrameStream(kafka)
        while (frame := await reader.next_frame()) is not None:
            head = pending.pop(frames.response_correlation_id(frame))
            self.events.append(Event(conn, RESPONSE, head.api_key, head.version, head.correlation_id, frame))
            await client.send_all(frames.size_prefixed(self._as_client_sees(head, frame)))
        scope.cancel()

    def _as_client_sees(self, head: frames.RequestHead, frame: bytes) -> bytes:
        if head.api_key not in client_view.CHANGED_APIS:
            return frame
        response = frames.decode_response(head.api_key, head.version, frame)
        if not client_view.present(head.api_key, response, self.listener):
            return frame
        return frames.encode_response(response, response.version)  # an ApiVersions error answer is a v0 body


def _only_disconnects(exc: BaseException) -> bool:
    """True if the exception (or every one in a group) is a peer closing or resetting."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_disconnects(e) for e in exc.exceptions)
    return isinstance(exc, (OSError, ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError))


class ProxyThread:
    """A RecordingProxy on its own trio loop in a daemon thread; ``with`` starts and stops it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.proxy = RecordingProxy(upstream)
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._thread = threading.Thread(target=self._run, name="recording-proxy", daemon=True)
        self._started: queue.Queue[BaseException | None] = queue.Queue()

    @property
    def bootstrap(self) -> str:
        assert self.proxy.listener is not None
        return f"{self.proxy.listener[0]}:{self.proxy.listener[1]}"

    def _run(self) -> None:
        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as self._scope:
                async with trio.open_nursery() as nursery:
                    await nursery.start(self.proxy.serve)
                    self._started.put(None)
        try:
            trio.run(main)
        except BaseException as exc:  # reported to the starting thread
            self._started.put(exc)
            raise

    def __enter__(self) -> "ProxyThread":
        self._thread.start()
        error = self._started.get(timeout=10)
        if error is not None:
            raise RuntimeError("recording proxy did not start") from error
        return self

    def wait_idle(self, timeout: float) -> bool:
        """Wait (bounded) until every client connection is closed; True if they all are."""
        deadline = time.monotonic() + timeout
        while self.proxy.open_connections and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.proxy.open_connections == 0

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive() and self._token is not None and self._scope is not None:
            trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self._thread.join(10)
        if self.proxy.failures and exc[0] is None:
            raise RuntimeError(f"the recording proxy failed: {self.proxy.failures}")
