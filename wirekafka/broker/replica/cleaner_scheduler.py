"""The broker's log cleaner (Kafka's LogCleaner and LogCleanerManager): picks the dirtiest compacted
log, runs a cleaning round on it in worker threads, swaps the cleaned segments in on the event
loop, and keeps each log's first dirty offset in Kafka's `cleaner-offset-checkpoint` file.

- log.cleaner.threads cleaner tasks; each round runs in one of as many cleaner *processes*
  (Kafka's cleaner threads; a process here so that a round's per-record Python work never holds
  the interpreter lock the event loop needs: produce and fetch latency do not move while it
  runs), with an offset map of log.cleaner.dedupe.buffer.size / threads bytes (load factor
  log.cleaner.io.buffer.load.factor) and log.cleaner.io.max.bytes.per.second / threads; a task
  that found nothing to clean sleeps log.cleaner.backoff.ms. log.cleaner.enable=false turns it
  off. Those settings are dynamic broker configs: a change restarts the tasks with the new ones
  once each has finished its round (Kafka restarts its cleaner threads).
- A log is picked when its dirty ratio exceeds min.cleanable.dirty.ratio or a dirty segment is
  older than max.compaction.lag.ms (see wirekafka.storage.cleaner); the dirtiest first; a log is
  cleaned by one task at a time.
- The round's groups are written as `.cleaned` segments, then swapped in one by one; a crash
  before a swap loses only that work. A log that changed under the round (deleted, retention took its segments) ends the
  round; the next one starts from the checkpoint. A round that fails unexpectedly marks the log
  uncleanable until restart, as Kafka does, and is logged.

The decisions (which log, the swap, the checkpoint values) happen on the event loop; reading and
writing segments, and the checkpoint file, in worker threads."""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import trio

from wirekafka.broker.replica.partition import Partition
from wirekafka.storage import checkpoint
from wirekafka.storage.cleaner import CHECKPOINT_FILE, CleanableRange, CleanerStats, CleaningAborted, run_round

log = logging.getLogger(__name__)


