"""Producer-state snapshots (`%020d.snapshot`) between wirekafka and Kafka 4.3.1, both ways:

- Kafka's own reader (kafka-dump-log, DumpLogSegments.dumpProducerIdSnapshot over
  ProducerStateManager.readSnapshot) decodes snapshots wirekafka wrote — edge-case entries and the
  one a partition writes when it closes — to the values wirekafka put in, and refuses a corrupted
  one with the CRC message wirekafka's reader matches;
- (realkafka) a snapshot a real broker wrote at a clean shutdown, after idempotent and
  transactional confluent-kafka producers (one transaction left open), decodes with wirekafka's
  reader to what Kafka's tool prints and re-encodes to the same bytes, and wirekafka opening a
  copy of that partition directory takes its producer state and last stable offset from it."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from kafka_cli import DumpedProducer, parse_snapshot_dump, run

from scripts import realkafka
from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.protocol import records
from wirekafka.storage import producer_snapshot as ps
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage.producer_snapshot import ProducerSnapshots, SnapshotEntry

pytestmark = pytest.mark.java

T0 = 1_700_000_000_000
INT32_MAX = 2**31 - 1


def _first_sequence(last_sequence: int, delta: int) -> int:
    """Kafka's DefaultRecordBatch.decrementSequence, written out independently of wirekafka's."""
    return last_sequence - delta if last_sequence >= delta else INT32_MAX - (delta - last_sequence) + 1


def _expected(e: SnapshotEntry) -> DumpedProducer:
    """What DumpLogSegments prints for an entry: the batch only when its last offset is >= 0, with
    the entry's timestamp (Kafka rebuilds the batch from the snapshot's one timestamp)."""
    batch = e.last_offset >= 0
    return DumpedProducer(e.producer_id, e.epoch, e.coordinator_epoch,
                          e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None, e.timestamp,
                          _first_sequence(e.last_sequence, e.offset_delta) if batch else None,
                          e.last_sequence if batch else None, e.last_offset if batch else None,
                          e.offset_delta if batch else None, e.timestamp if batch else None)


def _dump(path: Path) -> list[DumpedProducer]:
    result = run("kafka-dump-log", "--files", str(path))
    assert result.returncode == 0 and not result.stderr.strip(), result.describe()
    return parse_snapshot_dump(result.stdout)


EDGE_ENTRIES = [
    SnapshotEntry(2**62 + 5, 32767, 41, 2**40, 4, T0, 7, 2**40 - 9),           # open transaction, big ids
    SnapshotEntry(1, 0, 2, 100, 4, -1, -1, -1),                                  # sequence wrapped in the batch
    SnapshotEntry(2, 5, -1, -1, 0, T0 + 1, 3, -1),                               # epoch bumped: no batch yet
    SnapshotEntry(3, 0, INT32_MAX, 9, 0, T0 + 2, -1, -1),                        # last sequence at the wrap
]


def test_dump_log_reads_wirekafka_snapshots(tmp_path: Path) -> None:
    snaps = ProducerSnapshots(tmp_path)
    assert snaps.write(1234, EDGE_ENTRIES, snaps.generation)
    dumped = _dump(ps.snapshot_path(tmp_path, 1234))
    assert sorted(dumped, key=lambda d: d.producer_id) == sorted(map(_expected, EDGE_ENTRIES),
                                                                 key=lambda d: d.producer_id)


def test_dump_log_reads_the_snapshot_a_partition_writes_at_close(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = Partition("t", 0, PartitionLog(d, LogConfig(), clean_shutdown=True),
                  LeaderEpochCache(d / "leader-epoch-checkpoint"), clock=lambda: T0 / 1000)

    def send(pid: int, epoch: int, seq: int, n: int, transactional: bool = False) -> None:
        batch = records.build_batch([(b"k", b"v", T0 + i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                                    base_sequence=seq, transactional=transactional)
        p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)

    send(10, 0, 0, 3)
    send(10, 0, 3, 4)                          # idempotent: last batch seq 3-6
    send(11, 2, 0, 2, transactional=True)
    p.append_marker(11, 2, 4, commit=True, timestamp_ms=T0 + 50)
    send(12, 1, 0, 5, transactional=True)      # left open
    entries = p.producers.snapshot_entries()
    p.files.close()
    [offset] = ps.snapshot_offsets(d)
    assert offset == p.log_end_offset
    dumped = {x.producer_id: x for x in _dump(ps.snapshot_path(d, offset))}
    assert dumped == {e.producer_id: _expected(e) for e in entries}
    assert dumped[10].first_sequence == 3 and dumped[10].last_sequence == 6 and dumped[10].last_offset == 6
    assert dumped[11].coordinator_epoch == 4 and dumped[11].current_txn_first_offset is None
    assert dumped[11].last_timestamp == T0 + 50  # the marker's
    assert dumped[12].current_txn_first_offset == 10


def test_dump_log_refuses_a_corrupt_snapshot_as_wirekafka_does(tmp_path: Path) -> None:
    snaps = ProducerSnapshots(tmp_path)
    snaps.write(7, EDGE_ENTRIES, snaps.generation)
    path = ps.snapshot_path(tmp_path, 7)
    raw = bytearray(path.read_bytes())
    raw[30] ^= 0x40
    path.write_bytes(raw)
    result = run("kafka-dump-log", "--files", str(path))
    assert "Snapshot is corrupt (CRC is no longer valid)" in result.stdout + result.stderr, result.describe()
    with pytest.raises(ps.CorruptSnapshot, match="CRC is no longer valid"):
        ps.read_snapshot(path)


@pytest.mark.realkafka
@pytest.mark.timeout(300)
def test_real_kafka_snapshot_reads_with_wirekafka(tmp_path: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    kafka = realkafka.RealKafka(tmp_path / "node")
    kafka.start()
    try:
        conf = {"bootstrap.servers": kafka.bootstrap, "logger": logging.getLogger("librdkafka")}
        admin = AdminClient(conf)  # kept referenced: a collected client fails its futures
        admin.create_topics([NewTopic("snap", 1, 1)])["snap"].result(30)
        idempotent = Producer({**conf, "enable.idempotence": True, "linger.ms": 0})
        for i in range(5):
            idempotent.produce("snap", b"idem-%d" % i)
            idempotent.flush(30)
        committed = Producer({**conf, "transactional.id": "snap-committed"})
        committed.init_transactions(30)
        committed.begin_transaction()
        for i in range(3):
            committed.produce("snap", b"committed-%d" % i)
        committed.commit_transaction(30)
        left_open = Producer({**conf, "transactional.id": "snap-open"})
        left_open.init_transactions(30)
        left_open.begin_transaction()
        left_open.produce("snap", b"open-0")
        left_open.produce("snap", b"open-1")
        assert left_open.flush(30) == 0
        code = kafka.stop()
        assert code in (0, 143), kafka.log_tail()
        part = kafka.partition_dir("snap")
        offsets = ps.snapshot_offsets(part)
        assert offsets, sorted(p.name for p in part.iterdir())
        snapshot = ps.snapshot_path(part, offsets[-1])
        ours = ps.read_snapshot(snapshot)
        # byte for byte: a fresh cluster's producer ids are small, and Kafka's HashMap iterates
        # small Long keys in ascending order, the order wirekafka writes
        assert ps.encode(ours) == snapshot.read_bytes()
        dumped = _dump(snapshot)
        assert sorted(dumped, key=lambda d: d.producer_id) == sorted(map(_expected, ours), key=lambda d: d.producer_id)
        assert len(ours) == 3
        idem = [e for e in ours if e.current_txn_first_offset < 0 and e.coordinator_epoch < 0]
        assert len(idem) == 1 and idem[0].last_sequence == 4
        [open_txn] = [e for e in ours if e.current_txn_first_offset >= 0]
        [done] = [e for e in ours if e is not open_txn and e is not idem[0]]
        assert done.coordinator_epoch >= 0 and open_txn.last_sequence == 1

        # wirekafka opens a copy of Kafka's partition directory from Kafka's snapshot
        copy = tmp_path / "copy" / "snap-0"
        shutil.copytree(part, copy)
        plog = PartitionLog(copy, LogConfig(), clean_shutdown=True)
        p = Partition("snap", 0, plog, LeaderEpochCache(copy / "leader-epoch-checkpoint"))
        assert plog.log_end_offset == offsets[-1]
        assert p.last_stable_offset == open_txn.current_txn_first_offset
        assert sorted(p.producers.snapshot_entries(), key=lambda e: e.producer_id) == \
            sorted(ours, key=lambda e: e.producer_id)
        p.files.close()
    finally:
        if kafka.alive():
            kafka.stop()
