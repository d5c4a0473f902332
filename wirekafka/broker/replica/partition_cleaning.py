"""The cleaner's side of a partition (Kafka's LogCleanerManager asks these of a UnifiedLog): how
much of the log may be cleaned, the plan of a round over its sealed segments, and the swap of
cleaned segments into the log. The partition keeps owning the log: this view is its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from wirekafka.storage.cleaner import (CleanableRange, CleanerLogConfig, LastRecord, RoundPlan, SegmentInfo,
                                       cleanable_range)
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.segment import LogSegment

if TYPE_CHECKING:
    from wirekafka.broker.replica.partition import Partition


class PartitionCleaning:
    def __init__(self, partition: "Partition", log: PartitionLog) -> None:
        self.partition = partition
        self.log = log

    def cleanable_range(self, checkpoint: int | None, now_ms: int) -> CleanableRange:
        """How much of the log the cleaner may clean now, from its checkpointed first dirty offset
        (never past the last stable offset)."""
        return cleanable_range(self.log.segments, self.log.log_start_offset, self.log.log_end_offset,
                               self.partition.last_stable_offset, checkpoint, self._cleaner_config(), now_ms)

    def _cleaner_config(self) -> CleanerLogConfig:
        cfg = self.log.config
        return CleanerLogConfig(cfg.segment_bytes, cfg.max_index_bytes, cfg.delete_retention_ms,
                                cfg.min_cleanable_ratio, cfg.min_compaction_lag_ms, cfg.max_compaction_lag_ms)

    def cleaning_plan(self, cleanable: CleanableRange, map_bytes: int, load_factor: float,
                      io_bytes_per_second: float, now_ms: int) -> tuple[RoundPlan, dict[int, LogSegment]]:
        """A cleaning round over the log as it is now — its sealed segments below the first
        uncleanable offset and each live producer's last batch, which the cleaner keeps — and
        those segments by base offset, for the swaps."""
        last = {pid: LastRecord(e.batches[-1].last_offset if e.batches else None, e.epoch)
                for pid, e in self.partition.producers.entries.items()}
        segments = [s for s in self.log.segments[:-1] if s.base_offset < cleanable.first_uncleanable]
        later = tuple(t for s in self.log.segments[len(segments):] for t in s.txn_index.entries
                      if t.first_offset < cleanable.first_uncleanable)
        plan = RoundPlan(f"{self.partition.topic}-{self.partition.index}", str(self.log.dir), self.log.config.index_interval_bytes,
                         cleanable, self._cleaner_config(), last, now_ms,
                         tuple(SegmentInfo.of(s, cleanable.first_dirty) for s in segments), map_bytes, load_factor,
                         io_bytes_per_second, later)
        return plan, {s.base_offset: s for s in segments}

    def open_cleaned(self, base_offset: int) -> LogSegment:
        """The cleaner's output segment, opened (worker thread: it scans the batch headers)."""
        return self.log.open_cleaned(base_offset)

    def discard_cleaned(self, base_offsets: list[int]) -> None:
        """Remove cleaned segments that will not be swapped in (worker thread)."""
        self.log.discard_cleaned(base_offsets)

    def swap_cleaned(self, cleaned: LogSegment, old: list[LogSegment]) -> bool:
        """Put a cleaned segment in place of the ones it was written from; False when the log
        changed meanwhile (the caller discards it). Then finish_swap in a worker."""
        return self.partition.online and self.log.replace_segments(cleaned, old)

    async def finish_swap(self, cleaned: LogSegment, old: list[LogSegment]) -> None:
        """The swap's file work in a worker; the replaced segments go file.delete.delay.ms later,
        as Kafka's replaceSegments deletes them."""
        await trio.to_thread.run_sync(PartitionLog.finish_swap, cleaned, old)
        self.partition.files.schedule_deletion(old)
