"""LeaderEpochCache: epoch -> start offset, persisted in Kafka's `leader-epoch-checkpoint`.

Kafka keeps one entry per leader epoch, the offset of the first record written in it. The cache
answers OffsetForLeaderEpoch ("where did epoch N end?"), which consumers use to detect log
truncation after a leader change and followers use to find where their log diverged. Entries are
assigned when a partition becomes leader (epoch, log end offset) and when a batch of a newer epoch
is appended; truncation drops entries past the new end (or before a new start).

Persistence is off the event loop (the loop would otherwise fsync once per partition per change:
seconds with thousands of partitions changing leader). A change only marks the cache dirty;
`checkpoint_work()`, taken on the loop, is written by a worker thread (Kafka writes truncations
in the background since KAFKA-15046). Kafka still writes `assign` synchronously so that the file
never misses an epoch of flushed data; here the same guarantee comes from the log's flush: the
epochs are written before the recovery point moves past the data that carries them (see
ReplicaManager.flush), and recovery re-assigns the epochs of every batch past the recovery point
(`assign_from_batches`, Kafka's LogSegment.recover). A crash can therefore leave the file stale
only for data that recovery re-reads, or with entries past the log end, which the loader drops."""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from wirekafka.storage import checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass
class EpochCheckpointWork:
    """One version of a cache's entries, to write in a worker thread. Writes of one cache are
    serialised and never go back to an older version (two workers may hold work for one file)."""

    cache: "LeaderEpochCache"
    version: int
    entries: list[tuple[int, int]]

    @property
    def path(self) -> Path:
        return self.cache.path

    def run(self) -> None:
        with self.cache.write_lock:
            if self.version <= self.cache.written_version:
                return
            try:
                checkpoint.write_leader_epochs(self.cache.path, self.entries)
            except FileNotFoundError:
                if self.cache.path.parent.is_dir():
                    raise
                return  # the replica was deleted meanwhile (Kafka's writeIfDirExists)
            self.cache.written_version = self.version


class LeaderEpochCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        self._version = 0  # bumped by every change (event loop)
        self._taken_version = 0  # the version the last checkpoint_work carried
        self.written_version = 0  # the version on disk (worker threads, under write_lock)
        self.write_lock = threading.Lock()
        for epoch, start in checkpoint.read_leader_epochs(path):
            self._epochs.append(epoch)
            self._starts.append(start)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts))

    @property
    def latest_start_offset(self) -> int:
        """The latest epoch's first offset, 0 before any epoch (asked on every follower fetch of
        a replica out of the ISR: no copy of the entries)."""
        return self._starts[-1] if self._starts else 0

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that epoch starts at start_offset; a no-op unless epoch is newer than the latest
        (Kafka ignores older epochs and keeps the first start of an epoch). True if written."""
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return False
        # An entry starting at or after the new one cannot be right any more (Kafka removes them).
        while self._starts and self._starts[-1] >= start_offset:
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        self._version += 1
        return True

    def recover(self, recovered: tuple[int, Iterable[tuple[int, int]]] | None, log_start_offset: int,
                log_end_offset: int) -> None:
        """At load (Kafka's LogLoader with LogSegment.recover): recovery re-read the log from some
        offset on (`recovered`: that offset and each re-read batch's (leader epoch, base offset));
        entries from there on are dropped, the file may hold stale ones, and the batches assign
        them again; then entries past the log end or before its start go."""
        if recovered is not None:
            first, epochs_and_offsets = recovered
            self.truncate_from_end(first)
            for epoch, base_offset in epochs_and_offsets:
                if epoch > self.latest_epoch:
                    self.assign(epoch, base_offset)
        self.truncate_from_end(log_end_offset)
        self.truncate_from_start(log_start_offset)

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for OffsetForLeaderEpoch.

        - undefined request or empty cache: (-1, -1);
        - the latest epoch: (it, log end offset);
        - otherwise the start of the next higher epoch is the end, paired with the greatest known
          epoch <= the request (or the request itself when it is below every known epoch);
        - above every known epoch: (-1, -1)."""
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        floor = higher - 1
        epoch = requested_epoch if floor < 0 else self._epochs[floor]
        return epoch, self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int:
        """Kafka's LeaderEpochFileCache.epochForOffset: the epoch whose range holds offset (the
        latest one for offsets past its start), or -1 below the first entry or with none."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop epochs that start at or after end_offset (the log was truncated there)."""
        if self._starts and self._starts[-1] >= end_offset:
            while self._starts and self._starts[-1] >= end_offset:
                self._epochs.pop()
                self._starts.pop()
            self._version += 1

    def clear(self) -> None:
        """Forget every epoch (the log was emptied and restarted elsewhere)."""
        self._epochs.clear()
        self._starts.clear()
        self._version += 1

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start moved to start_offset: earlier epochs go, the one covering it starts there."""
        i = bisect.bisect_right(self._starts, start_offset) - 1
        if i < 0 or (i == 0 and self._starts[0] == start_offset):
            return
        del self._epochs[:i]
        del self._starts[:i]
        self._starts[0] = start_offset
        self._version += 1

    @property
    def dirty(self) -> bool:
        """Changed since the last checkpoint_work (event loop)."""
        return self._version > self._taken_version

    def checkpoint_work(self) -> EpochCheckpointWork | None:
        """The entries to write now, taken on the loop (run() it in a worker); None if nothing
        changed since the last work taken."""
        return self._work() if self.dirty else None

    def unwritten_work(self) -> EpochCheckpointWork | None:
        """The entries to write before a flush moves the recovery point: None only when the file
        already holds this version (work taken earlier may still be on its way)."""
        return self._work() if self._version > self.written_version else None

    def flush(self) -> None:
        """Write the entries now, on the caller's thread (shutdown, tests)."""
        self._work().run()

    def _work(self) -> EpochCheckpointWork:
        self._taken_version = self._version
        return EpochCheckpointWork(self, self._version, self.entries)
