"""Kafka's own Java CLI tools (Apache Kafka 4.3.1 jars) against a live wirekafka: kafka-topics,
the console producer and consumer, kafka-consumer-groups, kafka-configs, the perf tests, and
kafka-dump-log reading wirekafka's segment, index and __consumer_offsets files directly.

Each scenario asserts on what the tool printed and its exit code (the expected texts were checked
against a real Kafka 4.3.1 broker), then on what wirekafka holds afterwards, read back with
confluent-kafka. A JVM start costs ~1.5 s, so scenarios are grouped to keep tool runs few."""

from __future__ import annotations

import base64
import re
import time

import pytest
from client_support import CODECS, read_confluent
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from kafka_cli import (PROBLEM_MARKERS, fails, kafka_index_entries, offsets_partition, ok,
                        parse_index_dump, parse_log_dump, parse_offsets_dump, run, table)

from wirekafka.jvm import java_string_hash

pytestmark = pytest.mark.java

T0 = (int(time.time()) - 3600) * 1000  # an hour ago: inside every retention and timestamp bound


def _console_consumer(bootstrap: str, topic: str) -> tuple[str, ...]:
    """Console-consumer arguments every run shares; it gives up after 30 s without a record."""
    return ("kafka-console-consumer", "--bootstrap-server", bootstrap, "--timeout-ms", "30000", "--topic", topic)


def _admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})


# An AdminClient must outlive its futures (dropping it fails them), hence the named locals.
def _create(broker, topic: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(10)


def _describe(broker, topic: str):
    admin = _admin(broker)
    return admin.describe_topics(TopicCollection([topic]))[topic].result(10)


def _topic_configs(broker, topic: str) -> dict:
    admin, resource = _admin(broker), ConfigResource("topic", topic)
    return admin.describe_configs([resource])[resource].result(10)


def _kafka_uuid(confluent_uuid) -> str:
    """confluent-kafka prints a topic id in standard base64; Kafka tools in URL-safe base64."""
    return base64.urlsafe_b64encode(base64.b64decode(str(confluent_uuid) + "==")).decode().rstrip("=")


def _committed(broker, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "log_level": 3})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    finally:
        consumer.close()
    return [tp.offset for tp in got]


def _no_problems(output: str) -> None:
    found = [marker for marker in PROBLEM_MARKERS if marker in output]
    assert not found, f"kafka-dump-log reported {found}:\n{output[-4000:]}"


# ---- kafka-topics ------------------------------------------------------------------------------

