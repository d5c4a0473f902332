"""Index arithmetic, segment append/read/roll, retention and crash recovery."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from wirekafka.protocol import records
from wirekafka.protocol.records import build_batch, parse_header
from wirekafka.storage import checkpoint
from wirekafka.storage.index import OffsetIndex, TimeIndex
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage import segment as segment_module
from wirekafka.storage.segment import LogSegment


T0 = 1_700_000_000.0
NOW_MS = int(T0 * 1000)


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _append(log: PartitionLog, n: int, ts: int, value_size: int = 10) -> list[int]:
    """Append one batch of n records at the log end; returns its offsets."""
    batch = bytearray(build_batch([(b"k", b"x" * value_size, ts + i) for i in range(n)]))
    start = log.log_end_offset
    records.assign_offsets(batch, start, 0)
    log.append([batch], parse_header(batch))
    return list(range(start, start + n))


def _offsets(data: bytes) -> list[int]:
    out = []
    for s, e in records.split_batches(data):
        out += [r.offset for r in records.iter_records(data[s:e])]
    return out


def test_offset_index_lookup(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 100)
    assert idx.lookup(150) == (100, 0)
    idx.append(110, 4000)
    idx.append(125, 8100)
    idx.append(120, 9000)  # not increasing: ignored
    assert idx.lookup(109) == (100, 0)
    assert idx.lookup(110) == (110, 4000)
    assert idx.lookup(124) == (110, 4000)
    assert idx.lookup(10_000) == (125, 8100)
    idx.close()
    assert (tmp_path / "0.index").stat().st_size == 16
    again = OffsetIndex(tmp_path / "0.index", 100)
    assert again.lookup(130) == (125, 8100)


def test_index_drops_torn_entry(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    idx = OffsetIndex(path, 0)
    idx.append(5, 100)
    idx.close()
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00")
    again = OffsetIndex(path, 0)
    assert len(again) == 1 and path.stat().st_size == 8


def test_time_index_monotonic(tmp_path: Path) -> None:
    ti = TimeIndex(tmp_path / "0.timeindex", 0)
    ti.maybe_append(1000, 3)
    ti.maybe_append(900, 5)  # older timestamp: no entry
    ti.maybe_append(2000, 9)
    assert len(ti) == 2
    assert ti.lookup(999) == 0 and ti.lookup(1000) == 3 and ti.lookup(1999) == 3 and ti.lookup(5000) == 9


def test_segment_read_and_find(tmp_path: Path) -> None:
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    pos = 0
    for i in range(20):
        b = bytearray(build_batch([(None, b"v" * 50, 1000 + i)] * 2))
        records.assign_offsets(b, 2 * i, 0)
        seg.append([b], parse_header(b))
        pos += len(b)
    assert seg.size == pos and seg.next_offset == 40
    assert len(seg.index) > 3
    position, header = seg.find_batch(17)
    assert header.base_offset == 16

    def read(offset: int, max_bytes: int, max_offset: int, min_one: bool) -> bytes:
        found = seg.locate(offset, max_bytes, max_offset, min_one)
        return seg.read_at(*found) if found else b""

    data = read(17, max_bytes=10**6, max_offset=40, min_one=True)
    assert _offsets(data) == list(range(16, 40))
    assert _offsets(read(0, max_bytes=1, max_offset=40, min_one=True)) == [0, 1]
    assert read(0, max_bytes=1, max_offset=40, min_one=False) == b""
    assert _offsets(read(0, max_bytes=10**6, max_offset=6, min_one=True)) == list(range(6))
    assert seg.find_timestamp(1010)[1].base_offset == 20


def _walked(seg: LogSegment, offset: int, max_bytes: int, max_offset: int, min_one: bool) -> tuple[int, int] | None:
    """What locate must answer, found by reading every batch header from the segment's start."""
    start, total = None, 0
    for position, header in seg.iter_headers(0):
        if start is None:
            if header.last_offset < offset:
                continue
            start = position
        if header.base_offset >= max_offset or (total + header.size > max_bytes and not (min_one and total == 0)):
            break
        total += header.size
        if total >= max_bytes:
            break
    return (start, total) if start is not None and total else None


