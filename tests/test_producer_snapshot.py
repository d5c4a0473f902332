"""Producer-state snapshots (`%020d.snapshot`, Kafka's ProducerStateManager format): the file format
byte for byte, corrupt files ignored and deleted, start-up from a snapshot instead of the whole log,
what survives a restart (duplicates, open transactions, the last stable offset, re-indexed aborts
after a crash), snapshot clean-up on truncation, retention and DeleteRecords, and producer-id
expiry."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
import trio
import trio.testing

from wirekafka.broker.replica.partition import AppendOrigin, Isolation, Partition
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.server.background import producer_expiration_task, write_producer_snapshots
from wirekafka.storage import producer_snapshot as ps
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage.producer_snapshot import CorruptSnapshot, ProducerSnapshots, SnapshotEntry
from wirekafka.storage.txn_index import AbortedTxn

NOW = 1_700_000_000_000
DAY = 86_400_000


class Clock:
    """The partition's injected time, in seconds like time.time."""

    def __init__(self, ms: int = NOW) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def _open(directory: Path, clean: bool = True, clock: Clock | None = None, recovery_point: int = 0,
          **config) -> Partition:
    plog = PartitionLog(directory, LogConfig(**config), clean_shutdown=clean, recovery_point=recovery_point)
    return Partition("t", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"),
                     clock=clock or Clock())


class Producer:
    """One producer id writing batches with its sequence numbers, as a client does."""

    def __init__(self, partition: Partition, producer_id: int, epoch: int = 0) -> None:
        self.p, self.pid, self.epoch, self.seq = partition, producer_id, epoch, 0

    def batch(self, n: int = 1, transactional: bool = False, value: bytes = b"v") -> bytes:
        batch = records.build_batch([(b"k", value, NOW + i) for i in range(n)], producer_id=self.pid,
                                    producer_epoch=self.epoch, base_sequence=self.seq, transactional=transactional)
        self.seq += n
        return batch

    def send(self, n: int = 1, transactional: bool = False, value: bytes = b"v") -> tuple[int, int]:
        result = append(self.p, self.batch(n, transactional, value))
        return result.base_offset, result.last_offset

    def end(self, commit: bool, coordinator_epoch: int = 0) -> int:
        return self.p.append_marker(self.pid, self.epoch, coordinator_epoch, commit, NOW).base_offset


def append(p: Partition, batch: bytes):
    return p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)


def _snapshots(d: Path) -> list[int]:
    return ps.snapshot_offsets(d)


def _drain(p: Partition) -> None:
    """What the broker's background task does with a partition's pending snapshot work."""
    work = p.producer_state.work()
    if work is not None:
        work.run()


def _count_replayed(monkeypatch) -> list[tuple[int, int]]:
    """Record (start offset, headers read) of every header replay the partition does."""
    calls: list[tuple[int, int]] = []
    original = PartitionLog.iter_batch_headers

    def counting(self, start_offset: int = 0):
        calls.append((start_offset, 0))
        for item in original(self, start_offset):
            calls[-1] = (start_offset, calls[-1][1] + 1)
            yield item

    monkeypatch.setattr(PartitionLog, "iter_batch_headers", counting)
    return calls


# ---- the file format ---------------------------------------------------------------------------

ENTRIES = [
    SnapshotEntry(producer_id=1000, epoch=3, last_sequence=41, last_offset=77, offset_delta=4, timestamp=NOW,
                  coordinator_epoch=2, current_txn_first_offset=70),
    SnapshotEntry(producer_id=7, epoch=0, last_sequence=-1, last_offset=-1, offset_delta=0, timestamp=-1,
                  coordinator_epoch=-1, current_txn_first_offset=-1),
]


