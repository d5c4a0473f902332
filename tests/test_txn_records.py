"""__transaction_state records (wirekafka/broker/coordinator/txn_records.py): round trips of each value
version, and byte-for-byte equality with what a real Kafka 4.3.1 wrote.

The real records are in tests/data/kafka_transaction_state.json, recorded by
scripts/record_txn_state.py (confluent-kafka: a commit and an abort over two partitions; Kafka's
Java producer with client transaction version 2; confluent-kafka again after transaction.version
was downgraded to 0), each with Kafka's own --transaction-log-decoder reading of it. Re-run that
script to refresh the fixture. The reverse direction (Kafka's tool reading wirekafka's records) is
compat-tests/test_txn_log_java.py."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from wirekafka.jvm import java_string_hash
from testsupport.txn_log import check_kafka_record
from wirekafka.broker.coordinator.txn_records import (VALUE_VERSION, TransactionLogKey, TransactionLogValue, TxnPartitions,
                                          TxnState, UnknownValueVersion, decode_key, decode_value, encode_key,
                                          encode_value, group_partitions, partition_for)
from wirekafka.protocol.varint import encode_uvarint

FIXTURE = Path(__file__).parent / "data" / "kafka_transaction_state.json"
KAFKA = json.loads(FIXTURE.read_text())
RECORDS = KAFKA["records"]


def _ongoing(**changes: Any) -> TransactionLogValue:
    value = TransactionLogValue(
        producer_id=4242, producer_epoch=7, timeout_ms=60000, state=TxnState.ONGOING,
        last_update_timestamp_ms=1_700_000_000_123, start_timestamp_ms=1_700_000_000_100,
        partitions=[TxnPartitions("orders", [3, 0, 1]), TxnPartitions("payments", [2])])
    for name, v in changes.items():
        setattr(value, name, v)
    return value


def test_state_ids_and_names() -> None:
    """The TransactionStatus byte of each state, and the names Kafka's admin API reports."""
    assert {s.name: s.value for s in TxnState} == {
        "EMPTY": 0, "ONGOING": 1, "PREPARE_COMMIT": 2, "PREPARE_ABORT": 3, "COMPLETE_COMMIT": 4,
        "COMPLETE_ABORT": 5, "DEAD": 6, "PREPARE_EPOCH_FENCE": 7}
    assert [s.kafka_name for s in TxnState] == [
        "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
        "PrepareEpochFence"]


def test_key() -> None:
    assert encode_key("tx-1") == b"\x00\x00\x00\x04tx-1"
    assert decode_key(encode_key("tx-é")) == TransactionLogKey("tx-é")
    assert decode_key(struct.pack(">hh", 1, 1) + b"g") is None  # another record type: skipped


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("state", list(TxnState))
def test_value_round_trip(version: int, state: TxnState) -> None:
    value = _ongoing(state=state, partitions=[] if state is TxnState.EMPTY else _ongoing().partitions)
    data = encode_value(value, version)
    assert struct.unpack_from(">h", data)[0] == version
    assert decode_value(data) == value


def test_version_1_tagged_fields() -> None:
    """Every tagged field round trips, written in tag order; defaults are left out, and version 0
    has no room for them (Kafka drops them there too)."""
    value = _ongoing(previous_producer_id=11, next_producer_id=12, client_transaction_version=2,
                     next_producer_epoch=3)
    data = encode_value(value)
    assert decode_value(data) == value
    tags = (encode_uvarint(4) + b"\x00\x08" + struct.pack(">q", 11) + b"\x01\x08" + struct.pack(">q", 12)
            + b"\x02\x02" + struct.pack(">h", 2) + b"\x03\x02" + struct.pack(">h", 3))
    assert data.endswith(tags)
    assert encode_value(_ongoing()).endswith(b"\x00")  # no tagged fields: an empty tag section
    assert len(data) == len(encode_value(_ongoing())) + len(tags) - 1
    assert decode_value(encode_value(value, 0)) == _ongoing()


