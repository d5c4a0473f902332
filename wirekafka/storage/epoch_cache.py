"""LeaderEpochCache: epoch -> start offset, persisted in Kafka's `leader-epoch-checkpoint`.

Kafka keeps one entry per leader epoch, the offset of the first record written in it. The cache
answers OffsetForLeaderEpoch ("where did epoch N end?"), which consumers use to detect log
truncation after a leader change and followers use to find where their log diverged. Entries are
assigned when a partition becomes leader (epoch, log end offset) and when a batch of a newer epoch
is appended; truncation drops entries past the new end (or before a new start)."""

from __future__ import annotations

import bisect
from pathlib import Path

from wirekafka.storage import checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in checkpoint.read_leader_epochs(path):
            self._epochs.append(epoch)
            self._starts.append(start)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts))

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
        self.flush()
        return True

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
            self.flush()

    def clear(self) -> None:
        """Forget every epoch (the log was emptied and restarted elsewhere)."""
        self._epochs.clear()
        self._starts.clear()
        self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start moved to start_offset: earlier epochs go, the one covering it starts there."""
        i = bisect.bisect_right(self._starts, start_offset) - 1
        if i < 0 or (i == 0 and self._starts[0] == start_offset):
            return
        del self._epochs[:i]
        del self._starts[:i]
        self._starts[0] = start_offset
        self.flush()

    def flush(self) -> None:
        checkpoint.write_leader_epochs(self.path, self.entries)
