"""Kafka's own Java CLI tools (Apache Kafka 4.3.1 jars) against a live wirekafka: topics,
console producer/consumer, consumer groups, configs, perf tests, and kafka-dump-log reading
wirekafka's segment files directly."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from testsupport.java_tools import tool

pytestmark = pytest.mark.java


def _ok(proc) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_topics_create_describe_alter_list_delete(broker, topic_name):
    b = broker.bootstrap
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "2",
             "--config", "retention.ms=86400000"))
    out = _ok(tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name))
    assert f"Topic: {topic_name}" in out and "PartitionCount: 2" in out and "retention.ms=86400000" in out
    assert re.search(r"Partition: 1\s+Leader: 1\s+Replicas: 1\s+Isr: 1", out)
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--alter", "--topic", topic_name, "--partitions", "4"))
    out = _ok(tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name))
    assert "PartitionCount: 4" in out
    assert topic_name in _ok(tool("kafka-topics", "--bootstrap-server", b, "--list")).split()
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--delete", "--topic", topic_name))
    assert topic_name not in _ok(tool("kafka-topics", "--bootstrap-server", b, "--list")).split()


def test_console_producer_and_consumer(broker, topic_name):
    b = broker.bootstrap
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "1"))
    lines = [f"key{i}:value {i}" for i in range(25)]
    _ok(tool("kafka-console-producer", "--bootstrap-server", b, "--topic", topic_name,
             "--property", "parse.key=true", "--property", "key.separator=:",
             input=("\n".join(lines) + "\n").encode()))
    out = _ok(tool("kafka-console-consumer", "--bootstrap-server", b, "--topic", topic_name, "--partition", "0",
                   "--offset", "earliest", "--max-messages", "25", "--formatter-property", "print.key=true",
                   "--formatter-property", "key.separator=:"))
    assert out.splitlines() == lines
    group = topic_name + "-console"
    out = _ok(tool("kafka-console-consumer", "--bootstrap-server", b, "--topic", topic_name, "--group", group,
                   "--from-beginning", "--max-messages", "25"))
    assert out.splitlines() == [f"value {i}" for i in range(25)]
    out = _ok(tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", group))
    row = next(line for line in out.splitlines() if line.startswith(group))
    assert row.split()[1:5] == [topic_name, "0", "25", "25"]  # topic, partition, committed, log end


def test_consumer_groups_list_and_reset_offsets(broker, topic_name):
    b = broker.bootstrap
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "2"))
    p = Producer({"bootstrap.servers": b, "log_level": 3})
    for i in range(20):
        p.produce(topic_name, value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    group = topic_name + "-g"
    c = Consumer({"bootstrap.servers": b, "group.id": group, "log_level": 3})
    c.commit(offsets=[TopicPartition(topic_name, 0, 10), TopicPartition(topic_name, 1, 10)], asynchronous=False)
    c.close()
    assert group in _ok(tool("kafka-consumer-groups", "--bootstrap-server", b, "--list")).split()
    out = _ok(tool("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--reset-offsets",
                   "--to-earliest", "--topic", topic_name, "--execute"))
    assert re.search(rf"{re.escape(group)}\s+{re.escape(topic_name)}\s+0\s+0", out)
    out = _ok(tool("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--reset-offsets",
                   "--to-offset", "4", "--topic", f"{topic_name}:1", "--execute"))
    c = Consumer({"bootstrap.servers": b, "group.id": group, "log_level": 3})
    committed = c.committed([TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)], timeout=10)
    c.close()
    assert [tp.offset for tp in committed] == [0, 4]
    _ok(tool("kafka-consumer-groups", "--bootstrap-server", b, "--delete", "--group", group))
    assert group not in _ok(tool("kafka-consumer-groups", "--bootstrap-server", b, "--list")).split()


def test_configs_describe_and_alter(broker, topic_name):
    b = broker.bootstrap
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name))
    _ok(tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic_name,
             "--alter", "--add-config", "retention.ms=5000000,cleanup.policy=compact"))
    out = _ok(tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic_name,
                   "--describe"))
    assert "retention.ms=5000000" in out and "cleanup.policy=compact" in out
    _ok(tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic_name,
             "--alter", "--delete-config", "cleanup.policy"))
    out = _ok(tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic_name,
                   "--describe"))
    assert "retention.ms=5000000" in out and "cleanup.policy" not in out
    out = _ok(tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "brokers", "--entity-name", "1",
                   "--describe", "--all"))
    assert "message.max.bytes=1048588" in out


def test_perf_tools(broker, topic_name):
    b = broker.bootstrap
    out = _ok(tool("kafka-producer-perf-test", "--topic", topic_name, "--num-records", "20000",
                   "--record-size", "100", "--throughput", "-1", "--producer-props", f"bootstrap.servers={b}",
                   "acks=all"))
    assert "20000 records sent" in out
    out = _ok(tool("kafka-consumer-perf-test", "--bootstrap-server", b, "--topic", topic_name,
                   "--num-records", "20000", "--timeout", "30000"))
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "data.consumed.in.MB" in line)
    figures = dict(zip([h.strip() for h in lines[header].split(",")], lines[header + 1].split(",")))
    assert int(figures["data.consumed.in.nMsg"]) == 20000


def test_dump_log_reads_wirekafka_segments(broker_factory, topic_name):
    broker = broker_factory({"log.index.interval.bytes": "256"})
    b = broker.bootstrap
    _ok(tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name))
    p = Producer({"bootstrap.servers": b, "log_level": 3, "linger.ms": 0, "compression.type": "gzip"})
    for i in range(60):
        p.produce(topic_name, key=b"k%d" % i, value=b"value-%d " % i * 20)  # compressible
        if i % 3 == 2:
            p.flush(10)
    assert p.flush(10) == 0
    seg = broker.data_dir / f"{topic_name}-0" / "00000000000000000000"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not seg.with_suffix(".index").stat().st_size:
        time.sleep(0.1)
    out = _ok(tool("kafka-dump-log", "--files", str(seg.with_suffix(".log")), "--print-data-log",
                   "--deep-iteration"))
    offsets = [int(m) for m in re.findall(r"\| offset: (\d+)", out)]
    assert offsets == list(range(60))
    assert "payload: value-59 value-59" in out and "key: k0 " in out and "compresscodec: gzip" in out
    for suffix in (".index", ".timeindex"):
        out = _ok(tool("kafka-dump-log", "--files", str(seg.with_suffix(suffix)), "--index-sanity-check"))
        assert "is corrupt" not in out.lower() and "mismatch" not in out.lower(), out
        out = _ok(tool("kafka-dump-log", "--files", str(seg.with_suffix(suffix))))
        assert "offset:" in out and "mismatch" not in out.lower(), out
