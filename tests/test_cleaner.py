"""The log cleaner on a real Partition and its files: which records survive (Kafka's rules), offsets
kept, tombstones and their delete horizon, compressed batches, a full offset map, transactions,
producer state, and recovery from a crash at each step of the swap."""

from __future__ import annotations

import dataclasses
import os
import random
import time
from pathlib import Path

import pytest

from wirekafka.broker.replica.partition import AppendOrigin, Isolation, Partition
from wirekafka.protocol import records
from wirekafka.storage import batch_filter, batch_verdicts
from wirekafka.storage.cleaner import CLEANED_SUFFIX, SWAP_SUFFIX, Throttler, run_round
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage.codec_stream import CODEC_GZIP
from wirekafka.storage.offset_map import SLOT_BYTES
from testsupport.cleaning import clean_partition

NOW = 1_700_000_000_000
DAY = 86_400_000


class Clock:
    def __init__(self) -> None:
        self.ms = NOW

    def __call__(self) -> float:
        return self.ms / 1000


def _open(directory: Path, clock: Clock, clean_shutdown: bool = True, **config) -> Partition:
    settings = dict(segment_bytes=400, compact=True, min_cleanable_ratio=0.0)
    settings.update(config)
    plog = PartitionLog(directory, LogConfig(**settings), clean_shutdown=clean_shutdown, clock=clock)
    return Partition("t", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"), clock=clock)


def _append(p: Partition, entries: list[tuple[bytes | None, bytes | None]], clock: Clock, **kw) -> None:
    batch = records.build_batch([(k, v, clock.ms) for k, v in entries], **kw)
    p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)


def _plan(p: Partition, clock: Clock, checkpoint: int | None = None, map_bytes: int = 10**7):
    return p.cleaning.cleaning_plan(p.cleaning.cleanable_range(checkpoint, clock.ms), map_bytes, 0.9, float("inf"), clock.ms)


def _clean(p: Partition, clock: Clock, checkpoint: int | None = None, map_bytes: int = 10**7) -> int:
    return clean_partition(p, clock.ms, checkpoint, map_bytes)


