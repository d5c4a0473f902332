"""Partition: offsets, high watermark, epochs, reads as file regions, truncation, DeleteRecords,
retention."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import trio

from wirekafka.broker.metadata.cluster_metadata import uuid_to_base64
from wirekafka.broker.replica.partition import AppendOrigin, Isolation, Partition
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.server.background import retention_task
from wirekafka.storage import checkpoint
from wirekafka.storage import segment as segment_module
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

NOW = 1_700_000_000_000


def _open(directory: Path, **config) -> Partition:
    plog = PartitionLog(directory, LogConfig(**config), clean_shutdown=True)
    return Partition("t", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"))


def _batch(n: int, value_size: int = 10, **kw) -> tuple[bytes, records.BatchHeader]:
    b = records.build_batch([(b"k%d" % i, b"v" * value_size, NOW + i) for i in range(n)], **kw)
    return b, records.validate_batch(b)


def _append(p: Partition, n: int, value_size: int = 10, **kw):
    return p.append(*_batch(n, value_size, **kw), AppendOrigin.CLIENT)


def _read_bytes(p: Partition, offset: int, max_bytes: int = 10**6, min_one: bool = True) -> bytes:
    result = p.read(offset, max_bytes, Isolation.READ_UNCOMMITTED, min_one)
    if result.region is None:
        return b""
    try:
        return result.region.read()
    finally:
        result.region.close()


def _offsets(data: bytes) -> list[int]:
    out = []
    for start, end in records.split_batches(data):
        out.extend(r.offset for r in records.iter_records(data[start:end]))
    return out


def test_append_assigns_offsets_epoch_and_moves_high_watermark(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    assert p.high_watermark == 0 and p.end_offset_for_epoch(0) == (0, 0)  # leader since offset 0
    first = _append(p, 3)
    second = _append(p, 2)
    assert (first.base_offset, first.last_offset, second.base_offset) == (0, 2, 3)
    assert p.high_watermark == p.log_end_offset == 5
    assert _offsets(_read_bytes(p, 0)) == [0, 1, 2, 3, 4]
    assert records.parse_header(_read_bytes(p, 3)).partition_leader_epoch == 0


def test_read_stops_at_high_watermark_and_checks_range(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    _append(p, 4)
    assert p.read(4, 1000, Isolation.READ_COMMITTED, True).region is None  # nothing past the end
    with pytest.raises(KafkaApiError) as exc:
        p.read(5, 1000, Isolation.READ_UNCOMMITTED, True)
    assert exc.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    result = p.read(0, 1, Isolation.READ_UNCOMMITTED, min_one=False)
    assert result.region is None and (result.high_watermark, result.log_start_offset) == (4, 0)


def test_epoch_bump_is_recorded_and_answers_offset_for_leader_epoch(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    _append(p, 5)
    p.become_leader(3)
    _append(p, 2)
    assert p.epochs.entries == [(0, 0), (3, 5)]
    assert p.end_offset_for_epoch(0) == (0, 5)
    assert p.end_offset_for_epoch(3) == (3, 7)
    assert p.end_offset_for_epoch(1) == (0, 5)
    work = p.epochs.checkpoint_work()  # the flush task writes it in a worker thread
    assert work is not None
    work.run()
    reopened = _open(tmp_path / "t-0")  # the checkpoint file is read at start
    assert reopened.epochs.entries == [(0, 0), (3, 5)]


def test_truncate_to_cuts_log_epochs_producer_state_and_high_watermark(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0", segment_bytes=300)
    for i in range(6):
        _append(p, 2, producer_id=7, producer_epoch=0, base_sequence=2 * i)
    p.become_leader(1)
    _append(p, 2, producer_id=7, producer_epoch=0, base_sequence=12)
    p.make_follower(2, 2, (2, 1), frozenset((2, 1)))  # only a follower truncates, in its epoch
    doomed = p.truncate_to(5, 2)
    assert doomed is not None
    PartitionLog.delete_segments(doomed)
    assert p.log_end_offset == 4  # the batch holding 5 starts at 4 and goes whole
    assert p.high_watermark == 4
    assert p.epochs.entries == [(0, 0)]
    assert _offsets(_read_bytes(p, 0)) == [0, 1, 2, 3]
    # producer state follows the log: sequence 4 is next again
    p.become_leader(3)
    again = _append(p, 2, producer_id=7, producer_epoch=0, base_sequence=4)
    assert again.base_offset == 4 and not again.duplicate


def test_duplicate_batch_answers_its_first_offset(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    batch = _batch(3, producer_id=9, producer_epoch=0, base_sequence=0)
    first = p.append(*batch, AppendOrigin.CLIENT)
    dup = p.append(*batch, AppendOrigin.CLIENT)
    assert dup.duplicate and dup.base_offset == first.base_offset and p.log_end_offset == 3
    # Kafka answers a duplicate with the original batch's max timestamp as its log append time
    assert (first.log_append_time, dup.log_append_time) == (-1, NOW + 2)


def test_replicated_batches_keep_their_offsets(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    data, _ = _batch(2, base_offset=0)
    buf = bytearray(data)
    records.assign_offsets(buf, 0, 4)
    p.append(bytes(buf), records.parse_header(buf), AppendOrigin.REPLICATION)
    assert p.log_end_offset == 2 and p.epochs.entries[-1] == (4, 0)


def test_delete_records_moves_start_and_epochs(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0", segment_bytes=300)
    for _ in range(10):
        _append(p, 2)
    doomed = p.delete_records_before(9)
    assert doomed and all(s.next_offset <= 9 for s in doomed)
    PartitionLog.delete_segments(doomed)
    assert p.log_start_offset == 9 and p.epochs.entries == [(0, 9)]
    with pytest.raises(KafkaApiError):
        p.read(8, 1000, Isolation.READ_UNCOMMITTED, True)


def test_cold_megabyte_fetch_moves_no_record_bytes_through_python(tmp_path: Path, monkeypatch) -> None:
    """A 1 MB fetch from a closed-and-reopened (cold) segment reads only batch headers: the
    records leave as a file region for sendfile."""
    p = _open(tmp_path / "t-0")
    for _ in range(128):
        _append(p, 8, value_size=1024)  # ~8 KB batches, 1 MB in all
    p.files.close()
    p = _open(tmp_path / "t-0")
    read_bytes = []
    real_pread, real_preadv = os.pread, os.preadv

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        read_bytes.append(len(data))
        return data

    def counting_preadv(fd: int, buffers, offset: int, flags: int = 0) -> int:
        n = real_preadv(fd, buffers, offset, flags)
        read_bytes.append(n)
        return n

    monkeypatch.setattr(segment_module.os, "pread", counting_pread)
    monkeypatch.setattr(segment_module.os, "preadv", counting_preadv)
    result = p.read(0, 2**20, Isolation.READ_UNCOMMITTED, min_one=True)
    if result.cold is not None:  # not in the page cache here: the worker-thread path reads headers too
        result.region = result.cold()
    monkeypatch.undo()
    assert result.region is not None and result.region.length > 1_000_000
    assert sum(read_bytes) <= 128 * records.HEADER_SIZE  # headers only, never record bytes
    result.region.close()


def test_offline_partition_refuses_reads_and_appends(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    p.take_offline()
    with pytest.raises(KafkaApiError):
        _append(p, 1)
    with pytest.raises(KafkaApiError):
        p.read(0, 100, Isolation.READ_UNCOMMITTED, True)


def test_data_not_in_page_cache_is_read_by_a_worker_not_the_loop(tmp_path: Path, monkeypatch) -> None:
    """When a header read would wait for the disk (RWF_NOWAIT says EAGAIN), Partition.read
    answers with a `cold` read to run in a worker, which finds the same batches."""
    p = _open(tmp_path / "t-0")
    for _ in range(4):
        _append(p, 3)
    warm = p.read(3, 10**6, Isolation.READ_UNCOMMITTED, True)

    def would_block(*_args, **_kwargs):
        raise BlockingIOError

    monkeypatch.setattr(segment_module.os, "preadv", would_block)
    cold = p.read(3, 10**6, Isolation.READ_UNCOMMITTED, True)
    assert cold.region is None and cold.cold is not None
    monkeypatch.undo()
    region = cold.cold()  # what the replica manager runs in trio.to_thread
    assert (region.position, region.length) == (warm.region.position, warm.region.length)
    assert region.read() == warm.region.read()
    region.close()
    warm.region.close()


def test_segment_close_waits_for_pinned_reader(tmp_path: Path, monkeypatch) -> None:
    p = _open(tmp_path / "t-0")
    _append(p, 2)
    seg = p._log.segments[0]
    closed: list[int] = []
    real_close = os.close
    monkeypatch.setattr(segment_module.os, "close", lambda fd: (closed.append(fd), real_close(fd)))
    assert seg.pin()
    seg.close()  # retention or deletion from another thread
    assert seg.closed and not seg.pin() and seg._fd not in closed
    assert seg.locate(0, 10**6, 2, True) is not None  # the pinned reader still reads
    seg.unpin()  # the last reader closes the descriptors
    assert seg._fd in closed


def test_retention_task_empties_a_topic_written_once_and_spares_compact_only_topics(tmp_path: Path) -> None:
    """The broker's retention check with a fake broker clock: a delete-policy topic written once
    and left alone is emptied (log start = log end) once its newest record is older than
    retention.ms; a compact-only topic with the same retention.ms keeps everything. Trio's clock
    is the real one: the check's file work runs in worker threads, which a mock clock would
    jump past."""
    now = [NOW]
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "log.retention.check.interval.ms": "50"}),
                        clock=lambda: now[0] / 1000)
    state.load()

    async def main() -> None:
        deleting = await state.metadata.create_topic("d", 1, {"retention.ms": "1000"})
        compact = await state.metadata.create_topic("c", 1, {"retention.ms": "1000", "cleanup.policy": "compact"})
        for topic in (deleting, compact):
            _append(topic.partitions[0], 3)  # timestamps NOW .. NOW + 2
        d, c = deleting.partitions[0], compact.partitions[0]
        async with trio.open_nursery() as nursery:
            await nursery.start(retention_task, state)
            await trio.sleep(0.2)  # a few checks
            assert (d.log_start_offset, d.log_end_offset) == (0, 3)  # not a second old yet
            now[0] = NOW + 2 + 1001
            starts = state.log_dir / "log-start-offset-checkpoint"
            with trio.fail_after(10):  # the check deletes the files, then checkpoints, in workers
                while not starts.exists() or checkpoint.read_offsets(starts).get(("d", 0)) != 3:
                    await trio.sleep(0.1)
            assert (d.log_start_offset, d.log_end_offset, d.high_watermark) == (3, 3, 3)
            assert sorted(p.name for p in (state.log_dir / "d-0").glob("*.log")) == ["00000000000000000003.log"]
            assert (c.log_start_offset, c.log_end_offset) == (0, 3)
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_directory_of_another_topic_id_is_retired_not_reused(tmp_path: Path) -> None:
    """Issue 34, hole 3 (KIP-516): a replica directory whose partition.metadata names another
    topic id belongs to a topic deleted while this broker was away (perhaps created again since
    under the same name). The partition opens empty and the old directory is renamed for
    deletion; its records never pass for the current topic's. Failed before: the directory was
    reused by name, records, checkpointed offsets and all."""
    config = build_config({"log.dirs": str(tmp_path / "data")})
    state = BrokerState(config)
    state.load()
    topic = trio.run(state.metadata.create_topic, "t", 1)
    _append(topic.partitions[0], 3)
    state.shutdown()
    meta = state.log_dir / "t-0" / "partition.metadata"
    stale_id = uuid_to_base64(uuid.uuid4())
    meta.write_text(f"version: 0\ntopic_id: {stale_id}\n")  # the directory of a deleted namesake

    again = BrokerState(config)
    again.load()
    p = again.metadata.topic("t").partitions[0]
    assert (p.log_start_offset, p.log_end_offset, p.high_watermark) == (0, 0, 0)
    retired = [d for d in again.log_dir.iterdir() if d.name.endswith("-delete")]
    assert len(retired) == 1 and retired[0].name.startswith("t-0.")
    assert (retired[0] / "partition.metadata").read_text() == f"version: 0\ntopic_id: {stale_id}\n"
    again.shutdown()
    assert meta.read_text() == f"version: 0\ntopic_id: {uuid_to_base64(again.metadata.topic('t').topic_id)}\n"


def test_partition_metadata_is_written_after_the_open_not_during_it(tmp_path: Path) -> None:
    """Kafka 3.9 flushes partition.metadata from its scheduler, not while the log is created:
    a new replica's file is written by the next background tick (with the epoch checkpoints),
    and a replica deleted before that writes none."""
    config = build_config({"log.dirs": str(tmp_path / "data")})
    state = BrokerState(config)
    state.load()

    async def main() -> None:
        kept = await state.metadata.create_topic("kept", 1)
        gone = await state.metadata.create_topic("gone", 1)
        meta = state.log_dir / "kept-0" / "partition.metadata"
        assert not meta.exists() and kept.partitions[0].metadata_file.pending
        doomed = gone.partitions[0]
        await state.metadata.delete_topic("gone")
        await doomed.files.delete_files()  # as DeleteTopics does: the directory renamed for deletion
        await state.replicas.write_epoch_checkpoints([kept.partitions[0], doomed])
        assert meta.read_text() == f"version: 0\ntopic_id: {uuid_to_base64(kept.topic_id)}\n"
        assert not kept.partitions[0].metadata_file.pending and not doomed.metadata_file.pending
        assert not (state.log_dir / "gone-0").exists()
        assert [d.name.endswith("-delete") for d in state.log_dir.glob("gone-0.*")] == [True]
        assert not list(state.log_dir.glob("gone-0.*/partition.metadata"))

    trio.run(main)
    state.shutdown()


def test_a_stray_directory_met_while_a_topic_is_created_is_retired_from_the_worker_thread(tmp_path: Path) -> None:
    """A broker killed between making a new topic's directories and saving its topic list (the
    offsets topic, created by a consumer's FindCoordinator) finds those directories, under another
    topic id, when it creates the topic again. The replica is opened in a worker thread, which
    retires the stray directory and schedules its deletion. Failed before: scheduling set the
    deletion task's event from the worker thread ("must be called from async context"), and
    FindCoordinator answered UNKNOWN_SERVER_ERROR."""
    config = build_config({"log.dirs": str(tmp_path / "data")})
    state = BrokerState(config)
    state.load()
    stray = state.log_dir / "t-0"
    stray.mkdir()
    (stray / "partition.metadata").write_text(f"version: 0\ntopic_id: {uuid_to_base64(uuid.uuid4())}\n")

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(state.deletes.run)  # waiting on its event, as in a running broker
            topic = await state.metadata.create_topic("t", 1)
            assert topic.partitions[0].log_end_offset == 0
            assert state.deletes.pending() == 1
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert [d.name.startswith("t-0.") for d in state.log_dir.iterdir() if d.name.endswith("-delete")] == [True]
    state.shutdown()
