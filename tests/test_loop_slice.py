"""LoopSlice hands the event loop over once a walk has held it for its slice, and not before;
its turn is not a cancellation point (a walk is never cut between two partitions)."""

from __future__ import annotations

import time

import trio

from testsupport.loop_turns import counting_turns
from wirekafka.broker.loop_slice import LoopSlice


def test_a_turn_yields_only_once_the_slice_is_spent() -> None:
    async def main() -> tuple[int, int]:
        async with counting_turns() as turns:
            walk = LoopSlice(3600.0)
            before = turns.count
            for _ in range(100):
                await walk.turn()
            within = turns.count - before
            spent = LoopSlice(0.001)
            before = turns.count
            for _ in range(5):
                time.sleep(0.002)  # a step that holds the loop longer than the slice
                await spent.turn()
            after = turns.count - before
        return within, after

    within, after = trio.run(main)
    assert within == 0
    assert after >= 4  # a turn per spent slice (trio's batches may place the last after the walk)


def test_a_turn_in_a_cancelled_scope_does_not_raise() -> None:
    async def main() -> bool:
        walk = LoopSlice(0.0)
        with trio.CancelScope() as scope:
            scope.cancel()
            for _ in range(3):
                await walk.turn()
            return True
        return False

    assert trio.run(main)
