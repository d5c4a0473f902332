"""LoopSlice: lets other tasks run while one long walk over partitions holds the event loop.

A restarted follower's first fetch names thousands of partitions, and the leader's answer to it
carries them all: reading or appending them is thousands of steps with no await among them, and
the event loop (timers, other connections, ZooKeeper's notifications) waited for all of them.
A walk that checks a LoopSlice between its steps hands the loop over once it has held it for
`seconds`, then goes on where it was."""

from __future__ import annotations

import time

import trio

# how long one walk over a fetch's partitions (a leader's reads, a follower's appends) may hold
# the event loop before other tasks get a turn
PARTITION_WALK_SLICE_S = 0.005


class LoopSlice:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.perf_counter() + seconds

    async def turn(self) -> None:
        """A trio checkpoint, if this walk's slice is spent (not a cancellation point: a walk cut
        in the middle would leave half its partitions handled)."""
        if time.perf_counter() >= self._end:
            await trio.lowlevel.cancel_shielded_checkpoint()
            self._end = time.perf_counter() + self.seconds
