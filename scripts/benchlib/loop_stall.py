"""Loop stalls: how late a 1 ms timer on wirekafka's event loop fires while wirekafka's own code
changes the leadership of many partitions and runs a retention pass over them (issue 34: no file
work on the loop).

This runs in-process, on the product's classes (Partition, ReplicaManager's checkpoint writes,
PartitionFiles' segment deletion) in one trio loop beside the timer, with no broker around them:
it measures the loop's share of those two operations, not a cluster's failover (the ZooKeeper and
network work of a real leadership change is not in it). Kafka has no single event loop, so the row
has no Kafka column.

- leadership: every partition, a follower in epoch 1 with 20 batches, becomes leader in epoch 2
  (what ClusterView applies from a LeaderAndIsr change), then the flush task's tick writes the
  leader-epoch checkpoints;
- retention: every partition's records are past retention.ms; retention_task's pass detaches its
  segments (rolling a new active one first, as Kafka does when a whole log expires) and deletes
  their files.

The partitions stand for those a broker opened at start-up, so they are frozen out of the cyclic
collector as `wirekafka serve` freezes its start-up heap (server/gc_policy.py; unfrozen after the
row): without it, the one full collection each operation triggers walks them all, 150-240 ms.
"""

from __future__ import annotations

import gc
import logging
import math
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, cast

import trio

from wirekafka.broker.metadata.cluster_metadata import ClusterMetadata
from wirekafka.broker.quotas.replication_quota import ReplicationQuotas
from wirekafka.broker.replica.log_dir_failure import LogDirFailureChannel
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replica.replica_manager import ReplicaManager
from wirekafka.protocol import records
from wirekafka.server.background import retention_pass
from wirekafka.server.gc_policy import freeze_startup_heap
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

log = logging.getLogger(__name__)

TIMER_S = 0.001
BATCHES = 20
RETENTION_MS = 60_000
T0_MS = 1_700_000_000_000


@dataclass(frozen=True)
class StallFigures:
    operation: str
    partitions: int
    seconds: float        # the operation's wall time
    samples: int          # timer wake-ups during it
    p99_ms: float         # lateness of the 1 ms timer
    max_ms: float


def run(partitions: int, workdir: Path | None = None) -> list[StallFigures]:
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        try:
            return trio.run(_measure, Path(tmp), partitions)
        finally:
            gc.unfreeze()  # the bench's other rows run in this process


async def _measure(directory: Path, count: int) -> list[StallFigures]:
    clock_ms = [T0_MS]
    replicas = _partitions(directory, count, lambda: clock_ms[0] / 1000)
    freeze_startup_heap()  # as the broker does once start-up opened its partitions
    manager = ReplicaManager(cast(ClusterMetadata, None), lambda: clock_ms[0], cast(ReplicationQuotas, None),
                             LogDirFailureChannel([directory]))

    async def leadership() -> None:
        for p in replicas:  # as ClusterView.apply does: the loop is given back after each new role
            p.make_leader(2, (1, 2, 3), frozenset((1,)))  # the others out of sync: the HW is the log end
            await trio.sleep(0)
        await manager.write_epoch_checkpoints(replicas)  # the flush task's next tick

    async def retention() -> None:
        clock_ms[0] = T0_MS + RETENTION_MS + 1000
        await retention_pass([(p, True) for p in replicas])  # retention_task's pass
        await manager.write_epoch_checkpoints(replicas)

    figures = [await _timed("leadership change", count, leadership),
               await _timed("retention pass", count, retention)]
    for p in replicas:
        p.files.log.close()
    return figures


def _partitions(directory: Path, count: int, clock: Callable[[], float]) -> list[Partition]:
    """count followers in epoch 1, each with two segments of BATCHES / 2 batches (the first one
    closed, its records older than retention.ms by the time retention runs)."""
    config = LogConfig(segment_bytes=BATCHES // 2 * 110, retention_ms=RETENTION_MS)
    out = []
    for i in range(count):
        d = directory / f"t-{i}"
        p = Partition("t", i, PartitionLog(d, config, clean_shutdown=True, clock=clock),
                      LeaderEpochCache(d / "leader-epoch-checkpoint"), node_id=1, lead=False, clock=clock)
        p.make_follower(1, 2, (1, 2, 3), frozenset((1, 2, 3)))
        for offset in range(BATCHES):
            batch = bytearray(records.build_batch([(None, b"v" * 30, T0_MS)], base_offset=offset))
            struct.pack_into(">i", batch, 12, 1)  # partitionLeaderEpoch, outside the CRC
            p.append_replicated(bytes(batch), records.check_integrity(bytes(batch)))
        p.epochs.flush()
        p.files.flush()
        out.append(p)
    return out


async def _timed(operation: str, count: int, work: Callable[[], Awaitable[None]]) -> StallFigures:
    lateness: list[float] = []
    done = trio.Event()

    async def timer() -> None:
        while not done.is_set():
            due = trio.current_time() + TIMER_S
            await trio.sleep(TIMER_S)
            lateness.append(trio.current_time() - due)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(timer)
        await trio.sleep(0.05)  # the timer runs before the work starts
        lateness.clear()
        started = time.monotonic()
        await work()
        seconds = time.monotonic() - started
        await trio.sleep(TIMER_S * 2)  # the wake-up after the last stall is counted
        done.set()
    ms = sorted(x * 1000 for x in lateness) or [0.0]
    p99 = ms[min(len(ms) - 1, math.ceil(0.99 * len(ms)) - 1)]  # nearest rank
    log.info("%s over %d partitions: %.2f s, timer p99 %.1f ms, max %.1f ms (%d samples)",
             operation, count, seconds, p99, ms[-1], len(ms))
    return StallFigures(operation, count, seconds, len(ms), p99, ms[-1])


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=3000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for f in run(args.partitions):
        log.info("| %s | %d | %.2f | %.1f | %.1f |", f.operation, f.partitions, f.seconds, f.p99_ms, f.max_ms)


if __name__ == "__main__":
    main()
