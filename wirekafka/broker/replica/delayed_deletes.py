"""Kafka's delayed file deletion: what goes is renamed at once and removed later.

A segment that retention, DeleteRecords or a truncation takes out of a log is renamed
`<base>.log.deleted` (and its indexes likewise) and unlinked `file.delete.delay.ms` later; a
deleted topic's partition directory is renamed `<topic>-<p>.<uuid>-delete` and removed after the
broker's `log.segment.delete.delay.ms`. Readers that hold the files open finish undisturbed, the
name is free at once for a new segment or a re-created topic, and the page cache the data held
is given back then, not in the middle of whatever runs next. Left-overs are cleaned at start-up:
`.deleted` files by the log loader, `-delete` directories by :meth:`adopt_leftovers`, after the
delay, as Kafka's LogManager does.

The queue lives on the event loop; each removal runs in a worker thread."""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import math
import shutil
import time
from pathlib import Path
from typing import Callable

import trio

log = logging.getLogger(__name__)

DELETE_DIR_SUFFIX = "-delete"


class DelayedDeletes:
    def __init__(self, default_delay_ms: Callable[[], int], clock: Callable[[], float] = time.monotonic) -> None:
        """default_delay_ms: the broker's current log.segment.delete.delay.ms, the delay for whole
        directories."""
        self.default_delay_ms = default_delay_ms
        self._clock = clock
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()  # equal due times keep their scheduling order
        self._changed = trio.Event()

    def schedule(self, delay_ms: int, remove: Callable[[], None]) -> None:
        """Run remove (file work, in a worker thread) delay_ms from now. Callable on the event
        loop, before it runs (start-up's load), and from its worker threads (a partition opened
        in one may retire a stray directory): the queue and the event are then changed on the loop."""
        due = self._clock() + max(delay_ms, 0) / 1000
        try:
            trio.lowlevel.current_task()
        except RuntimeError:  # not on the loop: a worker thread of it, or no run yet
            try:
                trio.from_thread.run_sync(self._push, due, remove)
                return
            except RuntimeError:  # no Trio run at all: nothing else touches the queue
                pass
        self._push(due, remove)

    def _push(self, due: float, remove: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (due, next(self._order), remove))
        self._changed.set()

    def schedule_directory(self, path: Path) -> None:
        """Remove a renamed partition directory after the broker's default delay."""
        self.schedule(self.default_delay_ms(), functools.partial(_remove_directory, path))

    def pending(self) -> int:
        return len(self._queue)

    async def adopt_leftovers(self, log_dir: Path) -> None:
        """Schedule the `-delete` directories a previous run left behind."""
        leftovers = await trio.to_thread.run_sync(_delete_directories, log_dir)
        for path in leftovers:
            log.info("scheduling deletion of %s, left by a previous run", path)
            self.schedule_directory(path)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._changed = trio.Event()
            now = self._clock()
            due = []
            while self._queue and self._queue[0][0] <= now:
                due.append(heapq.heappop(self._queue)[2])
            for remove in due:
                try:
                    await trio.to_thread.run_sync(remove)
                except OSError:
                    log.exception("delayed file deletion failed")
            if due:
                continue
            wait = self._queue[0][0] - now if self._queue else math.inf
            with trio.move_on_after(wait):
                await self._changed.wait()


def delete_directory_name(topic: str, partition: int, unique_id: str) -> str:
    """Kafka's name for a partition directory awaiting deletion, the topic cut so the whole name
    stays within 255 characters."""
    suffix = f"-{partition}.{unique_id}{DELETE_DIR_SUFFIX}"
    return topic[: 255 - len(suffix)] + suffix


def _delete_directories(log_dir: Path) -> list[Path]:
    if not log_dir.is_dir():
        return []
    return sorted(p for p in log_dir.iterdir() if p.is_dir() and p.name.endswith(DELETE_DIR_SUFFIX))


def _remove_directory(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    log.info("deleted %s", path)