def test_topics_create_describe_list(broker, topic_name):
    b = broker.bootstrap
    out = ok("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "3",
             "--config", "retention.ms=123456789", "--config", "cleanup.policy=compact")
    assert out.strip() == f"Created topic {topic_name}."

    desc = _describe(broker, topic_name)
    assert [p.id for p in desc.partitions] == [0, 1, 2]
    assert all(p.leader.id == 1 and [r.id for r in p.replicas] == [1] and [r.id for r in p.isr] == [1]
               for p in desc.partitions)
    configs = _topic_configs(broker, topic_name)
    assert configs["retention.ms"].value == "123456789"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"

    lines = ok("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name).splitlines()
    head = dict(cell.split(": ", 1) for cell in lines[0].split("\t"))
    assert head["Topic"] == topic_name and head["TopicId"] == _kafka_uuid(desc.topic_id)
    assert head["PartitionCount"] == "3" and head["ReplicationFactor"] == "1"
    # Configs: every config not at its default (our two, plus any broker-level override)
    non_default = {f"{name}={c.value}" for name, c in configs.items() if c.source != ConfigSource.DEFAULT_CONFIG.value}
    assert non_default >= {"retention.ms=123456789", "cleanup.policy=compact"}
    assert set(head["Configs"].split(",")) == non_default
    rows = [dict(cell.split(": ", 1) for cell in line.lstrip("\t").split("\t")) for line in lines[1:]]
    assert [(r["Topic"], r["Partition"], r["Leader"], r["Replicas"], r["Isr"]) for r in rows] == [
        (topic_name, str(p), "1", "1", "1") for p in range(3)]

    assert topic_name in ok("kafka-topics", "--bootstrap-server", b, "--list").splitlines()

    err = fails("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "1")
    assert f"TopicExistsException: Topic '{topic_name}' already exists." in err
    assert ok("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--if-not-exists") == ""
    err = fails("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name + "-rf3",
                "--replication-factor", "3")
    assert ("InvalidReplicationFactorException: Unable to replicate the partition 3 time(s): The target "
            "replication factor of 3 cannot be reached because only 1 broker(s) are registered") in err
    assert topic_name + "-rf3" not in _admin(broker).list_topics(timeout=10).topics
    desc = _describe(broker, topic_name)
    assert len(desc.partitions) == 3  # the failed re-create changed nothing


def test_topics_alter_partitions_delete_and_recreate(broker, topic_name):
    b = broker.bootstrap
    _create(broker, topic_name, 1)
    p = Producer({"bootstrap.servers": b, "log_level": 3})
    for i in range(3):
        p.produce(topic_name, value=b"old-%d" % i, partition=0)
    assert p.flush(10) == 0
    old_id = _describe(broker, topic_name).topic_id

    assert ok("kafka-topics", "--bootstrap-server", b, "--alter", "--topic", topic_name, "--partitions", "3") == ""
    assert len(_admin(broker).list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 3
    p = Producer({"bootstrap.servers": b, "log_level": 3})  # fresh metadata: three partitions
    p.produce(topic_name, value=b"new", partition=2)
    assert p.flush(10) == 0
    got = read_confluent(b, topic_name, {0: 3, 2: 1})
    assert sorted((g.partition, g.offset, g.value) for g in got) == [
        (0, 0, b"old-0"), (0, 1, b"old-1"), (0, 2, b"old-2"), (2, 0, b"new")]

    err = fails("kafka-topics", "--bootstrap-server", b, "--alter", "--topic", topic_name, "--partitions", "2")
    assert (f"InvalidPartitionsException: The topic {topic_name} currently has 3 partition(s); "
            "2 would not be an increase.") in err
    out = ok("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name)
    assert "\tPartitionCount: 3\t" in out.splitlines()[0]

    assert ok("kafka-topics", "--bootstrap-server", b, "--delete", "--topic", topic_name) == ""
    assert topic_name not in _admin(broker).list_topics(timeout=10).topics
    left = [d.name for d in broker.data_dir.glob(f"{topic_name}-*")]
    assert all(name.endswith("-delete") for name in left) and len(left) == 3, left  # removed after the delay
    err = fails("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name)
    assert f"Topic '{topic_name}' does not exist as expected" in err

    ok("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "1")
    desc = _describe(broker, topic_name)
    assert str(desc.topic_id) != str(old_id) and len(desc.partitions) == 1
    consumer = Consumer({"bootstrap.servers": b, "group.id": topic_name, "log_level": 3})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10) == (0, 0)
    finally:
        consumer.close()


# ---- console producer / consumer ---------------------------------------------------------------

def test_console_producer_keys_headers_then_console_consumer(broker, topic_name):
    b = broker.bootstrap
    _create(broker, topic_name, 1)
    lines = [f"h1#a{i},trace#t{i}|key{i}:value {i}" for i in range(10)]
    lines += ["h1#NUL|tomb:NUL", "empty#|key11:last one"]  # a null header value and value; an empty header
    out = ok("kafka-console-producer", "--bootstrap-server", b, "--topic", topic_name,
             "--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
             "--reader-property", "parse.headers=true", "--reader-property", "headers.delimiter=|",
             "--reader-property", "headers.separator=,", "--reader-property", "headers.key.separator=#",
             "--reader-property", "null.marker=NUL", input="\n".join(lines) + "\n")
    assert out == ""

    got = sorted(read_confluent(b, topic_name, {0: 12}), key=lambda g: g.offset)
    expected = [(f"key{i}".encode(), f"value {i}".encode(), (("h1", f"a{i}".encode()), ("trace", f"t{i}".encode())))
                for i in range(10)]
    expected += [(b"tomb", None, (("h1", None),)), (b"key11", b"last one", (("empty", b""),))]
    assert [(g.offset, g.key, g.value, g.headers) for g in got] == [(i, *e) for i, e in enumerate(expected)]

    def shown(value: bytes | None) -> str:
        return "NIL" if value is None else value.decode()

    result = run(*_console_consumer(b, topic_name), "--partition", "0", "--offset", "earliest",
                 "--max-messages", "12",
                 *[arg for prop in ("print.timestamp", "print.partition", "print.offset", "print.headers",
                                    "print.key") for arg in ("--formatter-property", f"{prop}=true")],
                 "--formatter-property", "key.separator= | ", "--formatter-property", "null.literal=NIL")
    assert result.returncode == 0, result.describe()
    assert result.stdout.splitlines() == [
        f"CreateTime:{g.timestamp} | Partition:0 | Offset:{g.offset} | "
        f"{','.join(f'{k}:{shown(v)}' for k, v in g.headers)} | {shown(g.key)} | {shown(g.value)}" for g in got]
    assert "Processed a total of 12 messages" in result.stderr

    out = ok(*_console_consumer(b, topic_name), "--partition", "0", "--offset", "5", "--max-messages", "3")
    assert out.splitlines() == ["value 5", "value 6", "value 7"]


def test_console_consumer_group_commits_and_resumes(broker, topic_name):
    b = broker.bootstrap
    group = topic_name + "-console"
    _create(broker, topic_name, 2)
    p = Producer({"bootstrap.servers": b, "log_level": 3})
    for i in range(20):
        p.produce(topic_name, value=b"first-%d" % i, partition=i % 2)
    assert p.flush(10) == 0

    out = ok(*_console_consumer(b, topic_name), "--group", group, "--from-beginning", "--max-messages", "20",
             "--formatter-property", "print.partition=true")
    assert sorted(out.splitlines()) == sorted(f"Partition:{i % 2}\tfirst-{i}" for i in range(20))
    assert _committed(broker, group, topic_name, 2) == [10, 10]

    rows = table(ok("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", group), "GROUP")
    assert sorted((r["GROUP"], r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"],
                   r["CONSUMER-ID"]) for r in rows) == [
        (group, topic_name, str(part), "10", "10", "0", "-") for part in (0, 1)]

    for i in range(6):
        p.produce(topic_name, value=b"second-%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    out = ok(*_console_consumer(b, topic_name), "--group", group, "--max-messages", "6")
    assert sorted(out.splitlines()) == sorted(f"second-{i}" for i in range(6))  # resumed at the commits
    assert _committed(broker, group, topic_name, 2) == [13, 13]


# ---- kafka-consumer-groups ---------------------------------------------------------------------

def test_consumer_groups_describe_active_then_reset_and_delete(broker, topic_name):
    b = broker.bootstrap
    group = topic_name + "-g"
    _create(broker, topic_name, 2)
    p = Producer({"bootstrap.servers": b, "log_level": 3})
    for i in range(10):
        p.produce(topic_name, value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0

    consumer = Consumer({"bootstrap.servers": b, "group.id": group, "client.id": "cli-test-client",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3})
    try:
        consumer.subscribe([topic_name])
        seen, deadline = 0, time.monotonic() + 30
        while seen < 10 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                seen += 1
        assert seen == 10
        consumer.commit(asynchronous=False)
        member_id = consumer.memberid()

        rows = table(ok("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", group), "GROUP")
        assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CONSUMER-ID"],
                       r["HOST"], r["CLIENT-ID"]) for r in rows) == [
            (str(part), "5", "5", "0", member_id, "/127.0.0.1", "cli-test-client") for part in (0, 1)]
        members = table(ok("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", group,
                           "--members", "--verbose"), "GROUP")
        assert [(m["CONSUMER-ID"], m["#PARTITIONS"], m["CURRENT-ASSIGNMENT"]) for m in members] == [
            (member_id, "2", f"{topic_name}:0,1")]
        out = ok("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", group, "--state")
        assert re.search(rf"^{re.escape(group)}\s+127\.0\.0\.1:{broker.port}\s+\(1\)\s+range\s+Stable\s+1\s*$",
                         out, re.M), out
        out = ok("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--reset-offsets",
                 "--to-earliest", "--all-topics", "--execute")
        assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                "but the current state is Stable.") in out
    finally:
        consumer.close()
    assert _committed(broker, group, topic_name, 2) == [5, 5]

    out = ok("kafka-consumer-groups", "--bootstrap-server", b, "--list", "--state")
    assert re.search(rf"^{re.escape(group)}\s+Empty\s*$", out, re.M), out
    rows = table(ok("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--reset-offsets",
                    "--to-earliest", "--all-topics", "--dry-run"), "GROUP")
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in rows) == [("0", "0"), ("1", "0")]
    assert _committed(broker, group, topic_name, 2) == [5, 5]  # a dry run changes nothing
    rows = table(ok("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--reset-offsets",
                    "--to-earliest", "--topic", topic_name, "--execute"), "GROUP")
    assert sorted((r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in rows) == [
        (topic_name, "0", "0"), (topic_name, "1", "0")]
    assert _committed(broker, group, topic_name, 2) == [0, 0]
    ok("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--reset-offsets", "--to-offset", "4",
       "--topic", f"{topic_name}:1", "--execute")
    assert _committed(broker, group, topic_name, 2) == [0, 4]

    out = ok("kafka-consumer-groups", "--bootstrap-server", b, "--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in out
    assert group not in ok("kafka-consumer-groups", "--bootstrap-server", b, "--list").split()
    assert _committed(broker, group, topic_name, 2) == [-1001, -1001]  # no offsets any more


# ---- kafka-configs -----------------------------------------------------------------------------

def _dynamic_configs(out: str, topic: str) -> dict[str, str]:
    lines = out.splitlines()
    assert lines[0] == f"Dynamic configs for topic {topic} are:", out
    return dict(line.split()[0].split("=", 1) for line in lines[1:] if line.strip())


def test_configs_topic_alter_describe_and_enforce(broker, topic_name):
    b = broker.bootstrap
    _create(broker, topic_name, 1)
    topic = ("--bootstrap-server", b, "--entity-type", "topics", "--entity-name", topic_name)

    out = ok("kafka-configs", *topic, "--alter", "--add-config",
             "retention.ms=5000000,cleanup.policy=compact,max.message.bytes=2048")
    assert out.strip() == f"Completed updating config for topic {topic_name}."
    configs = _topic_configs(broker, topic_name)
    for name, value in (("retention.ms", "5000000"), ("cleanup.policy", "compact"), ("max.message.bytes", "2048")):
        assert (configs[name].value, configs[name].source) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert _dynamic_configs(ok("kafka-configs", *topic, "--describe"), topic_name) == {
        "retention.ms": "5000000", "cleanup.policy": "compact", "max.message.bytes": "2048"}

    # wirekafka enforces what the tool set: a 4 KB record no longer fits the topic
    p = Producer({"bootstrap.servers": b, "log_level": 3})
    errors = []
    p.produce(topic_name, key=b"k", value=b"x" * 4096, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert [e.name() for e in errors] == ["MSG_SIZE_TOO_LARGE"]

    ok("kafka-configs", *topic, "--alter", "--delete-config", "cleanup.policy,max.message.bytes")
    assert _dynamic_configs(ok("kafka-configs", *topic, "--describe"), topic_name) == {"retention.ms": "5000000"}
    configs = _topic_configs(broker, topic_name)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == (
        "delete", ConfigSource.DEFAULT_CONFIG.value)
    everything = ok("kafka-configs", *topic, "--describe", "--all").splitlines()
    assert everything[0] == f"All configs for topic {topic_name} are:"
    shown = dict(line.split()[0].split("=", 1) for line in everything[1:] if line.strip())
    assert shown["retention.ms"] == "5000000" and shown["segment.bytes"] == "1073741824"
    assert shown["cleanup.policy"] == "delete" and shown["max.message.bytes"] == "1048588"

    err = fails("kafka-configs", *topic, "--alter", "--add-config", "retention.ms=abc")
    assert ("InvalidConfigurationException: Invalid value abc for configuration retention.ms: "
            "Not a number of type LONG") in err
    err = fails("kafka-configs", *topic, "--alter", "--add-config", "no.such.config=1")
    assert "InvalidConfigurationException: Unknown topic config name: no.such.config" in err
    assert _topic_configs(broker, topic_name)["retention.ms"].value == "5000000"

    out = ok("kafka-configs", "--bootstrap-server", b, "--entity-type", "brokers", "--entity-name", "1",
             "--describe", "--all")
    assert re.search(r"^\s+message\.max\.bytes=1048588 sensitive=false", out, re.M), out


def test_configs_broker_defaults_change_a_running_broker(broker, topic_name):
    """kafka-configs on brokers (--entity-default and --entity-name): the log defaults set there
    reach a topic that does not override them at once, the tool describes them with their
    sources, and a key Kafka cannot change at runtime is refused with Kafka's message."""
    b = broker.bootstrap
    _create(broker, topic_name, 1)
    default = ("--bootstrap-server", b, "--entity-type", "brokers", "--entity-default")
    one = ("--bootstrap-server", b, "--entity-type", "brokers", "--entity-name", "1")
    try:
        ok("kafka-configs", *default, "--alter", "--add-config",
           "log.message.timestamp.type=LogAppendTime,log.retention.ms=3600000")
        ok("kafka-configs", *one, "--alter", "--add-config", "log.retention.ms=7200000")
        shown = ok("kafka-configs", *default, "--describe")
        assert re.search(r"^\s+log\.retention\.ms=3600000 sensitive=false "
                         r"synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log\.retention\.ms=3600000\}$", shown, re.M), shown
        assert re.search(r"^\s+min\.insync\.replicas=1 ", shown, re.M), shown  # formatted with the cluster
        shown = ok("kafka-configs", *one, "--describe")
        assert re.search(r"^\s+log\.retention\.ms=7200000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:"
                         r"log\.retention\.ms=7200000, DYNAMIC_DEFAULT_BROKER_CONFIG:log\.retention\.ms=3600000", shown,
                         re.M), shown
        configs = _topic_configs(broker, topic_name)
        assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
            "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        stamps = []
        p = Producer({"bootstrap.servers": b, "log_level": 3})
        p.produce(topic_name, value=b"x", timestamp=1_600_000_000_000,
                  on_delivery=lambda err, msg: stamps.append((err, msg.timestamp())))
        p.flush(10)
        assert stamps[0][0] is None and stamps[0][1][0] == TIMESTAMP_LOG_APPEND_TIME, stamps  # the broker's clock
        err = fails("kafka-configs", *default, "--alter", "--add-config", "log.retention.hours=1")
        assert "Cannot update these configs dynamically: [log.retention.hours]" in err, err
    finally:
        ok("kafka-configs", *one, "--alter", "--delete-config", "log.retention.ms")
        ok("kafka-configs", *default, "--alter", "--delete-config", "log.message.timestamp.type,log.retention.ms")
    configs = _topic_configs(broker, topic_name)
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "604800000", ConfigSource.DEFAULT_CONFIG.value)


# ---- perf tests --------------------------------------------------------------------------------

def test_producer_and_consumer_perf_tests(broker, topic_name):
    b = broker.bootstrap
    _create(broker, topic_name, 2)
    out = ok("kafka-producer-perf-test", "--topic", topic_name, "--num-records", "20000", "--record-size", "100",
             "--throughput", "-1", "--producer-props", f"bootstrap.servers={b}", "acks=all")
    assert re.search(r"^20000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
                     r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.$", out, re.M), out
    consumer = Consumer({"bootstrap.servers": b, "group.id": topic_name, "log_level": 3})
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition(topic_name, p), timeout=10) for p in (0, 1)]
    finally:
        consumer.close()
    assert sum(high for _, high in ends) == 20000 and all(low == 0 for low, _ in ends)

    out = ok("kafka-consumer-perf-test", "--bootstrap-server", b, "--topic", topic_name,
             "--num-records", "20000", "--timeout", "30000")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("start.time, end.time, data.consumed.in.MB"))
    names, values = (lines[i].split(",") for i in (header, header + 1))
    figures = {name.strip(): value.strip() for name, value in zip(names, values)}
    assert int(figures["data.consumed.in.nMsg"]) == 20000
    assert float(figures["data.consumed.in.MB"]) == pytest.approx(20000 * 100 / 2**20, abs=1e-4)


# ---- kafka-dump-log on wirekafka's own files ---------------------------------------------------

def _produce_varied(bootstrap: str, topic: str) -> None:
    """Batches of every codec, keys, headers, explicit timestamps (one batch going back in time,
    so the time index has to keep the maximum so far), an idempotent producer's batch, nulls."""
    n = 0
    for codec in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5, "log_level": 3})
        for batch in range(4):
            for _ in range(5):
                ts = T0 - 50_000 + n if (codec == "lz4" and batch == 1) else T0 + n * 1000
                p.produce(topic, key=b"k%d" % n, value=b"value-%d " % n * 5, timestamp=ts,
                          headers=[("h", b"%d" % n), ("codec", codec.encode())])
                n += 1
            assert p.flush(10) == 0
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 3})
    for i in range(5):
        p.produce(topic, key=b"idem%d" % i, value=b"idempotent %d" % i, timestamp=T0 + (n + i) * 1000)
    p.produce(topic, key=None, value=None, timestamp=T0 + (n + 5) * 1000)
    assert p.flush(10) == 0


