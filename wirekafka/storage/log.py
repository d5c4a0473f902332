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
from typing import Callable, Iterator, Sequence

from wirekafka.protocol.records import BatchHeader
from wirekafka.storage.cleaner import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from wirekafka.storage.log_loader import load_segments
from wirekafka.storage.roll_policy import should_roll
from wirekafka.storage.region import FileRegion
from wirekafka.storage.segment import NO_TIMESTAMP, Buffer, LogSegment, file_paths
from wirekafka.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)


@dataclass
class LogConfig:
    """The topic-level settings a log obeys; replaced as a whole when configs change."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    flush_messages: int = 2**63 - 1
    flush_ms: int = 2**63 - 1
    compact: bool = False  # cleanup.policy holds "compact"
    min_cleanable_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    delete_retention_ms: int = 86400000
    max_index_bytes: int = 10485760
    file_delete_delay_ms: int = 60000


@dataclass
class FlushWork:
    """Segments to fsync and the offset they cover; owns nothing the log mutates."""

    segments: list[LogSegment]
    end: int

    def run(self) -> None:
        """fsync each segment; an OSError goes up (a failing disk) unless the segment was closed
        meanwhile (retention or truncation detached and deleted it: nothing left to flush)."""
        for seg in self.segments:
            if not seg.pin():
                continue
            try:
                seg.flush()
            finally:
                seg.unpin()


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
        self.segments: list[LogSegment] = load_segments(directory, config.index_interval_bytes, recovery_point,
                                                        clean_shutdown, int(clock() * 1000))
        self.log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        self.recovery_point = min(max(recovery_point, 0), self.log_end_offset)
        self._unflushed_messages = 0
        self._rolled_at = 0  # the base of the newest segment rolled: everything below is due a flush

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
    def append(self, parts: Sequence[Buffer], header: BatchHeader) -> bool:
        """Append an offset-assigned batch (consecutive buffers, see LogSegment.append), rolling
        first if the active segment is full or old. Returns True when flush.messages says the log
        is due a flush (the caller schedules it)."""
        if should_roll(self.active, header, self.config, int(self.clock() * 1000)):
            self.roll(header.base_offset)
        self.active.append(parts, header)
        self._unflushed_messages += header.records_count
        return self._unflushed_messages >= self.config.flush_messages

    def roll(self, base_offset: int | None = None) -> LogSegment:
        base = self.log_end_offset if base_offset is None else base_offset
        self.active.seal()
        seg = LogSegment(self.dir, base, self.config.index_interval_bytes)
        seg.created_ms = int(self.clock() * 1000)
        self.segments = self.segments + [seg]
        self._rolled_at = max(self._rolled_at, base)
        return seg

    def flush_work(self) -> "FlushWork":
        """What a flush to the current log end must fsync, taken now (on the owner's thread);
        run() it in a worker, then report the end back with flushed()."""
        segments = [s for s in self.segments if s.next_offset > self.recovery_point or s is self.active]
        self._unflushed_messages = 0
        return FlushWork(segments, self.log_end_offset)

    def rolled_flush_work(self) -> "FlushWork | None":
        """The flush Kafka schedules at every roll (flushUptoOffsetExclusive of the new segment's
        base): the segments rolled since the recovery point, up to the newest one's base. None
        when there is nothing new. Taken on the owner's thread like flush_work; after it runs,
        flushed(end) moves the recovery point, so a crash re-checks only the active segment."""
        end = min(self._rolled_at, self.log_end_offset)
        if end <= self.recovery_point:
            return None
        return FlushWork([s for s in self.segments if s.base_offset < end and s.next_offset > self.recovery_point], end)

    def flushed(self, end: int) -> None:
        """Everything below end is on disk: move the recovery point there."""
        self.recovery_point = max(self.recovery_point, min(end, self.log_end_offset))

    def flush(self) -> None:
        """fsync everything up to the log end now (shutdown, tests)."""
        work = self.flush_work()
        work.run()
        self.flushed(work.end)

    # ---- reads ----------------------------------------------------------------------------
    def _segment_index(self, offset: int) -> int:
        bases = [s.base_offset for s in self.segments]
        return max(bisect.bisect_right(bases, offset) - 1, 0)

    def read_region(self, offset: int, max_bytes: int, max_offset: int, min_one: bool,
                    nowait: bool = False, pin: bool = False) -> FileRegion | None:
        """Whole batches from the one containing offset, never past max_offset, as a file region
        (no record bytes are read). nowait (event loop): raise ColdData rather than wait for the
        disk. pin (worker thread): hold each segment open while reading it, so retention or a
        deletion on the loop cannot close its descriptor underneath; the segment list itself is
        replaced, never mutated, by the loop."""
        for seg in self.segments[self._segment_index(offset) :]:
            if seg.next_offset <= offset:
                continue
            if pin and not seg.pin():
                return None  # deleted meanwhile: the fetch sees the partition's new state next time
            try:
                found = seg.locate(offset, max_bytes, max_offset, min_one, nowait)
                region = seg.region(*found) if found is not None else None
            finally:
                if pin:
                    seg.unpin()
            if region is not None:
                return region
            if seg.next_offset >= max_offset:
                return None
        return None

    def read_region_cold(self, offset: int, max_bytes: int, max_offset: int, min_one: bool) -> FileRegion | None:
        """read_region for a worker thread: reads headers from disk and warms the region's pages,
        so sending it from the event loop does not block."""
        region = self.read_region(offset, max_bytes, max_offset, min_one, pin=True)
        if region is not None:
            region.warm()
        return region

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one: bool) -> bytes:
        """The bytes read_region would send, for readers that decode them (coordinators, tests)."""
        region = self.read_region(offset, max_bytes, max_offset, min_one)
        if region is None:
            return b""
        try:
            return region.read()
        finally:
            region.close()

    def aborted_transactions(self, fetch_offset: int, region: FileRegion) -> list[AbortedTxn]:
        """Kafka's rule for a read_committed fetch: the aborted transactions overlapping the
        fetched range, whose upper bound is the offset of the first index entry at or past the
        region's end (else the next segment's base, else the log end), searched in the region's
        segment and the ones after it until an entry's last stable offset passes the bound."""
        start = next((i for i, s in enumerate(self.segments) if s.base_offset == region.segment_base), None)
        if start is None:  # the segment went away (retention) since the read
            return []
        upper = self.segments[start].index.upper_bound_offset(region.position + region.length)
        if upper is None:
            upper = self.segments[start + 1].base_offset if start + 1 < len(self.segments) else self.log_end_offset
        found: list[AbortedTxn] = []
        for seg in self.segments[start:]:
            txns, complete = seg.txn_index.collect(fetch_offset, upper)
            found += txns
            if complete:
                break
        return found

    def rebuilt_transaction_indexes(self) -> None:
        """The partition has re-indexed the aborts of the segments recovery re-validated."""
        for seg in self.segments:
            seg.recovered = False

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
            found = seg.find_timestamp(timestamp, self.log_start_offset)
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
    def _detach_prefix(self, count: int, reason: str) -> list[LogSegment]:
        """Remove the first count segments (never the active one) from the log and return them;
        their files are deleted by the caller with delete_segments, off the event loop."""
        count = min(count, len(self.segments) - 1)
        if count <= 0:
            return []
        doomed, self.segments = self.segments[:count], self.segments[count:]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        for seg in doomed:
            log.info("deleting segment %s (%s)", seg.log_path, reason)
        return doomed

    def apply_retention(self, high_watermark: int, delete_policy: bool = True) -> list[LogSegment]:
        """Kafka's deleteOldSegments: detach the oldest segments wholly below the log start offset,
        then, under the delete cleanup policy, those beyond retention.bytes and those whose largest
        timestamp is older than retention.ms. Each rule extends a prefix of the segment list
        (deletableSegments): a segment goes only if its upper bound (the next segment's base, or
        the log end for the active one) is at or below high_watermark, so the log start never
        passes it, and an empty active segment never goes. The active segment is covered too, or
        a topic written once and left alone would keep its data forever: before it goes, a new
        empty segment is rolled at the log end, and the log start moves there (log start = log
        end). Returns the detached segments; the caller deletes their files off the event loop."""
        reasons: list[str] = []

        def extend(count: int, reason: str, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
            n = self._deletable_prefix(count, high_watermark, predicate)
            if n > count:
                reasons.append(reason)
            return n

        start = self.log_start_offset
        count = extend(0, "log start offset breach", lambda seg, nxt: nxt is not None and nxt.base_offset <= start)
        cfg = self.config
        if delete_policy and cfg.retention_bytes >= 0:
            excess = sum(s.size for s in self.segments[count:]) - cfg.retention_bytes

            def over_size(seg: LogSegment, nxt: LogSegment | None) -> bool:
                nonlocal excess
                if excess < seg.size:
                    return False
                excess -= seg.size
                return True

            if excess >= 0:
                count = extend(count, "retention.bytes breach", over_size)
        if delete_policy and cfg.retention_ms >= 0:
            now_ms = int(self.clock() * 1000)
            count = extend(count, "retention.ms breach",
                           lambda seg, nxt: now_ms - self._largest_timestamp(seg, now_ms) > cfg.retention_ms)
        if count == 0:
            return []
        if count == len(self.segments):
            log.info("rolling the active segment of %s at %d: retention deletes it", self.dir, self.log_end_offset)
            self.roll()
        return self._detach_prefix(count, ", ".join(reasons))

    def _deletable_prefix(self, count: int, high_watermark: int,
                          predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        """Kafka's deletableSegments from segment index count on: how far the prefix of deletable
        segments extends while predicate(segment, next segment or None) holds."""
        segments = self.segments
        while count < len(segments):
            seg = segments[count]
            nxt = segments[count + 1] if count + 1 < len(segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if high_watermark < upper or not predicate(seg, nxt) or (nxt is None and seg.size == 0):
                break
            count += 1
        return count

    @staticmethod
    def _largest_timestamp(seg: LogSegment, now_ms: int) -> int:
        """Kafka's LogSegment.largestTimestamp: the largest record timestamp, or for a segment
        without any the file's last modification time (so such data still expires once it sits
        idle for retention.ms); now_ms (not deletable) if the file cannot be read."""
        if seg.max_timestamp >= 0:
            return seg.max_timestamp
        try:
            return int(os.stat(seg.log_path).st_mtime * 1000)
        except OSError:
            return now_ms

    def advance_log_start(self, offset: int) -> list[LogSegment]:
        """DeleteRecords: move the log start offset; segments wholly below it are detached."""
        if offset <= self.log_start_offset:
            return []
        self.log_start_offset = offset
        n = 0
        while n < len(self.segments) - 1 and self.segments[n].next_offset <= offset:
            n += 1
        return self._detach_prefix(n, "log start offset moved")

    def truncate_to(self, offset: int) -> list[LogSegment]:
        """Remove every batch holding an offset at or after offset (a follower's divergent tail;
        a batch straddling offset goes whole, as in Kafka). Segments wholly
        past it are detached and returned for deletion; the one holding it is cut in place.
        Truncating below the log start empties the log and restarts it at offset."""
        if offset >= self.log_end_offset:
            return []
        if offset < self.segments[0].base_offset or offset <= self.log_start_offset:
            return self.restart_at(offset)
        keep = self._segment_index(offset)
        doomed = self.segments[keep + 1:]
        if self.segments[keep].base_offset == offset and keep > 0:
            doomed = self.segments[keep:]
            keep -= 1
        self.segments = self.segments[: keep + 1]
        self.active.truncate_to(offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        return doomed

    def restart_at(self, offset: int) -> list[LogSegment]:
        """Empty the log and start it again at offset (a follower that fell behind its leader's
        log start: Kafka's truncateFullyAndStartAt; a truncation below the log start). Returns the
        old segments."""
        doomed = self.segments
        for seg in doomed:
            if seg.base_offset == offset:  # its name is the new segment's: it goes out of the way first
                seg.rename_files(DELETED_SUFFIX)
        self.segments = [LogSegment(self.dir, offset, self.config.index_interval_bytes)]
        self.segments[0].created_ms = int(self.clock() * 1000)
        self.log_start_offset = offset
        self.recovery_point = offset
        return doomed

    # ---- the cleaner's swap ------------------------------------------------------------------
    def replace_segments(self, cleaned: LogSegment, old: Sequence[LogSegment]) -> bool:
        """Put a cleaned segment in place of the segments it was written from (event loop: the
        list is replaced, not mutated). False, and nothing changes, when they are no longer all
        in the log in that order (retention or DeleteRecords took some meanwhile)."""
        current = self.segments
        try:
            i = next(k for k, seg in enumerate(current) if seg is old[0])
        except StopIteration:
            return False
        if len(current) - i <= len(old) or any(current[i + k] is not seg for k, seg in enumerate(old)):
            return False  # gone, or the group would include the active segment
        cleaned.created_ms = old[-1].created_ms
        self.segments = current[:i] + [cleaned] + current[i + len(old):]
        return True

    def open_cleaned(self, base_offset: int) -> LogSegment:
        """A `.cleaned` segment the cleaner wrote, with its in-memory summary (header scan)."""
        seg = LogSegment(self.dir, base_offset, self.config.index_interval_bytes, CLEANED_SUFFIX)
        if not seg.load():  # the cleaner's indexes failed the sanity check: summarise by a scan
            seg.scan()
        return seg

    def discard_cleaned(self, base_offsets: list[int]) -> None:
        """Unlink the `.cleaned` files of segments a round wrote but will not swap in."""
        for base in base_offsets:
            for path in file_paths(self.dir, base, CLEANED_SUFFIX):
                path.unlink(missing_ok=True)

    @staticmethod
    def finish_swap(cleaned: LogSegment, old: Sequence[LogSegment]) -> None:
        """The file side of replace_segments (worker thread), in Kafka's crash-safe order: the
        cleaned files become `.swap` (from here recovery completes the swap), the old segments
        are retired (`.deleted`, unlinked later by the caller's delete_segments), the swap files
        take their final names."""
        cleaned.rename_files(SWAP_SUFFIX)
        _fsync_dir(cleaned.log_path.parent)
        PartitionLog.retire_segments(list(old))
        cleaned.rename_files("")
        _fsync_dir(cleaned.log_path.parent)

    @staticmethod
    def retire_segments(segments: list[LogSegment]) -> None:
        """Kafka's first step of deleting detached segments (worker thread): their files take the
        `.deleted` suffix (a reader holding them open is undisturbed) and are closed; the log
        loader removes such files, so a crash before delete_segments leaves nothing behind."""
        for seg in segments:
            seg.rename_files(DELETED_SUFFIX)
            seg.close()

    @staticmethod
    def delete_segments(segments: list[LogSegment]) -> None:
        """Close and unlink detached segments (worker-thread work)."""
        for seg in segments:
            seg.delete()

    def close(self) -> None:
        self.active.seal()
        for seg in self.segments:
            seg.close()

    def abandon(self) -> None:
        """Close without writing (the directory failed): recovery at the next start settles it."""
        for seg in self.segments:
            try:
                seg.close()
            except OSError as exc:
                log.warning("closing %s: %s", seg.log_path, exc)

    def retire_directory(self, name: str) -> Path:
        """Close every segment and rename the partition directory to name (a deleted topic's
        partition, removed later); returns its new path."""
        for seg in self.segments:
            seg.close()
        target = self.dir.with_name(name)
        os.rename(self.dir, target)
        _fsync_dir(self.dir.parent)
        return target


def recovered_epoch_starts(plog: PartitionLog) -> tuple[int, Iterator[tuple[int, int]]] | None:
    """After a log's recovery: the first offset recovery re-read, and each re-read batch's (leader
    epoch, base offset) in log order, read by header (for LeaderEpochCache.recover); None when
    nothing was recovered (a clean shutdown)."""
    recovered = [seg for seg in plog.segments if seg.recovered]
    if not recovered:
        return None
    return recovered[0].base_offset, ((h.partition_leader_epoch, h.base_offset)
                                      for seg in recovered for _, h in seg.iter_headers(0))


def _fsync_dir(directory: Path) -> None:
    """Make renames in directory durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
