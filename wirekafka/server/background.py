"""Periodic broker work: retention, flushing and checkpoints.

Decisions and state changes happen on the event loop (which segments go, what a flush covers, the
offsets to checkpoint); the file work — segment deletion, fsync, writing checkpoint files — runs in
a worker thread on what the loop handed over, so a slow disk never stalls other connections."""

from __future__ import annotations

import logging

import trio

from wirekafka.broker.partition import Partition
from wirekafka.broker.state import BrokerState

log = logging.getLogger(__name__)


async def retention_task(state: BrokerState, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    interval = state.config.int("log.retention.check.interval.ms") / 1000
    task_status.started()
    while True:
        await trio.sleep(interval)
        doomed = []
        for topic in state.metadata.all_topics():
            if "delete" in state.metadata.topic_config_value(topic, "cleanup.policy"):
                for p in topic.partitions:
                    doomed.extend(p.apply_retention())
        if doomed:
            await trio.to_thread.run_sync(Partition.delete_segment_files, doomed)
            await state.checkpoint()


async def flush_task(state: BrokerState, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Flush logs whose flush.ms elapsed and write the checkpoint files every
    log.flush.offset.checkpoint.interval.ms."""
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
        if since_flush >= flush_every:
            since_flush = 0.0
            for p in list(state.metadata.iter_partitions()):
                await state.replicas.flush(p)
        if since_checkpoint >= checkpoint_every:
            since_checkpoint = 0.0
            await state.checkpoint()
