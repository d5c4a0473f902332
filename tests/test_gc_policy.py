"""The broker's garbage-collector policy (server/gc_policy.py): what start-up left alive is frozen
out of the cyclic collector, the garbage it left is collected first, and what comes later is
still collected.

The policy is process-wide, so the freezing cases run in interpreters of their own."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from testsupport.broker_process import BrokerProcess

FREEZE = """
import gc, weakref
from wirekafka.server.gc_policy import freeze_startup_heap

class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the cyclic collector frees it

gc.disable()  # nothing collected before the policy runs
startup_garbage = Node()
gone_at_freeze = weakref.ref(startup_garbage)
del startup_garbage
loaded = [Node() for _ in range(50_000)]  # what start-up opened and keeps
tracked_before = len(gc.get_objects())
freeze_startup_heap()
gc.enable()

assert gone_at_freeze() is None, "start-up's garbage was frozen instead of collected"
assert gc.get_freeze_count() >= 50_000
assert not any(o is loaded[0] for o in gc.get_objects()), "a loaded object is still walked"
assert len(gc.get_objects()) < tracked_before // 10, "a full collection still walks the start-up heap"
later = Node()
gone_later = weakref.ref(later)
del later
gc.collect()
assert gone_later() is None, "garbage made after start-up is no longer collected"
print("ok")
"""


def _passes(script: str) -> None:
    """Run script in an interpreter of its own (the policy is process-wide): it must print ok."""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok"]


def test_freezing_collects_startup_garbage_and_skips_what_is_alive() -> None:
    _passes(FREEZE)


def test_wirekafka_serve_freezes_its_heap_once_started(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data") as broker:
        log = broker.log_tail(400)
    assert "froze the heap alive after start-up in" in log, log
    assert log.index("froze the heap alive after start-up in") < log.index("listening on"), "frozen after serving began"


def test_an_embedded_broker_in_a_thread_leaves_its_hosts_collector_alone() -> None:
    """A broker in a thread of the host's process never freezes: the host's objects are not its own."""
    from wirekafka.embedded import Broker

    with Broker():
        assert gc.get_freeze_count() == 0


OPENED_LATER = """
import gc, trio
from trio.testing import MockClock
from wirekafka.server import gc_policy

class Node:
    def __init__(self):
        self.me = self

opened = [0]
kept = []
gc.disable()  # only the collections this test makes: an automatic one could be clean and freeze

async def main():
    async with trio.open_nursery() as nursery:
        await nursery.start(gc_policy.keep_heap_frozen, lambda: opened[0])
        kept.extend(Node() for _ in range(1000))
        opened[0] += gc_policy.FREEZE_STEP - 1  # short of a step: nothing frozen
        await trio.sleep(5 * gc_policy.FREEZE_CHECK_S)
        assert gc.get_freeze_count() == 0, "frozen before a step of partitions was opened"
        opened[0] += 1
        await trio.sleep(5 * gc_policy.FREEZE_CHECK_S)
        first = gc.get_freeze_count()
        assert first >= 1000, "a step of partitions opened and settled, not frozen"
        assert not any(o is kept[0] for o in gc.get_objects()), "an opened partition's object is still walked"
        later = [Node() for _ in range(1000)]
        for _ in range(gc_policy.FREEZE_STEP // 100 + 2):  # openings that never settle for a check
            opened[0] += 100
            await trio.sleep(gc_policy.FREEZE_CHECK_S / 2)
        assert gc.get_freeze_count() > first, "a step of openings that go on was not frozen"
        assert not any(o is later[0] for o in gc.get_objects())
        nursery.cancel_scope.cancel()

trio.run(main, clock=MockClock(autojump_threshold=0))
print("ok")
"""


def test_partitions_opened_later_are_frozen_at_every_step_of_them() -> None:
    _passes(OPENED_LATER)


AFTER_CLEAN = """
import gc, trio
from trio.testing import MockClock
from wirekafka.server import gc_policy

class Node:
    def __init__(self):
        self.me = self

gc.disable()  # only the collections this test makes: an automatic one could be clean meanwhile

async def main():
    async with trio.open_nursery() as nursery:
        await nursery.start(gc_policy.keep_heap_frozen, lambda: 0)
        kept = [Node() for _ in range(1000)]
        await trio.sleep(3 * gc_policy.FREEZE_CHECK_S)
        assert gc.get_freeze_count() == 0, "frozen with no full collection since"
        while gc.collect():  # until a full collection finds nothing (start-up and trio left some)
            pass
        await trio.sleep(2 * gc_policy.FREEZE_CHECK_S)
        first = gc.get_freeze_count()
        assert first >= 1000, "a clean full collection was not followed by a freeze"
        assert not any(o is kept[0] for o in gc.get_objects()), "a kept object is still walked"
        later = [Node() for _ in range(1000)]
        dead = Node()
        del dead  # cyclic garbage: the heap still makes cycles
        assert gc.collect() >= 1
        await trio.sleep(3 * gc_policy.FREEZE_CHECK_S)
        # frozen objects freed since only lower the count: a freeze would have raised it by 1000
        assert gc.get_freeze_count() <= first, "frozen after a collection that found garbage"
        assert any(o is later[0] for o in gc.get_objects()), "frozen after a collection that found garbage"

        nursery.cancel_scope.cancel()
    assert gc_policy._FullCollections.observe not in [getattr(c, "__func__", None) for c in gc.callbacks]

trio.run(main, clock=MockClock(autojump_threshold=0))
print("ok")
"""


def test_a_full_collection_that_found_no_garbage_is_followed_by_a_freeze() -> None:
    _passes(AFTER_CLEAN)
