"""kafka-python against a live wirekafka: topic creation through KafkaAdminClient, every codec,
keys/null keys/null values/headers, records at and over message.max.bytes, offsets_for_times,
beginning/end offsets, the idempotent producer and LogAppendTime topics."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import (
    InvalidConfigurationError,
    InvalidReplicationFactorError,
    KafkaError,
    MessageSizeTooLargeError,
    TopicAlreadyExistsError,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

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
    raw_call,
    read_kafka_python,
    time_probes,
    value_len_for_batch,
)
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(120)


def create_topic(broker, name: str, partitions: int, configs: dict[str, str] | None = None) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        return admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1,
                                           "configs": configs or {}}})
    finally:
        admin.close()


def produce(broker, topic: str, recs: Sequence[Rec], one_batch_each: bool = False, **conf: Any) -> list[Any]:
    """Produce recs in order; per record its RecordMetadata or the exception. one_batch_each
    flushes after every record so that each travels in a batch of its own."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **{"linger_ms": 5, **conf})
    try:
        futures: list[Any] = []
        for r in recs:
            try:
                futures.append(producer.send(topic, value=r.value, key=r.key, partition=r.partition,
                                             timestamp_ms=r.timestamp, headers=list(r.headers)))
            except KafkaError as exc:  # the client's own checks (record size) raise here
                futures.append(exc)
            if one_batch_each:
                producer.flush(30)
        producer.flush(30)
        results: list[Any] = []
        for f in futures:
            try:
                results.append(f if isinstance(f, KafkaError) else f.get(30))
            except KafkaError as exc:
                results.append(exc)
        return results
    finally:
        producer.close(10)


def produce_ok(broker, topic: str, recs: Sequence[Rec], **conf: Any) -> list[tuple[int, int]]:
    results = produce(broker, topic, recs, **conf)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors[:3]
    return [(m.partition, m.offset) for m in results]