@pytest.mark.parametrize("interval", [1, 100, 4096])
def test_locate_jumping_by_the_index_finds_what_a_walk_finds(tmp_path: Path, interval: int) -> None:
    """Batches of 1-60 records (~70 B to ~6 KB) with an entry every `interval` bytes: for every
    limit, locate (which jumps to the last indexed batch inside the limits) answers what reading
    each header answers, and reads fewer headers when the index helps."""
    rng = random.Random(interval)  # fixed seed: the same segment every run
    seg = LogSegment(tmp_path, 0, index_interval_bytes=interval)
    offset = 0
    for _ in range(300):
        count = rng.randint(1, 60)
        b = bytearray(build_batch([(None, b"v" * 90, 1000)] * count))
        records.assign_offsets(b, offset, 0)
        seg.append([b], parse_header(b))
        offset += count
    ends = sorted({h.next_offset for _, h in seg.iter_headers(0)})
    for fetch_offset in [0, 1, 37, offset // 2, offset - 1]:
        for max_bytes in [1, 61, 200, 4096, 10_000, 65_536, 10**7]:
            for max_offset in [ends[0], ends[len(ends) // 3], ends[-1] - 1, offset]:
                for min_one in (True, False):
                    assert seg.locate(fetch_offset, max_bytes, max_offset, min_one) == \
                        _walked(seg, fetch_offset, max_bytes, max_offset, min_one), \
                        (fetch_offset, max_bytes, max_offset, min_one)
    reads = []
    original = seg._bounds_at
    seg._bounds_at = lambda position, nowait: reads.append(position) or original(position, nowait)  # type: ignore[method-assign]
    assert seg.locate(0, 10**7, offset, True) == (0, seg.size)
    assert len(reads) <= (2 if interval == 1 else 300)


def test_roll_on_segment_bytes_and_read_across(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=500), clock=Clock())
    for i in range(30):
        _append(log, 2, 1000 + i)
    assert len(log.segments) > 3
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert names[0] == "00000000000000000000.log"
    assert all(len(n) == len("00000000000000000000.log") for n in names)
    data = b""
    offset = 0
    while offset < log.log_end_offset:
        chunk = log.read(offset, 10**6, log.log_end_offset, True)
        got = _offsets(chunk)
        data += chunk
        offset = got[-1] + 1
    assert _offsets(data) == list(range(60))


def test_recovery_truncates_torn_tail(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog(d, LogConfig(), clock=Clock())
    for i in range(5):
        _append(log, 3, NOW_MS + i)
    size_before = log.active.size
    log.close()
    path = d / "00000000000000000000.log"
    with open(path, "r+b") as f:
        f.truncate(size_before - 7)  # tear the last batch
    log = PartitionLog(d, LogConfig(), clock=Clock())
    assert log.log_end_offset == 12
    assert _offsets(log.read(0, 10**6, 100, True)) == list(range(12))
    assert _append(log, 1, NOW_MS) == [12]


def test_recovery_truncates_garbage_tail(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog(d, LogConfig(), clock=Clock())
    for i in range(4):
        _append(log, 2, NOW_MS + i)
    good = log.active.size
    log.close()
    with open(d / "00000000000000000000.log", "ab") as f:
        f.write(random.Random(7).randbytes(5000))  # the same garbage every run
    log = PartitionLog(d, LogConfig(), clock=Clock())
    assert log.active.size == good and log.log_end_offset == 8
    assert _append(log, 2, NOW_MS) == [8, 9]


def test_recovery_rejects_crc_damage_mid_log(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog(d, LogConfig(), clock=Clock())
    sizes = []
    for i in range(4):
        _append(log, 2, NOW_MS + i)
        sizes.append(log.active.size)
    log.close()
    with open(d / "00000000000000000000.log", "r+b") as f:
        f.seek(sizes[1] + 70)  # inside the third batch's records
        f.write(b"\xff")
    log = PartitionLog(d, LogConfig(), clock=Clock())
    assert log.log_end_offset == 4


def test_a_roll_makes_the_closed_segments_due_a_flush_up_to_the_new_base(tmp_path: Path) -> None:
    """Kafka flushes up to each new segment's base at a roll: the recovery point follows the
    rolls, so a crash re-checks only the active segment (issue 34, hole 9)."""
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=300), clock=Clock())
    assert log.rolled_flush_work() is None
    while len(log.segments) < 3:
        _append(log, 2, NOW_MS)
    work = log.rolled_flush_work()
    assert work is not None and work.end == log.active.base_offset
    assert work.segments == log.segments[:-1]
    work.run()
    log.flushed(work.end)
    assert log.recovery_point == log.active.base_offset
    assert log.rolled_flush_work() is None  # nothing rolled since
    while len(log.segments) < 4:
        _append(log, 2, NOW_MS)
    again = log.rolled_flush_work()  # only what the new roll closed
    assert again is not None and again.end == log.active.base_offset and again.segments == [log.segments[2]]


def test_recovery_covers_the_segment_that_holds_the_recovery_point(tmp_path: Path) -> None:
    """After a crash, every segment from the one holding the recovery point is re-checked, not
    only those starting at or after it (Kafka's LogLoader recovers logSegments(recoveryPoint,
    end)). Failed before: a torn tail in a middle segment that started below the recovery point
    stayed and was read back as records."""
    d = tmp_path / "t-0"
    log = PartitionLog(d, LogConfig(segment_bytes=300), clock=Clock())
    while len(log.segments) < 3:
        _append(log, 2, NOW_MS)
    middle = log.segments[1]
    middle_base, middle_end, middle_size = middle.base_offset, middle.next_offset, middle.size
    recovery_point = middle.base_offset + 1  # inside the middle segment
    log.close()
    with open(middle.log_path, "ab") as f:
        f.write(random.Random(9).randbytes(200))  # the same garbage every run
    log = PartitionLog(d, LogConfig(segment_bytes=300), recovery_point=recovery_point, clock=Clock())
    assert log.segments[1].size == middle_size
    # invalid data mid-log: what follows it is unreachable and goes, as in Kafka
    assert log.log_end_offset == middle_end and len(log.segments) == 2
    assert _offsets(log.read(middle_base, 10**6, 100, True)) == list(range(middle_base, middle_end))


def test_a_short_write_is_cut_off_again_and_raises(tmp_path: Path, monkeypatch) -> None:
    """A full disk writes part of a batch, then fails (issue 34, hole 7): the part is cut off so
    the file ends where the segment says, and the OSError goes up for the directory to fail."""
    log = PartitionLog(tmp_path / "t-0", LogConfig(), clock=Clock())
    _append(log, 2, NOW_MS)
    size = log.active.size
    real_writev = os.writev

    def half_writev(fd: int, parts) -> int:
        data = b"".join(bytes(p) for p in parts)
        return real_writev(fd, [data[: len(data) // 2]])

    monkeypatch.setattr(segment_module.os, "writev", half_writev)
    with pytest.raises(OSError):
        _append(log, 2, NOW_MS)
    monkeypatch.undo()
    assert log.active.size == size == log.active.log_path.stat().st_size
    assert _append(log, 1, NOW_MS) == [2]
    assert _offsets(log.read(0, 10**6, 100, True)) == [0, 1, 2]


def test_clean_shutdown_skips_crc_but_keeps_offsets(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog(d, LogConfig(segment_bytes=300), clock=Clock())
    for i in range(10):
        _append(log, 2, 1000 + i)
    segments = len(log.segments)
    log.close()
    log = PartitionLog(d, LogConfig(segment_bytes=300), recovery_point=20, clean_shutdown=True, clock=Clock())
    assert log.log_end_offset == 20 and len(log.segments) == segments


def test_time_retention_deletes_whole_old_segments(tmp_path: Path) -> None:
    clock = Clock()
    now_ms = int(clock() * 1000)
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400, retention_ms=60_000), clock=clock)
    for i in range(12):
        _append(log, 2, now_ms - 3_600_000)  # an hour old
    for i in range(6):
        _append(log, 2, now_ms)
    all_old = [s for s in log.segments if s.max_timestamp < now_ms - 60_000]
    assert len(all_old) >= 2  # the fixture really spans several old segments
    first_kept = log.segments[len(all_old)].base_offset
    doomed = log.apply_retention(log.log_end_offset)
    assert len(doomed) == len(all_old)
    assert (tmp_path / "t-0" / "00000000000000000000.log").exists()  # detached, not yet deleted
    PartitionLog.delete_segments(doomed)
    assert log.segments[0].max_timestamp >= now_ms
    assert log.log_start_offset == first_kept > 0
    assert not (tmp_path / "t-0" / "00000000000000000000.log").exists()


def test_time_retention_rolls_and_deletes_the_active_segment(tmp_path: Path) -> None:
    """A topic written once and left alone expires whole, as in Kafka: a new empty active
    segment is rolled at the log end, the old one goes, and the log start meets the log end."""
    d = tmp_path / "t-0"
    clock = Clock()
    log = PartitionLog(d, LogConfig(retention_ms=60_000), clock=clock)
    _append(log, 3, NOW_MS)
    _append(log, 2, NOW_MS + 3)
    assert log.apply_retention(log.log_end_offset) == []  # not old enough yet
    clock.t += 61
    old = log.active
    doomed = log.apply_retention(log.log_end_offset)
    assert doomed == [old] and old.log_path.exists()  # detached; the caller deletes the files
    PartitionLog.delete_segments(doomed)
    assert not old.log_path.exists()
    assert [s.base_offset for s in log.segments] == [5] and log.active.size == 0
    assert log.log_start_offset == log.log_end_offset == 5
    assert (d / "00000000000000000005.log").exists()  # the new segment is on disk at once
    assert log.apply_retention(log.log_end_offset) == []  # an empty active segment never goes
    assert _append(log, 1, int(clock() * 1000)) == [5]
    log.close()
    again = PartitionLog(d, LogConfig(retention_ms=60_000), log_start_offset=5, clean_shutdown=True, clock=clock)
    assert (again.log_start_offset, again.log_end_offset) == (5, 6)


def test_retention_stops_at_the_high_watermark(tmp_path: Path) -> None:
    """Only segments whose upper bound (next segment's base, or the log end) is at or below the
    high watermark go, so the log start never passes it."""
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400, retention_ms=1), clock=Clock())
    for i in range(12):
        _append(log, 2, 1000 + i)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    assert log.apply_retention(bases[1] - 1) == []
    assert len(log.apply_retention(bases[2])) == 2 and log.log_start_offset == bases[2]
    end = log.log_end_offset
    assert len(log.apply_retention(end - 1)) == len(bases) - 3  # not the active: it reaches past it
    assert log.active.base_offset == bases[-1] and log.log_start_offset == bases[-1]
    assert len(log.apply_retention(end)) == 1 and log.log_start_offset == log.log_end_offset == end


def test_size_retention(tmp_path: Path) -> None:
    """Kafka's rule: whole segments from the oldest while the log stays at least retention.bytes."""
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400, retention_bytes=800), clock=Clock())
    for i in range(20):
        _append(log, 2, NOW_MS + i)
    before = log.size_bytes
    doomed = log.apply_retention(log.log_end_offset)
    assert doomed and before - sum(s.size for s in doomed) == log.size_bytes
    assert 800 <= log.size_bytes < 800 + doomed[-1].size
    assert log.log_start_offset == log.segments[0].base_offset


def test_size_retention_covers_the_active_segment(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400, retention_bytes=0), clock=Clock())
    for i in range(10):
        _append(log, 2, NOW_MS + i)
    count = len(log.segments)
    assert len(log.apply_retention(log.log_end_offset)) == count
    assert log.log_start_offset == log.log_end_offset == 20 and log.size_bytes == 0
    small = PartitionLog(tmp_path / "u-0", LogConfig(retention_bytes=10**6), clock=Clock())
    _append(small, 2, NOW_MS)
    assert small.apply_retention(small.log_end_offset) == []  # under retention.bytes: nothing goes


