"""wirekafka's __transaction_state records (wirekafka/broker/coordinator/txn_records.py) against Kafka 4.3.1:

- Kafka's own decoder (kafka-dump-log --transaction-log-decoder) reads a segment of records
  wirekafka encoded, batched with build_batch and laid out as Kafka lays out a segment, and prints
  the values wirekafka wrote;
- (realkafka) a real broker's fresh records, recorded by scripts/record_txn_state.py, pass the
  same byte-for-byte checks as the checked-in fixture tests/test_txn_records.py uses, so a new
  Kafka version that changed the format shows up here before the fixture is refreshed."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_cli import PROBLEM_MARKERS, ok, parse_log_dump, parse_offsets_dump

from scripts import record_txn_state
from testsupport.txn_log import check_kafka_record, value_from_kafka_json
from wirekafka.broker.coordinator.txn_records import (TransactionLogValue, TxnPartitions, TxnState, encode_key, encode_value,
                                          partition_for)
from wirekafka.jvm import java_string_hash
from wirekafka.protocol.records import assign_offsets, build_batch

pytestmark = pytest.mark.java

#: A transactional id with a negative Java hash, where Utils.abs and a bit mask disagree.
TXN_ID = "txn-log-decoder-0"
T0 = 1_700_000_000_000


def _history() -> list[tuple[TransactionLogValue | None, int]]:
    """(value, version) for a transactional id's life as Kafka's coordinator records it: a
    committed transaction, an aborted one after an epoch bump, a version-0 record (written while
    transaction.version is 0), and finally a tombstone once the id expired."""
    parts = [TxnPartitions("orders", [1, 0]), TxnPartitions("audit", [0])]

    def value(state: TxnState, epoch: int, partitions: list[TxnPartitions], start: int, update: int,
              **tagged: int) -> TransactionLogValue:
        return TransactionLogValue(9000, epoch, 60000, state, T0 + update, start, partitions,
                                   previous_producer_id=9000, **tagged)

    return [
        (value(TxnState.EMPTY, 0, [], -1, 0), 1),
        (value(TxnState.ONGOING, 0, parts, T0 + 10, 10, client_transaction_version=2), 1),
        (value(TxnState.PREPARE_COMMIT, 1, parts, T0 + 10, 20, client_transaction_version=2), 1),
        (value(TxnState.COMPLETE_COMMIT, 1, [], T0 + 10, 30, client_transaction_version=2), 1),
        (value(TxnState.ONGOING, 1, parts[:1], T0 + 40, 40, client_transaction_version=2), 1),
        (value(TxnState.PREPARE_ABORT, 2, parts[:1], T0 + 40, 50, client_transaction_version=2,
               next_producer_id=9001, next_producer_epoch=0), 1),
        (value(TxnState.COMPLETE_ABORT, 2, [], T0 + 40, 60, client_transaction_version=2), 1),
        (TransactionLogValue(9002, 0, 60000, TxnState.PREPARE_EPOCH_FENCE, T0 + 70, T0 + 40, parts[1:]), 0),
        (None, 1),
    ]


def test_dump_log_decodes_transaction_log(tmp_path: Path) -> None:
    assert java_string_hash(TXN_ID) == -2037603461  # Java's "txn-log-decoder-0".hashCode()
    partition = partition_for(TXN_ID, 50)
    assert partition == 11 and (java_string_hash(TXN_ID) & 0x7FFFFFFF) % 50 == 37
    segment = tmp_path / f"__transaction_state-{partition}" / "00000000000000000000.log"
    segment.parent.mkdir()
    history = _history()
    batches = []
    for offset, (value, version) in enumerate(history):
        batch = bytearray(build_batch([(encode_key(TXN_ID), None if value is None else encode_value(value, version),
                                        T0 + offset)]))
        assign_offsets(batch, offset, 0)
        batches.append(bytes(batch))
    segment.write_bytes(b"".join(batches))

    out = ok("kafka-dump-log", "--files", str(segment), "--transaction-log-decoder")
    found = [marker for marker in PROBLEM_MARKERS if marker in out]
    assert not found, f"kafka-dump-log reported {found}:\n{out[-4000:]}"
    dumped = parse_log_dump(out)[str(segment)]
    assert [b.base_offset for b in dumped] == list(range(len(history)))
    assert all(b.valid and b.producer_id == -1 for b in dumped)
    decoded = parse_offsets_dump(out)
    assert [key for key, _ in decoded] == [{"type": "0", "data": {"transactionalId": TXN_ID}}] * len(history)
    read = [None if payload is None else value_from_kafka_json(payload) for _, payload in decoded]
    assert read == [None if value is None else (version, value) for value, version in history]


@pytest.mark.realkafka
def test_real_kafka_records_match(tmp_path: Path) -> None:
    doc = record_txn_state.record(tmp_path)
    records = doc["records"]
    assert {r["kafka_value"]["version"] for r in records} == {"0", "1"}
    assert {r["kafka_value"]["data"].get("clientTransactionVersion", 0) for r in records} == {0, 2}
    for rec in records:
        check_kafka_record(rec, doc["num_partitions"])
