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


def test_assign_persists_and_ignores_older_epochs(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # an epoch keeps its first start
    assert cache.assign(3, 12)
    assert not cache.assign(2, 20)
    assert LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").entries == [(0, 0), (3, 12)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 12\n"


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
