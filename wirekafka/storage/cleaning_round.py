"""One cleaning round over one log, in a cleaner process: the offset map of the dirty section,
then the rewrite of the log up to what was mapped (see cleaner.py for Kafka's design and rules).
Imported by cleaner.run_round in the cleaner's process only (the map probes with numpy)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from wirekafka.protocol import records
from wirekafka.protocol.records import BatchHeader
from wirekafka.storage import batch_filter
from wirekafka.storage.batch_verdicts import MappedBatches, Verdict
from wirekafka.storage.cleaner import (CLEANED_SUFFIX, CleanerStats, CleaningAborted, RoundPlan, SegmentInfo, Throttler,
                                       TransactionTracker, aborted_between, segments_between)
from wirekafka.storage.key_identity import KeyedRecord
from wirekafka.storage.offset_map import OffsetMap
from wirekafka.storage.segment import LogSegment, file_paths, iter_batches


# keys looked up together while rewriting (a few MB of records and batches held meanwhile)
LOOKUP_GROUP = 16384


@dataclass
class _Waiting:
    """A batch read record by record, waiting for its keys' latest offsets."""

    header: BatchHeader
    batch: memoryview
    keyed: list[KeyedRecord]
    keep_empty: bool
    marker_for_empty_txn: bool


class _SegmentFile:
    """A sealed segment's log file opened read-only by the cleaner, up to its size when planned."""

    def __init__(self, directory: Path, info: SegmentInfo) -> None:
        self.info = info
        self.path = file_paths(directory, info.base_offset)[0]
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            raise CleaningAborted(f"segment {self.path} was deleted") from None

    def batches(self, position: int):
        return iter_batches(self._fd, position, self.info.size)

    def close(self) -> None:
        os.close(self._fd)


