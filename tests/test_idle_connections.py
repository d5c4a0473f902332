"""IdleConnections: the wait between requests. Plain connections are real loopback sockets
(notify_closing needs a file descriptor); TLS stands in as an in-memory stream, which takes the
same path as trio's SSLStream (anything that is not a plain SocketStream). Trio's autojump clock
makes the timeouts instant and exact."""

from __future__ import annotations

import socket

import trio
import trio.testing

from wirekafka.server.idle_connections import IdleConnections


def _plain_pair() -> tuple[trio.SocketStream, socket.socket]:
    """A broker-side trio stream and the client's blocking socket, connected over loopback."""
    server, client = socket.socketpair()
    return trio.SocketStream(trio.socket.from_stdlib_socket(server)), client


def _run(test) -> None:
    trio.run(test, clock=trio.testing.MockClock(autojump_threshold=0))


def _receive_into(nursery: trio.Nursery, idle: IdleConnections, channel: trio.abc.Stream,
                  sock: trio.socket.SocketType, results: list[bytes | None]) -> None:
    """Start one idle.receive in nursery; its result is appended to results."""
    async def wait() -> None:
        results.append(await idle.receive(channel, sock))
    nursery.start_soon(wait)


async def _until(results: list[bytes | None], count: int) -> None:
    while len(results) < count:
        await trio.sleep(0.01)


def test_bytes_already_there_come_back_without_a_wait() -> None:
    async def main() -> None:
        idle = IdleConnections(10.0)
        stream, client = _plain_pair()
        client.sendall(b"abc")
        await trio.testing.wait_all_tasks_blocked()
        assert await idle.receive(stream, stream.socket) == b"abc"
        assert trio.current_time() == 0
        client.close()
        assert await idle.receive(stream, stream.socket) == b""  # end of stream
    _run(main)


def test_a_wait_ends_with_the_bytes_that_come() -> None:
    async def main() -> None:
        idle = IdleConnections(10.0)
        stream, client = _plain_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(idle.run)
            got: list[bytes | None] = []
            _receive_into(nursery, idle, stream, stream.socket, got)
            await trio.sleep(9)
            client.sendall(b"late")
            await _until(got, 1)
            assert got == [b"late"]
            nursery.cancel_scope.cancel()
    _run(main)


def test_a_quiet_connection_expires_after_the_timeout_and_not_before() -> None:
    async def main() -> None:
        idle = IdleConnections(10.0)
        stream, _client = _plain_pair()
        other, _other_client = _plain_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(idle.run)
            await trio.sleep(4)  # a second connection begins waiting later, and expires later
            ended: dict[str, float] = {}

            async def wait(name: str, s: trio.SocketStream, delay: float) -> None:
                await trio.sleep(delay)
                assert await idle.receive(s, s.socket) is None
                ended[name] = trio.current_time()
            nursery.start_soon(wait, "first", stream, 0)
            nursery.start_soon(wait, "second", other, 3)
            while len(ended) < 2:
                await trio.sleep(0.5)
            assert ended == {"first": 14.0, "second": 17.0}
            nursery.cancel_scope.cancel()
    _run(main)


def test_shutdown_ends_every_wait_at_once_and_later_ones_do_not_start() -> None:
    async def main() -> None:
        idle = IdleConnections(600.0)
        plain, _client = _plain_pair()
        tls, _peer = trio.testing.memory_stream_pair()
        results: list[bytes | None] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(idle.run)
            _receive_into(nursery, idle, plain, plain.socket, results)
            _receive_into(nursery, idle, tls, trio.socket.from_stdlib_socket(socket.socket()), results)
            await trio.sleep(1)
            idle.shut_down()
            await _until(results, 2)
            assert results == [b"", b""]
            assert trio.current_time() < 2
            assert await idle.receive(plain, plain.socket) == b""
            nursery.cancel_scope.cancel()
    _run(main)


def test_a_tls_wait_expires_and_returns_its_bytes_otherwise() -> None:
    async def main() -> None:
        idle = IdleConnections(5.0)
        tls, peer = trio.testing.memory_stream_pair()
        sock = trio.socket.from_stdlib_socket(socket.socket())  # only a key here; TLS never reads it
        async with trio.open_nursery() as nursery:
            nursery.start_soon(idle.run)
            await peer.send_all(b"hello")
            assert await idle.receive(tls, sock) == b"hello"
            start = trio.current_time()
            assert await idle.receive(tls, sock) is None
            assert trio.current_time() - start == 5.0
            nursery.cancel_scope.cancel()
    _run(main)


def test_a_negative_timeout_never_expires_as_in_kafka() -> None:
    async def main() -> None:
        idle = IdleConnections(-0.001)
        stream, client = _plain_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(idle.run)
            got: list[bytes | None] = []
            _receive_into(nursery, idle, stream, stream.socket, got)
            await trio.sleep(10 * 24 * 3600)
            assert got == []
            client.sendall(b"still here")
            await _until(got, 1)
            assert got == [b"still here"]
            nursery.cancel_scope.cancel()
    _run(main)
