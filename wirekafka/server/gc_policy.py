"""The broker process's garbage-collector policy: what start-up loaded is frozen out of the
cyclic collector.

CPython's cyclic collector (3.11) walks every tracked object of the oldest generation in one go
when it runs a full collection, on whichever thread allocated last: on the event loop, a pause
that grows with the heap. A broker's heap is mostly its partitions (about 70 tracked objects
each: the log, its segments and their indexes, locks, producer and epoch state), so with 3,000
partitions one full collection took 150-240 ms: the worst lateness of a 1 ms timer in
scripts/bench.py's loop-stall row, where the p99 was under 2 ms (measured with gc.callbacks:
the longest stall of each operation was its one generation-2 collection).

gc.freeze() moves every object alive at that moment into the permanent generation, which
collections skip: after it, a full collection walks only what was allocated since start-up.

The trade: an object frozen here that later becomes unreachable inside a reference cycle (a
partition loaded at start-up, then deleted or moved to another broker) is never freed, nor is
what it still refers to. That memory is what the partition held when it went, once per partition
that existed at start-up, never growing with time or traffic; files are closed explicitly, never
by the collector, so no descriptor or deleted file is held. A segment is not in a cycle:
retention frees it by reference counting, frozen or not.

Partitions opened later (topics created, replicas moved here) are frozen the same way, once
FREEZE_STEP of them were opened since the last freeze (keep_heap_frozen): at 10,000
partitions created after start-up, each full collection walked about 570,000 objects, 180-335 ms
on whichever thread allocated (measured with gc.callbacks in-process), and a cluster's busy
brokers run one every few seconds; frozen, the same collection took 1.7 ms. So are those a
cluster broker opens while it starts (its first reconcile opens every replica it holds, for
tens of seconds at 10,000 partitions, its listeners still closed but its replicas already
fetching): unfrozen until the start-up freeze, its full collections grew to 400-760 ms apiece
(measured at a restart in the cluster-scale bench). Such a freeze first collects the young
generations (cheap: only what is new), so the garbage it can keep for ever is what died in a
cycle after reaching the oldest generation and before the freeze, once per FREEZE_STEP openings.

What reaches the oldest generation later (the states read from ZooKeeper, fetch sessions,
follower progress: tens of thousands of objects per thousand partitions, replaced as they change)
made each full collection of a cluster's broker take 45-120 ms of CPU, every few seconds while
leaders moved, and 150-350 ms of wall time on the loop whichever thread ran it (measured with
gc.callbacks at 3,000 partitions). So a full collection that found no garbage at all is followed
by a freeze too (keep_heap_frozen): a heap that makes no cyclic garbage loses
nothing to a freeze, and the next full collection walks only what came since. One that found
garbage is not: the heap still makes cycles, and what it froze could die in one.

Process-wide, so only for a process the broker owns (`wirekafka serve`, the embedded broker's
child process), never for a broker embedded in a thread of its host's process.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Callable

import trio

log = logging.getLogger(__name__)

FREEZE_STEP = 500  # partitions opened since the last freeze that make the next one
FREEZE_CHECK_S = 1.0  # how often the count is looked at


def freeze_startup_heap() -> None:
    """Collect the garbage start-up left (so none of it is kept forever), then freeze what is
    alive. The log gives the pause it took on the loop (a full collection of the start-up heap:
    every partition a restarted cluster broker holds is open by then), not the frozen objects'
    count (gc.get_freeze_count() walks every one of them again)."""
    started = time.perf_counter()
    collected = gc.collect()
    gc.freeze()
    log.info("froze the heap alive after start-up in %.0f ms (%d objects of start-up garbage collected first): "
             "the cyclic collector skips it", (time.perf_counter() - started) * 1000, collected)


class _FullCollections:
    """Told by the collector (gc.callbacks, on whichever thread collected) how each full
    collection ended: `clean` while the last one found nothing to collect."""

    def __init__(self) -> None:
        self.clean = False

    def observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            self.clean = info["collected"] == 0 and info["uncollectable"] == 0


async def keep_heap_frozen(opened: Callable[[], int], *,
                           task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Both later freezes, looked at every FREEZE_CHECK_S (opened(): partitions opened so far).
    - Openings: once FREEZE_STEP or more partitions were opened since the last freeze, the young
      generations are collected and the heap frozen, whether openings go on or not: a full
      collection never walks more than the partitions of about one step (waiting for a burst
      to pause let a restart's 10,000 openings grow every full collection for 50 s).
    - Clean collections: when the last full collection since the previous check collected
      nothing, the heap is frozen as it is.
    A freeze splices lists and costs no walk; its log does not count the frozen objects
    (gc.get_freeze_count() walks every one of them: 33-45 ms at 3,000 partitions)."""
    collections = _FullCollections()
    gc.callbacks.append(collections.observe)
    try:
        task_status.started()
        frozen_at = opened()
        while True:
            await trio.sleep(FREEZE_CHECK_S)
            now = opened()
            if now - frozen_at >= FREEZE_STEP:
                gc.collect(1)
                gc.freeze()
                log.info("froze the heap after %d partitions were opened: the cyclic collector skips them",
                         now - frozen_at)
                frozen_at = now
            elif collections.clean:
                gc.freeze()
                log.debug("a full collection found no garbage: froze the heap")
            collections.clean = False
    finally:
        gc.callbacks.remove(collections.observe)