class CleaningRound:
    """One round over one log: build_offset_map, then clean_group for each of groups()."""

    def __init__(self, plan: RoundPlan) -> None:
        self.name = plan.name
        self.dir = Path(plan.directory)
        self.segments = list(plan.segments)
        self.later_aborted = plan.later_aborted
        self.index_interval_bytes = plan.index_interval_bytes
        self.first_dirty = plan.cleanable.first_dirty
        self.first_uncleanable = plan.cleanable.first_uncleanable
        self.config = plan.config
        self.last_records = plan.last_records
        self.now_ms = plan.now_ms
        self.map = OffsetMap(plan.map_bytes, plan.load_factor)
        self.throttler = Throttler(plan.io_bytes_per_second)
        self.stats = CleanerStats()
        self.end_offset = self.first_dirty
        self._txns = TransactionTracker()
        self._mapped = MappedBatches()
        self._verdicts: dict[int, Verdict] = {}

    # ---- the offset map ---------------------------------------------------------------------
    def build_offset_map(self) -> int:
        """Map the dirty section's keys; returns the end offset of what was mapped (the next
        round's first dirty offset)."""
        self.map.clear()
        dirty = segments_between(self.segments, self.first_dirty, self.first_uncleanable)
        nexts = [s.base_offset for s in dirty[1:]] + [self.first_uncleanable]
        txns = TransactionTracker()
        txns.add_aborted(aborted_between(self.segments, self.first_dirty, self.first_uncleanable, self.later_aborted))
        for seg, next_base in zip(dirty, nexts):
            if self._map_segment(seg, next_base, txns):
                break
        self._verdicts = self._mapped.verdicts(self.map)
        self.stats.map_done = time.monotonic()
        self.end_offset = self.map.latest_offset + 1
        return self.end_offset

    def _map_segment(self, seg: SegmentInfo, next_base: int, txns: TransactionTracker) -> bool:
        """Add one segment's keys; True when the map filled up inside it."""
        start = self.first_dirty
        for _pos, header, batch in self._batches(seg, seg.dirty_position if seg.base_offset <= start else 0):
            self.stats.map_bytes_read += header.size
            if header.is_control:
                txns.on_control_batch(header, batch)
                self.stats.map_messages_read += 1
            elif txns.on_batch(header):
                self.stats.map_messages_read += header.records_count
            else:
                keyed = list(batch_filter.keyed_records(batch, header))
                full, seen = self.map.put_keys(header.base_offset, keyed, start)
                self.stats.map_messages_read += seen
                if full:
                    return True
                if header.base_offset >= start:
                    self._mapped.note(header, keyed)
            if header.last_offset >= start:
                self.map.latest_offset = header.last_offset
        self.map.latest_offset = next_base - 1
        return False

    def _batches(self, seg: SegmentInfo, position: int) -> Iterator[tuple[int, BatchHeader, memoryview]]:
        source = _SegmentFile(self.dir, seg)
        try:
            for item in source.batches(position):
                self.throttler.maybe_throttle(item[1].size)
                yield item
        finally:
            source.close()

    # ---- grouping and rewriting -------------------------------------------------------------
    def groups(self) -> list[list[SegmentInfo]]:
        """Kafka's groupSegmentsBySize over the segments from the log start to the end of what was
        mapped: consecutive segments whose log and index sizes stay within segment.bytes and
        segment.index.bytes, and whose offsets fit a segment's 32-bit relative offsets."""
        segs = segments_between(self.segments, -1, self.end_offset)
        grouped: list[list[SegmentInfo]] = []
        i = 0
        while i < len(segs):
            group = [segs[i]]
            log_size, index_size, time_size = segs[i].size, segs[i].index_bytes, segs[i].time_index_bytes
            i += 1
            while i < len(segs):
                nxt = segs[i]
                last = segs[i + 1].base_offset - 1 if i + 1 < len(segs) else self.first_uncleanable - 1
                if (log_size + nxt.size > self.config.segment_bytes
                        or index_size + nxt.index_bytes > self.config.max_index_bytes
                        or time_size + nxt.time_index_bytes > self.config.max_index_bytes
                        or (nxt.size > 0 and last - group[-1].base_offset > 2**31 - 1)):
                    break
                group.append(nxt)
                log_size += nxt.size
                index_size += nxt.index_bytes
                time_size += nxt.time_index_bytes
                i += 1
            grouped.append(group)
        return grouped

    def clean_group(self, group: Sequence[SegmentInfo]) -> int:
        """Rewrite group into one flushed `.cleaned` segment at its first base offset, with the
        last source segment's modification time; returns that base offset."""
        cleaned = LogSegment.create_fresh(self.dir, group[0].base_offset, self.index_interval_bytes, CLEANED_SUFFIX)
        self._txns.cleaned_index = cleaned.txn_index
        try:
            for i, seg in enumerate(group):
                upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
                self._txns.add_aborted(aborted_between(self.segments, seg.base_offset, upper, self.later_aborted))
                self._clean_into(seg, cleaned)
            cleaned.seal()
            cleaned.flush()
            try:
                mtime = os.stat(file_paths(self.dir, group[-1].base_offset)[0]).st_mtime_ns
                os.utime(cleaned.log_path, ns=(mtime, mtime))
            except FileNotFoundError:
                pass
        except BaseException:
            cleaned.delete()
            raise
        cleaned.close()
        return cleaned.base_offset

    def _clean_into(self, source: SegmentInfo, dest: LogSegment) -> None:
        """Filter the segment's batches into dest, in order. The keys of the batches read record
        by record are looked up LOOKUP_GROUP at a time (one bulk probe for many batches: a key
        absent from a map at a 0.9 load probes some 10 slots, and numpy's rounds cost the same
        for a batch's thousand keys as for sixteen thousand); the batches wait for it."""
        held: list[_Waiting | bytes | memoryview | None] = []
        looked_up: list[bytes] = []
        for _pos, header, batch in self._batches(source, 0):
            held.append(self._filter_batch(header, batch, looked_up))
            self.stats.bytes_read += header.size
            if len(looked_up) >= LOOKUP_GROUP:
                self._write_held(held, looked_up, dest)
                held, looked_up = [], []
        self._write_held(held, looked_up, dest)

    def _write_held(self, held: list[_Waiting | bytes | memoryview | None], looked_up: list[bytes],
                    dest: LogSegment) -> None:
        """Look the held batches' keys up, then write what each batch leaves, in order."""
        latest_of = iter(self.map.offsets_of(looked_up))
        for item in held:
            out = self._finish(item, latest_of) if isinstance(item, _Waiting) else item
            if out is not None:
                out_header = records.parse_header(out)
                dest.append([out], out_header)
                self.stats.bytes_written += out_header.size

    def _filter_batch(self, header: BatchHeader, batch: memoryview,
                      looked_up: list[bytes]) -> _Waiting | bytes | memoryview | None:
        """Kafka's cleaner filter on one batch: the bytes to write in its place, None, or the
        batch waiting for its keys' latest offsets (added to looked_up, in record order)."""
        if header.is_control:
            can_discard = self._txns.on_control_batch(header, batch)
            horizon = batch_filter.delete_horizon(header)
            discard_records = can_discard and horizon is not None and horizon <= self.now_ms
        else:
            can_discard = self._txns.on_batch(header)
            discard_records = can_discard
        if header.has_producer_id and self._is_last_of_producer(header):
            keep_empty = True
        else:
            keep_empty = header.next_offset == self.first_uncleanable
        if discard_records and not keep_empty:
            self.stats.messages_read += header.records_count
            return None
        marker_for_empty_txn = can_discard and header.is_control
        if discard_records:
            self.stats.messages_read += header.records_count
            return batch_filter.empty_batch(header)
        verdict = self._verdicts.get(header.base_offset)
        if verdict is not None:
            return self._by_verdict(header, batch, verdict, keep_empty)
        keyed = list(batch_filter.keyed_records(batch, header))
        if not header.is_control:  # a control batch's records are all kept
            base, latest = header.base_offset, self.map.latest_offset
            looked_up += [r[1] for r in keyed if r[1] is not None and base + r[0] <= latest]
        return _Waiting(header, batch, keyed, keep_empty, marker_for_empty_txn)

    def _finish(self, waiting: _Waiting, latest_of: Iterator[int]) -> bytes | memoryview | None:
        """The rest of _filter_batch, its keys' latest offsets next in latest_of."""
        header, batch = waiting.header, waiting.batch
        keep, kept, has_tombstone = self._retained(header, waiting.keyed, latest_of)
        self.stats.messages_read += len(keep)
        if not kept:
            return batch_filter.empty_batch(header) if waiting.keep_empty else None
        self.stats.messages_written += kept
        needs_horizon = ((has_tombstone or waiting.marker_for_empty_txn)
                         and not batch_filter.has_delete_horizon(header))
        if kept == len(keep) and not needs_horizon:
            return batch
        horizon = self.now_ms + self.config.delete_retention_ms if needs_horizon else batch_filter.delete_horizon(header)
        return batch_filter.rewrite(batch, header, keep, horizon)

    def _by_verdict(self, header: BatchHeader, batch: memoryview, verdict: Verdict,
                    keep_empty: bool) -> memoryview | bytes | None:
        """A mapped batch kept or dropped whole (storage/batch_verdicts.py), its records unread:
        what _retained would decide for each of them."""
        count = header.records_count
        self.stats.messages_read += count
        if verdict.keep_all:
            self.stats.messages_written += count
            return batch
        self.stats.invalid_messages += verdict.keyless
        return batch_filter.empty_batch(header) if keep_empty else None

    def _retained(self, header: BatchHeader, keyed: list[KeyedRecord],
                  latest_of: Iterator[int]) -> tuple[bytearray, int, bool]:
        """Kafka's shouldRetainRecord over a batch's records: past the map, kept; without a key,
        dropped; superseded by a later offset of the key, dropped; a tombstone, kept until the
        batch's delete horizon. A control batch's records are all kept. latest_of gives the map's
        offset for each keyed record up to the map's end, in order. Returns one byte per record
        (1: kept), how many are kept, and whether a kept one has no value."""
        latest = self.map.latest_offset
        base = header.base_offset
        horizon = batch_filter.delete_horizon(header)
        keep_tombstones = horizon is None or self.now_ms < horizon
        keep_all = header.is_control
        keep = bytearray()
        kept = 0
        tombstone = False
        invalid = 0
        for offset_delta, key, has_value in keyed:
            offset = base + offset_delta
            if keep_all or offset > latest:
                retain = True
            elif key is None:
                invalid += 1
                retain = False
            else:
                retain = offset >= next(latest_of) and (has_value or keep_tombstones)
            if retain:
                kept += 1
                tombstone = tombstone or not has_value
            keep.append(retain)
        self.stats.invalid_messages += invalid
        return keep, kept, tombstone

    def _is_last_of_producer(self, header: BatchHeader) -> bool:
        last = self.last_records.get(header.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return header.last_offset == last.last_data_offset
        return header.is_control and header.producer_epoch == last.producer_epoch

    def finished(self) -> CleanerStats:
        self.stats.buffer_utilization = self.map.utilization
        self.stats.ended = time.monotonic()
        return self.stats
