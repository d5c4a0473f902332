"""The compact indexes: array columns answering as the sorted lists they replace did, entries
read only when first looked up, Kafka's sanity checks, and the file bytes unchanged."""

from __future__ import annotations

import bisect
import random
import struct
from pathlib import Path

import pytest

from wirekafka.storage.index import CorruptIndex, OffsetIndex, TimeIndex


def _offset_index(path: Path, base: int, entries: list[tuple[int, int]]) -> OffsetIndex:
    idx = OffsetIndex(path, base)
    for offset, position in entries:
        idx.append(offset, position)
    return idx


def test_offset_index_answers_as_a_bisect_over_lists(tmp_path: Path) -> None:
    rng = random.Random(7)
    base = 1_000_000
    offsets = sorted(rng.sample(range(base + 1, base + 50_000), 2000))
    positions = sorted(rng.sample(range(1, 2**31 - 1), 2000))
    idx = _offset_index(tmp_path / "a.index", base, list(zip(offsets, positions)))
    idx.close()
    again = OffsetIndex(tmp_path / "a.index", base)
    assert again.memory_bytes() == 0  # nothing read yet but the last entry
    assert again.last_entry() == (offsets[-1], positions[-1]) and len(again) == 2000
    for target in [base - 5, base, *rng.sample(range(base, base + 51_000), 300), base + 10**6]:
        i = bisect.bisect_right(offsets, target) - 1
        assert again.lookup(target) == ((offsets[i], positions[i]) if i >= 0 else (base, 0))
        assert again.count_below(target) == bisect.bisect_left(offsets, target)
    for position in rng.sample(range(2**31), 100):
        i = bisect.bisect_left(positions, position)
        assert again.upper_bound_offset(position) == (offsets[i] if i < len(offsets) else None)
        limit = rng.choice(offsets)
        k = min(bisect.bisect_right(positions, position), bisect.bisect_left(offsets, limit)) - 1
        assert again.last_entry_within(position, limit) == ((offsets[k], positions[k]) if k >= 0 else None)
    assert again.memory_bytes() == 2000 * 8  # 8 bytes an entry, as Kafka's mapped file


def test_offset_index_file_bytes_are_kafkas(tmp_path: Path) -> None:
    idx = _offset_index(tmp_path / "b.index", 100, [(110, 4000), (125, 8100), (120, 9000)])
    idx.close()
    assert (tmp_path / "b.index").read_bytes() == struct.pack(">iiii", 10, 4000, 25, 8100)


def test_appends_after_a_lazy_open_reach_both_the_file_and_the_columns(tmp_path: Path) -> None:
    idx = _offset_index(tmp_path / "c.index", 0, [(10, 100), (20, 200)])
    idx.close()
    idx = OffsetIndex(tmp_path / "c.index", 0)
    idx.append(15, 150)  # not past the last entry (read at open): ignored
    idx.append(30, 300)  # before the columns are read: written to the file only
    assert idx.lookup(31) == (30, 300) and len(idx) == 3
    idx.append(40, 400)  # after: both
    assert idx.lookup(45) == (40, 400) and idx.count_below(40) == 3
    idx.keep_first(2)
    assert idx.lookup(45) == (20, 200) and idx.last_entry() == (20, 200)
    idx.append(25, 250)
    assert (tmp_path / "c.index").read_bytes() == struct.pack(">iiiiii", 10, 100, 20, 200, 25, 250)


@pytest.mark.parametrize("span", [10_000, 2**31 - 1, 2**40])
def test_time_index_answers_as_lists_whatever_its_timestamps_span(tmp_path: Path, span: int) -> None:
    """Deltas from the first timestamp while they fit 32 bits, full 64-bit timestamps beyond:
    either way the same answers, and the same file, whether appended or read back."""
    rng = random.Random(span)
    first = -5 if span == 10_000 else 1_700_000_000_000
    stamps = sorted(rng.sample(range(first, first + span), 500)) if span < 2**40 else \
        sorted({first + rng.randrange(span) for _ in range(500)})
    stamps[0] = first
    offsets = sorted(rng.sample(range(100_000), len(stamps)))
    path = tmp_path / "t.timeindex"
    written = TimeIndex(path, 7)
    written.lookup(0)  # read (empty) before the appends: they go into the columns too
    for ts, off in zip(stamps, offsets):
        written.maybe_append(ts, off + 7)
    written.maybe_append(stamps[-1], 10**6)  # not newer: ignored
    written.close()
    read = TimeIndex(path, 7)
    assert read.last_entry() == (stamps[-1], offsets[-1] + 7)
    for idx in (written, read):
        for target in [first - 1, *rng.sample(range(first, first + span), 200), first + span + 1]:
            i = bisect.bisect_right(stamps, target) - 1
            assert idx.lookup(target) == (7 if i < 0 else offsets[i] + 7)
        for offset in rng.sample(range(100_000), 50):
            assert idx.count_below(offset + 7) == bisect.bisect_left(offsets, offset)
    assert read.memory_bytes() == len(stamps) * (8 if span < 2**31 else 12)
    assert path.read_bytes() == b"".join(struct.pack(">qi", t, o) for t, o in zip(stamps, offsets))


def test_sanity_checks_are_kafkas(tmp_path: Path) -> None:
    path = tmp_path / "d.index"
    path.write_bytes(struct.pack(">ii", -3, 0))  # an offset below the base
    with pytest.raises(CorruptIndex):
        OffsetIndex(path, 100).sanity_check()
    path.write_bytes(struct.pack(">ii", 3, 0) + b"\x00\x01")  # a torn entry
    torn = OffsetIndex(path, 100)
    with pytest.raises(CorruptIndex):
        torn.sanity_check()
    assert len(torn) == 1 and path.stat().st_size == 8
    OffsetIndex(path, 100).sanity_check()  # the torn bytes were cut
    tpath = tmp_path / "d.timeindex"
    tpath.write_bytes(struct.pack(">qiqi", 2000, 1, 1000, 2))  # the last timestamp below the first
    with pytest.raises(CorruptIndex):
        TimeIndex(tpath, 0).sanity_check()
    tpath.write_bytes(struct.pack(">qi", 2000, -1))
    with pytest.raises(CorruptIndex):
        TimeIndex(tpath, 0).sanity_check()
    tpath.write_bytes(struct.pack(">qiqi", 1000, 1, 2000, 2))
    TimeIndex(tpath, 0).sanity_check()
