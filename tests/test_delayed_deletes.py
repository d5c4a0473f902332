"""Kafka's delayed file deletion: segments renamed `.deleted` and directories renamed
`<topic>-<p>.<uuid>-delete` at once, removed after file.delete.delay.ms /
log.segment.delete.delay.ms; a reader holding a retired segment reads it to the end."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable

import trio
import trio.testing

from wirekafka.broker.replica.delayed_deletes import DelayedDeletes, delete_directory_name
from wirekafka.broker.replica.partition import AppendOrigin, Isolation, Partition
from wirekafka.protocol import records
from wirekafka.storage.cleaner import run_round
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

NOW = 1_700_000_000_000
DELETE_DIR = re.compile(r"^t-0\.[0-9a-f]{32}-delete$")


def _open(directory: Path, deletes: DelayedDeletes, **config) -> Partition:
    plog = PartitionLog(directory, LogConfig(**config), clean_shutdown=True)
    return Partition("t", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"), deletes=deletes)


def _fill(p: Partition, batches: int) -> None:
    for _ in range(batches):
        b = records.build_batch([(b"k", b"v" * 100, NOW)])
        p.append(b, records.validate_batch(b), AppendOrigin.CLIENT)


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for a removal running in a worker thread (bounded in real time: the mock clock jumps
    while the thread works)."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "removal did not finish"
        await trio.sleep(0.01)


def _retired(d: Path) -> list[Path]:
    return [path for path in d.iterdir() if path.name.endswith(".deleted")]


def _run(test) -> None:
    """Run test(deletes) with the queue's task going, on a clock that jumps when all is idle."""
    async def main() -> None:
        deletes = DelayedDeletes(lambda: 30_000, clock=trio.current_time)
        async with trio.open_nursery() as nursery:
            await nursery.start(deletes.run)
            await test(deletes)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_removals_run_when_due_in_due_order() -> None:
    async def test(deletes: DelayedDeletes) -> None:
        done: list[str] = []
        deletes.schedule(100_000, lambda: done.append("late"))
        deletes.schedule(50, lambda: done.append("early"))
        deletes.schedule(50, lambda: done.append("early, second"))
        await trio.sleep(0.049)
        assert done == [] and deletes.pending() == 3  # nothing before it is due
        await trio.sleep(0.002)
        await _until(lambda: len(done) == 2)
        assert done == ["early", "early, second"] and deletes.pending() == 1
        await trio.sleep(100)
        await _until(lambda: len(done) == 3)
        assert done[-1] == "late" and deletes.pending() == 0

    _run(test)


def test_segments_are_renamed_now_and_unlinked_after_file_delete_delay(tmp_path: Path) -> None:
    d = tmp_path / "t-0"

    async def test(deletes: DelayedDeletes) -> None:
        p = _open(d, deletes, segment_bytes=400, file_delete_delay_ms=5_000)
        _fill(p, 12)
        doomed = p.delete_records_before(p.log_end_offset - 1)
        names = [seg.log_path.name for seg in doomed]
        assert names
        await p.files.delete_segments(doomed)
        for name in names:
            assert not (d / name).exists() and (d / (name + ".deleted")).exists()
            assert (d / (name[: -len(".log")] + ".index.deleted")).exists()
        await trio.sleep(4.9)
        assert all((d / (name + ".deleted")).exists() for name in names)
        await trio.sleep(0.2)
        await _until(lambda: not _retired(d))
        assert p.log_start_offset == p.log_end_offset - 1 and sorted(d.glob("*.log"))  # the live log is intact

    _run(test)


def test_a_reader_of_a_retired_segment_reads_it_whole(tmp_path: Path) -> None:
    d = tmp_path / "t-0"

    async def test(deletes: DelayedDeletes) -> None:
        p = _open(d, deletes, segment_bytes=400, file_delete_delay_ms=0)
        _fill(p, 12)
        result = p.read(0, 10**6, Isolation.READ_UNCOMMITTED, True)
        assert result.region is not None
        expected = result.region.length
        await p.files.delete_segments(p.delete_records_before(p.log_end_offset))
        await _until(lambda: not _retired(d))
        try:
            data = result.region.read()
        finally:
            result.region.close()
        assert len(data) == expected and records.split_batches(data)

    _run(test)