def test_dump_log_reads_segment_and_indexes(broker, topic_name):
    b = broker.bootstrap
    interval = 256
    ok("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "1",
       "--config", f"index.interval.bytes={interval}")
    _produce_varied(b, topic_name)
    got = sorted(read_confluent(b, topic_name, {0: 106}), key=lambda g: g.offset)
    assert [g.offset for g in got] == list(range(106))

    seg = broker.data_dir / f"{topic_name}-0" / "00000000000000000000"
    log_file, index_file, time_file = (str(seg) + suffix for suffix in (".log", ".index", ".timeindex"))
    out = ok("kafka-dump-log", "--files", log_file, "--print-data-log", "--deep-iteration")
    _no_problems(out)
    batches = parse_log_dump(out)[log_file]
    records = [r for batch in batches for r in batch.records]

    def text(value: bytes | None) -> str | None:
        return None if value is None else value.decode()

    assert [(r.offset, r.timestamp, r.key, r.payload, r.header_keys) for r in records] == [
        (g.offset, g.timestamp, text(g.key), text(g.value), [k for k, _ in g.headers]) for g in got]
    assert all(batch.valid and batch.magic == 2 and batch.count == len(batch.records) for batch in batches)
    assert [batch.base_offset for batch in batches] == [0] + [batch.last_offset + 1 for batch in batches[:-1]]
    assert [batch.position for batch in batches] == [0] + [
        batch.position + batch.size for batch in batches[:-1]]
    assert batches[-1].position + batches[-1].size == (seg.with_suffix(".log")).stat().st_size
    assert {batch.codec for batch in batches} == {"none", "gzip", "snappy", "lz4", "zstd"}
    idempotent = [batch for batch in batches if batch.producer_id >= 0]
    assert idempotent and idempotent[0].base_sequence == 0

    out = ok("kafka-dump-log", "--files", f"{index_file},{time_file}")
    _no_problems(out)
    dumped = parse_index_dump(out)
    offsets, times = kafka_index_entries(batches, interval)
    assert len(offsets) >= 10 and len(times) >= 10
    assert dumped[index_file] == offsets
    assert dumped[time_file] == times

    out = ok("kafka-dump-log", "--files", f"{index_file},{time_file}", "--verify-index-only")
    _no_problems(out)
    assert out.splitlines() == [f"Dumping {index_file}", f"Dumping {time_file}"]
    out = ok("kafka-dump-log", "--files", f"{index_file},{time_file}", "--index-sanity-check")
    assert f"{index_file} passed sanity check." in out and f"{time_file} passed sanity check." in out


