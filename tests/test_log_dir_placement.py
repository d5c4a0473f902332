"""Which of log.dirs holds a partition (broker/replica/log_dirs.py): directory names read as
Kafka names them, a new partition in the online dir with the fewest, the first on a tie, a
partition staying where it is, and one partition in two dirs refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirekafka.broker.replica.log_dirs import LogDirPlacement, partition_key
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.startup_errors import StartupError


def test_partition_directory_names() -> None:
    assert partition_key("orders-3") == ("orders", 3)
    assert partition_key("a-b-c-12") == ("a-b-c", 12)
    assert partition_key("__consumer_offsets-49") == ("__consumer_offsets", 49)
    # deleted, future and stray replicas, and files of the dir itself, are not partitions
    for name in ("orders-3.5f1d0c0e9b2a4c6e8f00112233445566-delete", "orders-3.abc-future", "orders-3.abc-stray",
                 "meta.properties", "recovery-point-offset-checkpoint", "orders-", "orders-x"):
        assert partition_key(name) is None, name


def test_new_partitions_go_to_the_online_dir_with_the_fewest(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    for d in dirs:
        d.mkdir()
    (dirs[0] / "t-0").mkdir()
    (dirs[0] / "t-1").mkdir()
    (dirs[2] / "t-2").mkdir()
    offline: set[Path] = set()
    placement = LogDirPlacement(dirs, lambda d: d not in offline)
    placement.scan()
    assert placement.log_dir(("t", 1)) == dirs[0]  # where it is
    assert [placement.log_dir(("u", i)) for i in range(4)] == [dirs[1], dirs[1], dirs[2], dirs[0]]
    assert placement.held_in(dirs[1]) == {("u", 0), ("u", 1)}
    offline.add(dirs[1])
    assert placement.log_dir(("v", 0)) == dirs[2]  # b has fewer, but it is offline
    assert placement.log_dir(("u", 0)) == dirs[1]  # a partition stays where it is
    placement.forget(("u", 0))
    assert placement.log_dir(("u", 0)) == dirs[0]
    offline.update(dirs)
    with pytest.raises(KafkaApiError) as err:
        placement.log_dir(("w", 0))
    assert err.value.code == ErrorCode.KAFKA_STORAGE_ERROR


def test_a_partition_in_two_dirs_is_refused(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        (d / "t-0").mkdir(parents=True)
    with pytest.raises(StartupError, match="Duplicate log directories for t-0 are found in both"):
        LogDirPlacement(dirs, lambda d: True).scan()


def test_forgotten_partitions_no_longer_count_for_their_dir(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    placement = LogDirPlacement(dirs, lambda d: True)
    placement.scan()
    assert [placement.log_dir(("t", i)) for i in range(6)] == [dirs[0], dirs[1]] * 3
    placement.forget(("t", 1))
    placement.forget(("t", 3))
    placement.forget(("t", 9))  # never placed: nothing changes
    assert [placement.log_dir(("u", i)) for i in range(3)] == [dirs[1], dirs[1], dirs[0]]
    assert placement.held_in(dirs[1]) == {("t", 5), ("u", 0), ("u", 1)}
