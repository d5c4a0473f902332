"""A plain and a transactional offset commit of one partition: the record later in the log wins, as
in Kafka (OffsetMetadataManager.replayEndTransactionMarker), not the one whose commit took effect
last. A plain commit written between a transaction's offset record and its COMMIT marker stays —
when the marker is replayed from the raw log, and after the cleaner (which keeps each key's latest
record) removed the transaction's record. Before, the marker order won: the answer changed once
`__consumer_offsets` was cleaned (compat-tests/test_offsets_compaction_txn.py against Kafka 4.3.1)."""

from __future__ import annotations

from pathlib import Path

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.broker.coordinator.group_model import Group, replay
from wirekafka.broker.coordinator.runtime import _read_entries
from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.protocol import records
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog
from testsupport.cleaning import clean_partition

NOW = 1_700_000_000_000
KEY = gr.encode_offset_key(gr.OffsetKey("g", "t", 0))
PID, EPOCH = 7, 0


def _value(offset: int) -> bytes:
    return gr.encode_offset_value(gr.OffsetValue(offset, -1, "", NOW))


def _partition(directory: Path) -> Partition:
    plog = PartitionLog(directory, LogConfig(segment_bytes=300, compact=True, min_cleanable_ratio=0.0),
                        clean_shutdown=True, clock=lambda: NOW / 1000)
    return Partition("__consumer_offsets", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"),
                     clock=lambda: NOW / 1000)


def _append(p: Partition, value: bytes, **kw: object) -> None:
    batch = records.build_batch([(KEY, value, NOW)], **kw)  # type: ignore[arg-type]
    p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)


def _loaded(p: Partition) -> int:
    """The group's offset for t-0 as the coordinator's load replays the partition."""
    entries = _read_entries(p, p.log_start_offset, p.log_end_offset)
    groups: dict[str, Group] = {}
    for (key, value), (offset, transactional) in zip(entries.entries, entries.sources):
        replay(groups, key, value, 0.0, offset, transactional)
    return groups["g"].offsets[("t", 0)].offset


def test_a_plain_commit_between_a_transactions_record_and_its_marker_wins_before_and_after_cleaning(
        tmp_path: Path) -> None:
    p = _partition(tmp_path / "__consumer_offsets-0")
    _append(p, _value(1))  # plain
    _append(p, _value(2), producer_id=PID, producer_epoch=EPOCH, base_sequence=0, transactional=True)
    _append(p, _value(3))  # plain, after the transaction's record
    p.append_marker(PID, EPOCH, 0, commit=True, timestamp_ms=NOW)
    for i in range(3):  # later segments (300 bytes each), so that the ones before can be cleaned
        pad = records.build_batch([(gr.encode_offset_key(gr.OffsetKey("pad", "t", i)), _value(0), NOW)])
        p.append(pad, records.validate_batch(pad), AppendOrigin.CLIENT)
    assert _loaded(p) == 3
    clean_partition(p, NOW)
    assert _loaded(p) == 3
    kept = [r.value for h, read in p.files.iter_batches(0) if not h.is_control for r in records.iter_records(read())]
    assert _value(2) not in kept  # the transaction's record is gone: only the position rule agrees


def test_a_committed_transaction_after_a_plain_commit_takes_effect(tmp_path: Path) -> None:
    p = _partition(tmp_path / "__consumer_offsets-0")
    _append(p, _value(1))
    _append(p, _value(2), producer_id=PID, producer_epoch=EPOCH, base_sequence=0, transactional=True)
    p.append_marker(PID, EPOCH, 0, commit=True, timestamp_ms=NOW)
    assert _loaded(p) == 2


def test_newer_than_compares_record_offsets() -> None:
    older, newer = gr.OffsetValue(5, -1, "", NOW, record_offset=10), gr.OffsetValue(4, -1, "", NOW, record_offset=11)
    assert newer.newer_than(older) and not older.newer_than(newer)
    assert older.newer_than(None)
    assert older == gr.OffsetValue(5, -1, "", NOW)  # the log position is not part of the value