def _records(p: Partition, start: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for header, read in p.files.iter_batches(start):
        if header.is_control:
            continue
        out += [(r.offset, r.key, r.value) for r in records.iter_records(read())]
    return out


def _headers(p: Partition) -> list[records.BatchHeader]:
    return [h for h, _ in p.files.iter_batches(0)]


def _fill(p: Partition, clock: Clock, rounds: int = 6, keys: int = 4) -> dict[bytes, tuple[int, bytes]]:
    """rounds updates of each key, one record a batch; returns each key's latest (offset, value)."""
    latest = {}
    for r in range(rounds):
        for k in range(keys):
            key, value = b"key-%d" % k, b"value-%d-%d" % (k, r)
            latest[key] = (p.log_end_offset, value)
            _append(p, [(key, value)], clock)
            clock.ms += 1
    return latest


def test_keeps_the_latest_record_of_each_key_at_its_offset(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    latest = _fill(p, clock)
    active_base = p._log.active.base_offset
    before = _records(p)
    size_before = p._log.size_bytes
    end = _clean(p, clock)
    assert end == active_base  # everything before the active segment was mapped
    after = _records(p)
    cleaned_part = [r for r in after if r[0] < active_base]
    for offset, key, value in cleaned_part:  # only a key's latest survives the cleaned part
        later = [o for o, k, _ in before if k == key and o > offset]
        assert all(o >= active_base for o in later) or latest[key] == (offset, value)
    assert {k: (o, v) for o, k, v in after} == latest
    assert [r for r in after if r[0] >= active_base] == [r for r in before if r[0] >= active_base]
    assert p._log.size_bytes < size_before
    assert (p.log_start_offset, p.log_end_offset) == (0, len(before))


def test_groups_segments_up_to_segment_bytes_and_keeps_the_round_last_batch(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    _fill(p, clock, rounds=10)
    segments_before = len(p._log.segments)
    active_base = p._log.active.base_offset
    p.set_log_config(dataclasses.replace(p.log_config, segment_bytes=2000))  # groups are sized on the old sizes
    _clean(p, clock)
    assert len(p._log.segments) < segments_before
    last = [h for h in _headers(p) if h.next_offset == active_base]
    assert last, "the batch ending the cleaned range stays, even emptied"
    assert sorted(os.listdir(tmp_path / "t-0")) == sorted(
        n for n in os.listdir(tmp_path / "t-0") if not n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX)))


def test_tombstone_survives_first_round_with_horizon_and_goes_after_it(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock, delete_retention_ms=DAY)
    _append(p, [(b"a", b"1"), (b"b", b"1")], clock)
    _append(p, [(b"a", None)], clock)
    tombstone = p.log_end_offset - 1
    _append(p, [(b"pad", b"p" * 350)], clock)  # rolls: the tombstone's segment is cleanable
    _append(p, [(b"pad", b"q" * 350)], clock)
    end = _clean(p, clock)
    assert (tombstone, b"a", None) in _records(p)
    header = next(h for h in _headers(p) if h.base_offset <= tombstone <= h.last_offset)
    assert batch_filter.delete_horizon(header) == clock.ms + DAY
    clock.ms += DAY + 1
    _append(p, [(b"pad", b"r" * 350)], clock)  # new dirty data: a second round runs
    _clean(p, clock, checkpoint=end)
    assert all(o != tombstone for o, _, _ in _records(p))
    assert (1, b"b", b"1") in _records(p)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_are_recompressed_with_their_codec(tmp_path: Path, codec: int) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    v = b"1" * 100  # compressible: the producer's codec is really applied
    _append(p, [(b"a", v), (b"b", v), (b"c", v)], clock, compression=codec)
    assert _headers(p)[0].compression == codec
    _append(p, [(b"b", b"2")], clock)
    _append(p, [(b"pad", b"p" * 350)], clock)
    _append(p, [(b"pad", b"q" * 350)], clock)
    _clean(p, clock)
    first = _headers(p)[0]
    assert first.compression == codec and first.records_count == 2 and first.last_offset_delta == 2
    assert _records(p)[:3] == [(0, b"a", v), (2, b"c", v), (3, b"b", b"2")]


def test_a_full_offset_map_cleans_in_several_rounds(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock, segment_bytes=2000)
    latest = _fill(p, clock, rounds=10, keys=40)
    active_base = p._log.active.base_offset
    small = 30 * SLOT_BYTES  # 29 slots, room for 26 keys: the first round stops early
    end = _clean(p, clock, map_bytes=small)
    assert end < active_base
    while end < active_base:
        end = _clean(p, clock, checkpoint=end, map_bytes=small)
    final = _records(p)
    assert {k: (o, v) for o, k, v in final} == latest
    cleaned = [k for o, k, _ in final if o < active_base]
    assert len(cleaned) == len(set(cleaned))


def test_records_without_a_key_are_dropped(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    _append(p, [(None, b"keyless"), (b"a", b"1")], clock)
    _append(p, [(b"pad", b"p" * 350)], clock)
    _append(p, [(b"pad", b"q" * 350)], clock)
    _clean(p, clock)
    assert (0, None, b"keyless") not in _records(p) and (1, b"a", b"1") in _records(p)


def test_aborted_transactions_go_and_the_producers_last_batch_stays(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    pid, epoch = 7, 0
    _append(p, [(b"a", b"aborted")], clock, producer_id=pid, producer_epoch=epoch, base_sequence=0,
            transactional=True)
    p.append_marker(pid, epoch, 0, commit=False, timestamp_ms=clock.ms)
    _append(p, [(b"a", b"committed")], clock, producer_id=pid, producer_epoch=epoch, base_sequence=1,
            transactional=True)
    p.append_marker(pid, epoch, 0, commit=True, timestamp_ms=clock.ms)
    _append(p, [(b"a", b"idempotent")], clock, producer_id=9, producer_epoch=0, base_sequence=0)
    _append(p, [(b"a", b"newest")], clock)
    _append(p, [(b"pad", b"p" * 350)], clock)
    _append(p, [(b"pad", b"q" * 350)], clock)
    _clean(p, clock)
    values = [v for _, k, v in _records(p) if k == b"a"]
    assert values == [b"newest"]
    headers = _headers(p)
    assert any(h.producer_id == 9 and h.records_count == 0 and h.last_offset == 4 for h in headers)
    read = p.read(0, 10**6, Isolation.READ_COMMITTED, True)
    assert read.region is not None
    read.region.close()


def test_an_emptied_batch_that_stays_is_kafkas_empty_header(tmp_path: Path) -> None:
    """Kafka's writeEmptyHeader: no records, no compression, no base timestamp (-1), the original
    max timestamp, offsets and producer fields (a consumer sees these fields in a fetch)."""
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    v = b"1" * 100
    _append(p, [(b"a", v), (b"b", v)], clock, producer_id=9, producer_epoch=2, base_sequence=0, compression=1)
    original = _headers(p)[0]
    clock.ms += 5
    _append(p, [(b"a", b"2"), (b"b", b"2")], clock)
    _append(p, [(b"pad", b"p" * 350)], clock)
    _append(p, [(b"pad", b"q" * 350)], clock)
    _clean(p, clock)
    empty, read = next(iter(p.files.iter_batches(0)))
    assert records.compute_crc(read()) == empty.crc
    assert (empty.base_offset, empty.last_offset_delta, empty.records_count) == (0, 1, 0)
    assert (empty.base_timestamp, empty.max_timestamp) == (-1, original.max_timestamp)
    assert (empty.attributes, empty.producer_id, empty.producer_epoch, empty.base_sequence) == (0, 9, 2, 0)
    assert empty.batch_length == records.HEADER_SIZE - records.LOG_OVERHEAD


def test_producer_sequence_survives_cleaning_and_restart(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    _append(p, [(b"a", b"1")], clock, producer_id=5, producer_epoch=0, base_sequence=0)
    _append(p, [(b"a", b"2")], clock, producer_id=5, producer_epoch=0, base_sequence=1)
    _append(p, [(b"a", b"3")], clock)
    _append(p, [(b"pad", b"p" * 350)], clock)
    _append(p, [(b"pad", b"q" * 350)], clock)
    _clean(p, clock)
    p.files.close()
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()  # rebuild producer state from the cleaned log itself
    p = _open(tmp_path / "t-0", clock)
    assert p.producers.entries[5].last_seq == 1


def _crash_mid_swap(tmp_path: Path, stop_after: str) -> tuple[Path, dict]:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    latest = _fill(p, clock, rounds=8)
    plan, segments = _plan(p, clock)
    group = run_round(plan).groups[0]
    cleaned = p.cleaning.open_cleaned(group.base_offset)
    if stop_after in ("swap-rename", "old-deleted"):
        cleaned.rename_files(SWAP_SUFFIX)
    if stop_after == "old-deleted":
        for base in group.sources:
            segments[base].delete()
    return tmp_path / "t-0", latest


@pytest.mark.parametrize("stop_after", ["cleaned", "swap-rename", "old-deleted"])
def test_recovery_discards_or_completes_an_interrupted_swap(tmp_path: Path, stop_after: str) -> None:
    directory, latest = _crash_mid_swap(tmp_path, stop_after)
    clock = Clock()
    p = _open(directory, clock, clean_shutdown=False)
    names = os.listdir(directory)
    assert not [n for n in names if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]
    final = _records(p)
    offsets = [o for o, _, _ in final]
    assert offsets == sorted(set(offsets))  # no offset twice
    assert {k: (o, v) for o, k, v in final} == latest


def test_throttler_sleeps_to_hold_the_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda s: slept.append(s))
    throttler = Throttler(1000.0, clock=lambda: now[0])
    throttler.maybe_throttle(500)  # within the first 300 ms period: not checked yet
    now[0] = 0.4
    throttler.maybe_throttle(500)  # 1000 bytes in 0.4 s at 1000 B/s: 0.6 s ahead
    assert slept == [pytest.approx(0.6)]
    unlimited = Throttler(float("inf"), clock=lambda: now[0])
    now[0] = 10.0
    unlimited.maybe_throttle(10**9)
    assert len(slept) == 1


@pytest.mark.parametrize("crash", ["after-cleaning", "mid-swap"])
def test_recovery_keeps_the_batches_the_cleaner_rewrote(tmp_path: Path, crash: str) -> None:
    """Recovery checks a batch's size, magic and CRC, as Kafka's does, not a producer's rules: a
    cleaned batch holding fewer records than its offsets, or none (a producer's last batch), is
    valid, and a crash (even in the middle of a swap) keeps it and every segment after it."""
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    for r in range(3):  # a and c superseded within each batch's offsets: the batches get gaps
        _append(p, [(b"a", b"a%d" % r), (b"b%d" % r, b"x"), (b"c", b"c%d" % r)], clock)
    _append(p, [(b"d", b"by-producer")], clock, producer_id=5, producer_epoch=0, base_sequence=0)
    _append(p, [(b"d", b"newest")], clock)  # the producer's last batch is emptied, not removed
    _append(p, [(b"pad", b"p" * 350)], clock)
    _append(p, [(b"pad", b"q" * 350)], clock)
    if crash == "after-cleaning":
        _clean(p, clock)
    else:
        plan, segments = _plan(p, clock)
        group = run_round(plan).groups[0]
        cleaned = p.cleaning.open_cleaned(group.base_offset)
        cleaned.rename_files(SWAP_SUFFIX)
        segments[group.sources[0]].delete()  # killed while deleting the old segments
    expected = _records(p) if crash == "after-cleaning" else None
    headers = [records.parse_header(b) for seg in (tmp_path / "t-0").glob("*.log*")
               for b in _batches_of(seg.read_bytes())]
    assert any(h.records_count == 0 for h in headers)
    assert any(0 < h.records_count < h.last_offset_delta + 1 for h in headers)
    end = p.log_end_offset
    p = _open(tmp_path / "t-0", Clock(), clean_shutdown=False)  # recovery_point 0: every segment re-validated
    assert p.log_end_offset == end
    final = _records(p)
    if expected is not None:
        assert final == expected
    assert {k: v for _, k, v in final}[b"d"] == b"newest"
    assert [(k, v) for _, k, v in final if k in (b"a", b"c")] == [(b"a", b"a2"), (b"c", b"c2")]
    assert [k for _, k, _ in final if k.startswith(b"b")] == [b"b0", b"b1", b"b2"]


def _batches_of(data: bytes) -> list[bytes]:
    return [data[s:e] for s, e in records.split_batches(data)]


class _Crash(Exception):
    pass


@pytest.mark.parametrize("ops_before_crash", range(16))
def test_a_crash_at_any_file_operation_of_the_swap_recovers_a_whole_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ops_before_crash: int) -> None:
    """The swap of a group of segments killed after each of its renames and unlinks: recovery
    keeps every key's latest record once, leaves no `.cleaned`/`.swap` file and no index file
    without its log, and the segment swapped in keeps its offset index (it lies below the
    recovery point, where segments are loaded from their indexes, not rebuilt)."""
    clock = Clock()
    p = _open(tmp_path / "t-0", clock, index_interval_bytes=1)
    latest = {}
    for i in range(8):  # keys written once: the first cleaned segment keeps batches, and indexes them
        latest[b"once-%d" % i] = (p.log_end_offset, b"v")
        _append(p, [(b"once-%d" % i, b"v")], clock)
    latest.update(_fill(p, clock, rounds=8))
    p.set_log_config(dataclasses.replace(p.log_config, segment_bytes=800))  # groups of two segments
    plan, segments = _plan(p, clock)
    group = [segments[base] for base in run_round(plan).groups[0].sources]
    assert len(group) == 2  # 3 renames to .swap, 2 x 4 unlinks, 3 renames back: 14 operations
    cleaned = p.cleaning.open_cleaned(group[0].base_offset)
    assert p.cleaning.swap_cleaned(cleaned, group)
    end = p.log_end_offset
    ops = [0]
    real_replace, real_unlink = os.replace, os.unlink

    def counted(real):
        def op(*args, **kwargs):
            if ops[0] == ops_before_crash:
                raise _Crash()
            ops[0] += 1
            return real(*args, **kwargs)
        return op

    monkeypatch.setattr(os, "replace", counted(real_replace))
    monkeypatch.setattr(os, "unlink", counted(real_unlink))
    try:
        PartitionLog.finish_swap(cleaned, group)
    except _Crash:
        pass
    monkeypatch.undo()

    plog = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400, compact=True, index_interval_bytes=1),
                        recovery_point=end, clean_shutdown=False, clock=clock)
    p = Partition("t", 0, plog, LeaderEpochCache(tmp_path / "t-0" / "leader-epoch-checkpoint"), clock=clock)
    names = os.listdir(tmp_path / "t-0")
    assert not [n for n in names if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]
    logs = {n.split(".")[0] for n in names if n.endswith(".log")}
    assert not [n for n in names if n.endswith(("index", "timeindex")) and n.split(".")[0] not in logs]
    final = _records(p)
    offsets = [o for o, _, _ in final]
    assert offsets == sorted(set(offsets))
    assert {k: (o, v) for o, k, v in final} == latest
    assert p.log_end_offset == end
    first = plog.segments[0]
    assert sum(1 for _ in first.iter_headers(0)) > 2 and len(first.index) > 0, "the cleaned segment lost its index"


