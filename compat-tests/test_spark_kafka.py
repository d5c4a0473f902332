"""Spark's Kafka connector (spark-sql-kafka-0-10, Java kafka-clients underneath: AdminClient for
offsets, assign()-mode consumers, an idempotent producer) unmodified against wirekafka, and the
same tests against real Apache Kafka (spark_support.targets()).

Batch reads by subscribe/subscribePattern/assign with earliest/latest/JSON offsets, timestamps,
headers and minPartitions; batch writes with keys, values, headers and an explicit partition;
a checkpointed streaming query stopped and restarted without losing or duplicating input;
failOnDataLoss when DeleteRecords or retention removed records a query still wanted;
kafka.isolation.level=read_committed never returning rows of aborted or open transactions."""

from __future__ import annotations

import json
import time
import uuid
from typing import Iterable

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from examples.activity_stream.spark_session import spark_session
from spark_support import WIREKAFKA, all_records, dedicated, real_kafka, targets
from txn_support import ABORTED, COMMITTED, ENDS, LOG_END, PARTITIONS, settled_end, write_with_confluent

pytestmark = pytest.mark.spark

T0 = (int(time.time()) - 86_400) * 1000  # a day ago: inside Kafka's timestamp bounds, past a 1 h retention


@pytest.fixture(scope="module")
def spark():
    session = spark_session("wirekafka-spark-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module", params=targets())