def test_value_layouts() -> None:
    """The exact bytes of each version, field by field."""
    value = _ongoing(partitions=[TxnPartitions("t", [1, 0])], previous_producer_id=4242)
    head = struct.pack(">qhib", 4242, 7, 60000, 1)
    stamps = struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_100)
    assert encode_value(value, 0) == (struct.pack(">h", 0) + head + struct.pack(">ih", 1, 1) + b"t"
                                      + struct.pack(">iii", 2, 1, 0) + stamps)
    assert encode_value(value, 1) == (struct.pack(">h", 1) + head + b"\x02\x02t\x03" + struct.pack(">ii", 1, 0)
                                      + b"\x00" + stamps + b"\x01\x00\x08" + struct.pack(">q", 4242))


def test_empty_has_null_partitions() -> None:
    empty = _ongoing(state=TxnState.EMPTY, partitions=[], start_timestamp_ms=-1)
    assert encode_value(empty, 1)[17] == 0  # compact null array
    assert struct.unpack_from(">i", encode_value(empty, 0), 17)[0] == -1
    with pytest.raises(ValueError):
        encode_value(_ongoing(state=TxnState.EMPTY))


def test_completed_has_empty_partition_list() -> None:
    done = _ongoing(state=TxnState.COMPLETE_COMMIT, partitions=[])
    assert encode_value(done, 1)[17] == 1  # compact empty array, not null
    assert decode_value(encode_value(done, 0)) == done


def test_unreadable_values() -> None:
    assert decode_value(None) is None  # tombstone: the transactional id expired
    with pytest.raises(UnknownValueVersion) as info:
        decode_value(struct.pack(">h", 2) + encode_value(_ongoing())[2:])
    assert info.value.version == 2
    bad_state = bytearray(encode_value(_ongoing()))
    bad_state[16] = 9
    with pytest.raises(ValueError):
        decode_value(bytes(bad_state))
    with pytest.raises(ValueError):
        decode_value(encode_value(_ongoing())[:-5])
    null_ids = encode_value(_ongoing(partitions=[TxnPartitions("t", [])]), 0)
    with pytest.raises(ValueError):
        decode_value(null_ids[:-16 - 4] + struct.pack(">i", -1) + null_ids[-16:])
    with pytest.raises(ValueError):
        encode_value(_ongoing(), 2)


def test_unknown_tag_is_skipped() -> None:
    data = encode_value(_ongoing(client_transaction_version=2))
    with_unknown = data[:-1 - 4] + b"\x02" + data[-4:] + b"\x09\x03abc"  # tag 2, then an unknown tag 9
    assert data[-5] == 1
    assert decode_value(with_unknown) == _ongoing(client_transaction_version=2)


def test_group_partitions() -> None:
    assert group_partitions([("b", 1), ("a", 2), ("b", 0), ("a", 2)]) == [
        TxnPartitions("a", [2]), TxnPartitions("b", [0, 1])]


def test_partition_for() -> None:
    """Utils.abs(hashCode) % partitions, as for consumer groups (Integer.MIN_VALUE maps to 0)."""
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("world!") < 0
    assert partition_for("world!", 50) == abs(java_string_hash("world!")) % 50


# ---- the bytes of the hand-written codec this one replaced --------------------------------------
# Captured from it (commit 0977755) before the codec was rebuilt on Kafka's JSON schemas: these
# records sit on disk and Kafka's tools read them, so the bytes must not move.