def test_compact_only_logs_drop_only_segments_below_the_log_start(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400, retention_ms=1, retention_bytes=0),
                       clock=Clock())
    for i in range(12):
        _append(log, 2, 1000 + i)
    bases = [s.base_offset for s in log.segments]
    assert log.apply_retention(log.log_end_offset, delete_policy=False) == []
    log.log_start_offset = bases[2]  # as a checkpoint after DeleteRecords would leave it at load
    assert len(log.apply_retention(log.log_end_offset, delete_policy=False)) == 2
    log.log_start_offset = log.log_end_offset
    assert len(log.apply_retention(log.log_end_offset, delete_policy=False)) == len(bases) - 3
    assert len(log.segments) == 1  # the log start breach never takes the active segment


def test_time_retention_of_records_without_timestamps_uses_the_file_time(tmp_path: Path) -> None:
    """Kafka's largestTimestamp falls back to the segment file's modification time."""
    clock = Clock(time.time())
    log = PartitionLog(tmp_path / "t-0", LogConfig(retention_ms=3_600_000), clock=clock)
    _append(log, 1, -1)
    _append(log, 1, -1)
    assert log.active.max_timestamp == -1
    assert log.apply_retention(log.log_end_offset) == []
    hour_ago = clock() - 3601
    os.utime(log.active.log_path, (hour_ago, hour_ago))
    assert len(log.apply_retention(log.log_end_offset)) == 1 and log.log_start_offset == 2