def test_layout_is_kafkas_byte_for_byte() -> None:
    data = ps.encode(ENTRIES)
    body = struct.pack(">i", 2)
    for e in sorted(ENTRIES, key=lambda e: e.producer_id):  # 46 bytes each, in the JSON schema's field order
        body += struct.pack(">q", e.producer_id) + struct.pack(">h", e.epoch) + struct.pack(">i", e.last_sequence)
        body += struct.pack(">q", e.last_offset) + struct.pack(">i", e.offset_delta) + struct.pack(">q", e.timestamp)
        body += struct.pack(">i", e.coordinator_epoch) + struct.pack(">q", e.current_txn_first_offset)
    assert data == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert len(data) == 2 + 4 + 4 + 2 * 46
    # CRC-32C (Castagnoli), not zlib's CRC-32: the standard check value
    assert crc32c.crc32c(b"123456789") == 0xE3069283
    assert ps.encode([]) == bytes.fromhex("0001") + struct.pack(">I", crc32c.crc32c(b"\0\0\0\0")) + b"\0\0\0\0"


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    snaps = ProducerSnapshots(tmp_path)
    assert snaps.write(123, ENTRIES, snaps.generation)
    path = tmp_path / "00000000000000000123.snapshot"
    assert path.exists() and not list(tmp_path.glob("*.tmp"))
    assert sorted(ps.read_snapshot(path), key=lambda e: e.producer_id) == sorted(ENTRIES, key=lambda e: e.producer_id)
    assert snaps.latest(1000) == (123, ps.read_snapshot(path))
    assert snaps.latest(122) is None


@pytest.mark.parametrize("damage", ["crc", "version", "short", "negative count", "empty"])
def test_corrupt_files_are_refused(damage: str) -> None:
    data = bytearray(ps.encode(ENTRIES))
    if damage == "crc":
        data[-1] ^= 1
    elif damage == "version":
        data[1] = 2
    elif damage == "short":
        data = data[:-3]
    elif damage == "negative count":
        data[6:10] = struct.pack(">i", -1)
    else:
        data = bytearray()
    with pytest.raises(CorruptSnapshot):
        ps.decode(bytes(data))


def test_corrupt_latest_snapshot_is_deleted_and_an_older_one_used(tmp_path: Path) -> None:
    snaps = ProducerSnapshots(tmp_path)
    snaps.write(10, ENTRIES[:1], 0)
    snaps.write(20, ENTRIES, 0)
    newest = tmp_path / "00000000000000000020.snapshot"
    raw = bytearray(newest.read_bytes())
    raw[20] ^= 0xFF
    newest.write_bytes(raw)
    assert snaps.latest(100) == (10, ENTRIES[:1])
    assert not newest.exists() and _snapshots(tmp_path) == [10]


def test_only_snapshot_files_are_listed(tmp_path: Path) -> None:
    for name in ("00000000000000000005.snapshot", "00000000000000000009.snapshot", "x.snapshot",
                 "00000000000000000007.snapshot.deleted", "00000000000000000008.snapshot.tmp",
                 "00000000000000000000.log"):
        (tmp_path / name).write_bytes(b"")
    assert _snapshots(tmp_path) == [5, 9]


# ---- producer state <-> entries ------------------------------------------------------------------

