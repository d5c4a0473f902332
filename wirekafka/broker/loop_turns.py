"""The event loop's turns inside a long loop over partitions.

A request or a round that visits thousands of partitions (a follower's fetch of every partition
it follows, an ISR sweep, a full metadata apply, an AlterPartition of 10,000 changes) would hold
the trio loop for tens or hundreds of milliseconds in one task step; every other connection and
timer waits that long. Each such loop counts its items through one LoopTurns and gives the loop
a turn every so many.

The turn is cancel-shielded: a cancellation is seen at the task's next ordinary checkpoint, never
between two items, so a loop that owns regions it read or proposals it must settle never stops
half way through them.
"""

from __future__ import annotations

import trio


class LoopTurns:
    """Counts the items of one loop; once `every` items have started since the last turn, the
    next is due a turn of the event loop before it starts. Counting is synchronous, so a loop
    on the Fetch path pays a compare per partition, not a coroutine:
    `if turns.due(): await turns.turn()` before each item."""

    __slots__ = ("every", "_left")

    def __init__(self, every: int) -> None:
        self.every = every
        self._left = every

    def due(self) -> bool:
        """Call before each item (it is counted): True if the loop is due a turn first."""
        if self._left == 0:
            self._left = self.every - 1  # this item is the first of the next run
            return True
        self._left -= 1
        return False

    async def turn(self) -> None:
        """The loop's turn, cancel-shielded."""
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def turn_now(self) -> None:
        """A turn now (after an item known to be costly), and the count starts over."""
        await self.turn()
        self._left = self.every
