"""The request memory pool (queued.max.request.bytes): Kafka's non-strict SimpleMemoryPool rules,
first come first served, cancellation, and the frame size known before the frame's buffer."""

from __future__ import annotations

import mmap
import struct

import pytest
import trio
import trio.testing

from wirekafka.config.loader import build_config
from wirekafka.protocol.framing import FrameError, FrameReader, frame
from wirekafka.server.memory_pool import RequestMemoryPool
from wirekafka.startup_errors import ConfigError


def test_unbounded_pool_never_waits() -> None:
    pool = RequestMemoryPool(-1)
    assert not pool.bounded
    assert all(pool.try_reserve(1 << 30) for _ in range(10))
    pool.release(1 << 30)  # a no-op, as reserving was
    assert not RequestMemoryPool(0).bounded  # 0 is no pool either, as in Kafka


def test_reservation_is_granted_while_any_memory_is_left() -> None:
    pool = RequestMemoryPool(100)
    assert pool.try_reserve(60)
    assert pool.try_reserve(60)  # 40 left: granted, the pool overshoots by one request
    assert pool.available == -20
    assert not pool.try_reserve(1)
    assert pool.try_reserve(0)  # an empty frame holds nothing, so never waits
    pool.release(60)
    assert pool.available == 40 and pool.try_reserve(500)  # larger than the whole pool: still served
    pool.release(500)
    pool.release(60)
    assert pool.available == 100


def test_waiters_go_in_order_once_memory_comes_back() -> None:
    async def main() -> None:
        pool = RequestMemoryPool(10)
        assert pool.try_reserve(10)
        order: list[str] = []

        async def want(name: str, size: int) -> None:
            await pool.reserve(size)
            order.append(name)

        async with trio.open_nursery() as nursery:
            for name, size in (("big", 30), ("small", 1), ("later", 1)):
                nursery.start_soon(want, name, size)
                await trio.testing.wait_all_tasks_blocked()
            assert order == []
            assert not pool.try_reserve(1)  # waiters first: no jumping the queue
            pool.release(10)  # 10 left: "big", first in line, takes 30 (-20); "small" would fit but waits
            await trio.testing.wait_all_tasks_blocked()
            assert order == ["big"] and pool.available == -20
            pool.release(30)  # 10 left: both small ones fit
            await trio.testing.wait_all_tasks_blocked()
            assert order[0] == "big" and set(order[1:]) == {"small", "later"} and pool.available == 8
    trio.run(main)


def test_a_waiter_cancelled_before_its_grant_lets_the_next_one_go() -> None:
    async def main() -> None:
        pool = RequestMemoryPool(10)
        assert pool.try_reserve(10)
        got: list[str] = []
        first = trio.CancelScope()

        async def want(name: str, scope: trio.CancelScope | None) -> None:
            with scope or trio.CancelScope():
                await pool.reserve(4)
                got.append(name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(want, "first", first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(want, "second", None)
            await trio.testing.wait_all_tasks_blocked()
            first.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            pool.release(10)
        assert got == ["second"] and pool.available == 6

    trio.run(main)


def test_the_frame_size_is_known_before_its_buffer_exists() -> None:
    reader = FrameReader(1 << 20, large_frame=1000)
    reader.feed(frame(b"x" * 5000)[:3])
    assert reader.next_frame_size() is None
    reader.feed(struct.pack(">i", 5000)[3:] + b"x" * 10)
    assert reader.next_frame_size() == 5000
    assert reader.large_frame_target() is None  # nothing allocated until next_frame is asked
    assert reader.next_frame() is None
    target = reader.large_frame_target()
    assert target is not None and len(target) == 4990
    assert reader.next_frame_size() == 5000  # still the frame being received
    too_big = FrameReader(100)
    too_big.feed(struct.pack(">i", 101))
    with pytest.raises(FrameError):
        too_big.next_frame_size()


def test_a_huge_frame_is_received_into_a_mapping_faulted_in_as_it_arrives() -> None:
    payload = bytes(range(256)) * 40
    reader = FrameReader(1 << 20, large_frame=1000, huge_frame=5000)
    wire = frame(payload) + frame(b"after")
    reader.feed(wire[:700])
    assert reader.next_frame() is None
    pos = 700
    while (target := reader.large_frame_target()) is not None:
        n = min(len(target), 3000)
        target[:n] = wire[pos:pos + n]
        target.release()
        reader.large_frame_received(n)
        pos += n
        if (got := reader.next_frame()) is not None:
            assert isinstance(got, mmap.mmap) and got[:] == payload
            break
    reader.feed(wire[pos:])
    assert reader.next_frame() == b"after"


def test_a_pool_smaller_than_the_largest_request_stops_start_up() -> None:
    """Kafka's KafkaConfig requirement: a bounded pool must hold at least one request of
    socket.request.max.bytes; -1 and 0 leave it unbounded."""
    base = {"log.dirs": "/tmp/unused", "socket.request.max.bytes": "1048576"}
    with pytest.raises(ConfigError, match="queued.max.request.bytes must be larger or equal to "
                                          "socket.request.max.bytes"):
        build_config({**base, "queued.max.request.bytes": "1048575"})
    for allowed in ("-1", "0", "1048576", "5000000"):
        assert build_config({**base, "queued.max.request.bytes": allowed}).int("queued.max.request.bytes") == int(allowed)
