"""A partition's producer state with its snapshot files (Kafka's ProducerStateManager): the table
of producers and open transactions, which snapshot is the newest taken, and the snapshot files
still to write or delete, handed to a worker thread as one SnapshotWork."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable

from wirekafka.broker.replica.producer_state import ProducerStateTable
from wirekafka.storage.producer_snapshot import ProducerSnapshots, SnapshotEntry, SnapshotWork

logger = logging.getLogger(__name__)


class ProducerStateManager:
    def __init__(self, directory: Path, expiration_ms: int, log_start_offset: int) -> None:
        self.table = ProducerStateTable()
        self.snapshots = ProducerSnapshots(directory)
        self.expiration_ms = expiration_ms
        # Kafka's lastSnapOffset: the newest snapshot taken or loaded; another one is only worth
        # taking at a higher offset. Snapshots to write and the log start to clean below wait
        # for work().
        self.snapshot_offset = log_start_offset
        self._pending_snapshots: list[tuple[int, tuple[SnapshotEntry, ...]]] = []
        self._pending_delete_below: int | None = None

    def remove_strays(self, segment_bases: Iterable[int]) -> None:
        self.snapshots.remove_strays(segment_bases)

    def load(self, start: int, end: int, upper: int, now_ms: int) -> int:
        """Kafka's rebuildProducerState up to the replay: drop snapshots outside [start, end],
        load the newest one at or below upper (else forget every producer). Returns the offset
        the caller replays batch headers from."""
        self.snapshots.retain(start, end)
        self._pending_snapshots.clear()  # taken before the log changed under them
        loaded = self.snapshots.latest(upper)
        if loaded is None:
            self.table.forget_all()
            self.snapshot_offset = start
        else:
            offset, entries = loaded
            self.table.restore(entries, now_ms, self.expiration_ms)
            self.snapshot_offset = offset
            logger.info("%s: producer state loaded from the snapshot at offset %d (%d producers), replaying "
                        "to %d", self.snapshots.dir.name, offset, len(self.table.entries), end)
        return self.snapshot_offset

    def take_snapshot(self, offset: int) -> None:
        """Kafka's takeSnapshot: the state now, as the snapshot at offset, unless one at or past
        it was taken already; the file is written by work()'s worker."""
        if offset > self.snapshot_offset:
            self._pending_snapshots.append((offset, self.table.snapshot_entries()))
            self.snapshot_offset = offset

    def delete_below(self, log_start_offset: int) -> None:
        """Snapshots below the new log start describe data that is gone: work() deletes them."""
        self._pending_delete_below = log_start_offset

    def work(self) -> SnapshotWork | None:
        """The snapshot files to write and delete since the last call, taken on the loop (the
        entries are already copied); run() it in a worker thread. None when there is nothing."""
        if not self._pending_snapshots and self._pending_delete_below is None:
            return None
        work = SnapshotWork(self.snapshots, tuple(self._pending_snapshots), self._pending_delete_below,
                            self.snapshots.generation)
        self._pending_snapshots = []
        self._pending_delete_below = None
        return work

    def remove_expired(self, now_ms: int) -> list[int]:
        """Kafka's periodic producer expiration: the producers idle for producer.id.expiration.ms
        that have no open transaction are forgotten; returns their ids."""
        return self.table.remove_expired(now_ms, self.expiration_ms)

    def close(self) -> None:
        self.snapshots.close()