def test_admin_creates_topics_with_partitions_and_configs(broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        a, b, default = f"{topic_name}-a", f"{topic_name}-b", f"{topic_name}-default"
        result = admin.create_topics({
            a: {"num_partitions": 4, "replication_factor": 1},
            b: {"num_partitions": 2, "replication_factor": 1, "configs": {"max.message.bytes": "5000",
                                                                         "retention.ms": "3600000"}},
            default: {},  # -1/-1: the broker's num.partitions and replication factor
        })
        topics = {t["name"]: t for t in result["topics"]}
        assert {t["error_code"] for t in topics.values()} == {0}
        assert topics[a]["num_partitions"] == 4 and topics[a]["replication_factor"] == 1
        assert topics[default]["num_partitions"] == 1
        assert topics[b]["configs"]["max.message.bytes"]["value"] == "5000"
        assert topics[b]["configs"]["retention.ms"]["value"] == "3600000"
        assert topics[a]["configs"]["max.message.bytes"]["value"] == str(DEFAULT_MESSAGE_MAX_BYTES)
        described = {t["name"]: t for t in admin.describe_topics([a, b, default])}
        assert len(described[a]["partitions"]) == 4 and len(described[b]["partitions"]) == 2

        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({a: {"num_partitions": 1, "replication_factor": 1}})
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics({f"{topic_name}-rf": {"num_partitions": 1, "replication_factor": 2}})
        with pytest.raises(InvalidConfigurationError):
            admin.create_topics({f"{topic_name}-cfg": {"num_partitions": 1, "replication_factor": 1,
                                                      "configs": {"message.timestamp.type": "Sometimes"}}})
        validated = admin.create_topics({f"{topic_name}-dry": {"num_partitions": 3, "replication_factor": 1}},
                                        validate_only=True)
        assert validated["topics"][0]["error_code"] == 0
        assert f"{topic_name}-dry" not in admin.list_topics()
    finally:
        admin.close()


def _compresses(codec: str, batch: bytes) -> bool:
    """Whether kafka-python would send this batch compressed: its records section shrinks."""
    from kafka import codec as kafka_codec

    if codec == "none":
        return False
    encode = {"gzip": kafka_codec.gzip_encode, "snappy": kafka_codec.snappy_encode,
              "lz4": kafka_codec.lz4_encode, "zstd": kafka_codec.zstd_encode}[codec]
    body = batch[records.HEADER_SIZE:]
    return len(encode(body)) < len(body)


def stored_batches(data_dir, topic: str, partition: int) -> list[tuple[records.BatchHeader, bytes]]:
    """(header, bytes) of every batch in a partition's segment files, in offset order."""
    out = []
    for path in sorted((Path(data_dir) / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        out.extend((records.parse_header(data, start), data[start:end]) for start, end in records.split_batches(data))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_round_trips_byte_identical(broker, topic_name, codec):
    create_topic(broker, topic_name, 3)
    recs = make_records(300, 3, seed=100 + CODECS.index(codec), null_key_and_value=False)
    acks = produce_ok(broker, topic_name, recs, compression_type=None if codec == "none" else codec,
                      batch_size=8192, enable_idempotence=False)
    assert_dense_offsets(acks, recs)
    compressed = 0
    for partition in range(3):
        batches = stored_batches(broker.data_dir, topic_name, partition)
        assert len(batches) > 1
        for header, data in batches:
            stored_codec = header.attributes & 7
            # kafka-python sends a batch uncompressed when compressing its records would not make
            # them smaller (small batches, depending on timing); every other batch keeps its codec.
            assert stored_codec == CODEC_ATTRIBUTE[codec] or (stored_codec == 0 and not _compresses(codec, data))
            compressed += stored_codec == CODEC_ATTRIBUTE[codec]
        assert {h.producer_id for h, _ in batches} == {-1}
    assert compressed > 0
    assert_same_records(read_kafka_python(broker.bootstrap, topic_name, counts(recs)), recs)
    # Another client reads what kafka-python wrote.
    assert_same_records(read_aiokafka(broker.bootstrap, topic_name, counts(recs)), recs)


def test_offsets_for_times_and_watermarks(broker, topic_name):
    create_topic(broker, topic_name, 3)
    recs = make_records(600, 2, seed=21, null_key_and_value=False)
    recs = [dataclasses.replace(r, timestamp=r.timestamp - 45) if i % 11 == 6 else r for i, r in enumerate(recs)]
    acks = produce_ok(broker, topic_name, recs, compression_type="snappy", batch_size=4096)
    assert_dense_offsets(acks, recs)
    parts = by_partition(recs)
    tps = [TopicPartition(topic_name, p) for p in range(3)]
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert consumer.end_offsets(tps) == {tps[0]: len(parts[0]), tps[1]: len(parts[1]), tps[2]: 0}
        probes = {p: time_probes(prs) for p, prs in parts.items()}
        for i in range(max(len(v) for v in probes.values())):
            query = {TopicPartition(topic_name, p): ps[i] for p, ps in probes.items() if i < len(ps)}
            answers = consumer.offsets_for_times(query)
            for tp, ts in query.items():
                expected = expected_offset_for_time(parts[tp.partition], ts)
                got = answers[tp]
                if expected is None:
                    assert got is None, f"partition {tp.partition} ts {ts}"
                else:
                    assert got is not None and got.offset == expected, f"partition {tp.partition} ts {ts}"
                    assert got.timestamp == parts[tp.partition][expected].timestamp
        assert consumer.offsets_for_times({tps[2]: 0}) == {tps[2]: None}
    finally:
        consumer.close()


def test_list_offsets_with_a_partition_named_twice_is_invalid_request(broker, topic_name):
    """Kafka answers INVALID_REQUEST once for a partition named twice (its answers are keyed by
    partition and grouped by topic, so the topic named twice is answered once); the other
    partitions are answered (conformance/test_list_offsets.py compares the whole answer)."""
    create_topic(broker, topic_name, 2)
    produce_ok(broker, topic_name, make_records(10, 2, seed=5, null_key_and_value=False))
    T = ListOffsetsRequest.ListOffsetsTopic
    P = T.ListOffsetsPartition
    resp = raw_call(broker, ListOffsetsRequest(version=9, replica_id=-1, isolation_level=0, topics=[
        T(name=topic_name, partitions=[P(partition_index=0, current_leader_epoch=-1, timestamp=-1),
                                       P(partition_index=1, current_leader_epoch=-1, timestamp=-1)]),
        T(name=topic_name, partitions=[P(partition_index=0, current_leader_epoch=-1, timestamp=-2)]),
    ]), ListOffsetsResponse)
    answers = [(p.partition_index, p.error_code, p.offset) for t in resp.topics for p in t.partitions]
    assert [t.name for t in resp.topics] == [topic_name]
    assert sorted(answers) == [(0, ErrorCode.INVALID_REQUEST, -1), (1, 0, 5)]


def test_idempotent_producer_writes_each_record_once_in_order(broker, topic_name):
    create_topic(broker, topic_name, 2)
    recs = make_records(800, 2, seed=23, null_key_and_value=False)
    acks = produce_ok(broker, topic_name, recs, enable_idempotence=True, acks="all", batch_size=4096,
                      compression_type="lz4")
    assert_dense_offsets(acks, recs)
    assert_same_records(read_kafka_python(broker.bootstrap, topic_name, counts(recs)), recs)
    assert_one_idempotent_producer_on_disk(broker, topic_name, recs)


def test_log_append_time_topic(broker, topic_name):
    create_topic(broker, topic_name, 2, {"message.timestamp.type": "LogAppendTime"})
    old = now_ms() - 86_400_000
    recs = make_records(200, 2, seed=25, base_ts=old, null_key_and_value=False)
    before = now_ms()
    results = produce(broker, topic_name, recs, compression_type="zstd", batch_size=4096)
    after = now_ms()
    assert not [r for r in results if isinstance(r, Exception)]
    assert_dense_offsets([(m.partition, m.offset) for m in results], recs)
    acked = {(m.partition, m.offset): m.timestamp for m in results}  # the broker's log_append_time_ms
    got = read_kafka_python(broker.bootstrap, topic_name, counts(recs))
    assert_same_records(got, recs, timestamp_type=LOG_APPEND_TIME)
    for g in got:
        assert before <= g.timestamp <= after
        assert g.timestamp == acked[(g.partition, g.offset)]


def test_records_at_and_over_message_max_bytes(broker, topic_name):
    create_topic(broker, topic_name, 1)
    key = b"kp-big"
    at_limit = value_len_for_batch(DEFAULT_MESSAGE_MAX_BYTES, len(key))
    ts = now_ms()
    recs = [Rec(0, key, big_payload(at_limit, 1), (), ts), Rec(0, key, big_payload(at_limit + 1, 2), (), ts + 1),
            Rec(0, b"after", b"small", (), ts + 2)]
    # The client's own limit is set high so that the broker is the one to judge.
    results = produce(broker, topic_name, recs, one_batch_each=True, max_request_size=2_000_000,
                      enable_idempotence=False)
    assert (results[0].partition, results[0].offset) == (0, 0)
    assert isinstance(results[1], MessageSizeTooLargeError)
    assert (results[2].partition, results[2].offset) == (0, 1)
    sizes = [b.size for b in log_batches(broker.data_dir, topic_name, 0)]
    assert sizes[0] == DEFAULT_MESSAGE_MAX_BYTES and len(sizes) == 2
    assert_same_records(read_kafka_python(broker.bootstrap, topic_name, {0: 2}), [recs[0], recs[2]])
    # The client's own check, with max_request_size at the broker's limit.
    [local] = produce(broker, topic_name, [Rec(0, key, big_payload(DEFAULT_MESSAGE_MAX_BYTES, 3), (), ts)],
                      max_request_size=DEFAULT_MESSAGE_MAX_BYTES)
    assert isinstance(local, MessageSizeTooLargeError)


def test_topic_max_message_bytes_is_enforced_by_the_broker(broker, topic_name):
    create_topic(broker, topic_name, 1, {"max.message.bytes": "20000"})
    ts = now_ms()
    fits = value_len_for_batch(20000, 1)
    recs = [Rec(0, b"a", big_payload(fits, 3), (), ts), Rec(0, b"b", big_payload(fits + 1, 4), (), ts),
            Rec(0, b"c", b"y" * 100_000, (), ts), Rec(0, b"d", b"ok", (), ts)]
    results = produce(broker, topic_name, recs, one_batch_each=True, enable_idempotence=False)
    assert (results[0].partition, results[0].offset) == (0, 0)
    assert isinstance(results[1], MessageSizeTooLargeError) and isinstance(results[2], MessageSizeTooLargeError)
    assert (results[3].partition, results[3].offset) == (0, 1)
    assert [b.size for b in log_batches(broker.data_dir, topic_name, 0)][0] == 20000
    assert_same_records(read_kafka_python(broker.bootstrap, topic_name, {0: 2}), [recs[0], recs[3]])
