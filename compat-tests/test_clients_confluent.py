"""confluent-kafka (librdkafka) against a live wirekafka: topic creation through AdminClient,
every codec, keys/null keys/null values/headers, records at and over message.max.bytes,
offsets_for_times, watermarks, the idempotent producer and LogAppendTime topics."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Sequence

import pytest
from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from client_support import (
    assert_one_idempotent_producer_on_disk,
    CODEC_ATTRIBUTE,
    CODECS,
    DEFAULT_MESSAGE_MAX_BYTES,
    LOG_APPEND_TIME,
    Rec,
    assert_dense_offsets,
    assert_same_records,
    big_payload,
    by_partition,
    counts,
    expected_offset_for_time,
    log_batches,
    make_records,
    now_ms,
    read_confluent,
    read_kafka_python,
    time_probes,
    value_len_for_batch,
)

pytestmark = pytest.mark.timeout(120)


def _conf(broker, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap, "logger": logging.getLogger("librdkafka"), **extra}


def create_topic(broker, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    admin = AdminClient(_conf(broker))
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(15)


def produce(broker, topic: str, recs: Sequence[Rec], one_batch_each: bool = False, **conf: Any) -> list[Any]:
    """Produce recs in order; returns per record (partition, offset, (timestamp type, timestamp))
    from its delivery report, or the KafkaError. one_batch_each flushes after every record, so
    that each travels in a batch of its own (needed to judge one record against a size limit)."""
    producer = Producer(_conf(broker, **{"linger.ms": 5, **conf}))
    results: list[Any] = [None] * len(recs)

    def report(i: int):
        def on_delivery(err: KafkaError | None, msg) -> None:
            results[i] = err if err is not None else (msg.partition(), msg.offset(), msg.timestamp())
        return on_delivery

    for i, r in enumerate(recs):
        producer.produce(topic, value=r.value, key=r.key, partition=r.partition, timestamp=r.timestamp,
                         headers=list(r.headers) or None, on_delivery=report(i))
        producer.poll(0)
        if one_batch_each:
            assert producer.flush(30) == 0
    assert producer.flush(30) == 0, "undelivered records after 30 s"
    return results


def produce_ok(broker, topic: str, recs: Sequence[Rec], **conf: Any) -> list[tuple[int, int]]:
    results = produce(broker, topic, recs, **conf)
    errors = [r for r in results if isinstance(r, KafkaError)]
    assert not errors, errors[:3]
    return [(p, o) for p, o, _ in results]


def test_admin_creates_topics_with_partitions_and_configs(broker, topic_name):
    admin = AdminClient(_conf(broker))
    names = [f"{topic_name}-a", f"{topic_name}-b"]
    futures = admin.create_topics([NewTopic(names[0], 3, 1),
                                   NewTopic(names[1], 1, 1, config={"max.message.bytes": "5000",
                                                                    "message.timestamp.type": "LogAppendTime"})])
    for name in names:
        assert futures[name].result(15) is None
    md = admin.list_topics(timeout=10)
    assert len(md.topics[names[0]].partitions) == 3
    assert len(md.topics[names[1]].partitions) == 1
    assert all(p.leader == md.brokers[next(iter(md.brokers))].id for p in md.topics[names[0]].partitions.values())

    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(names[0], 1, 1)])[names[0]].result(15)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(f"{topic_name}-c", 1, 3)])[f"{topic_name}-c"].result(15)
    assert exc.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(f"{topic_name}-d", 1, 1, config={"no.such.config": "1"})])[
            f"{topic_name}-d"].result(15)
    assert exc.value.args[0].code() == KafkaError.INVALID_CONFIG
    # The configs took effect: the 5000-byte limit and LogAppendTime (see their own tests too).
    [too_big] = produce(broker, names[1], [Rec(0, b"k", b"x" * 6000, (), now_ms() - 5000)])
    assert isinstance(too_big, KafkaError) and too_big.code() == KafkaError.MSG_SIZE_TOO_LARGE
    [small] = produce(broker, names[1], [Rec(0, b"k", b"small", (), now_ms() - 5000)])
    assert small[:2] == (0, 0) and small[2][0] == TIMESTAMP_LOG_APPEND_TIME


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_round_trips_byte_identical(broker, topic_name, codec):
    create_topic(broker, topic_name, 3)
    recs = make_records(300, 3, seed=CODECS.index(codec), null_header_values=True)
    acks = produce_ok(broker, topic_name, recs, **{"compression.type": codec, "batch.num.messages": 40})
    assert_dense_offsets(acks, recs)
    for partition in range(3):
        batches = log_batches(broker.data_dir, topic_name, partition)
        assert len(batches) > 1
        # stored with the codec they came with: librdkafka sends a batch the codec would not shrink
        # uncompressed (which batches those are depends on how records fell into batches)
        codecs = {b.attributes & 7 for b in batches}
        assert CODEC_ATTRIBUTE[codec] in codecs and codecs <= {CODEC_ATTRIBUTE[codec], 0}
    assert_same_records(read_confluent(broker.bootstrap, topic_name, counts(recs)), recs)
    # Another client reads what librdkafka wrote.
    assert_same_records(read_kafka_python(broker.bootstrap, topic_name, counts(recs)), recs)


def _shuffle_timestamps(recs: list[Rec]) -> list[Rec]:
    """Make some timestamps go backwards, as they may when clocks or producers disagree."""
    return [dataclasses.replace(r, timestamp=r.timestamp - 35) if i % 9 == 4 else r for i, r in enumerate(recs)]


def test_offsets_for_times_and_watermarks(broker, topic_name):
    create_topic(broker, topic_name, 3)
    recs = _shuffle_timestamps(make_records(600, 2, seed=7))  # partition 2 stays empty
    acks = produce_ok(broker, topic_name, recs, **{"batch.num.messages": 25, "compression.type": "gzip"})
    assert_dense_offsets(acks, recs)
    consumer = Consumer(_conf(broker, **{"group.id": f"oft-{topic_name}", "enable.auto.commit": False}))
    try:
        for partition, prs in by_partition(recs).items():
            assert consumer.get_watermark_offsets(TopicPartition(topic_name, partition), 10) == (0, len(prs))
            for ts in time_probes(prs):  # one look-up per partition per request, as Kafka requires
                [tp] = consumer.offsets_for_times([TopicPartition(topic_name, partition, ts)], 10)
                assert tp.error is None
                expected = expected_offset_for_time(prs, ts)
                assert tp.offset == (-1 if expected is None else expected), f"partition {partition} ts {ts}"
        assert consumer.get_watermark_offsets(TopicPartition(topic_name, 2), 10) == (0, 0)
        [empty] = consumer.offsets_for_times([TopicPartition(topic_name, 2, now_ms() - 3_600_000)], 10)
        assert empty.offset == -1
    finally:
        consumer.close()


def test_idempotent_producer_writes_each_record_once_in_order(broker, topic_name):
    create_topic(broker, topic_name, 2)
    recs = make_records(800, 2, seed=11, null_header_values=True)
    acks = produce_ok(broker, topic_name, recs, **{"enable.idempotence": True, "batch.num.messages": 20,
                                                   "compression.type": "zstd"})
    assert_dense_offsets(acks, recs)
    assert_same_records(read_confluent(broker.bootstrap, topic_name, counts(recs)), recs)
    assert_one_idempotent_producer_on_disk(broker, topic_name, recs)


def test_log_append_time_topic(broker, topic_name):
    create_topic(broker, topic_name, 2, {"message.timestamp.type": "LogAppendTime"})
    old = now_ms() - 86_400_000
    recs = make_records(200, 2, seed=13, base_ts=old)
    before = now_ms()
    results = produce(broker, topic_name, recs, **{"compression.type": "gzip", "batch.num.messages": 30})
    after = now_ms()
    assert not [r for r in results if isinstance(r, KafkaError)]
    assert_dense_offsets([(p, o) for p, o, _ in results], recs)
    acked = {(p, o): ts for p, o, ts in results}
    assert {ts[0] for ts in acked.values()} == {TIMESTAMP_LOG_APPEND_TIME}
    got = read_confluent(broker.bootstrap, topic_name, counts(recs))
    assert_same_records(got, recs, timestamp_type=LOG_APPEND_TIME)
    for g in got:
        assert before <= g.timestamp <= after
        assert g.timestamp == acked[(g.partition, g.offset)][1]
    # offsets_for_times follows the broker's timestamps, not the producer's.
    consumer = Consumer(_conf(broker, **{"group.id": f"lat-{topic_name}", "enable.auto.commit": False}))
    try:
        [tp] = consumer.offsets_for_times([TopicPartition(topic_name, 0, old + 1000)], 10)
        assert tp.offset == 0
        [tp] = consumer.offsets_for_times([TopicPartition(topic_name, 0, after + 1)], 10)
        assert tp.offset == -1
    finally:
        consumer.close()


def test_records_at_and_over_message_max_bytes(broker, topic_name):
    create_topic(broker, topic_name, 1)
    key = b"big-key"
    at_limit = value_len_for_batch(DEFAULT_MESSAGE_MAX_BYTES, len(key))
    ts = now_ms() - 1000
    recs = [Rec(0, key, big_payload(at_limit, 1), (), ts),
            Rec(0, key, big_payload(at_limit + 1, 2), (), ts + 1),
            Rec(0, b"after", b"small", (), ts + 2)]
    # The client's own limit is set high so that the broker is the one to judge.
    results = produce(broker, topic_name, recs, one_batch_each=True, **{"message.max.bytes": 2_000_000})
    assert results[0][:2] == (0, 0)
    assert isinstance(results[1], KafkaError) and results[1].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert results[2][:2] == (0, 1)
    sizes = [b.size for b in log_batches(broker.data_dir, topic_name, 0)]
    assert sizes[0] == DEFAULT_MESSAGE_MAX_BYTES and len(sizes) == 2
    kept = [recs[0], recs[2]]
    assert_same_records(read_confluent(broker.bootstrap, topic_name, {0: 2}), kept)
    assert_same_records(read_kafka_python(broker.bootstrap, topic_name, {0: 2}), kept)


def test_client_side_message_max_bytes(broker, topic_name):
    create_topic(broker, topic_name, 1)
    producer = Producer(_conf(broker, **{"message.max.bytes": DEFAULT_MESSAGE_MAX_BYTES}))
    with pytest.raises(KafkaException) as exc:
        producer.produce(topic_name, value=b"x" * DEFAULT_MESSAGE_MAX_BYTES, partition=0)
    assert exc.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert producer.flush(10) == 0


def test_topic_max_message_bytes_is_enforced_by_the_broker(broker, topic_name):
    create_topic(broker, topic_name, 1, {"max.message.bytes": "20000"})
    ts = now_ms()
    fits = value_len_for_batch(20000, 1)
    recs = [Rec(0, b"a", big_payload(fits, 3), (), ts), Rec(0, b"b", big_payload(fits + 1, 4), (), ts),
            Rec(0, b"c", b"x" * 100_000, (), ts), Rec(0, b"d", b"ok", (), ts)]
    results = produce(broker, topic_name, recs, one_batch_each=True, **{"message.max.bytes": 1_000_000})
    assert results[0][:2] == (0, 0)
    for r in results[1:3]:
        assert isinstance(r, KafkaError) and r.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert results[3][:2] == (0, 1)
    assert_same_records(read_confluent(broker.bootstrap, topic_name, {0: 2}), [recs[0], recs[3]])
    assert [b.size for b in log_batches(broker.data_dir, topic_name, 0)][0] == 20000
