"""PartitionLog: the ordered segments of one partition directory `<topic>-<partition>/`.

Readers take the segment list as it is at the time of the call: rolls and deletions replace
the list rather than mutate it (copy-on-write), so a read in a worker thread is never
confused by a concurrent roll."""

from __future__ import annotations

import bisect
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from wirekafka.protocol.records import BatchHeader
from wirekafka.storage.segment import NO_TIMESTAMP, LogSegment

log = logging.getLogger(__name__)


@dataclass
class LogConfig:
    """The topic-level settings a log obeys; replaced as a whole when configs change."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    flush_messages: int = 2**63 - 1
    flush_ms: int = 2**63 - 1


class PartitionLog:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        clean_shutdown: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.dir = directory
        self.config = config
        self.clock = clock
        directory.mkdir(parents=True, exist_ok=True)
        self.segments: list[LogSegment] = []
        self._load(recovery_point, clean_shutdown)
        self.log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        self.recovery_point = min(max(recovery_point, 0), self.log_end_offset)
        self._unflushed_messages = 0

    # ---- loading & recovery -----------------------------------------------------------------
    def _load(self, recovery_point: int, clean_shutdown: bool) -> None:
        for stray in self.dir.glob("*.tmp"):
            stray.unlink()
        bases = sorted(int(p.stem) for p in self.dir.glob("*.log") if p.stem.isdigit())
        segments = []
        for i, base in enumerate(bases):
            seg = LogSegment(self.dir, base, self.config.index_interval_bytes)
            segments.append(seg)
            if clean_shutdown or seg.base_offset < recovery_point and base != bases[-1]:
                seg.load()
            elif seg.recover():
                # Invalid data mid-log: everything after it is unreachable, as in Kafka.
                for later in bases[i + 1:]:
                    log.warning("deleting segment %d of %s after a truncated segment", later, self.dir)
                    LogSegment(self.dir, later, self.config.index_interval_bytes).delete()
                break
        # A segment that recovery emptied, or whose offsets no longer follow the previous
        # segment's end, is garbage from a crash: drop it and everything after it.
        kept: list[LogSegment] = []
        for seg in segments:
            if kept and (seg.size == 0 or seg.base_offset < kept[-1].next_offset):
                log.warning("removing segment %s left inconsistent by a crash", seg.log_path)
                seg.delete()
                continue
            kept.append(seg)
        if not kept:
            kept.append(LogSegment(self.dir, 0, self.config.index_interval_bytes))
        for seg in kept:
            seg.created_ms = int(self.clock() * 1000)
        self.segments = kept

    # ---- state ----------------------------------------------------------------------------
    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ---- writes ---------------------------------------------------------------------------
    def append(self, batch: bytes | bytearray, header: BatchHeader) -> None:
        """Append an offset-assigned batch, rolling first if the active segment is full or old."""
        if self._should_roll(len(batch), header):
            self.roll(header.base_offset)
        self.active.append(batch, header)
        self._unflushed_messages += header.records_count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()

    def _should_roll(self, size: int, header: BatchHeader) -> bool:
        seg = self.active
        if seg.size == 0:
            return False
        if seg.size + size > self.config.segment_bytes:
            return True
        # Kafka's rule: with record timestamps, the age is the incoming batch's max timestamp
        # minus the segment's first batch timestamp; without them, wall time since creation.
        first = seg.first_batch_timestamp
        if first is not None and first >= 0:
            return header.max_timestamp - first > self.config.segment_ms
        created = seg.created_ms if seg.created_ms is not None else int(self.clock() * 1000)
        return int(self.clock() * 1000) - created > self.config.segment_ms

    def roll(self, base_offset: int | None = None) -> LogSegment:
        base = self.log_end_offset if base_offset is None else base_offset
        self.active.seal()
        seg = LogSegment(self.dir, base, self.config.index_interval_bytes)
        seg.created_ms = int(self.clock() * 1000)
        self.segments = self.segments + [seg]
        return seg

    def flush(self) -> None:
        """fsync everything up to the log end and move the recovery point there."""
        end = self.log_end_offset
        for seg in self.segments:
            if seg.next_offset > self.recovery_point or seg is self.active:
                seg.flush()
        self.recovery_point = end
        self._unflushed_messages = 0

    # ---- reads ----------------------------------------------------------------------------
    def _segment_index(self, offset: int) -> int:
        bases = [s.base_offset for s in self.segments]
        return max(bisect.bisect_right(bases, offset) - 1, 0)

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one: bool) -> bytes:
        """Whole batches from the one containing offset, never past max_offset."""
        segments = self.segments
        for seg in segments[self._segment_index(offset) :]:
            if seg.next_offset <= offset:
                continue
            data = seg.read_batches(offset, max_bytes, max_offset, min_one)
            if data:
                return data
        return b""

    def iter_batch_headers(self, start_offset: int = 0) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
        for seg in self.segments[self._segment_index(start_offset) :]:
            for pos, header in seg.iter_headers(0 if start_offset <= seg.base_offset else seg.index.lookup(start_offset)[1]):
                if header.last_offset >= start_offset:
                    yield seg, pos, header

    def read_batch(self, seg: LogSegment, position: int, header: BatchHeader) -> bytes:
        return seg.read_at(position, header.size)

    def find_timestamp(self, timestamp: int) -> tuple[LogSegment, int, BatchHeader] | None:
        """First batch at or after the log start whose max timestamp is >= timestamp."""
        for seg in self.segments:
            if seg.max_timestamp < timestamp or seg.next_offset <= self.log_start_offset:
                continue
            found = seg.find_timestamp(timestamp)
            while found is not None and found[1].last_offset < self.log_start_offset:
                pos, header = found
                found = next(
                    ((p, h) for p, h in seg.iter_headers(pos + header.size) if h.max_timestamp >= timestamp),
                    None,
                )
            if found is not None:
                return seg, found[0], found[1]
        return None

    def max_timestamp_batch(self) -> tuple[LogSegment, int, BatchHeader] | None:
        """The first batch holding the largest timestamp in the log."""
        best: LogSegment | None = None
        for seg in self.segments:
            if seg.max_timestamp != NO_TIMESTAMP and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        found = best.find_batch(best.offset_of_max_timestamp)
        return (best, found[0], found[1]) if found else None

    # ---- deletion -------------------------------------------------------------------------
    def _delete_prefix(self, count: int, reason: str) -> int:
        """Delete the first count segments (never the active one); returns how many went."""
        count = min(count, len(self.segments) - 1)
        if count <= 0:
            return 0
        doomed, self.segments = self.segments[:count], self.segments[count:]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        for seg in doomed:
            log.info("deleting segment %s (%s)", seg.log_path, reason)
            seg.delete()
        return count

    def apply_retention(self) -> int:
        """Delete whole segments past retention.ms (by their largest timestamp) or beyond
        retention.bytes, and segments entirely below the log start offset."""
        now_ms = int(self.clock() * 1000)
        cfg = self.config
        n = 0
        while n < len(self.segments) - 1 and self.segments[n].next_offset <= self.log_start_offset:
            n += 1
        if cfg.retention_ms >= 0:
            while n < len(self.segments) - 1:
                seg = self.segments[n]
                if seg.max_timestamp == NO_TIMESTAMP or now_ms - seg.max_timestamp <= cfg.retention_ms:
                    break
                n += 1
        if cfg.retention_bytes >= 0:
            excess = self.size_bytes - cfg.retention_bytes - sum(s.size for s in self.segments[:n])
            while n < len(self.segments) - 1 and excess >= self.segments[n].size:
                excess -= self.segments[n].size
                n += 1
        return self._delete_prefix(n, "retention")

    def advance_log_start(self, offset: int) -> None:
        """DeleteRecords: move the log start offset; segments wholly below it go."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        n = 0
        while n < len(self.segments) - 1 and self.segments[n].next_offset <= offset:
            n += 1
        self._delete_prefix(n, "log start offset moved")

    def close(self) -> None:
        self.active.seal()
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        for seg in self.segments:
            seg.delete()
        for p in self.dir.iterdir():
            p.unlink()
        os.rmdir(self.dir)
