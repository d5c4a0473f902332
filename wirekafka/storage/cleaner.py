"""Kafka's log cleaner, for one log: which part of it may be cleaned, the offset map of the dirty
part, and the rewrite of the log's older segments keeping each key's latest record.

The design is Kafka's (the compaction seed; LogCleaner / LogCleanerManager):
- The log is split at the *first dirty offset* (where the last cleaning stopped, from the
  `cleaner-offset-checkpoint` file): before it the clean section, after it the dirty one. The
  cleanable part of the dirty section ends at the *first uncleanable offset*: never the active
  segment, never past the last stable offset (an open transaction), never a segment newer than
  min.compaction.lag.ms. A log is cleaned when its dirty ratio (cleanable bytes / all bytes)
  exceeds min.cleanable.dirty.ratio, or when a dirty segment is older than max.compaction.lag.ms.
- The offset map (key -> latest offset) is built over the cleanable dirty section, in bounded
  memory (log.cleaner.dedupe.buffer.size): when it fills, this round stops at the last batch it
  mapped and the next round goes on from there.
- Every segment from the start of the log to the end of what was mapped is rewritten, in groups
  whose total stays within segment.bytes, each group into one `.cleaned` segment at its first
  base offset. A record survives when no later offset of its key is in the map (records past the
  map always survive); records without a key go; a tombstone survives until its batch's delete
  horizon (set, delete.retention.ms ahead, the first time the cleaner keeps it) has passed.
  Transactions: aborted batches go with their data, a marker goes once nothing of its
  transaction is left (an abort marker) and its own delete horizon passed; the batch holding a
  live producer's last sequence, and the last batch of the round, stay even when emptied.
- The swap (`.cleaned` -> `.swap` -> final names, the old segments deleted in between) is done by
  `PartitionLog` and `LogSegment`; recovery completes a swap that was decided and discards an
  unfinished `.cleaned` segment.

This module plans a round (on the event loop: the cleanable range, the plan's plain data) and
runs it (`run_round`, in a cleaner process, through storage/cleaning_round.py) on segments the
event loop handed over (their files pinned open while read) and on files nothing else touches;
nothing here mutates log state."""

from __future__ import annotations

import heapq
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence, TypeVar

from wirekafka.protocol import records
from wirekafka.protocol.records import BatchHeader
from wirekafka.storage.segment import LogSegment
from wirekafka.storage.txn_index import AbortedTxn, TransactionIndex

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
CHECKPOINT_FILE = "cleaner-offset-checkpoint"

class _HasBaseOffset(Protocol):
    @property
    def base_offset(self) -> int: ...


_S = TypeVar("_S", bound=_HasBaseOffset)  # LogSegment on the loop, SegmentInfo in a round


class CleaningAborted(Exception):
    """The log changed under the cleaner (deleted, truncated): this round's output is discarded."""