def test_dump_log_across_rolled_segments(broker, topic_name):
    """Several 1 MiB segments: the sealed ones carry Kafka's final time index entry (the max
    timestamp of the segment) besides the per-interval entries."""
    b = broker.bootstrap
    _create(broker, topic_name, 1, {"segment.bytes": "1048576", "index.interval.bytes": "4096"})
    p = Producer({"bootstrap.servers": b, "linger.ms": 20, "batch.size": 16384, "log_level": 3})
    count = 12_000
    for i in range(count):
        p.produce(topic_name, value=b"%06d" % i + b"." * 194, timestamp=T0 + i)
        if i % 2000 == 1999:
            p.poll(0)
    assert p.flush(30) == 0
    part = broker.data_dir / f"{topic_name}-0"
    logs = sorted(str(path) for path in part.glob("*.log"))
    assert len(logs) >= 2, logs

    out = ok("kafka-dump-log", "--files", ",".join(logs), "--deep-iteration")
    _no_problems(out)
    per_file = parse_log_dump(out)
    offsets = [r.offset for path in logs for batch in per_file[path] for r in batch.records]
    assert offsets == list(range(count))
    for path in logs:
        assert per_file[path][0].base_offset == int(path.rsplit("/", 1)[1].split(".")[0])

    indexes = [path[:-len(".log")] + suffix for path in logs for suffix in (".index", ".timeindex")]
    out = ok("kafka-dump-log", "--files", ",".join(indexes))
    _no_problems(out)
    dumped = parse_index_dump(out)
    for i, path in enumerate(logs):
        expected_offsets, expected_times = kafka_index_entries(per_file[path], 4096, closed=i < len(logs) - 1)
        base = path[:-len(".log")]
        assert dumped[base + ".index"] == expected_offsets, base
        assert dumped[base + ".timeindex"] == expected_times, base

    out = ok("kafka-dump-log", "--files", ",".join(indexes), "--index-sanity-check")
    assert out.count("passed sanity check.") == len(indexes), out


