"""aiokafka against a live wirekafka: topic creation through AIOKafkaAdminClient, every codec,
keys/null keys/null values/headers, records at and over message.max.bytes, offsets_for_times,
beginning/end offsets, the idempotent producer and LogAppendTime topics.

Each test drives its client on a private asyncio loop (asyncio.run)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, MessageSizeTooLargeError

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
    read_aiokafka,
    read_confluent,
    time_probes,
    value_len_for_batch,
)
from wirekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(120)


async def _create_topics(broker, topics: list[NewTopic]) -> list[tuple[str, int, str | None]]:
    """CreateTopics through the admin client; returns (topic, error code, message) per topic."""
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics(topics)
        return [(t[0], t[1], t[2] if len(t) > 2 else None) for t in response.topic_errors]
    finally:
        await admin.close()


def create_topic(broker, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    [(topic, code, message)] = asyncio.run(_create_topics(broker, [NewTopic(name, partitions, 1,
                                                                           topic_configs=configs or {})]))
    assert (topic, code) == (name, 0), message


def produce(broker, topic: str, recs: Sequence[Rec], one_batch_each: bool = False, **conf: Any) -> list[Any]:
    """Produce recs in order; per record its RecordMetadata or the exception. one_batch_each
    waits for each record before sending the next, so that each travels in a batch of its own."""

    async def run() -> list[Any]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, **{"linger_ms": 5, **conf})
        await producer.start()
        try:
            futures: list[Any] = []
            for r in recs:
                try:
                    fut = await producer.send(topic, value=r.value, key=r.key, partition=r.partition,
                                              timestamp_ms=r.timestamp, headers=list(r.headers))
                except KafkaError as exc:  # the client's own checks (record size) raise here
                    futures.append(exc)
                    continue
                futures.append(fut)
                if one_batch_each:
                    await asyncio.wait([fut], timeout=30)
            results = []
            for f in futures:
                try:
                    results.append(f if isinstance(f, KafkaError) else await asyncio.wait_for(f, 30))
                except KafkaError as exc:
                    results.append(exc)
            return results
        finally:
            await producer.stop()

    return asyncio.run(run())


def produce_ok(broker, topic: str, recs: Sequence[Rec], **conf: Any) -> list[tuple[int, int]]:
    results = produce(broker, topic, recs, **conf)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors[:3]
    return [(m.partition, m.offset) for m in results]


def test_admin_creates_topics_with_partitions_and_configs(broker, topic_name):
    a, b = f"{topic_name}-a", f"{topic_name}-b"
    answers = asyncio.run(_create_topics(broker, [
        NewTopic(a, 5, 1), NewTopic(b, 2, 1, topic_configs={"message.timestamp.type": "LogAppendTime"})]))
    assert [(t, c) for t, c, _ in answers] == [(a, 0), (b, 0)]
    again = asyncio.run(_create_topics(broker, [
        NewTopic(a, 1, 1), NewTopic(f"{topic_name}-zero", 0, 1),
        NewTopic(f"{topic_name}-bad", 1, 1, topic_configs={"retention.ms": "soon"}),
        NewTopic("bad/name", 1, 1)]))
    assert [c for _, c, _ in again] == [ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_PARTITIONS,
                                        ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_TOPIC_EXCEPTION]

    async def partitions() -> dict[str, set[int]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        try:
            return {t: await producer.partitions_for(t) for t in (a, b)}
        finally:
            await producer.stop()

    assert asyncio.run(partitions()) == {a: set(range(5)), b: {0, 1}}


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_round_trips_byte_identical(broker, topic_name, codec):
    create_topic(broker, topic_name, 3)
    recs = make_records(300, 3, seed=200 + CODECS.index(codec), null_header_values=True, null_key_and_value=False)
    acks = produce_ok(broker, topic_name, recs, compression_type=None if codec == "none" else codec,
                      max_batch_size=8192)
    assert_dense_offsets(acks, recs)
    for partition in range(3):
        batches = log_batches(broker.data_dir, topic_name, partition)
        assert len(batches) > 1
        # stored with the codec they came with: aiokafka sends a batch the codec would not shrink
        # uncompressed (which batches those are depends on how records fell into batches)
        codecs = {b.attributes & 7 for b in batches}
        assert CODEC_ATTRIBUTE[codec] in codecs and codecs <= {CODEC_ATTRIBUTE[codec], 0}
    assert_same_records(read_aiokafka(broker.bootstrap, topic_name, counts(recs)), recs)
    # Another client reads what aiokafka wrote.
    assert_same_records(read_confluent(broker.bootstrap, topic_name, counts(recs)), recs)


def test_offsets_for_times_and_watermarks(broker, topic_name):
    create_topic(broker, topic_name, 3)
    recs = make_records(600, 2, seed=31, null_key_and_value=False)
    recs = [dataclasses.replace(r, timestamp=r.timestamp - 25) if i % 13 == 8 else r for i, r in enumerate(recs)]
    acks = produce_ok(broker, topic_name, recs, compression_type="zstd", max_batch_size=4096)
    assert_dense_offsets(acks, recs)
    parts = by_partition(recs)

    async def run() -> None:
        tps = [TopicPartition(topic_name, p) for p in range(3)]
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
        await consumer.start()
        try:
            assert await consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
            assert await consumer.end_offsets(tps) == {tps[0]: len(parts[0]), tps[1]: len(parts[1]), tps[2]: 0}
            probes = {p: time_probes(prs) for p, prs in parts.items()}
            for i in range(max(len(v) for v in probes.values())):
                query = {TopicPartition(topic_name, p): ps[i] for p, ps in probes.items() if i < len(ps)}
                answers = await consumer.offsets_for_times(query)
                for tp, ts in query.items():
                    expected = expected_offset_for_time(parts[tp.partition], ts)
                    got = answers[tp]
                    if expected is None:
                        assert got is None, f"partition {tp.partition} ts {ts}"
                    else:
                        assert got is not None and got.offset == expected, f"partition {tp.partition} ts {ts}"
                        assert got.timestamp == parts[tp.partition][expected].timestamp
            assert await consumer.offsets_for_times({tps[2]: 0}) == {tps[2]: None}
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_idempotent_producer_writes_each_record_once_in_order(broker, topic_name):
    create_topic(broker, topic_name, 2)
    recs = make_records(800, 2, seed=33, null_header_values=True, null_key_and_value=False)
    acks = produce_ok(broker, topic_name, recs, enable_idempotence=True, acks="all", max_batch_size=4096,
                      compression_type="gzip")
    assert_dense_offsets(acks, recs)
    assert_same_records(read_aiokafka(broker.bootstrap, topic_name, counts(recs)), recs)
    assert_one_idempotent_producer_on_disk(broker, topic_name, recs)


def test_log_append_time_topic(broker, topic_name):
    create_topic(broker, topic_name, 2, {"message.timestamp.type": "LogAppendTime"})
    old = now_ms() - 86_400_000
    recs = make_records(200, 2, seed=35, base_ts=old, null_key_and_value=False)
    before = now_ms()
    results = produce(broker, topic_name, recs, compression_type="snappy", max_batch_size=4096)
    after = now_ms()
    assert not [r for r in results if isinstance(r, Exception)]
    assert_dense_offsets([(m.partition, m.offset) for m in results], recs)
    assert {m.timestamp_type for m in results} == {1}  # LogAppendTime, from log_append_time_ms
    acked = {(m.partition, m.offset): m.timestamp for m in results}
    got = read_aiokafka(broker.bootstrap, topic_name, counts(recs))
    assert_same_records(got, recs, timestamp_type=LOG_APPEND_TIME)
    for g in got:
        assert before <= g.timestamp <= after
        assert g.timestamp == acked[(g.partition, g.offset)]


def test_records_at_and_over_message_max_bytes(broker, topic_name):
    create_topic(broker, topic_name, 1)
    key = b"aio-big"
    at_limit = value_len_for_batch(DEFAULT_MESSAGE_MAX_BYTES, len(key))
    ts = now_ms()
    recs = [Rec(0, key, big_payload(at_limit, 1), (), ts), Rec(0, key, big_payload(at_limit + 1, 2), (), ts + 1),
            Rec(0, b"after", b"small", (), ts + 2)]
    # The client's own limit is set high so that the broker is the one to judge.
    results = produce(broker, topic_name, recs, one_batch_each=True, max_request_size=2_000_000)
    assert (results[0].partition, results[0].offset) == (0, 0)
    assert isinstance(results[1], MessageSizeTooLargeError)
    assert (results[2].partition, results[2].offset) == (0, 1)
    sizes = [b.size for b in log_batches(broker.data_dir, topic_name, 0)]
    assert sizes[0] == DEFAULT_MESSAGE_MAX_BYTES and len(sizes) == 2
    assert_same_records(read_aiokafka(broker.bootstrap, topic_name, {0: 2}), [recs[0], recs[2]])
    # The client's own check, with max_request_size at the broker's limit.
    [local] = produce(broker, topic_name, [Rec(0, key, big_payload(DEFAULT_MESSAGE_MAX_BYTES, 3), (), ts)],
                      max_request_size=DEFAULT_MESSAGE_MAX_BYTES)
    assert isinstance(local, MessageSizeTooLargeError)


def test_topic_max_message_bytes_is_enforced_by_the_broker(broker, topic_name):
    create_topic(broker, topic_name, 1, {"max.message.bytes": "20000"})
    ts = now_ms()
    fits = value_len_for_batch(20000, 1)
    recs = [Rec(0, b"a", big_payload(fits, 3), (), ts), Rec(0, b"b", big_payload(fits + 1, 4), (), ts),
            Rec(0, b"c", b"z" * 100_000, (), ts), Rec(0, b"d", b"ok", (), ts)]
    results = produce(broker, topic_name, recs, one_batch_each=True)
    assert (results[0].partition, results[0].offset) == (0, 0)
    assert isinstance(results[1], MessageSizeTooLargeError) and isinstance(results[2], MessageSizeTooLargeError)
    assert (results[3].partition, results[3].offset) == (0, 1)
    assert [b.size for b in log_batches(broker.data_dir, topic_name, 0)][0] == 20000
    assert_same_records(read_aiokafka(broker.bootstrap, topic_name, {0: 2}), [recs[0], recs[3]])
