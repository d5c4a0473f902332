"""Periodic broker work: retention, flushing and checkpoints. Each runs in the event loop; the
blocking parts (fsync, file deletion) go to a worker thread."""

from __future__ import annotations

import logging

import trio

from wirekafka.broker.state import BrokerState

log = logging.getLogger(__name__)


async def retention_task(state: BrokerState, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    interval = state.config.int("log.retention.check.interval.ms") / 1000
    task_status.started()
    while True:
        await trio.sleep(interval)
        deleted = 0
        for topic in list(state.topics.values()):
            for p in topic.partitions:
                if "delete" in state.topic_config_value(topic, "cleanup.policy"):
                    deleted += p.log.apply_retention()
        if deleted:
            state.write_checkpoints()


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
            await trio.to_thread.run_sync(state.flush_all)
        if since_checkpoint >= checkpoint_every:
            since_checkpoint = 0.0
            await trio.to_thread.run_sync(state.write_checkpoints)