def test_dump_log_after_clean_restart(broker_factory, topic_name):
    """A clean shutdown writes the active segment's final time index entry, as Kafka's
    LogSegment.close does; after the restart the segment indexes on from a fresh byte count."""
    broker = broker_factory()
    interval = 128
    _create(broker, topic_name, 1, {"index.interval.bytes": str(interval)})

    def produce(first: int, last: int, label: bytes) -> None:
        p = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        for i in range(first, last):
            p.produce(topic_name, key=b"a%d" % i, value=label + b" %d" % i, timestamp=T0 + i * 10)
            assert p.flush(10) == 0  # one batch per record

    produce(0, 30, b"before restart")
    assert broker.stop() == 0, broker.log_tail()
    seg = broker.data_dir / f"{topic_name}-0" / "00000000000000000000"
    files = [str(seg) + suffix for suffix in (".log", ".index", ".timeindex")]
    out = ok("kafka-dump-log", "--files", files[2])
    _no_problems(out)
    assert parse_index_dump(out)[files[2]][-1] == (T0 + 290, 29)

    broker.start()
    produce(30, 60, b"after restart")
    out = ok("kafka-dump-log", "--files", ",".join(files), "--deep-iteration")
    _no_problems(out)
    batches = parse_log_dump(out)[files[0]]
    assert [r.offset for batch in batches for r in batch.records] == list(range(60))
    before = kafka_index_entries(batches[:30], interval, closed=True)
    after = kafka_index_entries(batches[30:], interval)
    dumped = parse_index_dump(out)
    assert dumped[files[1]] == before[0] + after[0]
    assert dumped[files[2]] == before[1] + after[1]