def target(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def kafka(target: str, request: pytest.FixtureRequest):
    """The module's broker: the session's wirekafka, or one real Kafka for the whole module."""
    if target == WIREKAFKA:
        yield request.getfixturevalue("broker")
    else:
        with real_kafka() as cluster:
            yield cluster


def _topic(kafka, partitions: int = 2, records: int = 0, name: str | None = None,
           configs: dict[str, str] | None = None) -> str:
    """A new topic; record i (if any) has key k<i>, value v<i>, header h=<i>, timestamp T0 + i s,
    and goes to partition i % partitions."""
    name = name or f"spark-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})])[name].result(30)
    if records:
        _produce(kafka, name, range(records), partitions)
    return name


def _produce(kafka, topic: str, indexes: Iterable[int], partitions: int = 1, timestamp: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
    for i in indexes:
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % partitions,
                         timestamp=T0 + i * 1000 if timestamp is None else timestamp, headers=[("h", b"%d" % i)])
    assert producer.flush(30) == 0


def _read(spark, kafka, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _indexes(df) -> list[int]:
    """The i of every v<i> the DataFrame holds, sorted."""
    return sorted(int(r.v[1:]) for r in df.selectExpr("CAST(value AS STRING) v").collect())


def test_batch_subscribe_earliest_to_latest(spark, kafka):
    topic = _topic(kafka, records=40)
    df = _read(spark, kafka, subscribe=topic, startingOffsets="earliest", endingOffsets="latest")
    rows = df.selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v", "topic", "partition", "offset",
                         "unix_millis(timestamp) AS ts_ms", "timestampType").collect()
    assert sorted((r.k, r.v) for r in rows) == sorted((f"k{i}", f"v{i}") for i in range(40))
    assert sorted((r.partition, r.offset) for r in rows) == sorted((p, o) for p in range(2) for o in range(20))
    for r in rows:  # record i is the (i // 2)-th of partition i % 2, stamped T0 + i s (CreateTime = 0)
        i = int(r.v[1:])
        assert (r.topic, r.partition, r.offset, r.ts_ms, r.timestampType) == (topic, i % 2, i // 2, T0 + i * 1000, 0)


def test_batch_subscribe_pattern(spark, kafka):
    prefix = f"pat-{uuid.uuid4().hex[:6]}"
    _topic(kafka, 1, 5, name=f"{prefix}-a")
    _topic(kafka, 2, 7, name=f"{prefix}-b")
    _topic(kafka, 1, 3, name=f"other-{prefix}")
    df = _read(spark, kafka, subscribePattern=f"{prefix}-.*")
    counts = {r.topic: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {f"{prefix}-a": 5, f"{prefix}-b": 7}


def test_batch_assign_with_json_offsets(spark, kafka):
    topic = _topic(kafka, partitions=3, records=30)  # 10 records per partition
    df = _read(spark, kafka, assign=json.dumps({topic: [0, 2]}),
               startingOffsets=json.dumps({topic: {"0": 5, "2": -2}}),     # -2: earliest
               endingOffsets=json.dumps({topic: {"0": 8, "2": -1}}))       # -1: latest
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 8)] + [(2, o) for o in range(10)]
    at_end = _read(spark, kafka, subscribe=topic, startingOffsets=json.dumps({topic: {str(p): 10 for p in range(3)}}),
                   endingOffsets="latest")
    assert at_end.count() == 0


def test_starting_and_ending_timestamps(spark, kafka):
    topic = _topic(kafka, records=40)  # record i: timestamp T0 + i s, partition i % 2
    assert _indexes(_read(spark, kafka, subscribe=topic, startingTimestamp=str(T0 + 30_000))) == list(range(30, 40))
    # between two records' timestamps: the first record at or after it
    assert _indexes(_read(spark, kafka, subscribe=topic, startingTimestamp=str(T0 + 29_500),
                          endingTimestamp=str(T0 + 34_500))) == list(range(30, 35))
    by_partition = json.dumps({topic: {"0": T0 + 10_000, "1": T0 + 35_000}})
    assert _indexes(_read(spark, kafka, subscribe=topic, startingOffsetsByTimestamp=by_partition)) == sorted(
        list(range(10, 40, 2)) + [35, 37, 39])


def test_include_headers_and_min_partitions(spark, kafka):
    topic = _topic(kafka, records=10)
    df = _read(spark, kafka, subscribe=topic, includeHeaders="true", minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6  # 2 Kafka partitions split into offset ranges
    rows = df.selectExpr("CAST(value AS STRING) v", "headers").collect()
    assert {r.v: [(h.key, bytes(h.value)) for h in r.headers] for r in rows} == {
        f"v{i}": [("h", b"%d" % i)] for i in range(10)}


def test_batch_write_with_keys_headers_and_partition(spark, kafka):
    topic = _topic(kafka, partitions=3)
    (spark.range(30).selectExpr(
        "CAST(CONCAT('k', id) AS BINARY) key", "CAST(CONCAT('v', id) AS BINARY) value",
        "CAST((id * 7) % 3 AS INT) partition",
        "array(named_struct('key', 'src', 'value', CAST('spark' AS BINARY)),"
        " named_struct('key', 'n', 'value', CAST(CAST(id AS STRING) AS BINARY))) headers")
     .write.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", topic).save())
    got = all_records(kafka.bootstrap, topic)
    assert sorted(int(m.key()[1:]) for m in got) == list(range(30))
    for m in got:
        i = int(m.key()[1:])
        assert (m.partition(), m.value(), m.headers()) == ((i * 7) % 3, b"v%d" % i, [("src", b"spark"), ("n", b"%d" % i)])


def _pipe(spark, kafka, source: str, sink: str, checkpoint: str, **source_options):
    """source -> value suffixed "-out", same key -> sink, checkpointed at `checkpoint`."""
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
              .option("subscribe", source))
    for k, v in source_options.items():
        reader = reader.option(k, v)
    return (reader.load().selectExpr("key", "CONCAT(CAST(value AS STRING), '-out') AS value")
            .writeStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("topic", sink).option("checkpointLocation", checkpoint))


def _run_available_now(spark, kafka, source: str, sink: str, checkpoint: str, **source_options):
    query = _pipe(spark, kafka, source, sink, checkpoint, **source_options).trigger(availableNow=True).start()
    query.awaitTermination(180)
    assert not query.isActive and query.exception() is None
    return query


def test_streaming_stop_and_restart_from_checkpoint(spark, kafka, tmp_path):
    source = _topic(kafka, records=20)
    sink = _topic(kafka, partitions=1)
    checkpoint = str(tmp_path / "ckpt")
    # Round 1: a continuously triggered query, several micro-batches, stopped once caught up.
    query = (_pipe(spark, kafka, source, sink, checkpoint, startingOffsets="earliest", maxOffsetsPerTrigger="6")
             .trigger(processingTime="500 milliseconds").start())
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    assert sum(p["numInputRows"] for p in query.recentProgress) == 20
    assert sum(1 for p in query.recentProgress if p["numInputRows"]) >= 4  # 20 rows at most 6 per batch
    _produce(kafka, source, range(20, 35), partitions=2)
    # Round 2: restarted from the checkpoint; startingOffsets only applies to a new query.
    _run_available_now(spark, kafka, source, sink, checkpoint, startingOffsets="earliest", maxOffsetsPerTrigger="6")
    values = [m.value() for m in all_records(kafka.bootstrap, sink)]
    assert sorted(values) == sorted(b"v%d-out" % i for i in range(35))  # each exactly once
    # Per source partition, the sink keeps the source's order.
    for p in range(2):
        assert [v for v in values if int(v[1:-4]) % 2 == p] == [b"v%d-out" % i for i in range(p, 35, 2)]


def test_streaming_starting_latest_skips_existing_records(spark, kafka, tmp_path):
    source = _topic(kafka, records=10)
    sink = _topic(kafka, partitions=1)
    checkpoint = str(tmp_path / "ckpt")
    _run_available_now(spark, kafka, source, sink, checkpoint, startingOffsets="latest")
    _produce(kafka, source, range(10, 16), partitions=2)
    _run_available_now(spark, kafka, source, sink, checkpoint, startingOffsets="latest")
    assert sorted(m.value() for m in all_records(kafka.bootstrap, sink)) == sorted(
        b"v%d-out" % i for i in range(10, 16))


def test_fail_on_data_loss_after_delete_records(spark, kafka):
    topic = _topic(kafka, partitions=1, records=20)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
    (fut,) = admin.delete_records([TopicPartition(topic, 0, 8)]).values()
    assert fut.result(30).low_watermark == 8
    wanted = json.dumps({topic: {"0": 2}})
    with pytest.raises(Exception) as info:
        _read(spark, kafka, subscribe=topic, startingOffsets=wanted, failOnDataLoss="true").count()
    assert "failOnDataLoss" in str(info.value)
    df = _read(spark, kafka, subscribe=topic, startingOffsets=wanted, failOnDataLoss="false")
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(8, 20))


def _log_start(kafka, topic: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "log-start", "log_level": 0})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0]
    finally:
        consumer.close()


