"""Checks shared by the unit and compat tests of wirekafka's __transaction_state codec
(wirekafka/broker/coordinator/txn_records.py) against real Kafka: Kafka's --transaction-log-decoder JSON
turned into wirekafka's value type, and one recorded Kafka record (scripts/record_txn_state.py)
checked byte for byte."""

from __future__ import annotations

from typing import Any

from wirekafka.broker.coordinator.txn_records import (KEY_TYPE, TransactionLogKey, TransactionLogValue, TxnPartitions,
                                          TxnState, decode_key, decode_value, encode_key, encode_value,
                                          partition_for)
from wirekafka.protocol.records import assign_offsets, build_batch


def value_from_kafka_json(payload: dict[str, Any]) -> tuple[int, TransactionLogValue]:
    """(version, value) from kafka-dump-log's JSON for a value, which leaves out tagged fields at
    their defaults and prints null partitions for an Empty transaction."""
    data = payload["data"]
    return int(payload["version"]), TransactionLogValue(
        producer_id=data["producerId"], producer_epoch=data["producerEpoch"],
        timeout_ms=data["transactionTimeoutMs"], state=TxnState(data["transactionStatus"]),
        last_update_timestamp_ms=data["transactionLastUpdateTimestampMs"],
        start_timestamp_ms=data["transactionStartTimestampMs"],
        partitions=[TxnPartitions(p["topic"], p["partitionIds"]) for p in data["transactionPartitions"] or []],
        previous_producer_id=data.get("previousProducerId", -1), next_producer_id=data.get("nextProducerId", -1),
        next_producer_epoch=data.get("nextProducerEpoch", -1),
        client_transaction_version=data.get("clientTransactionVersion", 0))


def check_kafka_record(rec: dict[str, Any], num_partitions: int) -> None:
    """One record Kafka wrote: the key and value decode as Kafka's own decoder read them, they
    re-encode to Kafka's bytes, the transactional id sits in the partition Kafka chose, and
    build_batch of the re-encoded record is Kafka's whole batch (its leader epoch stamped)."""
    key_bytes, value_bytes = bytes.fromhex(rec["key"]), bytes.fromhex(rec["value"])
    transactional_id = rec["kafka_key"]["data"]["transactionalId"]
    assert rec["kafka_key"]["type"] == str(KEY_TYPE)
    assert decode_key(key_bytes) == TransactionLogKey(transactional_id)
    assert encode_key(transactional_id) == key_bytes
    assert partition_for(transactional_id, num_partitions) == rec["partition"]

    version, expected = value_from_kafka_json(rec["kafka_value"])
    value = decode_value(value_bytes)
    assert value == expected
    assert (rec["kafka_value"]["data"]["transactionPartitions"] is None) == (value.state is TxnState.EMPTY)
    assert encode_value(value, version) == value_bytes

    batch = bytearray(build_batch([(encode_key(transactional_id), encode_value(value, version), rec["timestamp"])]))
    assign_offsets(batch, rec["offset"], rec["leader_epoch"])
    assert bytes(batch) == bytes.fromhex(rec["batch"])
