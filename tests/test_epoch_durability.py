"""Issue 34, hole 8: no file work on the event loop for leader epochs and truncation, and nothing
lost by moving it off.

- A leadership change or the first batch of a new epoch writes no checkpoint on the caller's
  thread (it used to write and fsync `leader-epoch-checkpoint` there, once per partition).
- A follower's truncation does not re-read and CRC-check its segment (it used to recover the
  whole segment), yet leaves it in the state recovery would rebuild (Kafka's LogSegment.truncateTo).
- A crash before the checkpoint reaches the disk loses no epoch: the flush writes the epochs
  before it moves the recovery point, and recovery assigns the epochs of the batches it re-reads
  (Kafka's LogSegment.recover)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import cast

import pytest
import trio

from wirekafka.broker.metadata.cluster_metadata import ClusterMetadata
from wirekafka.broker.quotas.replication_quota import ReplicationQuotas
from wirekafka.broker.replica.log_dir_failure import LogDirFailureChannel
from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.broker.replica.replica_manager import ReplicaManager
from wirekafka.protocol import records
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog, recovered_epoch_starts
from wirekafka.storage.segment import LogSegment

NOW = 1_700_000_000_000
EPOCHS = "leader-epoch-checkpoint"


def _open(directory: Path, recovery_point: int = 0, clean: bool = True) -> Partition:
    """Open a replica as the broker does (BrokerState._open_partition): the log, recovered past
    the recovery point after an unclean shutdown, then the epoch cache and its recovery."""
    plog = PartitionLog(directory, LogConfig(segment_bytes=2000), recovery_point=recovery_point,
                        clean_shutdown=clean)
    epochs = LeaderEpochCache(directory / EPOCHS)
    epochs.recover(recovered_epoch_starts(plog), plog.log_start_offset, plog.log_end_offset)
    return Partition("t", 0, plog, epochs, node_id=1, lead=False)


def _produce(p: Partition, count: int) -> None:
    for i in range(count):
        batch = records.build_batch([(None, b"v" * 50, NOW + i)])
        p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)


def _replicate(p: Partition, base: int, count: int, epoch: int, step_ms: int = 1) -> None:
    """A leader's batches of one record each at base.., written in epoch, timestamps rising."""
    for offset in range(base, base + count):
        batch = bytearray(records.build_batch([(None, b"v" * 40, NOW + offset * step_ms)], base_offset=offset))
        struct.pack_into(">i", batch, 12, epoch)  # partitionLeaderEpoch: outside the CRC
        p.append_replicated(bytes(batch), records.check_integrity(bytes(batch)))


def _replica_manager(tmp_path: Path) -> ReplicaManager:
    """Only the flush path is used: it needs no metadata or quotas."""
    return ReplicaManager(cast(ClusterMetadata, None), lambda: NOW, cast(ReplicationQuotas, None),
                          LogDirFailureChannel((tmp_path,)))


def test_leadership_and_new_epoch_batches_write_no_checkpoint_on_the_callers_thread(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    p = _open(directory)
    p.make_leader(3, (1,), frozenset((1,)))
    _produce(p, 3)
    p.make_leader(4, (1,), frozenset((1,)))
    _produce(p, 2)
    assert p.epochs.entries == [(3, 0), (4, 3)]
    assert not (directory / EPOCHS).exists()  # the flush task's worker writes it
    work = p.epochs.checkpoint_work()
    assert work is not None
    work.run()
    assert LeaderEpochCache(directory / EPOCHS).entries == [(3, 0), (4, 3)]


def test_a_crash_before_the_checkpoint_is_written_loses_no_epoch(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    p = _open(directory)
    _replicate(p, 0, 30, epoch=2)
    _replicate(p, 30, 30, epoch=5)
    assert p.epochs.entries == [(2, 0), (5, 30)] and not (directory / EPOCHS).exists()
    # kill -9: nothing closed, the recovery point never moved
    reopened = _open(directory, recovery_point=0, clean=False)
    assert reopened.epochs.entries == [(2, 0), (5, 30)]
    assert reopened.end_offset_for_epoch(2) == (2, 30)


def test_the_flush_writes_the_epochs_before_the_recovery_point_passes_their_batches(tmp_path: Path) -> None:
    """After a flush the recovery point is past every batch, so recovery re-reads only the
    active segment: the epochs of the rolled ones must already be in the file."""
    directory = tmp_path / "t-0"
    p = _open(directory)
    _replicate(p, 0, 40, epoch=1)
    _replicate(p, 40, 40, epoch=6)
    assert len(p.files.log.segments) > 2
    trio.run(_replica_manager(tmp_path).flush, p)
    recovery_point = p.files.log.recovery_point
    assert recovery_point == 80
    reopened = _open(directory, recovery_point=recovery_point, clean=False)
    assert reopened.epochs.entries == [(1, 0), (6, 40)]


def test_a_failing_flush_takes_the_log_dir_offline_and_keeps_the_recovery_point(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "t-0"
    p = _open(directory)
    _replicate(p, 0, 10, epoch=1)
    manager = _replica_manager(tmp_path)

    def failing_fsync(self: LogSegment) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(LogSegment, "flush", failing_fsync)
    trio.run(manager.flush, p)
    assert manager.log_dir_failures.offline
    assert p.files.log.recovery_point == 0


def test_truncation_reads_no_record_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _open(tmp_path / "t-0")
    _replicate(p, 0, 30, epoch=1)
    checked = []
    real_check = records.check_integrity
    monkeypatch.setattr(records, "check_integrity", lambda batch: checked.append(1) or real_check(batch))
    p.make_follower(2, 2, (2, 1), frozenset((2, 1)))
    assert p.truncate_to(25, 2) is not None
    assert checked == []  # the old truncation re-validated every batch of the segment
    assert p.log_end_offset == 25


@pytest.mark.parametrize("cut", [0, 1, 7, 8, 9, 20, 33, 34, 35])
def test_a_truncated_segment_is_what_recovery_would_rebuild(tmp_path: Path, cut: int) -> None:
    """Offsets, size, offset and time indexes, max timestamp and the bytes since the last index
    entry all match a recovery of the same bytes, wherever the cut falls (index.interval.bytes
    200: an entry every few batches)."""
    seg = LogSegment(tmp_path, 0, 200)
    for offset in range(0, 36):
        batch = records.build_batch([(None, b"v" * 40, NOW + offset)], base_offset=offset)
        seg.append((batch,), records.check_integrity(batch))
    seg.truncate_to(cut)
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    (copy_dir / seg.log_path.name).write_bytes(seg.log_path.read_bytes())
    rebuilt = LogSegment(copy_dir, 0, 200)
    rebuilt.recover()
    assert (seg.size, seg.next_offset) == (rebuilt.size, rebuilt.next_offset)
    assert (seg.index._keys, seg.index._values) == (rebuilt.index._keys, rebuilt.index._values)
    assert (seg.time_index._keys, seg.time_index._values) == (rebuilt.time_index._keys, rebuilt.time_index._values)
    assert (seg.max_timestamp, seg.offset_of_max_timestamp) == (rebuilt.max_timestamp, rebuilt.offset_of_max_timestamp)
    assert seg._bytes_since_index_entry == rebuilt._bytes_since_index_entry
    assert seg.index.path.stat().st_size == 8 * len(rebuilt.index)
    next_batch = records.build_batch([(None, b"after", NOW + 99)], base_offset=seg.next_offset)
    seg.append((next_batch,), records.check_integrity(next_batch))  # and appends go on from there
    assert seg.next_offset == rebuilt.next_offset + 1