class Throttler:
    """A cleaner's share of log.cleaner.io.max.bytes.per.second: sleeps when the bytes read and
    written got ahead of the rate (Kafka's Throttler, checked every 300 ms of work)."""

    PERIOD_S = 0.3

    def __init__(self, bytes_per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = bytes_per_second
        self.clock = clock
        self._start = clock()
        self._count = 0.0

    def maybe_throttle(self, nbytes: int) -> None:
        if self.rate == float("inf") or self.rate <= 0:
            return
        self._count += nbytes
        elapsed = self.clock() - self._start
        if elapsed < self.PERIOD_S:
            return
        wait = self._count / self.rate - elapsed
        if wait > 0:
            time.sleep(wait)
        self._start = self.clock()
        self._count = 0.0


@dataclass(frozen=True)
class CleanerLogConfig:
    """The topic settings a cleaning round obeys."""

    segment_bytes: int
    max_index_bytes: int
    delete_retention_ms: int
    min_cleanable_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int


@dataclass
class CleanerStats:
    """What Kafka's cleaner logs after a round."""

    started: float = field(default_factory=time.monotonic)
    map_done: float = 0.0
    ended: float = 0.0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    buffer_utilization: float = 0.0

    def summary(self, name: str, first_dirty: int, end: int) -> str:
        elapsed = max(self.ended - self.started, 1e-9)
        mapping = max(self.map_done - self.started, 1e-9)
        mb = 1024 * 1024
        return (f"cleaned log {name} (dirty section = [{first_dirty}, {end}])\n"
                f"\t{self.bytes_read / mb:.1f} MB of log processed in {elapsed:.1f} seconds "
                f"({self.bytes_read / mb / elapsed:.1f} MB/sec)\n"
                f"\tIndexed {self.map_bytes_read / mb:.1f} MB in {mapping:.1f} seconds, {self.map_messages_read} "
                f"messages, buffer utilization {self.buffer_utilization:.1%}\n"
                f"\tStart size: {self.bytes_read / mb:.1f} MB ({self.messages_read} messages), end size: "
                f"{self.bytes_written / mb:.1f} MB ({self.messages_written} messages), "
                f"{100 - 100 * self.bytes_written / max(self.bytes_read, 1):.1f}% size reduction, "
                f"{self.invalid_messages} records without a key dropped")


# ---- which part of a log may be cleaned ---------------------------------------------------------
@dataclass(frozen=True)
class CleanableRange:
    """Kafka's LogToClean: the dirty section's bounds and the figures that rank logs."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool
    checkpoint_reset: bool  # the checkpointed first dirty offset was outside the log

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def worth_cleaning(self, min_ratio: float) -> bool:
        return self.total_bytes > 0 and (
            (self.needs_compaction_now and self.cleanable_bytes > 0) or self.ratio > min_ratio)


def _floor_index(segments: Sequence[Any], offset: int) -> int:
    """Index of the segment holding offset (the last with base <= offset), 0 when before all."""
    i = 0
    for j, seg in enumerate(segments):
        if seg.base_offset <= offset:
            i = j
        else:
            break
    return i


def segments_between(segments: Sequence[_S], start: int, end: int) -> list[_S]:
    """Kafka's logSegments(from, to): the segment holding start and those after it with a base
    offset below end."""
    if not segments:
        return []
    return [s for s in segments[_floor_index(segments, start):] if s.base_offset < end]


def cleanable_range(segments: Sequence[LogSegment], log_start: int, log_end: int, last_stable: int,
                    checkpoint: int | None, config: CleanerLogConfig, now_ms: int) -> CleanableRange:
    """Kafka's cleanableOffsets + calculateCleanableBytes + maxCompactionDelay for one log whose
    segments (active last) are given as they are now."""
    dirty = log_start if checkpoint is None else checkpoint
    reset = checkpoint is not None and not (log_start <= checkpoint <= log_end)
    if reset:
        dirty = log_start
    active = segments[-1]
    non_active_dirty = segments[_floor_index(segments, dirty):-1]
    bounds = [last_stable, active.base_offset]
    if config.min_compaction_lag_ms > 0:
        young = next((s for s in non_active_dirty if s.max_timestamp > now_ms - config.min_compaction_lag_ms), None)
        if young is not None:
            bounds.append(young.base_offset)
    uncleanable = max(dirty, min(bounds))
    head = segments[_floor_index(segments, uncleanable)]
    first_uncleanable = active.base_offset if head is active else head.base_offset
    cleanable = sum(s.size for s in segments_between(segments, min(dirty, first_uncleanable), first_uncleanable))
    clean = sum(s.size for s in segments if s.base_offset < dirty)
    firsts = [s.first_batch_timestamp for s in non_active_dirty
              if s.first_batch_timestamp is not None and s.first_batch_timestamp > 0]
    max_lag = max(config.max_compaction_lag_ms, 0)
    needs_now = bool(firsts) and min(firsts) < now_ms - max_lag
    return CleanableRange(dirty, first_uncleanable, clean, cleanable, needs_now, reset)


# ---- transactions while cleaning ----------------------------------------------------------------
class _AbortedTxnState:
    __slots__ = ("txn", "last_observed_batch_offset")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.last_observed_batch_offset: int | None = None


class TransactionTracker:
    """Kafka's CleanedTransactionMetadata: walking the log in order, which transactional batches
    belong to aborted transactions (dropped), and which markers may go (a COMMIT whose batches
    were all cleaned away before, an ABORT once none of its batches is left). The aborts whose
    marker stays are written to the cleaned segment's transaction index."""

    def __init__(self) -> None:
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seq = 0
        self._ongoing_aborted: dict[int, _AbortedTxnState] = {}
        self._ongoing_committed: set[int] = set()
        self.cleaned_index: TransactionIndex | None = None  # the one being written, if any

    def add_aborted(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            heapq.heappush(self._aborted, (txn.first_offset, self._seq, txn))
            self._seq += 1

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedTxnState(txn))

    def on_control_batch(self, header: BatchHeader, batch: bytes | memoryview) -> bool:
        """True when the marker may be discarded."""
        self._consume_aborted_up_to(header.last_offset)
        if header.records_count == 0:
            return True  # an emptied control batch: already cleaned
        try:
            marker = records.parse_marker(bytes(batch))
        except records.InvalidBatch:
            return False  # not a transaction marker: kept
        pid = header.producer_id
        if not marker.commit:
            state = self._ongoing_aborted.pop(pid, None)
            if state is not None and state.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.txn)
                return False
            return True
        if pid in self._ongoing_committed:
            self._ongoing_committed.discard(pid)
            return False
        return True

    def on_batch(self, header: BatchHeader) -> bool:
        """True when the data batch belongs to an aborted transaction."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        state = self._ongoing_aborted.get(header.producer_id)
        if state is not None:
            state.last_observed_batch_offset = header.last_offset
            return True
        self._ongoing_committed.add(header.producer_id)
        return False


def aborted_between(segments: Sequence["SegmentInfo"], start: int, end: int,
                    later: Sequence[AbortedTxn] = ()) -> list[AbortedTxn]:
    """Kafka's collectAbortedTransactions: the aborted transactions overlapping [start, end). An
    abort is recorded in the segment of its marker, which may come after the range: like Kafka,
    the walk goes on through every later segment (and `later`, the aborts recorded past the
    round's segments), not only those of the range."""
    found = []
    walked = segments[_floor_index(segments, start):] if segments else []
    for aborted in [seg.aborted for seg in walked] + [later]:
        found += [t for t in aborted if t.last_offset >= start and t.first_offset < end]
    return found


# ---- one cleaning round -------------------------------------------------------------------------
@dataclass(frozen=True)
class LastRecord:
    """A live producer's last data offset (None when its last entry is a marker) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass(frozen=True)
class SegmentInfo:
    """What a cleaning round needs to know of one sealed segment, taken on the event loop."""

    base_offset: int
    size: int
    next_offset: int
    index_bytes: int
    time_index_bytes: int
    aborted: tuple[AbortedTxn, ...]
    dirty_position: int  # where to start reading for the first dirty offset (its index entry)

    @classmethod
    def of(cls, seg: LogSegment, first_dirty: int) -> "SegmentInfo":
        return cls(seg.base_offset, seg.size, seg.next_offset, len(seg.index) * 8, len(seg.time_index) * 12,
                   tuple(seg.txn_index.entries), seg.index.lookup(first_dirty)[1])


@dataclass(frozen=True)
class RoundPlan:
    """Everything a cleaning round reads besides the segment files: made on the event loop, run
    by `run_round` in the cleaner's process (so it is plain data)."""

    name: str
    directory: str
    index_interval_bytes: int
    cleanable: CleanableRange
    config: CleanerLogConfig
    last_records: dict[int, LastRecord]
    now_ms: int
    segments: tuple[SegmentInfo, ...]  # the sealed segments below the first uncleanable offset
    map_bytes: int
    load_factor: float
    io_bytes_per_second: float
    # aborts recorded in the segments after those (the active one too) of transactions that
    # began below the first uncleanable offset: their markers came after it
    later_aborted: tuple[AbortedTxn, ...] = ()


@dataclass(frozen=True)
class CleanedGroup:
    """A `.cleaned` segment written at base_offset from the segments starting at sources."""

    sources: tuple[int, ...]
    base_offset: int


@dataclass
class RoundResult:
    end_offset: int  # the next round's first dirty offset
    groups: list[CleanedGroup]
    stats: CleanerStats


def run_round(plan: RoundPlan) -> RoundResult:
    """One cleaning round: the offset map, then each group rewritten into a flushed `.cleaned`
    segment (the caller swaps them in, in order). Runs in the cleaner's own process, so the
    broker's event loop never waits for the interpreter lock while a log is cleaned. The round's
    module is imported here, in that process: its offset map probes with numpy, which the broker's
    own process never needs (some 90 ms and 20 MB to import)."""
    from wirekafka.storage.cleaning_round import CleaningRound

    rnd = CleaningRound(plan)
    end = rnd.build_offset_map()
    groups = []
    for group in rnd.groups():
        groups.append(CleanedGroup(tuple(s.base_offset for s in group), rnd.clean_group(group)))
    return RoundResult(end, groups, rnd.finished())
