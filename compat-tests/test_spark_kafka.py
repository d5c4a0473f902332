"""Spark's Kafka connector (spark-sql-kafka-0-10, Java kafka-clients underneath) against a live
wirekafka: batch reads by subscribe/pattern/assign, offsets and timestamps, headers, partitions,
batch writes, a checkpointed streaming query stopped and restarted, and failOnDataLoss."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.spark

T0 = (int(time.time()) - 86_400) * 1000  # a day ago: within Kafka's timestamp bounds


@pytest.fixture(scope="module")
def spark():
    from spark_support import spark_session

    session = spark_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _topic(broker, partitions: int = 2, records: int = 0, name: str | None = None) -> str:
    name = name or f"spark-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    if records:
        p = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        for i in range(records):
            p.produce(name, key=b"k%d" % i, value=b"v%d" % i, partition=i % partitions, timestamp=T0 + i * 1000,
                      headers=[("h", b"%d" % i)])
        assert p.flush(10) == 0
    return name


def _read(spark, broker, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_subscribe_reads_everything(spark, broker):
    topic = _topic(broker, records=40)
    rows = _read(spark, broker, subscribe=topic).selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v",
                                                            "partition", "offset").collect()
    assert sorted((r.k, r.v) for r in rows) == sorted((f"k{i}", f"v{i}") for i in range(40))
    assert sorted((r.partition, r.offset) for r in rows) == sorted((p, o) for p in range(2) for o in range(20))


def test_batch_subscribe_pattern(spark, broker):
    prefix = f"pat-{uuid.uuid4().hex[:6]}"
    _topic(broker, 1, 5, name=f"{prefix}-a")
    _topic(broker, 1, 7, name=f"{prefix}-b")
    df = _read(spark, broker, subscribePattern=f"{prefix}-.*")
    counts = {r.topic: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {f"{prefix}-a": 5, f"{prefix}-b": 7}


def test_batch_assign_with_json_offsets(spark, broker):
    topic = _topic(broker, records=40)
    df = _read(spark, broker, assign=json.dumps({topic: [0, 1]}),
               startingOffsets=json.dumps({topic: {"0": 5, "1": -2}}),
               endingOffsets=json.dumps({topic: {"0": 10, "1": -1}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 10)] + [(1, o) for o in range(20)]
    at_end = _read(spark, broker, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 20, "1": 20}}),
                   endingOffsets="latest")
    assert at_end.count() == 0


def test_starting_timestamps(spark, broker):
    topic = _topic(broker, records=40)  # record i has timestamp T0 + i s, partition i % 2
    df = _read(spark, broker, subscribe=topic, startingTimestamp=str(T0 + 30_000))
    assert sorted(int(r.v[1:]) for r in df.selectExpr("CAST(value AS STRING) v").collect()) == list(range(30, 40))
    df = _read(spark, broker, subscribe=topic,
               startingOffsetsByTimestamp=json.dumps({topic: {"0": T0 + 10_000, "1": T0 + 35_000}}))
    got = sorted(int(r.v[1:]) for r in df.selectExpr("CAST(value AS STRING) v").collect())
    assert got == sorted([i for i in range(10, 40, 2)] + [35, 37, 39])


def test_include_headers_and_min_partitions(spark, broker):
    topic = _topic(broker, records=10)
    df = _read(spark, broker, subscribe=topic, includeHeaders="true", minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    rows = df.selectExpr("CAST(value AS STRING) v", "headers").collect()
    assert {r.v: [(h.key, bytes(h.value)) for h in r.headers] for r in rows}["v3"] == [("h", b"3")]
    assert df.count() == 10


def test_batch_write_with_keys_headers_and_partition(spark, broker):
    topic = _topic(broker, partitions=3)
    (spark.range(30).selectExpr(
        "CAST(CONCAT('k', id) AS BINARY) key", "CAST(CONCAT('v', id) AS BINARY) value",
        "CAST(id % 3 AS INT) partition",
        "array(named_struct('key', 'src', 'value', CAST('spark' AS BINARY)),"
        " named_struct('key', 'n', 'value', CAST(CAST(id AS STRING) AS BINARY))) headers")
     .write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic).save())
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x", "log_level": 3})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got = []
    for _ in range(100):
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.partition(), m.key(), m.value(), m.headers()))
        if len(got) == 30:
            break
    c.close()
    assert len(got) == 30
    for part, key, value, headers in got:
        i = int(key[1:])
        assert part == i % 3 and value == b"v%d" % i and headers == [("src", b"spark"), ("n", b"%d" % i)]


def _streaming_round(spark, broker, source: str, sink: str, checkpoint: str) -> None:
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest").load()
             .selectExpr("key", "CONCAT(CAST(value AS STRING), '-out') AS value")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", sink).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None


def _values(broker, topic: str, expected: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "chk", "log_level": 3})
    md = c.list_topics(topic, timeout=10).topics[topic]
    c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
    out = []
    for _ in range(200):
        m = c.poll(0.1)
        if m is not None and not m.error():
            out.append(m.value())
        if len(out) >= expected:
            for _ in range(5):  # anything beyond expected would be a duplicate
                m = c.poll(0.2)
                if m is not None and not m.error():
                    out.append(m.value())
            break
    c.close()
    return out


def test_streaming_restart_from_checkpoint_no_loss_no_duplicates(spark, broker, tmp_path):
    source = _topic(broker, records=20)
    sink = _topic(broker, partitions=1)
    checkpoint = str(tmp_path / "ckpt")
    _streaming_round(spark, broker, source, sink, checkpoint)
    p = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 3})
    for i in range(20, 35):
        p.produce(source, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    _streaming_round(spark, broker, source, sink, checkpoint)  # restarted from the checkpoint
    values = _values(broker, sink, 35)
    assert sorted(values) == sorted(b"v%d-out" % i for i in range(35))


def test_fail_on_data_loss(spark, broker):
    topic = _topic(broker, partitions=1, records=20)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (fut,) = admin.delete_records([TopicPartition(topic, 0, 8)]).values()
    assert fut.result(10).low_watermark == 8
    wanted = json.dumps({topic: {"0": 2}})
    with pytest.raises(Exception) as info:
        _read(spark, broker, subscribe=topic, startingOffsets=wanted, failOnDataLoss="true").count()
    assert "data loss" in str(info.value).lower() or "out of range" in str(info.value).lower()
    df = _read(spark, broker, subscribe=topic, startingOffsets=wanted, failOnDataLoss="false")
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(8, 20))