def test_advance_log_start(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=400), clock=Clock())
    for i in range(20):
        _append(log, 2, 1000 + i)
    log.advance_log_start(25)
    assert log.log_start_offset == 25
    assert log.segments[0].base_offset <= 25 < log.segments[0].next_offset


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint.write_offsets(path, {("a", 0): 5, ("my.topic-x", 11): 99})
    assert path.read_text().splitlines()[:2] == ["0", "2"]
    assert checkpoint.read_offsets(path) == {("a", 0): 5, ("my.topic-x", 11): 99}


def test_roll_after_segment_ms_measured_in_record_time(tmp_path: Path) -> None:
    clock = Clock()
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_ms=60_000), clock=clock)
    _append(log, 1, 1000)  # old timestamps do not roll by themselves
    _append(log, 1, 1000)
    clock.t += 3600
    _append(log, 1, 2000)
    assert len(log.segments) == 1
    _append(log, 1, 1000 + 60_001)  # a minute of record time after the first batch
    assert len(log.segments) == 2 and log.active.base_offset == 3


@pytest.mark.parametrize("seed", range(5))
def test_segment_jitter_rolls_each_segment_its_own_random_time_sooner(tmp_path: Path, seed: int) -> None:
    """segment.jitter.ms: each segment draws, once, how much sooner than segment.ms it rolls (below
    the smaller of the two), so the age that rolls it lies in (segment.ms - jitter, segment.ms]."""
    random.seed(seed)
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_ms=60_000, segment_jitter_ms=20_000), clock=Clock())
    for age in range(0, 60_001, 500):
        _append(log, 1, 1000 + age)
        if len(log.segments) == 2:
            break
    jitter = log.segments[0].roll_jitter_ms
    assert jitter is not None and 0 <= jitter < 20_000
    assert len(log.segments) == 2 and 60_000 - jitter < age <= 60_000 - jitter + 500
    _append(log, 1, 1000 + age)
    assert log.segments[1].roll_jitter_ms is not None  # drawn for the new segment at its next append


