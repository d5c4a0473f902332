"""Transactions with Kafka's Java clients and tools (Apache Kafka 4.3.1 jars) against a live
wirekafka: a Java transactional producer that commits and aborts, read back by the console
consumer with --isolation-level read_committed and read_uncommitted; kafka-producer-perf-test
with transactions; Kafka's transactional message copier (an exactly-once consume-transform-
produce loop that sends offsets with the consumer's group metadata and aborts at random); and
kafka-transactions.sh (list, describe, describe-producers, and abort of a hanging transaction).

Kafka's tools have no producer that aborts on request, so compat-tests/java/
TransactionalProducer.java writes txn_support's scenario; it runs with Java's source-file launcher
(JEP 330, needs a JDK). The same tests run against real Kafka with
WIREKAFKA_EXTERNAL_BOOTSTRAP=host:port; every expected output here was checked there."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka_cli import ok as _ok
from kafka_cli import table
from txn_support import ABORTED, COMMITTED, ENDS, LOG_END, PARTITIONS, Read, create_topics, settled_end

pytestmark = [pytest.mark.java, pytest.mark.timeout(180)]

PRODUCER_SOURCE = Path(__file__).resolve().parent / "java" / "TransactionalProducer.java"
# Every JVM here is short-lived: the client compiler alone and the serial collector start it
# faster (measured on 2 busy cores: tools ~30 % faster, the source-launched producer ~2x).
QUICK_JVM = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")


def ok(name: str, *args: str) -> str:
    """Run a Kafka tool (or a Java source file) that must succeed; returns its stdout."""
    return _ok(name, *args, jvm_opts=QUICK_JVM)


def _conf(bootstrap: str, **extra: object) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka"), **extra}


def _console_read(bootstrap: str, topic: str, isolation: str, count: int) -> list[Read]:
    """`count` records read by the console consumer from the beginning of every partition."""
    out = ok("kafka-console-consumer", "--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
             "--isolation-level", isolation, "--max-messages", str(count), "--timeout-ms", "30000",
             "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true")
    rows = []
    for line in out.splitlines():
        partition, offset, value = line.split("\t", 2)
        rows.append((int(partition.removeprefix("Partition:")), int(offset.removeprefix("Offset:")), value.encode()))
    return rows


def _watermarks(bootstrap: str, topic: str, partition: int, isolation: str) -> tuple[int, int]:
    """(low, high) as a consumer with this isolation level sees them: for read_committed the
    high end is the last stable offset."""
    consumer = Consumer(_conf(bootstrap, **{"group.id": f"wm-{topic}", "isolation.level": isolation}))
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()


def _read(bootstrap: str, topic: str, isolation: str, end: int, timeout: float = 30.0) -> list[Read]:
    """Records of partition 0 from offset 0 until the position reaches `end` (bounded)."""
    consumer = Consumer(_conf(bootstrap, **{"group.id": f"reader-{topic}", "isolation.level": isolation,
                                            "enable.auto.commit": False, "enable.partition.eof": True}))
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[Read] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191 and msg.offset() >= end:  # _PARTITION_EOF at the end
                    return got
                if msg.error().code() != -191:
                    raise KafkaException(msg.error())
                continue
            got.append((msg.partition(), msg.offset(), msg.value()))
    finally:
        consumer.close()
    raise AssertionError(f"{isolation} read of {topic} did not reach offset {end}: {got}")


def test_java_producer_commit_and_abort_with_console_consumers(broker, topic_name: str) -> None:
    create_topics(broker.bootstrap, (topic_name, PARTITIONS))
    out = ok(str(PRODUCER_SOURCE), broker.bootstrap, topic_name, f"tx-{topic_name}")
    assert out.splitlines() == ["committed 10", "aborted 5", "committed 2"]
    # max-messages is the number of records the level must return; an aborted record returned
    # by mistake would take the place of an end record, which come last in their partitions.
    assert sorted(_console_read(broker.bootstrap, topic_name, "read_committed", 12)) == sorted(COMMITTED + ENDS)
    assert sorted(_console_read(broker.bootstrap, topic_name, "read_uncommitted", 17)) == sorted(
        COMMITTED + ABORTED + ENDS)
    for p in range(PARTITIONS):
        settled_end(broker.bootstrap, topic_name, p, LOG_END[p])


def test_producer_perf_test_with_transactions(broker, topic_name: str) -> None:
    create_topics(broker.bootstrap, (topic_name, 1))
    out = ok("kafka-producer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic_name,
             "--num-records", "300", "--record-size", "100", "--throughput", "-1",
             "--transactional-id", f"tx-{topic_name}", "--transaction-duration-ms", "50")
    assert "300 records sent" in out.splitlines()[-1], out
    # however many transactions the 300 records took, each ended with a COMMIT marker
    high = settled_end(broker.bootstrap, topic_name, 0)
    assert high > 300
    got = _read(broker.bootstrap, topic_name, "read_committed", high)
    assert len(got) == 300 and all(len(value) == 100 for _, _, value in got)


def test_transactional_message_copier_is_exactly_once(broker, topic_name: str) -> None:
    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"copier-{topic_name}"
    create_topics(broker.bootstrap, (source, 1), (sink, 1))
    producer = Producer(_conf(broker.bootstrap))
    for i in range(200):
        producer.produce(source, key=b"k%d" % i, value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    out = ok("org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list", broker.bootstrap,
             "--input-topic", source, "--input-partition", "0", "--output-topic", sink,
             "--transactional-id", f"tx-{topic_name}", "--consumer-group", group, "--transaction-size", "20",
             "--max-messages", "200", "--enable-random-aborts", "--group-mode", "--use-group-metadata")
    last = json.loads(out.splitlines()[-1])
    assert (last["stage"], last["totalProcessed"], last["remaining"]) == ("ShutdownComplete", 200, 0), out
    high = settled_end(broker.bootstrap, sink, 0)
    committed = _read(broker.bootstrap, sink, "read_committed", high)
    assert [value for _, _, value in committed] == [b"v%d" % i for i in range(200)]  # once each, in order
    # whatever the random aborts left in the log is copies of input records, invisible above
    everything = _read(broker.bootstrap, sink, "read_uncommitted", high)
    assert {value for _, _, value in everything} == {b"v%d" % i for i in range(200)}
    consumer = Consumer(_conf(broker.bootstrap, **{"group.id": group}))
    try:
        assert consumer.committed([TopicPartition(source, 0)], timeout=10)[0].offset == 200
    finally:
        consumer.close()


def _transactions_tool(bootstrap: str, *args: str) -> list[dict[str, str]]:
    """kafka-transactions.sh output as rows of its tab-separated table."""
    out = ok("kafka-transactions", "--bootstrap-server", bootstrap, *args)
    return table(out, out.split(None, 1)[0]) if out.strip() else []


def test_kafka_transactions_tool_lists_describes_and_aborts_a_hanging_transaction(broker, topic_name: str) -> None:
    b = broker.bootstrap
    create_topics(b, (topic_name, 1))
    done_id, open_id = f"done-{topic_name}", f"open-{topic_name}"

    def producer(transactional_id: str) -> Producer:
        p = Producer(_conf(b, **{"transactional.id": transactional_id, "transaction.timeout.ms": 60000}))
        p.init_transactions(30)
        return p

    done = producer(done_id)
    done.begin_transaction()
    done.produce(topic_name, value=b"done-0", partition=0)
    done.produce(topic_name, value=b"done-1", partition=0)
    done.commit_transaction(30)
    settled_end(b, topic_name, 0, 3)  # offsets 0-1, COMMIT marker at 2, before the next producer writes
    hanging = producer(open_id)
    before = int(time.time() * 1000)
    hanging.begin_transaction()
    for i in range(3):
        hanging.produce(topic_name, value=b"open-%d" % i, partition=0)
    assert hanging.flush(30) == 0  # offsets 3-5, the transaction left open
    after = int(time.time() * 1000)

    # ListTransactions v2's id pattern (this test's ids only, on a shared broker), and v1's duration
    # filter: ids whose last transaction began more than 0 ms ago, completed or not (both began
    # before this JVM started)
    listed = {row["TransactionalId"]: row for row in _transactions_tool(
        b, "list", "--transactional-id-pattern", f".*-{topic_name}", "--duration-filter", "0")}
    assert {tid: (row["Coordinator"], row["TransactionState"]) for tid, row in listed.items()} == {
        done_id: ("1", "CompleteCommit"), open_id: ("1", "Ongoing")}
    done_pid, open_pid = listed[done_id]["ProducerId"], listed[open_id]["ProducerId"]

    [described] = _transactions_tool(b, "describe", "--transactional-id", open_id)
    fields = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
              "TransactionTimeoutMs", "TopicPartitions")
    assert [described[k] for k in fields] == ["1", open_id, open_pid, "0", "Ongoing", "60000", f"{topic_name}-0"]
    assert before <= int(described["CurrentTransactionStartTimeMs"]) <= after

    producers = {row["ProducerId"]: row for row in _transactions_tool(
        b, "describe-producers", "--topic", topic_name, "--partition", "0")}
    assert set(producers) == {done_pid, open_pid}
    state = ("ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "CurrentTransactionStartOffset")
    assert [producers[done_pid][k] for k in state] == ["0", "0", "1", "None"]
    # no marker has reached the partition for the open transaction yet: no coordinator epoch
    assert [producers[open_pid][k] for k in state] == ["0", "-1", "2", "3"]
    assert _watermarks(b, topic_name, 0, "read_committed") == (0, 3)  # the open transaction holds the LSO
    # find-hanging takes every open transaction of the partition as a candidate (timeout 0 min)
    # and asks the coordinator (ListTransactions by producer id, DescribeTransactions): this
    # one is Ongoing there with the partition in it, so it is not hanging
    assert _transactions_tool(b, "find-hanging", "--topic", topic_name, "--partition", "0",
                              "--max-transaction-timeout", "0") == []

    # the tool finds producer and epoch with DescribeProducers, then writes an ABORT marker
    # (WriteTxnMarkers) to the partition at offset 6 itself, behind the coordinator's back
    assert ok("kafka-transactions", "--bootstrap-server", b, "abort", "--topic", topic_name, "--partition", "0",
              "--start-offset", "3") == ""
    producers = {row["ProducerId"]: row for row in _transactions_tool(
        b, "describe-producers", "--topic", topic_name, "--partition", "0")}
    assert [producers[open_pid][k] for k in state] == ["0", "0", "2", "None"]  # the marker's coordinator epoch
    settled_end(b, topic_name, 0, 7)
    assert _read(b, topic_name, "read_committed", 7) == [(0, 0, b"done-0"), (0, 1, b"done-1")]
    assert [v for _, _, v in _read(b, topic_name, "read_uncommitted", 7)] == [b"done-0", b"done-1", b"open-0",
                                                                            b"open-1", b"open-2"]
    # The coordinator still holds the transaction open; its own abort writes a second ABORT marker.
    hanging.abort_transaction(30)
    settled_end(b, topic_name, 0, 8)
    assert _read(b, topic_name, "read_committed", 8) == [(0, 0, b"done-0"), (0, 1, b"done-1")]
