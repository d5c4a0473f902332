"""LoopTurns, the one way a long loop over partitions gives the event loop a turn: every `every`
items, at once after a costly item, and never raising a cancellation between two items."""

from __future__ import annotations

import trio

from wirekafka.broker.loop_turns import LoopTurns


class TaskSteps(trio.abc.Instrument):
    """Counts task steps: two items handled in one step saw the same count."""

    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


def _steps_of(items: int, every: int, costly: frozenset[int] = frozenset()) -> list[int]:
    """The task step each item was handled in."""
    steps = TaskSteps()
    seen: list[int] = []

    async def main() -> None:
        trio.lowlevel.add_instrument(steps)
        turns = LoopTurns(every)
        for i in range(items):
            if turns.due():
                await turns.turn()
            seen.append(steps.count)
            if i in costly:
                await turns.turn_now()

    trio.run(main)
    return seen


def _runs(seen: list[int]) -> list[int]:
    """The lengths of the runs of items handled in one step."""
    runs = [1]
    for before, after in zip(seen, seen[1:]):
        if after == before:
            runs[-1] += 1
        else:
            runs.append(1)
    return runs


def test_a_turn_every_so_many_items() -> None:
    assert _runs(_steps_of(25, 10)) == [10, 10, 5]
    assert _runs(_steps_of(20, 10)) == [10, 10]  # no turn after the last item: the loop ends there


def test_a_costly_item_ends_its_step_and_the_count_starts_over() -> None:
    assert _runs(_steps_of(25, 10, frozenset({3}))) == [4, 10, 10, 1]


def test_a_cancellation_is_seen_after_the_loop_not_between_items() -> None:
    handled: list[int] = []

    async def main() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()
            turns = LoopTurns(2)
            for i in range(7):
                if turns.due():
                    await turns.turn()
                handled.append(i)
            await trio.lowlevel.checkpoint()  # the loop's next ordinary checkpoint
            handled.append(-1)

    trio.run(main)
    assert handled == list(range(7))
