"""Dynamic broker log configs: the broker synonyms of topic configs (log.retention.ms,
message.max.bytes, log.message.timestamp.type, min.insync.replicas, ...) set on a running broker
through IncrementalAlterConfigs and AlterConfigs, per broker or as the cluster default, as Kafka
4.3.1 answers them: they reach every topic that does not override them at once (DescribeConfigs
sources and synonyms, and the writes the topic takes), a topic override still wins, and deleting
them brings back the static value.

Every test leaves the broker as it found it, because the configs outlive the test on the shared
brokers."""

from __future__ import annotations


from conformance.harness.broker_configs import (BROKER, DEFAULT, DELETE, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DYNAMIC_TOPIC,
                                        SET, STATIC, TOPIC, described, incremental, legacy, restored)
from conformance.harness.scenarios import batch, produce
from conformance.harness.wire import Connection, create_topic, settled, unique

LONG, INT, STRING = 5, 3, 2
NONE, MESSAGE_TOO_LARGE = 0, 10
INVALID_CONFIG, INVALID_REQUEST = 40, 42
RETENTION = "log.retention.ms"
SET_HERE = [RETENTION, "message.max.bytes", "log.message.timestamp.type", "log.segment.bytes", "log.cleanup.policy"]


def test_cluster_default_and_per_broker_retention_reach_topics(target):
    with Connection(target.bootstrap) as conn, restored(conn, SET_HERE, {"min.insync.replicas": "1"}) as node:
        topic = unique("dyn")
        create_topic(conn, topic)
        overridden = unique("dyn")
        create_topic(conn, overridden, configs={"retention.ms": "1000"})

        def retention(name: str):
            return lambda: described(conn, TOPIC, name, ["retention.ms"])["retention.ms"]

        # Without a log.retention.ms anywhere, Kafka lists no synonym (the chain starts at that key).
        default = ("604800000", False, DEFAULT, [], LONG)
        assert retention(topic)() == default
        assert incremental(conn, "", [(RETENTION, SET, "3600000")]) == (0, None)
        expected = ("3600000", False, DYNAMIC_DEFAULT,
                    [(RETENTION, "3600000", DYNAMIC_DEFAULT), ("log.retention.hours", "168", DEFAULT)], LONG)
        assert settled(retention(topic), expected) == expected
        assert incremental(conn, node, [(RETENTION, SET, "7200000")]) == (0, None)
        expected = ("7200000", False, DYNAMIC_BROKER,
                    [(RETENTION, "7200000", DYNAMIC_BROKER), (RETENTION, "3600000", DYNAMIC_DEFAULT),
                     ("log.retention.hours", "168", DEFAULT)], LONG)
        assert settled(retention(topic), expected) == expected
        assert retention(overridden)() == ("1000", False, DYNAMIC_TOPIC, [("retention.ms", "1000", DYNAMIC_TOPIC)]
                                           + expected[3], LONG)
        broker_side = lambda: described(conn, BROKER, node, [RETENTION, "log.retention.hours"])  # noqa: E731
        assert settled(broker_side, {
            RETENTION: ("7200000", False, DYNAMIC_BROKER, expected[3], LONG),
            "log.retention.hours": ("168", True, DEFAULT, [("log.retention.hours", "168", DEFAULT)], INT)}
        ) == {RETENTION: ("7200000", False, DYNAMIC_BROKER, expected[3], LONG),
              "log.retention.hours": ("168", True, DEFAULT, [("log.retention.hours", "168", DEFAULT)], INT)}
        cluster = described(conn, BROKER, "", None)
        assert sorted(cluster) == ["log.retention.ms", "min.insync.replicas"]
        assert cluster[RETENTION] == ("3600000", False, DYNAMIC_DEFAULT,
                                      [(RETENTION, "3600000", DYNAMIC_DEFAULT)], LONG)
        assert incremental(conn, node, [(RETENTION, DELETE, None)]) == (0, None)
        assert incremental(conn, "", [(RETENTION, DELETE, None)]) == (0, None)
        assert settled(retention(topic), default) == default


def test_dynamic_message_max_bytes_and_timestamp_type_apply_to_writes(target):
    """Each write happens once the topic describes the new value (polling with writes would let
    the number of writes a broker takes to apply the change show in the offsets)."""
    with Connection(target.bootstrap) as conn, restored(conn, SET_HERE, {"min.insync.replicas": "1"}):
        topic = unique("dyn")
        create_topic(conn, topic)

        def topic_value(name: str):
            return lambda: described(conn, TOPIC, topic, [name])[name][0]

        big = batch([b"x" * 3000])
        assert incremental(conn, "", [("message.max.bytes", SET, "2000")]) == (0, None)
        assert settled(topic_value("max.message.bytes"), "2000") == "2000"
        assert produce(conn, topic, big).error_code == MESSAGE_TOO_LARGE
        assert incremental(conn, "", [("message.max.bytes", DELETE, None),
                                      ("log.message.timestamp.type", SET, "LogAppendTime")]) == (0, None)
        assert settled(topic_value("message.timestamp.type"), "LogAppendTime") == "LogAppendTime"
        answer = produce(conn, topic, batch([b"y"]))
        assert (answer.error_code, answer.log_append_time_ms > 0) == (NONE, True)
        assert produce(conn, topic, big).error_code == NONE