def test_without_jitter_a_segment_rolls_at_segment_ms(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_ms=60_000, segment_jitter_ms=0), clock=Clock())
    _append(log, 1, 1000)
    _append(log, 1, 61_000)
    assert len(log.segments) == 1 and log.segments[0].roll_jitter_ms == 0
    _append(log, 1, 61_001)
    assert len(log.segments) == 2


def test_truncation_mid_log_drops_later_segments(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog(d, LogConfig(segment_bytes=300), clock=Clock())
    for i in range(12):
        _append(log, 2, NOW_MS + i)
    assert len(log.segments) >= 3
    second = log.segments[1]
    log.close()
    with open(second.log_path, "r+b") as f:
        f.truncate(second.size - 5)
    log = PartitionLog(d, LogConfig(segment_bytes=300), clock=Clock())
    assert log.segments[-1].base_offset == second.base_offset
    end = log.log_end_offset
    assert _offsets(log.read(end - 1, 10**6, end, True))[-1] == end - 1
    assert len(list(d.glob("*.log"))) == 2


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_rolled_segments_hold_one_descriptor_each_and_a_reopened_log_none_for_its_indexes(tmp_path: Path) -> None:
    """Kafka keeps a channel per segment's log and maps its indexes without an open channel:
    here an index holds its file open only while appended to, so a rolled segment costs one
    descriptor (its log), the active one three (its log and its two indexes once they have an
    entry; the transaction index opens only for an aborted transaction)."""
    before = _open_descriptors()
    config = LogConfig(segment_bytes=2000, index_interval_bytes=100)
    log = PartitionLog(tmp_path / "t-0", config, clock=Clock())
    for i in range(120):
        _append(log, 2, NOW_MS + i)
    assert len(log.segments) >= 5
    assert all(len(seg.index) for seg in log.segments[:-1])  # the indexes have entries, on disk
    assert _open_descriptors() - before == len(log.segments) + 2
    log.close()
    assert _open_descriptors() == before
    log = PartitionLog(tmp_path / "t-0", config, clock=Clock(), clean_shutdown=True)
    assert _open_descriptors() - before == len(log.segments)
    log.close()
    log = PartitionLog(tmp_path / "t-0", config, clock=Clock(), clean_shutdown=False)  # every segment recovered
    assert _open_descriptors() - before == len(log.segments) + 2  # the active segment's rebuilt indexes
    # the indexes still answer: a read in the middle of the log jumps through them
    assert _offsets(log.read(150, 10**6, log.log_end_offset, True))[0] <= 150
    assert log.find_timestamp(NOW_MS + 60) is not None
    assert _open_descriptors() - before == len(log.segments) + 2  # look-ups opened their files only for the read
    _append(log, 2, NOW_MS + 200)
    log.flush()
    log.close()
    assert _open_descriptors() == before


def test_a_reader_on_a_deleted_segment_still_finds_its_batches_and_a_flush_of_it_does_not_fail(tmp_path: Path) -> None:
    """Retention may delete a segment a worker holds pinned (a cold read, a flush): the index
    entries are read before the files go, and flushing a deleted index is nothing to do."""
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=2000, index_interval_bytes=100), clock=Clock())
    for i in range(40):
        _append(log, 2, NOW_MS + i)
    log.close()
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=2000, index_interval_bytes=100), clock=Clock(),
                       clean_shutdown=True)
    seg = log.segments[0]
    assert seg.pin()
    try:
        seg.delete()
        assert not seg.log_path.exists() and not seg.index.path.exists()
        found = seg.find_batch(seg.base_offset + 5)
        assert found is not None and found[1].base_offset <= seg.base_offset + 5 <= found[1].last_offset
        seg.flush()
    finally:
        seg.unpin()
    log.close()


