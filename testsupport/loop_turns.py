"""How often other tasks got the event loop: a bystander task that counts its turns, for tests
of code that must hand the loop over during long walks (wirekafka/broker/loop_slice.py)."""

from __future__ import annotations

import contextlib
from typing import AsyncIterator

import trio


class Turns:
    def __init__(self) -> None:
        self.count = 0


@contextlib.asynccontextmanager
async def counting_turns() -> AsyncIterator[Turns]:
    """A Turns whose count grows by one every time the bystander runs; it is running (and has
    had its first turn) when the block starts, and is stopped when it ends."""
    turns = Turns()

    async def bystander() -> None:
        while True:
            turns.count += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(bystander)
        await trio.lowlevel.checkpoint()
        yield turns
        nursery.cancel_scope.cancel()
