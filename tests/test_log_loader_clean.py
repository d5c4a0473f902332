"""A clean start trusts the indexes as Kafka does: it reads no record data, yet every segment's
summary is what a full scan finds; an index that is missing or fails the sanity check makes
that segment be recovered, its indexes rebuilt byte for byte."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from wirekafka.protocol import records
from wirekafka.protocol.records import build_batch, parse_header
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage.segment import LogSegment

T0 = 1_700_000_000.0
CONFIG = LogConfig(segment_bytes=200_000, index_interval_bytes=4096)


def _fill(directory: Path, batches: int) -> PartitionLog:
    """Batches of 1-8 records of ~500 bytes, timestamps wandering (not monotonic), cleanly closed."""
    log = PartitionLog(directory, CONFIG, clock=lambda: T0)
    for i in range(batches):
        n = 1 + i % 8
        ts = 1_000_000 + (i * 37) % 500 + i
        batch = bytearray(build_batch([(b"k", bytes([i % 256]) * 500, ts + j) for j in range(n)]))
        records.assign_offsets(batch, log.log_end_offset, 0)
        log.append([batch], parse_header(batch))
    log.close()
    return log


def _summary(log: PartitionLog) -> list[tuple[int, ...]]:
    return [(s.base_offset, s.size, s.next_offset, s.max_timestamp, s.offset_of_max_timestamp,
             s.first_batch_timestamp if s.first_batch_timestamp is not None else -2) for s in log.segments]


def _scanned(directory: Path) -> list[tuple[int, ...]]:
    """Each segment's summary from a scan of every batch header (what a start used to do)."""
    out = []
    for path in sorted(directory.glob("*.log")):
        seg = LogSegment(directory, int(path.stem), CONFIG.index_interval_bytes)
        seg.scan()
        out.append((seg.base_offset, seg.size, seg.next_offset, seg.max_timestamp, seg.offset_of_max_timestamp,
                    seg.first_batch_timestamp if seg.first_batch_timestamp is not None else -2))
        seg.close()
    return out


class _LogReads:
    """Counts the bytes os.pread returns from `.log` files."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes = 0
        self.calls = 0
        real = os.pread

        def pread(fd: int, n: int, offset: int) -> bytes:
            data = real(fd, n, offset)
            if os.readlink(f"/proc/self/fd/{fd}").endswith(".log"):
                self.bytes += len(data)
                self.calls += 1
            return data

        monkeypatch.setattr(os, "pread", pread)


def test_a_clean_start_reads_headers_only_and_finds_what_a_scan_finds(tmp_path: Path, monkeypatch) -> None:
    d = tmp_path / "t-0"
    _fill(d, 1500)
    expected = _scanned(d)
    total = sum(row[1] for row in expected)
    assert len(expected) > 5
    reads = _LogReads(monkeypatch)
    log = PartitionLog(d, CONFIG, recovery_point=10**9, clean_shutdown=True, clock=lambda: T0)
    assert _summary(log) == expected
    # the first header of each segment and the headers after its last index entry (a few
    # batches of ~0.5-4 KB): 61 bytes a read
    assert reads.bytes <= reads.calls * records.HEADER_SIZE
    assert reads.calls <= len(expected) * 12
    assert reads.bytes < total / 500
    assert not any(s.recovered for s in log.segments)
    monkeypatch.undo()
    # and it serves: reads by offset and by time, then appends where it left off
    assert log.find_timestamp(1_000_400) is not None
    assert records.split_batches(log.read(expected[2][0] + 3, 10**6, log.log_end_offset, True))
    end = log.log_end_offset
    batch = bytearray(build_batch([(b"k", b"v", 2_000_000)]))
    records.assign_offsets(batch, end, 0)
    log.append([batch], parse_header(batch))
    assert log.log_end_offset == end + 1
    log.close()


def _index_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.suffix in (".index", ".timeindex")}


@pytest.mark.parametrize("damage", ["missing-index", "missing-timeindex", "torn-index", "entry-mid-batch",
                                    "entry-past-end", "timeindex-backwards"])
def test_an_untrustworthy_index_is_rebuilt_on_a_clean_start(tmp_path: Path, damage: str) -> None:
    d = tmp_path / "t-0"
    _fill(d, 600)
    expected, indexes = _scanned(d), _index_bytes(d)
    victim = sorted(d.glob("*.log"))[1]
    index, timeindex = victim.with_suffix(".index"), victim.with_suffix(".timeindex")
    if damage == "missing-index":
        index.unlink()
    elif damage == "missing-timeindex":
        timeindex.unlink()
    elif damage == "torn-index":
        index.write_bytes(index.read_bytes() + b"\x01\x02\x03")
    elif damage == "entry-mid-batch":
        data = index.read_bytes()
        rel, pos = struct.unpack(">ii", data[-8:])
        index.write_bytes(data[:-8] + struct.pack(">ii", rel, pos + 3))
    elif damage == "entry-past-end":
        index.write_bytes(index.read_bytes() + struct.pack(">ii", 10**6, victim.stat().st_size + 100))
    else:
        data = timeindex.read_bytes()
        timeindex.write_bytes(data + struct.pack(">qi", 5, struct.unpack(">qi", data[-12:])[1]))
    log = PartitionLog(d, CONFIG, recovery_point=10**9, clean_shutdown=True, clock=lambda: T0)
    assert _summary(log) == expected
    assert [s.recovered for s in log.segments] == [s.base_offset == int(victim.stem) for s in log.segments]
    log.close()
    assert _index_bytes(d) == indexes


def test_an_unclean_start_recovers_from_the_recovery_point_only(tmp_path: Path, monkeypatch) -> None:
    d = tmp_path / "t-0"
    _fill(d, 1500)
    expected = _scanned(d)
    recovery_point = expected[-2][0] + 1  # inside the second last segment
    log = PartitionLog(d, CONFIG, recovery_point=recovery_point, clean_shutdown=False, clock=lambda: T0)
    assert _summary(log) == expected
    assert [s.recovered for s in log.segments] == [i >= len(expected) - 2 for i in range(len(expected))]
    log.close()