def test_cleanable_range_stops_at_young_segments_and_open_transactions(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock, min_compaction_lag_ms=60_000)
    _fill(p, clock, rounds=3)  # segments written at NOW
    clock.ms += 120_000  # old enough now
    first_young = p.log_end_offset
    _fill(p, clock, rounds=3)  # young segments
    young = p.cleaning.cleanable_range(None, clock.ms)
    holding = next(s.base_offset for s in reversed(p._log.segments) if s.base_offset <= first_young)
    assert young.first_dirty == 0 and 0 < young.first_uncleanable == holding  # the young ones wait
    clock.ms += 120_000
    assert p.cleaning.cleanable_range(None, clock.ms).first_uncleanable == p._log.active.base_offset
    _append(p, [(b"t", b"open")], clock, producer_id=3, producer_epoch=0, base_sequence=0, transactional=True)
    open_at = p.log_end_offset - 1
    _fill(p, clock, rounds=3)
    pending = p.cleaning.cleanable_range(None, clock.ms)
    assert pending.first_uncleanable <= open_at < p.log_end_offset  # never past the last stable offset
    assert pending.first_uncleanable == next(s.base_offset for s in reversed(p._log.segments)
                                             if s.base_offset <= open_at)


def test_max_compaction_lag_makes_a_log_due_whatever_its_dirty_ratio(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock, max_compaction_lag_ms=60_000)
    _fill(p, clock, rounds=6, keys=8)
    checkpoint = _clean(p, clock)
    _fill(p, clock, rounds=1, keys=8)  # a little dirty data after a cleaned section: a low ratio
    fresh = p.cleaning.cleanable_range(checkpoint, clock.ms)
    assert fresh.cleanable_bytes > 0 and fresh.ratio < 0.99
    assert not fresh.needs_compaction_now and not fresh.worth_cleaning(0.99)
    clock.ms += 61_000
    due = p.cleaning.cleanable_range(checkpoint, clock.ms)
    assert due.needs_compaction_now and due.worth_cleaning(0.99)