#: A fixed group id with a negative Java String.hashCode, for which Kafka's Utils.abs(hash) % 50
#: (partition 42) and the tempting hash & 0x7fffffff % 50 (partition 6) differ, so writing the
#: group to the wrong __consumer_offsets partition cannot go unnoticed. (Not every negative hash
#: would do: "kafka-dump-log-offsets-group-5" hashes to -1946454849, partition 49 either way.)
#: Fixed rather than derived from the random topic name, so every run tests the same case.
OFFSETS_DECODER_GROUP = "dump-log-offsets-decoder-group-0"


def test_dump_log_decodes_consumer_offsets(broker, topic_name):
    """kafka-dump-log's offsets decoder reads wirekafka's __consumer_offsets records, in the
    partition Kafka's coordinator would use. The group id has a negative Java hash, where
    Utils.abs(hash) and (hash & 0x7fffffff) pick different partitions."""
    b = broker.bootstrap
    _create(broker, topic_name, 2)
    group = OFFSETS_DECODER_GROUP
    assert java_string_hash(group) == -2012277142  # Java's "dump-log-offsets-decoder-group-0".hashCode()
    assert offsets_partition(group) == 42 and (java_string_hash(group) & 0x7FFFFFFF) % 50 == 6
    consumer = Consumer({"bootstrap.servers": b, "group.id": group, "log_level": 3})
    try:
        consumer.commit(offsets=[TopicPartition(topic_name, 0, 7), TopicPartition(topic_name, 1, 3)],
                        asynchronous=False)
    finally:
        consumer.close()
    meta = _admin(broker).list_topics("__consumer_offsets", timeout=10)
    partitions = len(meta.topics["__consumer_offsets"].partitions)
    assert partitions == 50  # offsets.topic.num.partitions' default
    kafka_dir = f"__consumer_offsets-{offsets_partition(group, partitions)}"
    holders = sorted({path.parent.name for path in broker.data_dir.glob("__consumer_offsets-*/*.log")
                      if group.encode() in path.read_bytes()})
    assert holders == [kafka_dir], f"Kafka keeps group {group} in {kafka_dir}; wirekafka wrote it to {holders}"
    logs = sorted(str(path) for path in (broker.data_dir / kafka_dir).glob("*.log"))
    out = ok("kafka-dump-log", "--files", ",".join(logs), "--offsets-decoder")
    _no_problems(out)
    commits = {(key["data"]["topic"], key["data"]["partition"]): value["data"]["offset"]
               for key, value in parse_offsets_dump(out)
               if key["type"] == "1" and key["data"]["group"] == group and key["data"]["topic"] == topic_name
               and value is not None}
    assert commits == {(topic_name, 0): 7, (topic_name, 1): 3}
