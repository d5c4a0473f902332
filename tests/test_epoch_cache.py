"""LeaderEpochCache against Kafka's LeaderEpochFileCache rules (endOffsetFor, assign, truncation)."""

from __future__ import annotations

from pathlib import Path

from wirekafka.storage import checkpoint
from wirekafka.storage.epoch_cache import LeaderEpochCache


def _cache(tmp_path: Path, entries: list[tuple[int, int]]) -> LeaderEpochCache:
    path = tmp_path / "leader-epoch-checkpoint"
    checkpoint.write_leader_epochs(path, entries)
    return LeaderEpochCache(path)


def test_end_offset_for_follows_kafka(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(2, 10), (4, 30), (7, 55)])
    leo = 80
    assert cache.end_offset_for(7, leo) == (7, 80)  # latest epoch: the log end
    assert cache.end_offset_for(4, leo) == (4, 55)  # next epoch's start
    assert cache.end_offset_for(5, leo) == (4, 55)  # unknown epoch between: floor epoch, next start
    assert cache.end_offset_for(1, leo) == (1, 10)  # below every epoch: the request, first start
    assert cache.end_offset_for(8, leo) == (-1, -1)  # above every epoch
    assert cache.end_offset_for(-1, leo) == (-1, -1)


def test_epoch_for_offset_follows_kafka(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(2, 10), (4, 30)])
    assert [cache.epoch_for_offset(o) for o in (9, 10, 29, 30, 99)] == [-1, 2, 2, 4, 4]


def test_empty_cache_knows_nothing(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    assert cache.end_offset_for(0, 0) == (-1, -1)
    assert cache.epoch_for_offset(0) == -1
    assert cache.latest_epoch == -1


def test_assign_ignores_older_epochs_and_persists_through_checkpoint_work(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path)
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # an epoch keeps its first start
    assert cache.assign(3, 12)
    assert not cache.assign(2, 20)
    assert not path.exists()  # nothing written on the caller's (the event loop's) thread
    work = cache.checkpoint_work()
    assert work is not None and cache.checkpoint_work() is None  # taken once per change
    work.run()  # a worker thread's job
    assert LeaderEpochCache(path).entries == [(0, 0), (3, 12)]
    assert path.read_text() == "0\n2\n0 0\n3 12\n"


def test_an_older_checkpoint_never_overwrites_a_newer_one(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path)
    cache.assign(1, 0)
    older = cache.checkpoint_work()
    cache.assign(4, 10)
    newer = cache.checkpoint_work()
    assert older is not None and newer is not None
    newer.run()
    older.run()  # a slower worker finishing last
    assert LeaderEpochCache(path).entries == [(1, 0), (4, 10)]


def test_unwritten_work_is_taken_again_until_written(tmp_path: Path) -> None:
    """A flush must not move the recovery point past data whose epochs another worker still
    holds unwritten: it takes the entries again."""
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    cache.assign(2, 0)
    in_flight = cache.checkpoint_work()
    assert in_flight is not None and cache.checkpoint_work() is None
    flushing = cache.unwritten_work()
    assert flushing is not None
    flushing.run()
    assert cache.unwritten_work() is None
    in_flight.run()  # now a no-op
    assert LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").entries == [(2, 0)]


def test_recovery_drops_stale_entries_and_assigns_from_the_reread_batches(tmp_path: Path) -> None:
    """A crash kept truncations from reaching the file ([5@100, 8@220] stale past 200, where
    epoch 7's batches now sit); recovery re-read the log from 150 and found them."""
    cache = _cache(tmp_path, [(2, 0), (5, 100), (8, 220)])
    batches = [(5, 150), (5, 170), (7, 200), (7, 230), (9, 260)]
    cache.recover((150, iter(batches)), log_start_offset=0, log_end_offset=280)
    assert cache.entries == [(2, 0), (5, 100), (7, 200), (9, 260)]


def test_recovery_after_a_clean_shutdown_only_trims_to_the_log(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(1, 0), (3, 40), (6, 90)])
    cache.recover(None, log_start_offset=20, log_end_offset=80)
    assert cache.entries == [(1, 20), (3, 40)]


def test_assign_replaces_entries_at_or_past_the_new_start(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(1, 0), (2, 10)])
    cache.assign(5, 10)
    assert cache.entries == [(1, 0), (5, 10)]


def test_truncation_from_end_and_start(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(1, 0), (2, 10), (3, 20)])
    cache.truncate_from_end(15)
    assert cache.entries == [(1, 0), (2, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(2, 12)]
    cache.truncate_from_start(5)  # below the first start: nothing to drop
    assert cache.entries == [(2, 12)]


def test_a_checkpoint_of_a_deleted_replica_is_dropped(tmp_path: Path) -> None:
    """Topic deletion renames the directory in a worker while a checkpoint may be on its way:
    that write is dropped (Kafka's writeIfDirExists), not a log directory failure."""
    directory = tmp_path / "t-0"
    directory.mkdir()
    cache = LeaderEpochCache(directory / "leader-epoch-checkpoint")
    cache.assign(1, 0)
    work = cache.checkpoint_work()
    assert work is not None
    directory.rename(tmp_path / "t-0.abc-delete")
    work.run()
    assert not directory.exists()