def test_a_checkpoint_outside_the_log_restarts_from_the_log_start(tmp_path: Path) -> None:
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    _fill(p, clock, rounds=3)
    assert p.cleaning.cleanable_range(10**6, clock.ms).checkpoint_reset  # past the log end
    p.delete_records_before(5)
    reset = p.cleaning.cleanable_range(2, clock.ms)  # below the log start
    assert reset.checkpoint_reset and reset.first_dirty == 5
    assert not p.cleaning.cleanable_range(7, clock.ms).checkpoint_reset



def _abort_across_a_roll(p: Partition, clock: Clock, seal_the_markers_segment: bool) -> None:
    """k=v1 committed at offset 0; a transaction writes k=v2 at 1; the segment rolls (padding of
    another key); the ABORT marker lands in the next segment, sealed by more padding or not."""
    pid, epoch = 7, 0
    _append(p, [(b"k", b"v1")], clock)
    _append(p, [(b"k", b"v2")], clock, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    _append(p, [(b"pad", b"p" * 200)], clock)
    p.append_marker(pid, epoch, 0, commit=False, timestamp_ms=clock.ms)
    if seal_the_markers_segment:
        _append(p, [(b"pad", b"q" * 300)], clock)
    bases = [s.base_offset for s in p._log.segments]
    assert bases[:2] == [0, 2]  # the aborted data at 1, its marker at 3: two segments
    assert (len(bases) > 2) == seal_the_markers_segment


def _read_committed(p: Partition, key: bytes) -> list[bytes | None]:
    """key's values as a read_committed consumer sees them: the fetch's aborted transactions'
    batches skipped."""
    read = p.read(0, 10**6, Isolation.READ_COMMITTED, True)
    assert read.region is not None and read.aborted is not None
    data = read.region.read()
    read.region.close()
    aborted = {(t.producer_id, t.first_offset) for t in read.aborted}
    values = []
    for batch in _batches_of(data):
        header = records.parse_header(batch)
        if header.is_control or any(pid == header.producer_id and first <= header.base_offset
                                    for pid, first in aborted):
            continue
        values += [r.value for r in records.iter_records(batch) if r.key == key]
    return values


@pytest.mark.parametrize("seal_the_markers_segment", [False, True])
def test_an_aborted_transaction_whose_marker_is_in_a_later_segment_is_cleaned_as_aborted(
        tmp_path: Path, seal_the_markers_segment: bool) -> None:
    """Kafka's collectAbortedTransactions walks on past the segments of the range it cleans until
    it passes it: an abort is recorded in its marker's segment, which may be the active segment
    (not cleaned) or a sealed one cleaned in its own group. Either way the committed v1 stays, the
    aborted v2 goes, and read_committed returns v1."""
    clock = Clock()
    p = _open(tmp_path / "t-0", clock)
    _abort_across_a_roll(p, clock, seal_the_markers_segment)
    assert _read_committed(p, b"k") == [b"v1"]
    _clean(p, clock)
    assert [v for _, k, v in _records(p) if k == b"k"] == [b"v1"]
    assert _read_committed(p, b"k") == [b"v1"]


def _random_log(directory: Path, clock: Clock, seed: int, batches: int) -> Partition:
    """A compacted log of `batches` batches of 1-30 records over 60 keys, some keyless, some
    tombstones, keys repeated inside batches, a third compressed: every kind of batch a verdict
    may meet, the same log for the same seed."""
    rng = random.Random(seed)
    p = _open(directory, clock, segment_bytes=4000, delete_retention_ms=DAY)
    for _ in range(batches):
        entries = []
        for _ in range(rng.randint(1, 30)):
            key = None if rng.random() < 0.03 else b"key-%d" % rng.randrange(60)
            value = None if rng.random() < 0.05 else b"v%d" % rng.randrange(10**6)
            entries.append((key, value))
        _append(p, entries, clock, compression=rng.choice([0, 0, CODEC_GZIP]))
        clock.ms += 1
    return p


@pytest.mark.parametrize("map_bytes, whole_batches", [(10**7, 20), (80 * SLOT_BYTES, 20), (40 * SLOT_BYTES, 0)],
                         ids=["dict", "table", "map-fills-in-each-round"])
def test_batches_kept_or_dropped_whole_by_verdict_clean_as_read_record_by_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, map_bytes: int, whole_batches: int) -> None:
    """The verdicts (storage/batch_verdicts.py) skip reading records; the log they leave is the
    one the record-by-record path leaves, round after round, tombstone horizons included, with a
    map that holds every key (a dict, a table) and one that fills in each round (60 keys, room
    for 36)."""
    real = batch_verdicts.MappedBatches.verdicts
    given = []

    def counted(self, offset_map):
        out = real(self, offset_map)
        given.append(len(out))
        return out

    results = []
    for name, verdicts in (("with", counted), ("without", lambda self, offset_map: {})):
        monkeypatch.setattr(batch_verdicts.MappedBatches, "verdicts", verdicts)
        clock = Clock()
        p = _random_log(tmp_path / name / "t-0", clock, seed=38, batches=300)
        end = None
        for step in range(3):
            end = _clean(p, clock, checkpoint=end, map_bytes=map_bytes)
            for _ in range(40):
                _append(p, [(b"key-%d" % (step * 7 % 60), b"later")], clock)
            clock.ms += DAY // 2 + 1  # tombstones' horizons pass after two steps
        _clean(p, clock, checkpoint=end, map_bytes=map_bytes)
        results.append((_records(p), [(h.base_offset, h.records_count, h.base_timestamp, h.attributes)
                                      for h in _headers(p)]))
    assert sum(given) >= whole_batches  # whole batches did go by verdict
    assert results[0] == results[1]