def test_a_search_by_timestamp_jumps_over_the_batches_below_the_log_start(tmp_path: Path, monkeypatch) -> None:
    """As Kafka's findOffsetByTimestamp(timestamp, logStartOffset): the scan starts at the
    offset index's entry for the log start, so a log start moved deep into a segment
    (DeleteRecords) costs a few header reads, not a read per batch below it (before: a
    fresh scan of the rest of the segment per batch, the fuzz run's ListOffsets hot spot)."""
    log = PartitionLog(tmp_path / "t-0", LogConfig(index_interval_bytes=100), clock=Clock())
    for i in range(2000):
        _append(log, 1, NOW_MS + i)
    log.log_start_offset = 1500
    read = [0]
    real_pread = os.pread

    def counting_pread(fd: int, n: int, position: int) -> bytes:
        data = real_pread(fd, n, position)
        read[0] += len(data)
        return data

    monkeypatch.setattr(segment_module.os, "pread", counting_pread)
    assert log.find_timestamp(0)[2].base_offset == 1500
    assert log.find_timestamp(NOW_MS + 1700)[2].base_offset == 1700  # past the log start: the time index leads
    assert log.find_timestamp(NOW_MS + 2000) is None
    assert read[0] < 64 * 1024, read[0]
    monkeypatch.undo()
    log.close()