def _cleaner_process_init(broker_pid: int) -> None:
    """In each cleaner process: die with the broker (a kill -9 of the broker must not leave a
    process writing into its log dir), ignore Ctrl-C (the broker shuts it down), and yield the
    CPU to the broker (nice 10): cleaning is background work, and on a busy machine produce and
    fetch latency must not pay for it. A broker killed while this process was still starting
    (before the death signal was asked for) is seen as a new parent: the process exits at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(CLEANER_NICENESS)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        log.debug("prctl(PR_SET_PDEATHSIG) unavailable")
    if os.getppid() != broker_pid:
        os._exit(1)


_PR_SET_PDEATHSIG = 1
CLEANER_NICENESS = 10


class LogCleaner:
    def __init__(self, state) -> None:  # state: BrokerState (not imported: it owns this object)
        self.state = state
        self.enabled = state.config.bool("log.cleaner.enable")
        self._restart = trio.Event()  # set when the settings changed: the tasks stop between rounds
        self._read_settings()
        state.metadata.broker_configs.observe(self.reconfigure)
        self.checkpoints: dict[tuple[str, int], int] = {}
        self._in_progress: set[tuple[str, int]] = set()
        self._uncleanable: set[tuple[str, int]] = set()
        # Where rounds run: cleaner processes, created on first use; any Executor will do
        # (unit tests use a thread pool).
        self.executor: Executor | None = None
        self.rounds_done = 0  # completed rounds since start
        # the last completed round, as Kafka's LogCleaner and LogCleanerManager metrics report it:
        # when it ended (time.monotonic), its duration, its map's use and the share it rewrote
        self.last_round_end: float | None = None
        self.last_round_seconds = 0.0
        self.last_buffer_utilization = 0.0
        self.last_recopy_ratio = 0.0

    def _read_settings(self) -> None:
        settings = self.state.metadata.broker_configs
        current = settings.current
        self.threads = max(settings.current_int("log.cleaner.threads"), 1)
        self.backoff_s = settings.current_int("log.cleaner.backoff.ms") / 1000
        self.map_bytes = settings.current_int("log.cleaner.dedupe.buffer.size") // self.threads
        self.load_factor = float(current("log.cleaner.io.buffer.load.factor"))
        self.io_rate = float(current("log.cleaner.io.max.bytes.per.second")) / self.threads

    def _settings(self) -> tuple[int, float, int, float, float]:
        return self.threads, self.backoff_s, self.map_bytes, self.load_factor, self.io_rate

    def reconfigure(self) -> None:
        """The dynamic broker configs changed: take the cleaner's settings again and restart the
        tasks if any of them moved."""
        before = self._settings()
        self._read_settings()
        if self._settings() != before:
            self._restart.set()

    def load(self) -> None:
        """Read each log dir's checkpoint file, for the partitions it holds (worker thread, at
        start-up)."""
        for log_dir in self.state.log_dirs:
            held = self.state.placement.held_in(log_dir)
            self.checkpoints.update((k, v) for k, v in checkpoint.read_offsets(log_dir / CHECKPOINT_FILE).items()
                                    if k in held)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await trio.to_thread.run_sync(self.load)
        task_status.started()
        if not self.enabled:
            return
        try:
            while True:
                restart = self._restart = trio.Event()
                threads = self.threads
                async with trio.open_nursery() as nursery:
                    for _ in range(threads):
                        nursery.start_soon(self._cleaner_task, restart)
                log.info("log cleaner settings changed: restarting with %d task(s)", self.threads)
                if self.threads != threads and self.executor is not None:
                    self.executor.shutdown(wait=False)  # idle now; a pool of the new size replaces it
                    self.executor = None
        finally:
            if self.executor is not None:  # shutdown: a round in progress is dropped, not waited for
                self.executor.shutdown(wait=False, cancel_futures=True)
                for child in multiprocessing.active_children():
                    child.terminate()

    def _executor(self) -> Executor:
        """The cleaner processes, started on first use (spawned: a fork of a threaded broker is
        unsafe)."""
        if self.executor is None:
            self.executor = ProcessPoolExecutor(self.threads, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_cleaner_process_init, initargs=(os.getpid(),))
        return self.executor

    async def _cleaner_task(self, restart: trio.Event) -> None:
        while not restart.is_set():
            picked = self.grab_filthiest()
            if picked is None:
                with trio.move_on_after(self.backoff_s):
                    await restart.wait()
                continue
            await self.clean(*picked)

    def grab_filthiest(self) -> tuple[Partition, CleanableRange] | None:
        """The compacted log with the highest dirty ratio that is worth cleaning now, marked in
        progress; None when there is none."""
        now_ms = self.state.now_ms()
        best: tuple[Partition, CleanableRange] | None = None
        for partition in self.state.metadata.iter_partitions():
            key = (partition.topic, partition.index)
            if not partition.log_config.compact or key in self._in_progress or key in self._uncleanable:
                continue
            cleanable = partition.cleaning.cleanable_range(self.checkpoints.get(key), now_ms)
            if cleanable.checkpoint_reset:
                self.checkpoints[key] = cleanable.first_dirty
            if cleanable.worth_cleaning(partition.log_config.min_cleanable_ratio) and (
                    best is None or cleanable.ratio > best[1].ratio):
                best = (partition, cleanable)
        if best is not None:
            self._in_progress.add((best[0].topic, best[0].index))
        return best

    async def clean(self, partition: Partition, cleanable: CleanableRange) -> None:
        """One round on partition: planned on the loop, run in a cleaner process, each cleaned
        group swapped in on the loop and its files finished in a worker thread."""
        key = (partition.topic, partition.index)
        plan, segments = partition.cleaning.cleaning_plan(cleanable, self.map_bytes, self.load_factor, self.io_rate,
                                                 self.state.now_ms())
        log.info("building offset map for log %s over [%d, %d) (%d segments); cleaning follows", plan.name,
                 cleanable.first_dirty, cleanable.first_uncleanable, len(plan.segments))
        try:
            future = self._executor().submit(run_round, plan)
            result = await trio.to_thread.run_sync(future.result, abandon_on_cancel=True)
            for i, group in enumerate(result.groups):
                unswapped = [g.base_offset for g in result.groups[i:]]
                if not partition.online:
                    raise CleaningAborted(f"{plan.name} went offline while it was cleaned")
                cleaned = await trio.to_thread.run_sync(partition.cleaning.open_cleaned, group.base_offset)
                sources = [segments[base] for base in group.sources]
                if not partition.cleaning.swap_cleaned(cleaned, sources):
                    cleaned.close()
                    await trio.to_thread.run_sync(partition.cleaning.discard_cleaned, unswapped)
                    raise CleaningAborted(f"{plan.name} changed while it was cleaned")
                log.info("swapping in cleaned segment %d for segments %s of %s", group.base_offset,
                         list(group.sources), plan.name)
                await partition.cleaning.finish_swap(cleaned, sources)
            log.info("%s", result.stats.summary(plan.name, cleanable.first_dirty, result.end_offset))
            self.checkpoints[key] = result.end_offset
            self.rounds_done += 1
            self._note_round(result.stats)
            await self.write_checkpoint()
        except CleaningAborted as exc:
            log.info("cleaning of %s aborted: %s", plan.name, exc)
        except BrokenProcessPool:
            log.error("the cleaner process died cleaning %s; the log is marked uncleanable", plan.name)
            self._uncleanable.add(key)
            self.executor = None  # a new one for the other logs
        except Exception:
            log.exception("cleaning of %s failed; the log is marked uncleanable", plan.name)
            self._uncleanable.add(key)
        finally:
            self._in_progress.discard(key)

    def _note_round(self, stats: CleanerStats) -> None:
        self.last_round_end = time.monotonic()
        self.last_round_seconds = max(stats.ended - stats.started, 0.0)
        self.last_buffer_utilization = stats.buffer_utilization
        self.last_recopy_ratio = stats.bytes_written / stats.bytes_read if stats.bytes_read else 0.0

    @property
    def uncleanable_count(self) -> int:
        """Logs marked uncleanable after a failed round (LogCleanerManager's uncleanable-partitions-count)."""
        return len(self._uncleanable)

    async def write_checkpoint(self) -> None:
        """Write the first dirty offsets of the logs that still exist, in the checkpoint file of
        the online log dir holding each (worker thread)."""
        failures = self.state.log_dir_failures
        by_dir: dict[Path, dict[tuple[str, int], int]] = {d: {} for d in failures.online_dirs}
        offsets = {}
        for p in self.state.metadata.iter_partitions():
            key = (p.topic, p.index)
            if key in self.checkpoints:
                offsets[key] = self.checkpoints[key]
                held = by_dir.get(p.files.log_dir)
                if held is not None:
                    held[key] = offsets[key]
        self.checkpoints = offsets
        for log_dir, exc in await trio.to_thread.run_sync(_write_checkpoints, by_dir):
            failures.fail("writing the cleaner's offset checkpoint", exc, log_dir)


def _write_checkpoints(by_dir: dict[Path, dict[tuple[str, int], int]]) -> list[tuple[Path, OSError]]:
    """Each log dir's cleaner-offset-checkpoint; the dirs whose file could not be written."""
    failed = []
    for log_dir, offsets in by_dir.items():
        try:
            checkpoint.write_offsets(log_dir / CHECKPOINT_FILE, offsets)
        except OSError as exc:
            failed.append((log_dir, exc))
    return failed
