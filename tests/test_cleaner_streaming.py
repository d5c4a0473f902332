"""The cleaner and the coordinators' loader read compressed batches as a bounded stream
(batch_filter.keyed_records, rewrite, read_records): a stored batch that inflates far beyond its
size is mapped, rewritten and loaded without being inflated whole, and a key is one key to the
offset map whether its record fits the stream's window or streams past it (a long key hashed
piece by piece)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from scripts.benchlib.bombs import bomb_batch
from wirekafka.broker.replica.partition import AppendOrigin
from wirekafka.protocol import records
from wirekafka.storage import batch_filter
from wirekafka.storage.key_identity import key_identity
from wirekafka.storage.record_stream import WINDOW
from tests.test_cleaner import DAY, Clock, _append, _clean, _open, _records

ZSTD = 4
TAIL = b"z" * 500  # uncompressed, larger than the tests' 400-byte segments: the segment before it rolls


def test_a_stored_bomb_is_mapped_and_rewritten_in_bounded_memory(tmp_path: Path) -> None:
    """One zstd batch of 8.5 KB holding a 64 MiB record and, after it, a newer record of the same
    key: the round drops the large one and rewrites the batch around the small one, with Python's
    allocations peaking far below the inflated size (inflating it whole took 64 MiB and more)."""
    clock = Clock()
    p = _open(tmp_path, clock)
    bomb = bomb_batch(64 << 20, clock.ms, ZSTD, key=b"k", then_after_ms=1)
    assert len(bomb) < 16_000
    p.append(bomb, records.validate_batch(bomb), AppendOrigin.CLIENT)
    clock.ms += 10
    _append(p, [(b"other", b"x")], clock)  # rolls the bomb's segment: it becomes cleanable
    _append(p, [(b"other", TAIL)], clock)  # rolls the segment before it
    tracemalloc.start()
    try:
        _clean(p, clock)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"the round held {peak / 2**20:.1f} MiB"
    assert _records(p) == [(1, b"k", b"after"), (2, b"other", b"x"), (3, b"other", TAIL)]
    (rewritten, *_) = [h for h, _ in p.files.iter_batches(0)]
    assert (rewritten.base_offset, rewritten.last_offset_delta, rewritten.records_count, rewritten.compression) == \
        (0, 1, 1, ZSTD)


@pytest.mark.parametrize("codec", [0, ZSTD])
def test_a_long_key_is_one_key_in_and_past_the_window(tmp_path: Path, codec: int) -> None:
    """The same key in a record that fits the window (hashed in place) and in records longer than
    it (hashed as they stream): each newer record supersedes the older ones, and a long tombstone
    (its null value read past the window) keeps its delete horizon."""
    clock = Clock()
    p = _open(tmp_path, clock)
    mid_key = b"m" * (WINDOW // 2)  # fits the window with a short value, not with a long one
    long_key = bytes(range(256)) * (WINDOW // 128)  # longer than the window: always streamed
    long_value = os.urandom(WINDOW + 1000)
    _append(p, [(mid_key, long_value), (long_key, b"old")], clock, compression=codec)
    _append(p, [(mid_key, b"new"), (b"short", b"s")], clock, compression=codec)
    _append(p, [(long_key, long_value), (long_key, None)], clock, compression=codec)
    _append(p, [(b"short", b"t")], clock, compression=codec)
    _append(p, [(b"tail", TAIL)], clock)
    _clean(p, clock)
    assert _records(p) == [(2, mid_key, b"new"), (5, long_key, None), (6, b"short", b"t"), (7, b"tail", TAIL)]
    kept_tombstone = next(h for h, _ in p.files.iter_batches(0) if h.base_offset == 4)
    assert batch_filter.delete_horizon(kept_tombstone) == clock.ms + DAY
    clock.ms += DAY + 1
    _clean(p, clock)
    assert [offset for offset, _, _ in _records(p)] == [2, 6, 7]


@pytest.mark.parametrize("codec", [0, ZSTD])
def test_keyed_records_read_keys_values_and_offsets_as_the_record_decoder(codec: int) -> None:
    """keyed_records against the full record decoder, over records in the window, across its end
    and longer than it: the offset deltas, the identity of each key and whether a value is there."""
    entries = [(b"a", b"1", 0), (None, b"no key", 0), (b"tomb", None, 0), (b"k" * 20, b"v" * 70_000, 0),
               (b"L" * 70_000, None, 0), (b"L" * 70_000, b"x", 0), (b"", b"", 0)]
    entries += [(b"key-%d" % i, b"v" * (i % 300), 0) for i in range(300)]
    batch = records.build_batch(entries, compression=codec)
    header = records.parse_header(batch)
    expected = [(r.offset, None if r.key is None else key_identity(r.key), r.value is not None)
                for r in records.iter_records(batch)]
    assert list(batch_filter.keyed_records(batch, header)) == expected


def test_a_kept_long_record_is_copied_whole_when_its_batch_is_rewritten(tmp_path: Path) -> None:
    """A batch with a record longer than the window and a superseded one: the rewrite streams
    the long record's bytes through and they come out whole."""
    clock = Clock()
    p = _open(tmp_path, clock)
    value = os.urandom(3 * WINDOW)
    _append(p, [(b"big", value), (b"gone", b"1")], clock, compression=ZSTD)
    _append(p, [(b"gone", b"2")], clock, compression=ZSTD)
    _append(p, [(b"tail", TAIL)], clock)
    _clean(p, clock)
    ((offset, key, kept), *rest) = _records(p)
    assert (offset, key, hashlib.sha256(kept or b"").hexdigest()) == (0, b"big", hashlib.sha256(value).hexdigest())
    assert rest == [(2, b"gone", b"2"), (3, b"tail", TAIL)]


@pytest.mark.parametrize("codec", [0, ZSTD])
def test_read_records_gives_what_the_record_decoder_gives(codec: int) -> None:
    """read_records (the coordinators' loader) against the full record decoder, over records in
    the window, across its end and longer than it."""
    entries = [(b"a", b"1", 0), (None, b"no key", 0), (b"tomb", None, 0), (b"k" * 20, os.urandom(70_000), 0),
               (b"L" * 70_000, None, 0), (b"", b"", 0)]
    entries += [(b"key-%d" % i, os.urandom(i % 300), 0) for i in range(300)]
    batch = records.build_batch(entries, base_offset=1000, compression=codec)
    expected = [(r.offset, r.key, r.value) for r in records.iter_records(batch)]
    assert list(batch_filter.read_records(batch, records.parse_header(batch))) == expected


def test_read_records_holds_one_record_not_the_batch() -> None:
    """A zstd batch of 40,000 records inflating to 4 MB is read with Python's allocations at peak
    far below that."""
    batch = records.build_batch([(b"k%d" % i, b"v" * 100, 0) for i in range(40_000)], compression=ZSTD)
    header = records.parse_header(batch)
    tracemalloc.start()
    try:
        count = sum(1 for _ in batch_filter.read_records(batch, header))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 40_000
    assert peak < 1 << 20, f"{peak / 2**20:.1f} MiB at peak"
