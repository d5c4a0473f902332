"""Replay a recorded client session against a broker, keeping the recording's causality.

One connection per recorded connection. The recording's events are walked in their global
order: a request is sent when it is reached, so it goes out only after every request recorded
before it was sent and every response recorded before it has arrived (the walk waits at each
recorded response for the broker's answer to that request). Two JoinGroups of a rebalance thus
both reach the broker before either answer is awaited, as they did with Kafka.

A request Kafka refused as "not ready yet" is not sent (`session_rules.withhold_reason`).
Before sending, each other request gets the ids this broker allocated in place of Kafka's
(`id_map`); each pair of answers teaches the map more. TCP orders nothing across connections, so
a request sent less than HEAD_START after another connection's request that the broker may still
be handling waits out the rest, giving the earlier one time to reach the broker's handler, as it
had with Kafka.

A broker that does not answer within `answer_timeout`, or closes the connection, is reported on
the exchange; the walk goes on. Comparing the answers is `replay_verdict`'s job."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import trio

from conformance.harness import frames, session_rules
from conformance.harness.id_map import IdMap
from conformance.recordings import CLOSE, REQUEST, RESPONSE, Event, Recording
from conformance.harness.stream_frames import FrameStream

log = logging.getLogger(__name__)

HEAD_START = 0.02


@dataclass
class Exchange:
    """One recorded request and the two answers to it."""
    sent_at: int  # positions of the request and of Kafka's response among the recording's events
    conn: int
    api_key: int
    version: int
    correlation_id: int
    sent: bytes  # the request as replayed
    answered_at: int | None = None
    recorded: bytes | None = None  # Kafka's response; None if the client closed before it came
    replayed: bytes | None = None
    problem: str | None = None  # why there is no replayed answer
    withheld: str | None = None  # why the request was not sent (session_rules.withhold_reason)

    @property
    def api(self) -> str:
        return frames.api_name(self.api_key)


class _Connection:
    """A replay connection: sends frames, collects the broker's answers by correlation id."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.answers: dict[int, bytes] = {}
        self.arrived: dict[int, trio.Event] = {}
        self.closed: str | None = None
        self.scope = trio.CancelScope()
        self._last_send = 0.0
        self._last_expects = True

    def sending(self, correlation_id: int, expects_response: bool) -> None:
        self._last_send, self._last_expects = time.monotonic(), expects_response
        if expects_response:
            self.arrived[correlation_id] = trio.Event()

    def in_flight_since(self) -> float | None:
        """When this connection last sent a request the broker may still be handling (one not
        answered yet, or one that gets no answer), or None."""
        pending = not all(e.is_set() for e in self.arrived.values())
        return self._last_send if pending or not self._last_expects else None

    async def read(self) -> None:
        reader = FrameStream(self.stream)
        with self.scope:
            try:
                while (frame := await reader.next_frame()) is not None:
                    cid = frames.response_correlation_id(frame)
                    self.answers[cid] = frame
                    self.arrived.setdefault(cid, trio.Event()).set()
                self.closed = "the broker closed the connection"
            except (OSError, ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                self.closed = f"the connection failed: {exc!r}"
        for event in self.arrived.values():
            event.set()


class Replayer:
    def __init__(self, recording: Recording, bootstrap: str, answer_timeout: float = 10.0) -> None:
        self.recording = recording
        host, port = bootstrap.rsplit(":", 1)
        self.address = (host, int(port))
        self.answer_timeout = answer_timeout
        self.ids = IdMap()
        self.exchanges: list[Exchange] = []
        self._by_request: dict[tuple[int, int], Exchange] = {}
        self._conns: dict[int, _Connection] = {}
        self._recorded = {(e.conn, e.correlation_id): e.frame for e in recording.events if e.kind == RESPONSE}

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for position, event in enumerate(self.recording.events):
                if event.kind == REQUEST:
                    await self._send(nursery, position, event)
                elif event.kind == RESPONSE:
                    await self._await_answer(position, event)
                elif event.kind == CLOSE and event.conn in self._conns:
                    await self._close(self._conns.pop(event.conn))
            for conn in self._conns.values():
                await self._close(conn)

    async def _send(self, nursery: trio.Nursery, position: int, event: Event) -> None:
        conn = self._conns.get(event.conn)
        if conn is None:
            conn = self._conns[event.conn] = _Connection(await trio.open_tcp_stream(*self.address))
            nursery.start_soon(conn.read)
        frame = self._with_replay_ids(event.frame)
        exchange = Exchange(position, event.conn, event.api_key, event.version, event.correlation_id, frame)
        self.exchanges.append(exchange)
        self._by_request[(event.conn, event.correlation_id)] = exchange
        exchange.withheld = self._withhold_reason(event)
        if exchange.withheld:
            return
        await self._head_start(conn)
        if conn.closed:
            exchange.problem = conn.closed
            return
        conn.sending(event.correlation_id, event.expects_response)
        try:
            await conn.stream.send_all(frames.size_prefixed(frame))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            exchange.problem = f"could not send: {exc!r}"

    def _withhold_reason(self, event: Event) -> str | None:
        recorded = self._recorded.get((event.conn, event.correlation_id))
        if recorded is None:
            return None
        try:
            response = frames.decode_response(event.api_key, event.version, recorded)
        except ValueError:
            return None
        return session_rules.withhold_reason(response)

    def _with_replay_ids(self, frame: bytes) -> bytes:
        try:
            request = frames.decode_request(frame)
        except ValueError:  # no schema for it: sent as recorded
            return frame
        if not self.ids.substitute(request):
            return frame
        return frames.encode_request(request, frames.request_head(frame).version)

    async def _head_start(self, conn: _Connection) -> None:
        others = [t for c in self._conns.values() if c is not conn and (t := c.in_flight_since()) is not None]
        if others:
            await trio.sleep(max(0.0, max(others) + HEAD_START - time.monotonic()))

    async def _await_answer(self, position: int, event: Event) -> None:
        exchange = self._by_request[(event.conn, event.correlation_id)]
        exchange.answered_at, exchange.recorded = position, event.frame
        conn = self._conns.get(event.conn)
        if conn is None or exchange.problem or exchange.withheld:
            return
        arrived = conn.arrived.get(event.correlation_id)
        if arrived is None:
            exchange.problem = "the request was not sent"
            return
        with trio.move_on_after(self.answer_timeout):
            await arrived.wait()
        exchange.replayed = conn.answers.get(event.correlation_id)
        if exchange.replayed is None:
            exchange.problem = conn.closed or f"no answer within {self.answer_timeout:g}s"
            return
        try:
            self.ids.learn(frames.decode_response(exchange.api_key, exchange.version, exchange.recorded),
                           frames.decode_response(exchange.api_key, exchange.version, exchange.replayed))
        except Exception as exc:  # noqa: BLE001 - an undecodable answer is reported by the verdict
            log.info("cannot learn ids from %s v%d: %r", exchange.api, exchange.version, exc)

    @staticmethod
    async def _close(conn: _Connection) -> None:
        conn.scope.cancel()
        await conn.stream.aclose()


@dataclass
class Replayed:
    exchanges: list[Exchange]  # in the order their requests were sent
    ids: IdMap  # recorded id -> replay id, as learned during the replay


def replay(recording: Recording, bootstrap: str, answer_timeout: float = 10.0) -> Replayed:
    """Replay a recording against the broker at bootstrap ("host:port")."""
    replayer = Replayer(recording, bootstrap, answer_timeout)
    trio.run(replayer.run)
    return Replayed(replayer.exchanges, replayer.ids)
