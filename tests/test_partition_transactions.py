"""The partition side of transactions: open transactions hold the last stable offset back,
markers close them, aborts land in Kafka's `.txnindex` and come back to read_committed fetches,
and all of it survives a restart and a crash recovery."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from wirekafka.broker.replica.partition import AppendOrigin, Isolation, Partition
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage.txn_index import AbortedTxn

NOW = 1_700_000_000_000


def _open(directory: Path, clean: bool = True, **config) -> Partition:
    plog = PartitionLog(directory, LogConfig(**config), clean_shutdown=clean)
    return Partition("t", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"))


class Producer:
    """Writes batches the way a producer with one producer id does, sequence numbers included."""

    def __init__(self, partition: Partition, producer_id: int, epoch: int = 0) -> None:
        self.p, self.pid, self.epoch, self.seq = partition, producer_id, epoch, 0

    def send(self, n: int = 1, transactional: bool = True) -> tuple[int, int]:
        batch = records.build_batch([(b"k", b"v%d" % i, NOW + i) for i in range(n)], producer_id=self.pid,
                                    producer_epoch=self.epoch, base_sequence=self.seq, transactional=transactional)
        self.seq += n
        result = self.p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)
        return result.base_offset, result.last_offset

    def end(self, commit: bool, coordinator_epoch: int = 0) -> int:
        return self.p.append_marker(self.pid, self.epoch, coordinator_epoch, commit, NOW).base_offset


def _plain(p: Partition, n: int = 1) -> int:
    batch = records.build_batch([(b"k", b"x", NOW)] * n)
    return p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT).base_offset


def _read(p: Partition, offset: int, isolation: Isolation, max_bytes: int = 10**6):
    result = p.read(offset, max_bytes, isolation, min_one=True)
    data = b""
    if result.region is not None:
        data = result.region.read()
        result.region.close()
    return data, result


def _offsets(data: bytes) -> list[int]:
    return [records.parse_header(data, s).base_offset for s, _ in records.split_batches(data)]


def test_open_transaction_holds_the_last_stable_offset_until_commit(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    txn = Producer(p, 7)
    assert txn.send(2) == (0, 1)
    assert _plain(p) == 2
    assert (p.high_watermark, p.last_stable_offset) == (3, 0)
    data, result = _read(p, 0, Isolation.READ_COMMITTED)
    assert data == b"" and result.last_stable_offset == 0 and result.aborted == []
    data, result = _read(p, 0, Isolation.READ_UNCOMMITTED)
    assert _offsets(data) == [0, 2] and result.aborted is None
    assert txn.end(commit=True) == 3
    assert (p.high_watermark, p.last_stable_offset) == (4, 4)
    data, result = _read(p, 0, Isolation.READ_COMMITTED)
    assert _offsets(data) == [0, 2, 3] and result.aborted == []
    start, end = list(records.split_batches(data))[-1]
    header = records.parse_header(data, start)
    assert header.is_control and header.is_transactional and header.producer_id == 7
    assert records.parse_marker(data[start:end]) == records.TxnMarker(commit=True, coordinator_epoch=0)


def test_the_earliest_open_transaction_bounds_the_last_stable_offset(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    a, b = Producer(p, 1), Producer(p, 2)
    a.send()           # 0
    b.send()           # 1
    assert p.last_stable_offset == 0
    b.end(commit=False)  # 2: b's abort, a still open
    assert p.last_stable_offset == 0
    assert p.aborted_transactions(0, p.read(0, 10**6, Isolation.READ_UNCOMMITTED, True).region) == [
        AbortedTxn(2, 1, 2, 0)]  # the stable offset after b's abort is a's first offset
    a.end(commit=True)   # 3
    assert p.last_stable_offset == p.high_watermark == 4


def test_abort_is_indexed_in_kafkas_txnindex_format_and_reported_to_read_committed(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    txn = Producer(p, 9, epoch=3)
    txn.send(3)                       # 0-2
    assert txn.end(commit=False) == 3
    _plain(p)                         # 4
    raw = (tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes()
    assert raw == struct.pack(">hqqqq", 0, 9, 0, 3, 4)
    data, result = _read(p, 0, Isolation.READ_COMMITTED)
    assert _offsets(data) == [0, 3, 4]
    assert result.aborted == [AbortedTxn(9, 0, 3, 4)]
    _, after = _read(p, 4, Isolation.READ_COMMITTED)
    assert after.aborted == []        # the abort ended before offset 4


def test_segments_without_aborts_have_no_txnindex_file(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    txn = Producer(p, 1)
    txn.send()
    txn.end(commit=True)
    assert not list((tmp_path / "t-0").glob("*.txnindex"))


def test_upper_bound_follows_the_offset_index_as_in_kafka(tmp_path: Path) -> None:
    """A fetch that stops early reports only the aborts that start before the offset index
    entry at or past its end (Kafka's fetchUpperBoundOffset)."""
    p = _open(tmp_path / "t-0", index_interval_bytes=1)
    for _ in range(3):
        _plain(p)                     # 0, 1, 2
    late = Producer(p, 4)
    late.send()                       # 3
    late.end(commit=False)            # 4
    first_batch = records.parse_header(_read(p, 0, Isolation.READ_UNCOMMITTED)[0]).size
    _, small = _read(p, 0, Isolation.READ_COMMITTED, max_bytes=first_batch)
    assert small.aborted == []        # the read stopped at offset 1: the abort starts at 3
    _, whole = _read(p, 0, Isolation.READ_COMMITTED)
    assert whole.aborted == [AbortedTxn(4, 3, 4, 5)]


def test_non_transactional_write_during_a_transaction_is_invalid_txn_state(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    txn = Producer(p, 5)
    txn.send()
    with pytest.raises(KafkaApiError) as err:
        txn.send(transactional=False)
    assert err.value.code == ErrorCode.INVALID_TXN_STATE


def test_markers_are_fenced_by_producer_and_coordinator_epochs(tmp_path: Path) -> None:
    p = _open(tmp_path / "t-0")
    txn = Producer(p, 5, epoch=2)
    txn.send()
    txn.end(commit=True, coordinator_epoch=4)
    with pytest.raises(KafkaApiError) as old_producer:
        p.append_marker(5, 1, 4, True, NOW)
    assert old_producer.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaApiError) as old_coordinator:
        p.append_marker(5, 2, 3, True, NOW)
    assert old_coordinator.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert p.log_end_offset == 2      # neither fenced marker was written


def test_open_transactions_and_aborts_survive_a_clean_restart(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    aborted, still_open = Producer(p, 1), Producer(p, 2)
    aborted.send()                    # 0
    aborted.end(commit=False)         # 1
    still_open.send()                 # 2
    p.files.flush()
    p.files.close()
    again = _open(d, clean=True)
    assert (again.high_watermark, again.last_stable_offset) == (3, 2)
    assert _read(again, 0, Isolation.READ_COMMITTED)[1].aborted == [AbortedTxn(1, 0, 1, 2)]


def test_crash_recovery_rebuilds_the_txnindex_from_the_markers(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    first, second = Producer(p, 1), Producer(p, 2)
    first.send()                      # 0
    second.send()                     # 1
    first.end(commit=False)           # 2
    second.end(commit=False)          # 3
    index = d / "00000000000000000000.txnindex"
    expected = index.read_bytes()
    assert len(expected) == 2 * 34
    p.files.close()
    index.write_bytes(b"\x00" * 10)   # garbage a crash could leave
    recovered = _open(d, clean=False)
    assert index.read_bytes() == expected
    assert recovered.last_stable_offset == recovered.high_watermark == 4


def test_truncation_below_a_marker_reopens_the_transaction_and_drops_its_index_entry(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = _open(d)
    txn = Producer(p, 3)
    txn.send()                        # 0
    txn.end(commit=False)             # 1
    p.make_follower(1, 2, (2, 1), frozenset((2, 1)))  # a follower's truncation, in its epoch
    assert p.truncate_to(1, 1) == []
    assert (p.high_watermark, p.last_stable_offset) == (1, 0)
    assert (d / "00000000000000000000.txnindex").read_bytes() == b""
    assert _read(p, 0, Isolation.READ_COMMITTED)[1].aborted == []


def test_a_completed_transaction_holds_the_last_stable_offset_until_its_marker_is_replicated(tmp_path: Path) -> None:
    """Kafka's unreplicatedTxns: on a leader whose followers have not fetched the marker, a
    failover could lose it and reopen the transaction, so the last stable offset stays at the
    transaction's first offset until the high watermark passes the marker; it never goes back."""
    d = tmp_path / "t-0"
    p = Partition("t", 0, PartitionLog(d, LogConfig()), LeaderEpochCache(d / "leader-epoch-checkpoint"),
                  node_id=1, lead=False)
    p.make_leader(1, (1, 2), frozenset({1, 2}))  # this broker (1) leads, broker 2 follows in sync
    _plain(p)
    p.record_follower_fetch(2, 1)
    first, _ = Producer(p, 7).send(2)
    p.record_follower_fetch(2, 3)  # the transaction's data replicated: high watermark 3
    assert (p.high_watermark, p.last_stable_offset) == (3, first)
    marker = Producer(p, 7).end(commit=True)
    assert p.last_stable_offset == first  # the marker is not replicated yet
    p.record_follower_fetch(2, marker)  # the follower is still below the marker
    assert p.last_stable_offset == first
    p.record_follower_fetch(2, marker + 1)
    assert p.last_stable_offset == p.high_watermark == marker + 1
