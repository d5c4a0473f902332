"""The JVM orders and formats wirekafka reproduces in its answers (the conformance scenarios check
them against real Kafka; these pin the rules behind them) and the broker keys DescribeConfigs
lists beyond Kafka's own."""

from __future__ import annotations

import uuid

from kafka.protocol.producer.produce import ProduceRequest

from wirekafka.broker.handlers.create_topics import kafka_name_sets
from wirekafka.config.describe_types import java_double, listener_base_key
from wirekafka.broker.handlers.metadata import kafka_set_order
from wirekafka.broker.handlers.produce import _refused
from wirekafka.jvm import java_hashmap_order, scala_hashset_order
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode


def test_a_scala_hashset_is_in_hash_order_even_when_small() -> None:
    assert scala_hashset_order(["e", "b", "c"]) == scala_hashset_order(["c", "b", "e"])
    # "Aa" and "BB" share their String hash: one collision node, in the order they were added
    assert scala_hashset_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert scala_hashset_order(["BB", "Aa"]) == ["BB", "Aa"]


def test_kafka_set_order_keeps_the_request_order_up_to_four_names() -> None:
    assert kafka_set_order(["d", "a", "c", "a", "b"], {"b", "d"}) == ["d", "b"]
    names = [f"topic-{i}" for i in range(5)]
    assert kafka_set_order(names, names[:2]) == scala_hashset_order(names[:2])


def test_kafka_name_sets_split_the_names_given_twice_off() -> None:
    once, twice = kafka_name_sets(["a", "b", "a", "c", "a", "b"])
    assert (sorted(once), sorted(twice)) == (["c"], ["a", "b"])


def test_kafka_name_sets_keep_the_table_the_most_names_grew() -> None:
    """Thirteen names at once grow the HashSet to 32 slots; removing three leaves it there."""
    names = [f"name-{i}" for i in range(13)]
    once, _ = kafka_name_sets([*names, *names[:3]])
    assert once == java_hashmap_order(names[3:], capacity=32)


def test_a_refused_produce_answers_each_partition_once() -> None:
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        data(name="t", topic_id=uuid.UUID(int=0), partition_data=[
            data.PartitionProduceData(index=i, records=b"") for i in (1, 0, 1)]),
        data(name="u", topic_id=uuid.UUID(int=0), partition_data=[data.PartitionProduceData(index=0, records=b"")])])
    answer = _refused(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    parts = sorted((t.name, p.index, p.error_code, p.error_message) for t in answer.topics for p in t.partitions)
    assert parts == [(n, i, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None) for n, i in
                     (("t", 0), ("t", 1), ("u", 0))]
    assert sorted(t.name for t in answer.topics) == ["t", "u"]


def test_listener_overrides_stand_in_for_their_base_keys() -> None:
    assert listener_base_key("listener.name.sasl_plaintext.plain.sasl.jaas.config") == "sasl.jaas.config"
    assert listener_base_key("listener.name.sasl_plaintext.sasl.enabled.mechanisms") == "sasl.enabled.mechanisms"
    assert listener_base_key("sasl.enabled.mechanisms") is None


def test_the_keys_a_broker_was_started_with_are_known() -> None:
    given = build_config({"super.users": "User:admin", "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x"})
    assert {"super.users", "listener.name.sasl_plaintext.plain.sasl.jaas.config"} <= given.overridden
    assert "allow.everyone.if.no.acl.found" not in given.overridden


def test_doubles_are_written_as_java_writes_them() -> None:
    assert [java_double(v) for v in (1.7976931348623157e308, 0.5, 1e7, 1e-4, -2.5e-5, 100.0)] == [
        "1.7976931348623157E308", "0.5", "1.0E7", "1.0E-4", "-2.5E-5", "100.0"]


def test_a_topic_id_hashes_as_kafkas_uuid() -> None:
    """Uuid.hashCode: the high and low 32 bits of (most ^ least significant 64 bits), xor-ed."""
    from wirekafka.jvm import java_hash
    assert java_hash(uuid.UUID("00000000-0000-0001-0000-000000000002")) == 3
    assert java_hash(uuid.UUID("ffffffff-0000-0000-0000-000000000000")) == 0xFFFFFFFF
    assert java_hash(uuid.UUID("12345678-9abc-def0-0fed-cba987654321")) == (0x12345678 ^ 0x0FEDCBA9) ^ (0x9ABCDEF0 ^ 0x87654321)
    ids = [uuid.UUID(int=i << 64 | i * 7) for i in range(1, 7)]
    assert scala_hashset_order(ids) == scala_hashset_order(list(reversed(ids)))