_TAGGED = dict(previous_producer_id=11, next_producer_id=12, client_transaction_version=2, next_producer_epoch=3)
_FENCED = dict(state=TxnState.PREPARE_EPOCH_FENCE, client_transaction_version=2, partitions=[TxnPartitions("t", [])])
TXN_BYTES = [  # (value, its bytes at version 0, at version 1)
    (_ongoing(),
     "0000000000000000109200070000ea60010000000200066f72646572730000000300000003000000000000000100087061796d656e"
     "747300000001000000020000018bcfe5687b0000018bcfe56864",
     "0001000000000000109200070000ea600103076f72646572730400000003000000000000000100097061796d656e74730200000002"
     "000000018bcfe5687b0000018bcfe5686400"),
    (_ongoing(state=TxnState.EMPTY, partitions=[], start_timestamp_ms=-1),
     "0000000000000000109200070000ea6000ffffffff0000018bcfe5687bffffffffffffffff",
     "0001000000000000109200070000ea6000000000018bcfe5687bffffffffffffffff00"),
    (_ongoing(state=TxnState.COMPLETE_COMMIT, partitions=[]),
     "0000000000000000109200070000ea6004000000000000018bcfe5687b0000018bcfe56864",
     "0001000000000000109200070000ea6004010000018bcfe5687b0000018bcfe5686400"),
    (_ongoing(**_TAGGED),
     "0000000000000000109200070000ea60010000000200066f72646572730000000300000003000000000000000100087061796d656e"
     "747300000001000000020000018bcfe5687b0000018bcfe56864",
     "0001000000000000109200070000ea600103076f72646572730400000003000000000000000100097061796d656e74730200000002"
     "000000018bcfe5687b0000018bcfe56864040008000000000000000b0108000000000000000c0202000203020003"),
    (_ongoing(**_FENCED),
     "0000000000000000109200070000ea600700000001000174000000000000018bcfe5687b0000018bcfe56864",
     "0001000000000000109200070000ea600702027401000000018bcfe5687b0000018bcfe568640102020002"),
]


def test_key_bytes() -> None:
    for transactional_id, expected in (("tx-1", "0000000474782d31"), ("tx-é", "0000000574782dc3a9")):
        assert encode_key(transactional_id).hex() == expected
        assert decode_key(bytes.fromhex(expected)) == TransactionLogKey(transactional_id)


@pytest.mark.parametrize("value, version, expected", [(value, version, by_version[version])
                                                     for value, *by_version in TXN_BYTES for version in (0, 1)])
def test_value_bytes(value: TransactionLogValue, version: int, expected: str) -> None:
    """Each state's layout at both versions; version 0 drops the tagged fields, as Kafka does."""
    assert encode_value(value, version).hex() == expected
    read = decode_value(bytes.fromhex(expected))
    assert read == (value if version == 1 else _ongoing(**{name: getattr(value, name) for name in (
        "state", "partitions", "start_timestamp_ms")}))
    assert read is not None and encode_value(read, version).hex() == expected


# ---- against real Kafka 4.3.1 ----------------------------------------------------------------

def test_fixture_covers_the_formats() -> None:
    """A refreshed fixture must still hold both value versions, client transaction versions 0
    and 2, a commit and an abort."""
    values = [r["kafka_value"] for r in RECORDS]
    assert {v["version"] for v in values} == {"0", "1"}
    assert {v["data"].get("clientTransactionVersion", 0) for v in values} == {0, 2}
    assert {v["data"]["transactionStatus"] for v in values} >= {0, 1, 2, 3, 4, 5}


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: f"{r['partition']}@{r['offset']}")
def test_kafka_record(rec: dict[str, Any]) -> None:
    """Decoded as Kafka's own decoder read it, re-encoded to the very bytes Kafka wrote, and
    batched as Kafka batched it (one record, CreateTime, no producer id, uncompressed)."""
    check_kafka_record(rec, KAFKA["num_partitions"])


def test_default_version_is_what_kafka_writes() -> None:
    """A freshly formatted Kafka 4.3.1 cluster (transaction.version 2) writes VALUE_VERSION;
    only the records written after the downgrade to transaction.version 0 are version 0."""
    by_id: dict[str, set[str]] = {}
    for r in RECORDS:
        by_id.setdefault(r["kafka_key"]["data"]["transactionalId"], set()).add(r["kafka_value"]["version"])
    assert by_id == {"confluent": {str(VALUE_VERSION)}, "java": {str(VALUE_VERSION)}, "confluent-tv0": {"0"}}