def test_deleted_partition_directory_takes_kafkas_name_and_goes_after_the_broker_delay(tmp_path: Path) -> None:
    d = tmp_path / "t-0"

    async def test(deletes: DelayedDeletes) -> None:
        p = _open(d, deletes, segment_bytes=400)
        _fill(p, 5)
        p.take_offline()
        await p.files.delete_files()
        [renamed] = [path for path in tmp_path.iterdir()]
        assert not d.exists() and DELETE_DIR.match(renamed.name) and sorted(renamed.glob("*.log"))
        again = _open(d, deletes)  # the name is free at once: a re-created topic starts empty
        assert again.log_end_offset == 0
        await trio.sleep(29.9)
        assert renamed.exists()
        await trio.sleep(0.2)
        await _until(lambda: not renamed.exists())
        assert d.exists()

    _run(test)


def test_leftover_delete_directories_are_removed_after_the_delay(tmp_path: Path) -> None:
    leftover = tmp_path / delete_directory_name("t", 0, "ab" * 16)
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"x")
    live = tmp_path / "t-0"
    live.mkdir()

    async def test(deletes: DelayedDeletes) -> None:
        await deletes.adopt_leftovers(tmp_path)
        assert deletes.pending() == 1
        await trio.sleep(30.1)
        await _until(lambda: not leftover.exists())
        assert live.exists()

    _run(test)


def test_delete_directory_name_is_capped_at_255_characters() -> None:
    name = delete_directory_name("x" * 249, 12, "0" * 32)
    assert len(name) == 255 and name.endswith("-12." + "0" * 32 + "-delete")


def test_restart_at_the_old_base_offset_leaves_the_new_segment_alone(tmp_path: Path) -> None:
    """A follower starting over at its own base offset: the old segment has the new one's name,
    so it is moved aside before the new one is created, and retiring it later cannot touch it."""
    d = tmp_path / "t-0"
    plog = PartitionLog(d, LogConfig(segment_bytes=10**6), clean_shutdown=True)
    b = records.build_batch([(b"k", b"v" * 100, NOW)] * 3)
    header = records.validate_batch(b)
    plog.append([b], header)
    assert plog.log_end_offset == 3
    doomed = plog.restart_at(0)
    assert plog.log_end_offset == 0 and plog.active.size == 0
    PartitionLog.retire_segments(doomed)
    PartitionLog.delete_segments(doomed)
    assert (d / "00000000000000000000.log").exists() and (d / "00000000000000000000.log").stat().st_size == 0
    assert not _retired(d)


def test_segments_replaced_by_the_cleaner_go_after_the_delay(tmp_path: Path) -> None:
    """Kafka's replaceSegments: the cleaned segment takes the first old one's name at once, the
    old segments wait as `.deleted` for file.delete.delay.ms."""
    d = tmp_path / "t-0"

    async def test(deletes: DelayedDeletes) -> None:
        p = _open(d, deletes, segment_bytes=400, compact=True, file_delete_delay_ms=2_000,
                  min_cleanable_ratio=0.01)
        for i in range(30):
            b = records.build_batch([(b"key-%d" % (i % 3), b"v%d" % i, NOW + i)])
            p.append(b, records.validate_batch(b), AppendOrigin.CLIENT)
        cleanable = p.cleaning.cleanable_range(None, NOW + 10**6)
        plan, segments = p.cleaning.cleaning_plan(cleanable, 10**7, 0.9, float("inf"), NOW + 10**6)
        groups = run_round(plan).groups
        assert len(groups) > 1
        for group in groups:
            cleaned = p.cleaning.open_cleaned(group.base_offset)
            sources = [segments[base] for base in group.sources]
            assert p.cleaning.swap_cleaned(cleaned, sources)
            await p.cleaning.finish_swap(cleaned, sources)
            # checked before any await: a worker thread lets the mock clock reach earlier removals
            retired = [seg.log_path for seg in sources]
            assert all(path.name.endswith(".log.deleted") and path.exists() for path in retired)
            assert (d / f"{group.base_offset:020d}.log").exists()  # the cleaned segment, final name
        await trio.sleep(1.9)
        assert all(path.exists() for path in retired)
        await trio.sleep(0.2)
        await _until(lambda: not _retired(d))
        latest = {}
        for header, read in p.files.iter_batches(0):
            for r in records.iter_records(read()):
                latest[r.key] = r.value
        assert latest == {b"key-0": b"v27", b"key-1": b"v28", b"key-2": b"v29"}

    _run(test)
