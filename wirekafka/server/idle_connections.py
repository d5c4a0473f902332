"""Connections waiting for their next request: Kafka's idle expiry (connections.max.idle.ms) and
the shutdown that closes them at once.

Kafka's selector keeps its connections in an LRU by last activity and closes the oldest once it
has been quiet for connections.max.idle.ms. This does the same with one insertion-ordered dict and
one task, rather than a deadline cancel scope per wait: such a scope cost about 4 us per request
on the loop and some 600 bytes per idle connection. A plain connection parks on its socket with
trio.lowlevel.wait_readable, and trio.lowlevel.notify_closing on that socket wakes it (the wait
raises ClosedResourceError); a TLS connection waits in a cancel scope without a deadline."""

from __future__ import annotations

import logging
import math
import os

import trio

log = logging.getLogger(__name__)

RECEIVE_SIZE = 1 << 16


class IdleConnections:
    """What a connection waits in between requests. Every connection shares one timeout (the
    static connections.max.idle.ms), so the dict's insertion order is also its deadline order
    and the expiry task only ever looks at its oldest entry."""

    def __init__(self, timeout_s: float) -> None:
        # negative: no idle expiry, as Kafka's selector has none for a negative value
        self.timeout_s = timeout_s if timeout_s >= 0 else math.inf
        self.shutting_down = False
        # what wakes a waiting connection -> when it began waiting (trio clock), oldest first:
        # its socket (plain TCP) or a cancel scope (TLS)
        self._waiting: dict[trio.socket.SocketType | trio.CancelScope, float] = {}

    def shut_down(self) -> None:
        """Close every waiting connection now; connections in the middle of a request finish it
        and close when they would wait again."""
        self.shutting_down = True
        for waiter in self._waiting:
            _wake(waiter)
        self._waiting.clear()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire connections that have waited longer than the timeout, as they come due."""
        task_status.started()
        while True:
            now = trio.current_time()
            while self._waiting:
                waiter, since = next(iter(self._waiting.items()))
                if since + self.timeout_s > now:
                    break
                del self._waiting[waiter]
                _wake(waiter)
            # a connection that begins waiting after this point is due no sooner than a timeout away
            oldest = next(iter(self._waiting.values()), now)
            await trio.sleep_until(oldest + self.timeout_s)

    async def receive(self, channel: trio.abc.Stream, sock: trio.socket.SocketType) -> bytes | bytearray | None:
        """The next bytes from channel (whose socket is sock): b"" at end of stream, or when
        shutdown closed the wait; None when nothing came within the timeout."""
        if self.shutting_down:
            return b""
        if not isinstance(channel, trio.SocketStream):
            return await self._receive_tls(channel)
        try:  # bytes already there: no wait and no registration
            data = _read(sock)
        except BlockingIOError:
            pass
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()  # other connections get their turn
            return data
        while True:
            self._waiting[sock] = trio.current_time()
            try:
                await trio.lowlevel.wait_readable(sock)
            except trio.ClosedResourceError:
                if sock in self._waiting:  # not this class's doing
                    raise
            finally:
                reaped = self._waiting.pop(sock, None) is None
            if reaped:
                return self._reaped_answer()
            try:
                return _read(sock)
            except BlockingIOError:  # woken without data: wait again
                continue

    async def _receive_tls(self, channel: trio.abc.Stream) -> bytes | bytearray | None:
        """TLS: decrypted bytes may already be buffered, and a read may write first (TLS 1.3
        session tickets), a yield during which no task waits on the socket for notify_closing to
        wake; so this wait is a cancel scope, which the expiry or shutdown cancels."""
        scope = trio.CancelScope()
        self._waiting[scope] = trio.current_time()
        data = b""
        try:
            with scope:
                data = await channel.receive_some(RECEIVE_SIZE)
        finally:
            reaped = self._waiting.pop(scope, None) is None
        return self._reaped_answer() if reaped else data

    def _reaped_answer(self) -> bytes | None:
        """What a wait taken by the expiry task or by shutdown returns."""
        return b"" if self.shutting_down else None


def _wake(waiter: trio.socket.SocketType | trio.CancelScope) -> None:
    if isinstance(waiter, trio.CancelScope):
        waiter.cancel()
    else:
        trio.lowlevel.notify_closing(waiter)


def _read(sock: trio.socket.SocketType) -> bytes:
    """One non-blocking read; b"" at end of stream or when the connection failed (a reset is
    how many clients hang up). BlockingIOError when nothing is there yet."""
    try:
        return os.read(sock.fileno(), RECEIVE_SIZE)
    except BlockingIOError:
        raise
    except OSError as exc:
        log.debug("receive failed: %s", exc)
        return b""