def test_cluster_min_insync_replicas_default(target):
    """The cluster default a Kafka 4 cluster is formatted with: it can change but not go, the
    per-broker key cannot be set at all (ELR, KIP-966), and a partition with fewer replicas than
    it still takes acks=all writes (Kafka 3.7+ counts at most the replicas)."""
    with Connection(target.bootstrap) as conn, restored(conn, SET_HERE, {"min.insync.replicas": "1"}) as node:
        topic = unique("dyn")
        create_topic(conn, topic)
        mis = lambda: described(conn, BROKER, "", ["min.insync.replicas"])  # noqa: E731
        assert mis() == {"min.insync.replicas": ("1", False, DYNAMIC_DEFAULT,
                                                 [("min.insync.replicas", "1", DYNAMIC_DEFAULT)], INT)}
        assert incremental(conn, "", [("min.insync.replicas", SET, "2")]) == (0, None)
        in_topic = lambda: described(conn, TOPIC, topic, ["min.insync.replicas"])["min.insync.replicas"]  # noqa: E731
        expected = ("2", False, DYNAMIC_DEFAULT, [("min.insync.replicas", "2", DYNAMIC_DEFAULT),
                                                  ("min.insync.replicas", "1", STATIC),
                                                  ("min.insync.replicas", "1", DEFAULT)], INT)
        assert settled(in_topic, expected) == expected
        assert produce(conn, topic, batch([b"z"])).error_code == NONE
        assert incremental(conn, "", [("min.insync.replicas", DELETE, None)]) == (
            INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        for op in (SET, DELETE):
            assert incremental(conn, node, [("min.insync.replicas", op, "3" if op == SET else None)]) == (
                INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
        assert legacy(conn, "", {"min.insync.replicas": "1", RETENTION: "86400000"}) == (0, None)
        expected = {"min.insync.replicas": ("1", False, DYNAMIC_DEFAULT, [("min.insync.replicas", "1", DYNAMIC_DEFAULT)],
                                            INT),
                    RETENTION: ("86400000", False, DYNAMIC_DEFAULT, [(RETENTION, "86400000", DYNAMIC_DEFAULT)], LONG)}
        assert settled(lambda: described(conn, BROKER, "", None), expected) == expected
        assert legacy(conn, "", {"min.insync.replicas": "1"}) == (0, None)


def test_dynamic_log_config_errors(target):
    with Connection(target.bootstrap) as conn, restored(conn, SET_HERE, {"min.insync.replicas": "1"}) as node:
        for name in ("", node):
            assert incremental(conn, name, [("log.retention.hours", SET, "1")]) == (
                INVALID_REQUEST, "Cannot update these configs dynamically: [log.retention.hours]")
            assert incremental(conn, name, [("log.segment.bytes", SET, "100")]) == (
                INVALID_REQUEST, "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576")
            assert incremental(conn, name, [("log.cleanup.policy", SET, "foo")]) == (
                INVALID_REQUEST, "Invalid value foo for configuration log.cleanup.policy: String must be one of: compact, delete")
            assert incremental(conn, name, [("message.max.bytes", SET, "abc")]) == (
                INVALID_REQUEST, "Invalid value abc for configuration message.max.bytes: Not a number of type INT")
            assert incremental(conn, name, [("log.message.timestamp.type", SET, "Other")]) == (
                INVALID_REQUEST, "Invalid value Other for configuration log.message.timestamp.type: "
                "String must be one of: CreateTime, LogAppendTime")
            assert incremental(conn, name, [(RETENTION, SET, "x")]) == (
                INVALID_REQUEST, "Invalid value x for configuration log.retention.ms: Not a number of type LONG")
            assert incremental(conn, name, [("log.cleaner.min.cleanable.ratio", SET, "2")]) == (
                INVALID_REQUEST, "Invalid value 2.0 for configuration log.cleaner.min.cleanable.ratio: "
                "Value must be no more than 1")
            assert incremental(conn, name, [("compression.type", SET, "brotli")]) == (
                INVALID_REQUEST, "Invalid value brotli for configuration compression.type: "
                "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")
            assert incremental(conn, name, [("compression.gzip.level", SET, "99")]) == (
                INVALID_REQUEST, "Invalid value 99 for configuration compression.gzip.level: "
                "Value must be between 1 and 9 or equal to -1")
            assert incremental(conn, name, [("min.insync.replicas", SET, "0")]) == (
                INVALID_REQUEST, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1")
            assert incremental(conn, name, [("message.max.bytes", 2, "5")]) == (
                INVALID_CONFIG, "Config value append is not allowed for config key: message.max.bytes")
            for key, value in ((RETENTION, "-5"), ("log.retention.bytes", "-2"), ("num.io.threads", "16"),
                               ("log.preallocate", "true")):  # no validator of its own in Kafka, or inert
                assert incremental(conn, name, [(key, SET, value)], validate_only=True) == (0, None)
        assert incremental(conn, node, [("log.segment.bytes", SET, "2097152"),
                                        ("log.cleanup.policy", SET, "compact,delete")]) == (0, None)
        got = lambda: described(conn, BROKER, node, ["log.segment.bytes", "log.cleanup.policy"])  # noqa: E731
        expected = {"log.segment.bytes": ("2097152", False, DYNAMIC_BROKER,
                                          [("log.segment.bytes", "2097152", DYNAMIC_BROKER),
                                           ("log.segment.bytes", "1073741824", DEFAULT)], INT),
                    "log.cleanup.policy": ("compact,delete", False, DYNAMIC_BROKER,
                                           [("log.cleanup.policy", "compact,delete", DYNAMIC_BROKER),
                                            ("log.cleanup.policy", "delete", DEFAULT)], 7)}
        assert settled(got, expected) == expected
        assert incremental(conn, node, [("log.cleanup.policy", DELETE, None)]) == (0, None)
        assert incremental(conn, node, [("log.cleanup.policy", 2, "compact")]) == (0, None)
        expected["log.cleanup.policy"] = ("delete,compact", False, DYNAMIC_BROKER,
                                          [("log.cleanup.policy", "delete,compact", DYNAMIC_BROKER),
                                           ("log.cleanup.policy", "delete", DEFAULT)], 7)
        assert settled(got, expected) == expected
