"""The broker's log cleaner (Kafka's LogCleaner and LogCleanerManager): picks the dirtiest compacted
log, runs a cleaning round on it in worker threads, swaps the cleaned segments in on the event
loop, and keeps each log's first dirty offset in Kafka's `cleaner-offset-checkpoint` file.

- log.cleaner.threads cleaner tasks, each with an offset map of
  log.cleaner.dedupe.buffer.size / threads bytes (load factor log.cleaner.io.buffer.load.factor);
  one throttler for all at log.cleaner.io.max.bytes.per.second; a task that found nothing to
  clean sleeps log.cleaner.backoff.ms. log.cleaner.enable=false turns it off.
- A log is picked when its dirty ratio exceeds min.cleanable.dirty.ratio or a dirty segment is
  older than max.compaction.lag.ms (see wirekafka.storage.cleaner); the dirtiest first; a log is
  cleaned by one task at a time.
- Each cleaned group is swapped in as soon as it is written, so a crash loses at most the group
  in progress. A log that changed under the round (deleted, retention took its segments) ends the
  round; the next one starts from the checkpoint. A round that fails unexpectedly marks the log
  uncleanable until restart, as Kafka does, and is logged.

The decisions (which log, the swap, the checkpoint values) happen on the event loop; reading and
writing segments, and the checkpoint file, in worker threads."""

from __future__ import annotations

import logging

import trio

from wirekafka.broker.partition import Partition
from wirekafka.storage import checkpoint
from wirekafka.storage.cleaner import CHECKPOINT_FILE, CleanableRange, CleaningAborted, OffsetMap, Throttler

log = logging.getLogger(__name__)


class LogCleaner:
    def __init__(self, state) -> None:  # state: BrokerState (not imported: it owns this object)
        cfg = state.config
        self.state = state
        self.enabled = cfg.bool("log.cleaner.enable")
        self.threads = max(cfg.int("log.cleaner.threads"), 1)
        self.backoff_s = cfg.int("log.cleaner.backoff.ms") / 1000
        self.map_bytes = cfg.int("log.cleaner.dedupe.buffer.size") // self.threads
        self.load_factor = float(cfg["log.cleaner.io.buffer.load.factor"])
        self.throttler = Throttler(float(cfg["log.cleaner.io.max.bytes.per.second"]))
        self.path = state.log_dir / CHECKPOINT_FILE
        self.checkpoints: dict[tuple[str, int], int] = {}
        self._in_progress: set[tuple[str, int]] = set()
        self._uncleanable: set[tuple[str, int]] = set()
        self._limiter = trio.CapacityLimiter(self.threads)
        self.rounds_done = 0  # for tests and the benchmark: completed rounds since start

    def load(self) -> None:
        """Read the checkpoint file (worker thread, at start-up)."""
        self.checkpoints = checkpoint.read_offsets(self.path)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await trio.to_thread.run_sync(self.load)
        task_status.started()
        if not self.enabled:
            return
        async with trio.open_nursery() as nursery:
            for i in range(self.threads):
                nursery.start_soon(self._cleaner_task, i)

    async def _cleaner_task(self, worker: int) -> None:
        offset_map = OffsetMap(self.map_bytes, self.load_factor)
        while True:
            picked = self.grab_filthiest()
            if picked is None:
                await trio.sleep(self.backoff_s)
                continue
            await self.clean(*picked, offset_map)

    def grab_filthiest(self) -> tuple[Partition, CleanableRange] | None:
        """The compacted log with the highest dirty ratio that is worth cleaning now, marked in
        progress; None when there is none."""
        now_ms = self.state.now_ms()
        best: tuple[Partition, CleanableRange] | None = None
        for partition in self.state.metadata.iter_partitions():
            key = (partition.topic, partition.index)
            if not partition.log_config.compact or key in self._in_progress or key in self._uncleanable:
                continue
            cleanable = partition.cleanable_range(self.checkpoints.get(key), now_ms)
            if cleanable.checkpoint_reset:
                self.checkpoints[key] = cleanable.first_dirty
            if cleanable.worth_cleaning(partition.log_config.min_cleanable_ratio) and (
                    best is None or cleanable.ratio > best[1].ratio):
                best = (partition, cleanable)
        if best is not None:
            self._in_progress.add((best[0].topic, best[0].index))
        return best

    async def clean(self, partition: Partition, cleanable: CleanableRange, offset_map: OffsetMap) -> None:
        key = (partition.topic, partition.index)
        rnd = partition.cleaning_round(cleanable, offset_map, self.throttler, self.state.now_ms())
        try:
            async with self._limiter:
                end = await trio.to_thread.run_sync(rnd.build_offset_map)
                for group in rnd.groups():
                    cleaned = await trio.to_thread.run_sync(rnd.clean_group, group)
                    if not partition.swap_cleaned(cleaned, group):
                        await trio.to_thread.run_sync(cleaned.delete)
                        raise CleaningAborted(f"{rnd.name} changed while it was cleaned")
                    log.info("swapped in cleaned segment %d for %d segment(s) of %s", cleaned.base_offset,
                             len(group), rnd.name)
                    await trio.to_thread.run_sync(Partition.finish_swap, cleaned, group)
            log.info("%s", rnd.finished().summary(rnd.name, cleanable.first_dirty, end))
            self.checkpoints[key] = end
            self.rounds_done += 1
            await self.write_checkpoint()
        except CleaningAborted as exc:
            log.info("cleaning of %s aborted: %s", rnd.name, exc)
        except Exception:
            log.exception("cleaning of %s failed; the log is marked uncleanable", rnd.name)
            self._uncleanable.add(key)
        finally:
            self._in_progress.discard(key)

    async def write_checkpoint(self) -> None:
        """Write the first dirty offsets of the logs that still exist (worker thread)."""
        live = {(p.topic, p.index) for p in self.state.metadata.iter_partitions()}
        offsets = {k: v for k, v in self.checkpoints.items() if k in live}
        self.checkpoints = offsets
        await trio.to_thread.run_sync(checkpoint.write_offsets, self.path, dict(offsets))