def test_state_keeps_only_the_last_batch_as_kafka_does(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    a, t = Producer(p, 5, epoch=2), Producer(p, 6)
    a.send(3)                           # 0-2
    a.send(2)                           # 3-4, seq 3-4
    t.send(2, transactional=True)       # 5-6
    entries = {e.producer_id: e for e in p.producers.snapshot_entries()}
    assert entries[5] == SnapshotEntry(5, 2, 4, 4, 1, NOW + 1, -1, -1)
    assert entries[6] == SnapshotEntry(6, 0, 1, 6, 1, NOW + 1, -1, 5)


def test_sequence_wraps_when_first_sequence_is_derived() -> None:
    from wirekafka.broker.replica.producer_state import ProducerStateTable

    table = ProducerStateTable()
    table.restore([SnapshotEntry(1, 0, 2, 100, 4, NOW, -1, -1)], NOW, DAY)
    meta = table.entries[1].batches[0]
    assert (meta.first_seq, meta.last_seq, meta.first_offset, meta.last_offset) == (2**31 - 2, 2, 96, 100)


# ---- start-up from a snapshot ----------------------------------------------------------------------

def test_clean_restart_reads_no_log_for_producer_state(tmp_path: Path, monkeypatch) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    producers = [Producer(p, pid) for pid in (1, 2, 3)]
    for _ in range(10):
        for prod in producers:
            prod.send(2)
    assert len(list(d.glob("*.log"))) > 3
    before = p.producers.snapshot_entries()
    p.files.flush()
    p.files.close()
    end = p.log_end_offset
    assert _snapshots(d)[-1] == end
    calls = _count_replayed(monkeypatch)
    again = _open(d)
    assert calls == [(end, 0)]  # the replay starts at the snapshot: not one batch header read
    assert sorted(again.producers.snapshot_entries(), key=lambda e: e.producer_id) == \
        sorted(before, key=lambda e: e.producer_id)


def test_without_snapshots_the_log_is_replayed_and_a_snapshot_taken(tmp_path: Path, monkeypatch) -> None:
    """A log dir written before snapshots existed (or whose snapshots were lost): the full replay
    of today, then a snapshot at the log end so the next start is cheap."""
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    for _ in range(12):
        prod.send(2)
    p.files.flush()
    p.files.close()
    for path in d.glob("*.snapshot"):
        path.unlink()
    calls = _count_replayed(monkeypatch)
    again = _open(d)
    assert calls == [(0, 12)]
    assert _snapshots(d) == [24]
    assert again.producers.entries[1].last_seq == 23


def test_crash_after_a_roll_replays_only_the_recovered_segment(tmp_path: Path, monkeypatch) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 4:
        prod.send(2)
    _drain(p)  # the background task wrote the roll snapshots
    active_base = int(sorted(d.glob("*.log"))[-1].stem)
    assert active_base in _snapshots(d)
    last = prod.send(2)
    p.files.flush()  # no close: a kill -9
    calls = _count_replayed(monkeypatch)
    again = _open(d, clean=False, recovery_point=p.log_end_offset)
    assert calls[0][0] == active_base and calls[0][1] == (last[1] + 1 - active_base) // 2
    dup = append(again, records.build_batch([(b"k", b"v", NOW), (b"k", b"v", NOW + 1)], producer_id=1,
                                            producer_epoch=0, base_sequence=prod.seq - 2))
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == last


def test_duplicates_are_detected_across_a_restart(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    prod = Producer(p, 42)
    first = prod.batch(3)
    append(p, first)                        # 0-2, seq 0-2
    last = prod.batch(2)
    append(p, last)                         # 3-4, seq 3-4
    p.files.close()
    again = _open(d)
    dup = append(again, last)
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (3, 4) and again.log_end_offset == 5
    # Kafka's snapshot keeps only the last batch: an older retry is out of order, as in Kafka
    with pytest.raises(KafkaApiError) as exc:
        append(again, first)
    assert exc.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert append(again, prod.batch(1)).base_offset == 5


def test_log_append_time_duplicates_report_the_append_time_after_a_restart(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    batch = Producer(p, 9).batch(2)
    result = p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT, log_append_time_ms=NOW + 500)
    p.files.close()
    again = _open(d)
    dup = again.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT, log_append_time_ms=NOW + 900)
    assert dup.duplicate and dup.log_append_time == result.log_append_time == NOW + 500


def test_open_transactions_and_the_last_stable_offset_survive_a_restart(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    still_open, aborted = Producer(p, 1), Producer(p, 2)
    aborted.send(transactional=True)        # 0
    still_open.send(2, transactional=True)  # 1-2
    aborted.end(commit=False)               # 3
    p.files.close()
    clock = Clock(NOW + 2 * DAY)  # long after: the open transaction keeps its producer from expiring
    again = _open(d, clock=clock)
    still_open.p = again
    assert (again.high_watermark, again.last_stable_offset) == (4, 1)
    assert set(again.producers.entries) == {1}
    assert again.producers.entries[1].current_txn_first_offset == 1
    with pytest.raises(KafkaApiError) as exc:  # the transaction is still open after the restart
        append(again, still_open.batch())
    assert exc.value.code == ErrorCode.INVALID_TXN_STATE
    still_open.seq -= 1
    assert still_open.end(commit=True) == 4
    assert again.last_stable_offset == again.high_watermark == 5


def test_crash_recovery_reindexes_an_abort_whose_transaction_began_before_the_snapshot(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """The transaction starts in an old segment, its abort lands in the segment a crash makes
    recovery re-validate: the roll snapshot's open transaction gives the abort its first offset."""
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=500)
    txn, other = Producer(p, 1), Producer(p, 2)
    txn.send(transactional=True)              # 0: opens the transaction
    while len(list(d.glob("*.log"))) < 3:
        other.send(3, transactional=True)      # other's transaction stays open throughout
    _drain(p)
    txn.end(commit=False)
    base = int(sorted(d.glob("*.log"))[-1].stem)
    index = d / f"{base:020d}.txnindex"
    expected = index.read_bytes()
    assert expected == struct.pack(">hqqqq", 0, 1, 0, p.log_end_offset - 1, 1)  # LSO after it: other's first offset
    p.files.flush()
    index.write_bytes(b"\x00" * 7)            # what a crash can leave
    calls = _count_replayed(monkeypatch)
    again = _open(d, clean=False, recovery_point=p.log_end_offset)
    assert calls[0][0] == base                # from the roll snapshot, not the log start
    assert index.read_bytes() == expected
    assert again.last_stable_offset == 1
    marker = p.log_end_offset - 1
    result = again.read(0, 10**6, Isolation.READ_COMMITTED, True)
    result.region.close()
    assert result.aborted == [AbortedTxn(1, 0, marker, 1)]  # read_committed readers drop offset 0


# ---- clean-up ----------------------------------------------------------------------------------------

def test_each_roll_takes_a_snapshot_of_the_state_before_the_new_segment(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 3:
        prod.send(2)
    assert _snapshots(d) == []  # pending: written by a worker, not on the loop
    _drain(p)
    bases = sorted(int(path.stem) for path in d.glob("*.log"))
    assert _snapshots(d) == bases[1:]
    for base in bases[1:]:
        [entry] = ps.read_snapshot(ps.snapshot_path(d, base))
        assert entry.last_offset == base - 1 and entry.last_sequence == base - 1


def test_truncation_deletes_later_snapshots_and_rebuilds_from_an_earlier_one(tmp_path: Path, monkeypatch) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 4:
        prod.send(2)
    _drain(p)
    bases = sorted(int(path.stem) for path in d.glob("*.log"))
    while len(list(d.glob("*.log"))) < 5:
        prod.send(2)
    in_flight = p.producer_state.work()  # the next roll's snapshot, handed to a worker not yet run
    assert in_flight is not None
    target = bases[2] + 2
    calls = _count_replayed(monkeypatch)
    p.make_follower(1, 2, (2, 1), frozenset((2, 1)))  # a follower's truncation, in its epoch
    doomed = p.truncate_to(target, 1)
    assert doomed is not None
    PartitionLog.delete_segments(doomed)
    assert calls == [(bases[2], 1)]  # from the snapshot at the segment's base: one batch
    assert p.log_end_offset == target and _snapshots(d) == bases[1:3]
    in_flight.run()  # written after the truncation cleaned up: dropped
    assert _snapshots(d) == bases[1:3]
    assert p.producers.entries[1].last_seq == target - 1
    prod.seq = target
    p.become_leader(3)
    assert append(p, prod.batch(2)).base_offset == target


def test_delete_records_and_retention_delete_snapshots_below_the_log_start(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 5:
        prod.send(2)
    _drain(p)
    bases = sorted(int(path.stem) for path in d.glob("*.log"))
    PartitionLog.delete_segments(p.delete_records_before(bases[2] + 1))
    _drain(p)
    assert _snapshots(d) == bases[3:]
    active_size = (d / f"{bases[-1]:020d}.log").stat().st_size  # retention.bytes keeping just the active segment
    p.set_log_config(LogConfig(segment_bytes=400, retention_ms=-1, retention_bytes=active_size))
    PartitionLog.delete_segments(p.apply_retention())
    _drain(p)
    assert p.log_start_offset == bases[-1] and _snapshots(d) == [bases[-1]]
    p.files.close()
    again = _open(d, segment_bytes=400)  # Kafka drops a snapshot at the log start at load
    assert _snapshots(d) == [again.log_end_offset]


def test_whole_log_expiry_keeps_producer_state_and_epochs(tmp_path: Path) -> None:
    """retention.ms past every record, active segment included: the log rolls an empty segment
    at the log end (with a snapshot there, as at any roll) and the log start moves to the log
    end. Producer state stays, as in Kafka: a retried batch is still a duplicate and sequences
    are still checked; an open transaction whose batches went holds the last stable offset at
    the log start, not below it; the epoch cache keeps the current epoch from the new start."""
    d = tmp_path / "t-0"
    clock = Clock()
    plog = PartitionLog(d, LogConfig(segment_bytes=400, retention_ms=DAY), clean_shutdown=True, clock=clock)
    p = Partition("t", 0, plog, LeaderEpochCache(d / "leader-epoch-checkpoint"), clock=clock)
    idem = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 3:
        idem.send(2)
    p.become_leader(2)
    idem.send(2)
    txn = Producer(p, 2)
    first_txn_offset, _ = txn.send(1, transactional=True)
    _drain(p)
    end = p.log_end_offset
    assert p.last_stable_offset == first_txn_offset
    assert p.apply_retention() == []  # a day has not passed
    assert p.apply_retention(delete_policy=False) == []  # compact-only: no time retention at all
    clock.ms += DAY + 1000  # past the newest record's timestamp by more than retention.ms
    segments = len(list(d.glob("*.log")))
    doomed = p.apply_retention()
    assert len(doomed) == segments
    PartitionLog.delete_segments(doomed)
    _drain(p)
    assert (p.log_start_offset, p.log_end_offset, p.high_watermark) == (end, end, end)
    assert sorted(d.glob("*.log")) == [d / f"{end:020d}.log"]
    assert _snapshots(d) == [end]
    assert p.epochs.entries == [(2, end)]
    assert p.last_stable_offset == end
    assert p.apply_retention() == []  # the empty active segment stays
    idem.seq -= 2
    duplicate = append(p, idem.batch(2))  # the last batch retried
    assert duplicate.duplicate and p.log_end_offset == end
    idem.seq += 1
    with pytest.raises(KafkaApiError) as exc:
        append(p, idem.batch(1))
    assert exc.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    idem.seq -= 2
    assert idem.send(1) == (end, end)
    assert txn.end(commit=False) == end + 1
    assert p.last_stable_offset == p.high_watermark == end + 2
    p.files.close()
    again = PartitionLog(d, LogConfig(segment_bytes=400), log_start_offset=end, clean_shutdown=True, clock=clock)
    assert (again.log_start_offset, again.log_end_offset) == (end, end + 2)


def test_stray_snapshots_are_removed_at_open(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 3:
        prod.send(2)
    p.files.close()  # roll snapshots and the shutdown one at the log end
    bases = sorted(int(path.stem) for path in d.glob("*.log"))
    end = p.log_end_offset
    snaps = ProducerSnapshots(d)
    snaps.write(bases[1] + 1, [], 0)         # strays: not at a segment base...
    snaps.write(end + 50, [], 0)             # ...and one past the log end
    _open(d, segment_bytes=400)
    assert _snapshots(d) == bases[1:] + [end]


def test_topic_deletion_stops_snapshot_writes(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d, segment_bytes=400)
    prod = Producer(p, 1)
    while len(list(d.glob("*.log"))) < 2:
        prod.send(2)
    work = p.producer_state.work()
    p.take_offline()
    p.files.retire_files()
    work.run()
    assert not d.exists()


# ---- expiry ------------------------------------------------------------------------------------------

def test_idle_producers_expire_unless_their_transaction_is_open(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    clock = Clock()
    p = _open(d, clock=clock)
    idle, txn = Producer(p, 1), Producer(p, 2)
    idle.send(3)                            # its last timestamp: NOW + 2
    txn.send(transactional=True)
    clock.ms = NOW + 2 + DAY - 1
    p.remove_expired_producers()
    assert set(p.producers.entries) == {1, 2}
    clock.ms = NOW + 2 + DAY
    p.remove_expired_producers()
    assert set(p.producers.entries) == {2}
    # an expired producer is unknown: its next batch is taken at any sequence, as in Kafka
    idle.seq = 17
    assert not append(p, idle.batch()).duplicate


def test_expired_producers_are_left_out_when_a_snapshot_is_loaded(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    Producer(p, 1).send()
    p.files.close()
    assert set(_open(d, clock=Clock(NOW + DAY - 1)).producers.entries) == {1}
    assert set(_open(d, clock=Clock(NOW + DAY)).producers.entries) == set()


def test_background_tasks_expire_producers_and_write_roll_snapshots(tmp_path: Path) -> None:
    now = [NOW]
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "producer.id.expiration.ms": "1000",
                                      "producer.id.expiration.check.interval.ms": "500",
                                      "log.message.timestamp.before.max.ms": str(2**62)}),
                        clock=lambda: now[0] / 1000)
    state.load()

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 1, {"internal.segment.bytes": "400"})
        p = topic.partitions[0]
        prod = Producer(p, 1)
        while len(list((state.log_dir / "t-0").glob("*.log"))) < 2:
            prod.send(2)
        await write_producer_snapshots(list(state.metadata.iter_partitions()))
        assert len(_snapshots(state.log_dir / "t-0")) == 1
        async with trio.open_nursery() as nursery:
            await nursery.start(producer_expiration_task, state)
            await trio.sleep(0.6)
            assert 1 in p.producers.entries
            now[0] = NOW + 1 + 1000  # the last batch's timestamp is NOW + 1
            await trio.sleep(0.5)
            assert 1 not in p.producers.entries
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
