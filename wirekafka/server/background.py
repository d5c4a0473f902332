"""Periodic broker work: retention, flushing, checkpoints, producer snapshots and producer expiry.

Decisions and state changes happen on the event loop (which segments go, what a flush covers, the
offsets to checkpoint, the producer state a snapshot holds); the file work — segment deletion,
fsync, writing checkpoint and snapshot files — runs in a worker thread on what the loop handed
over, so a slow disk never stalls other connections."""

from __future__ import annotations

import logging

import trio

from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.state import BrokerState

log = logging.getLogger(__name__)

#: partitions a tick looks at between two turns of the loop: each costs a few checks (a snapshot
#: due, an epoch checkpoint changed, a roll to flush), some 3 us, and a broker of a 10,000-partition
#: cluster holds them all (one unbroken pass took 25-140 ms of CPU a tick, measured at N=10,000)
TICK_CHUNK = 500


async def retention_task(state: BrokerState, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    interval = state.config.int("log.retention.check.interval.ms") / 1000
    task_status.started()
    while True:
        await trio.sleep(interval)
        # Kafka's deleteOldSegments: time and size retention under the delete policy only; a
        # compact-only topic still drops segments wholly below its log start offset. The policy
        # is looked up once per topic (per partition, 10,000 lookups took 70 ms of CPU).
        targets = []
        for topic in state.metadata.all_topics():
            delete_policy = "delete" in state.metadata.topic_config_value(topic, "cleanup.policy")
            targets += [(p, delete_policy) for p in topic.local_partitions()]
        if await retention_pass(targets):
            await state.checkpoint()


async def retention_pass(targets: list[tuple[Partition, bool]]) -> bool:
    """Apply retention to each (partition, whether its cleanup.policy has delete); True if any
    segment went. Each partition's decision is on the loop and may roll a new segment (three files
    created) when all of it expired: the loop is given back after each partition that changed, so
    a pass over thousands of partitions never holds it for more than one (and TICK_CHUNK of the
    others: each is a look at its oldest segment); the detached segments' files are deleted in
    worker threads."""
    doomed = []
    turns = LoopTurns(TICK_CHUNK)
    for p, delete_policy in targets:
        if turns.due():
            await turns.turn()
        segments = p.apply_retention(delete_policy)
        if segments:
            doomed.append((p, segments))
            await turns.turn_now()
    for p, segments in doomed:
        await p.files.delete_segments(segments)
    return bool(doomed)


async def flush_task(state: BrokerState, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Flush logs whose flush.ms elapsed, write the checkpoint files every
    log.flush.offset.checkpoint.interval.ms, and on every tick (at most a second) the producer
    snapshots partitions took at segment rolls, the deletions of those below a moved log start,
    the leader-epoch checkpoints that changed, and the flush of the segments rolls closed (Kafka
    flushes up to each new segment, so the recovery point follows the rolls and a crash re-checks
    only the active segments). A crash before a snapshot is written costs only a longer replay at
    the next start; before an epoch checkpoint, nothing (see storage/epoch_cache.py).
    Each pass over the partitions gives the loop a turn every TICK_CHUNK of them."""
    checkpoint_every = state.config.int("log.flush.offset.checkpoint.interval.ms") / 1000
    flush_every = state.config.flush_interval_ms / 1000
    tick = min(checkpoint_every, flush_every, 1.0)
    task_status.started()
    since_checkpoint = 0.0
    since_flush = 0.0
    while True:
        await trio.sleep(tick)
        since_checkpoint += tick
        since_flush += tick
        partitions = list(state.metadata.iter_partitions())
        await write_producer_snapshots(partitions)
        await state.replicas.write_epoch_checkpoints(partitions)
        turns = LoopTurns(TICK_CHUNK)
        for p in partitions:
            if turns.due():
                await turns.turn()
            await state.replicas.flush_rolled(p)
        if since_flush >= flush_every:
            since_flush = 0.0
            for p in partitions:
                await state.replicas.flush(p)
        if since_checkpoint >= checkpoint_every:
            since_checkpoint = 0.0
            await state.checkpoint()


async def write_producer_snapshots(partitions: list[Partition]) -> None:
    """Run each partition's pending snapshot work in a worker thread."""
    turns = LoopTurns(TICK_CHUNK)
    for p in partitions:
        if turns.due():
            await turns.turn()
        work = p.producer_state.work()
        if work is not None:
            await trio.to_thread.run_sync(work.run)


async def producer_expiration_task(state: BrokerState, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Kafka's PeriodicProducerExpirationCheck: every producer.id.expiration.check.interval.ms,
    forget producers idle for producer.id.expiration.ms (in memory only: the next snapshot
    leaves them out)."""
    interval = state.config.int("producer.id.expiration.check.interval.ms") / 1000
    task_status.started()
    while True:
        await trio.sleep(interval)
        turns = LoopTurns(TICK_CHUNK)
        for p in list(state.metadata.iter_partitions()):
            if turns.due():
                await turns.turn()
            p.remove_expired_producers()