def test_fail_on_data_loss_after_retention(spark, target, broker_factory, tmp_path):
    """A streaming query read offsets 0-4; retention then deletes the segment holding 5-9 before the
    query comes back. With failOnDataLoss=true the restarted query fails; with false it goes on from
    the new log start, and what it had already written stays written once."""
    with dedicated(target, broker_factory, {"log.retention.check.interval.ms": "200"},
                   kafka_only={"log.initial.task.delay.ms": "0"}) as kafka:
        # A segment rolls when a batch is a minute (segment.ms, in record time) newer than the
        # segment's first batch. Records 0-9 are a day old, record 10 is current.
        source = _topic(kafka, partitions=1, configs={"segment.ms": "60000"})
        sink = _topic(kafka, partitions=1)
        checkpoint = str(tmp_path / "ckpt")
        _produce(kafka, source, range(5))
        _run_available_now(spark, kafka, source, sink, checkpoint, startingOffsets="earliest")
        _produce(kafka, source, range(5, 10))                               # same segment as 0-4
        _produce(kafka, source, [10], timestamp=int(time.time() * 1000))    # starts a new segment
        # An operator shortens retention to an hour: the segment of offsets 0-9 is past it, the one
        # of offset 10 is not (so this holds whether or not a broker also deletes expired active segments).
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
        resource = ConfigResource(ConfigResource.Type.TOPIC, source, incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)
        for _ in range(600):  # bounded: up to 60 s for a retention pass
            if _log_start(kafka, source) == 10:
                break
            time.sleep(0.1)
        assert _log_start(kafka, source) == 10

        from pyspark.errors import StreamingQueryException

        query = _pipe(spark, kafka, source, sink, checkpoint, failOnDataLoss="true").trigger(availableNow=True).start()
        with pytest.raises(StreamingQueryException) as info:
            query.awaitTermination(180)
        assert "failOnDataLoss" in str(info.value)
        _run_available_now(spark, kafka, source, sink, checkpoint, failOnDataLoss="false")
        assert [m.value() for m in all_records(kafka.bootstrap, sink)] == [b"v%d-out" % i for i in (0, 1, 2, 3, 4, 10)]


def _rows(df) -> list[tuple[int, int, bytes]]:
    return sorted((r.partition, r.offset, bytes(r.value)) for r in df.select("partition", "offset", "value").collect())


def test_read_committed_skips_aborted_and_open_transactions(spark, kafka, tmp_path):
    topic = _topic(kafka, partitions=PARTITIONS)
    write_with_confluent(kafka.bootstrap, topic)
    for p in range(PARTITIONS):
        settled_end(kafka.bootstrap, topic, p, LOG_END[p])  # the markers are in, before the next producer writes
    # An open transaction after the scenario: read_committed ends at the last stable offset
    # (Spark asks the admin client for latest offsets with the isolation level), read_uncommitted
    # at the high watermark.
    pending = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": f"open-{topic}", "log_level": 0})
    pending.init_transactions(30)
    pending.begin_transaction()
    pending.produce(topic, value=b"open-0", partition=0)
    assert pending.flush(30) == 0  # at offset 12 of partition 0
    committed = {"kafka.isolation.level": "read_committed"}
    assert _rows(_read(spark, kafka, subscribe=topic, **committed)) == sorted(COMMITTED + ENDS)
    assert _rows(_read(spark, kafka, subscribe=topic)) == sorted(COMMITTED + ABORTED + ENDS + [(0, 12, b"open-0")])
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").options(**committed).load()
             .writeStream.format("memory").queryName(f"committed_{topic.replace('-', '_')}")
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert not query.isActive and query.exception() is None
    assert _rows(spark.table(f"committed_{topic.replace('-', '_')}")) == sorted(COMMITTED + ENDS)
    pending.abort_transaction(30)
    settled_end(kafka.bootstrap, topic, 0, 14)  # its ABORT marker at 13
    assert _rows(_read(spark, kafka, subscribe=topic, **committed)) == sorted(COMMITTED + ENDS)
