"""The request memory pool: Kafka's `queued.max.request.bytes`, shared by every connection.

A connection reserves a request's size from the pool once the frame's 4-byte length is read and
before the frame's buffer exists, and gives it back when the request has been handled. While the
pool is spent, connections stop reading (their next request waits in the socket, and TCP flow
control pushes back on the client), so the bytes of requests held at once stay bounded however
many clients send large requests together. Nothing is refused or dropped: a connection waits
until memory comes back.

As Kafka's SimpleMemoryPool in its non-strict mode (the one its socket server uses), a
reservation is granted while any memory is left, even if the request is larger than what is
left: the pool can overshoot by one request (at most socket.request.max.bytes), and a request
larger than the whole pool is still served. Waiting connections are served first come, first
served, so a large request is not starved by a stream of small ones. A size of 0 or less (Kafka's
default, -1) is no pool at all.

Kafka releases a request's buffer once its handler returns, which for an acks=all produce is
after the append and before the replication wait; here it comes back when the handler has
answered, so an acks=all produce holds its bytes through that wait (the handler awaits it)."""

from __future__ import annotations

from collections import deque

import trio


class _Waiter:
    __slots__ = ("size", "event")

    def __init__(self, size: int) -> None:
        self.size = size
        self.event = trio.Event()


class RequestMemoryPool:
    """Bytes of requests held at once, bounded by queued.max.request.bytes (<= 0: unbounded)."""

    def __init__(self, capacity: int) -> None:
        self.bounded = capacity > 0
        self.capacity = capacity
        self._available = capacity
        self._waiters: deque[_Waiter] = deque()

    @property
    def available(self) -> int:
        """Bytes left (negative after a reservation larger than what was left)."""
        return self._available

    def try_reserve(self, size: int) -> bool:
        """Take size bytes now if the pool allows it (always, unbounded); False: await reserve."""
        if not self.bounded or size <= 0:  # an empty frame has no buffer to hold (nor in Kafka)
            return True
        if self._available > 0 and not self._waiters:
            self._available -= size
            return True
        return False

    async def reserve(self, size: int) -> None:
        """Take size bytes, waiting (behind earlier waiters) until any memory is left."""
        if self.try_reserve(size):
            await trio.lowlevel.checkpoint()
            return
        waiter = _Waiter(size)
        self._waiters.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:  # cancelled before a grant (once granted, the wait cannot fail)
            self._waiters.remove(waiter)
            self._grant()  # a waiter behind this one may go now
            raise

    def release(self, size: int) -> None:
        """Give back bytes taken by try_reserve or reserve."""
        if not self.bounded or size <= 0:
            return
        self._available += size
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._available > 0:
            waiter = self._waiters.popleft()
            self._available -= waiter.size
            waiter.event.set()
