"""The nemesis suite's pure parts (faults/): a seed gives one schedule, and the checkers find a
lost, a moved, a reused and a duplicated acknowledgement."""

from __future__ import annotations

from faults.checkers import judge
from faults.schedule import KILL, PAUSE, make_schedule


def test_a_seed_gives_one_schedule_and_pauses_outlast_the_session() -> None:
    first = make_schedule(7, (1, 2, 3), 20, 2.0)
    assert first == make_schedule(7, (1, 2, 3), 20, 2.0)
    assert first != make_schedule(8, (1, 2, 3), 20, 2.0)
    assert {f.kind for f in first} == {KILL, PAUSE} and {f.node for f in first} <= {1, 2, 3}
    assert all(f.hold_s > 2.0 for f in first if f.kind == PAUSE)


def test_the_checkers_find_each_kind_of_loss() -> None:
    acks = [(0, 0, b"a"), (0, 1, b"b"), (1, 0, b"c"), (1, 1, b"d")]
    intact = {(0, 0): b"a", (0, 1): b"b", (1, 0): b"c", (1, 1): b"d"}
    assert judge(acks, intact).ok and judge(acks, intact).acknowledged == 4
    lost = judge(acks, {k: v for k, v in intact.items() if k != (1, 1)})
    assert lost.lost == [(1, 1, b"d")] and not lost.ok
    moved = judge(acks, {**intact, (0, 1): b"x", (0, 2): b"b"})  # b is there, but not where it was acknowledged
    assert moved.lost == [(0, 1, b"b")]
    reused = judge(acks + [(0, 1, b"e")], intact)
    assert reused.reused == [(0, 1)]
    duplicated = judge(acks, {**intact, (1, 2): b"a"})
    assert duplicated.duplicated == [b"a"] and duplicated.lost == []
