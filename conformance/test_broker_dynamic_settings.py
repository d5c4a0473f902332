"""Dynamic broker settings other than the log defaults and the throttles: the thread-pool sizes,
the log cleaner's settings, the connection limits and the producer-state settings, set and
refused through IncrementalAlterConfigs as Kafka 4.3.1 answers: each value against its type and
validator, then the whole config the change would give the broker (Kafka's KafkaConfig
requirements), then the limits of a running part (a thread pool at most halves or doubles).

Every test leaves the broker as it found it, because the configs outlive the test on the shared
brokers. The effects of the connection limits and of transaction.partition.verification.enable
are checked on a module's own brokers (test_broker_limits.py)."""

from __future__ import annotations


import pytest

from conformance.harness.broker_configs import (BROKER, DEFAULT, DYNAMIC_BROKER, DYNAMIC_DEFAULT, SET, described, incremental,
                                        restored)
from conformance.harness.wire import Connection, poll

INT, LONG, STRING = 3, 5, 2
INVALID_REQUEST = 42
KEYS = ["num.io.threads", "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
        "background.threads", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms", "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
        "producer.id.expiration.ms", "transaction.partition.verification.enable"]


def _dynamic(reason: str) -> tuple[int, str]:
    return INVALID_REQUEST, (f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} "
                             "for configuration Invalid dynamic configuration")


REFUSED = [
    ("num.io.threads", "0", (INVALID_REQUEST, "Invalid value 0 for configuration num.io.threads: Value must be at least 1")),
    ("num.io.threads", "17", _dynamic("Dynamic thread count update validation failed for num.io.threads=17, value "
                                      "should not be greater than double the current value 8")),
    ("num.io.threads", "3", _dynamic("Dynamic thread count update validation failed for num.io.threads=3, value "
                                     "should be at least half the current value 8")),
    ("num.network.threads", "7", _dynamic("Dynamic thread count update validation failed for num.network.threads=7, "
                                          "value should not be greater than double the current value 3")),
    ("num.replica.fetchers", "3", _dynamic("Dynamic thread count update validation failed for num.replica.fetchers=3, "
                                           "value should not be greater than double the current value 1")),
    ("background.threads", "4", _dynamic("Dynamic thread count update validation failed for background.threads=4, "
                                         "value should be at least half the current value 10")),
    ("log.cleaner.threads", "-1", (INVALID_REQUEST, "Invalid value -1 for configuration log.cleaner.threads: "
                                                    "Value must be at least 0")),
    ("log.cleaner.threads", "0", (INVALID_REQUEST, "/ by zero")),
    ("log.cleaner.threads", "3", _dynamic("Log cleaner threads cannot be increased to more than double the current "
                                          "value 1")),
    ("log.cleaner.dedupe.buffer.size", "1048576", (INVALID_REQUEST, "requirement failed: log.cleaner.dedupe.buffer.size "
                                                                    "must be at least 1MB per cleaner thread.")),
    ("log.cleaner.dedupe.buffer.size", "x", (INVALID_REQUEST, "Invalid value x for configuration "
                                                              "log.cleaner.dedupe.buffer.size: Not a number of type LONG")),
    ("log.cleaner.io.buffer.load.factor", "x", (INVALID_REQUEST, "Invalid value x for configuration "
                                                                 "log.cleaner.io.buffer.load.factor: Not a number of type DOUBLE")),
    ("log.cleaner.backoff.ms", "-1", (INVALID_REQUEST, "Invalid value -1 for configuration log.cleaner.backoff.ms: "
                                                       "Value must be at least 0")),
    ("max.connections", "-1", (INVALID_REQUEST, "Invalid value -1 for configuration max.connections: "
                                                "Value must be at least 0")),
    ("max.connections.per.ip", "0", (INVALID_REQUEST, "requirement failed: max.connections.per.ip can be set to zero "
                                                      "only if max.connections.per.ip.overrides property is set.")),
    ("max.connections.per.ip.overrides", "bad", (INVALID_REQUEST, "Error parsing configuration property "
                                                                  "'max.connections.per.ip.overrides': begin 0, end -1, length 3")),
    ("max.connections.per.ip.overrides", "127.0.0.1:x", (INVALID_REQUEST, 'For input string: "x"')),
    ("producer.id.expiration.ms", "0", (INVALID_REQUEST, "Invalid value 0 for configuration producer.id.expiration.ms: "
                                                         "Value must be at least 1")),
    ("transaction.partition.verification.enable", "maybe", (
        INVALID_REQUEST, "Invalid value maybe for configuration transaction.partition.verification.enable: "
                         "Expected value to be either true or false")),
    ("log.retention.ms", "0", (INVALID_REQUEST, "requirement failed: log.retention.ms must be unlimited (-1) or, "
                                                "greater than or equal to 1")),
    ("log.roll.ms", "0", (INVALID_REQUEST, "requirement failed: log.roll.ms must be greater than or equal to 1")),
    ("log.roll.jitter.ms", "-1", (INVALID_REQUEST, "requirement failed: log.roll.jitter.ms must be greater than or "
                                                   "equal to 0")),
]


@pytest.mark.parametrize("key, value, answer", REFUSED, ids=[f"{k}={v}" for k, v, _ in REFUSED])
def test_refused_settings(target, key, value, answer):
    with Connection(target.bootstrap) as conn, restored(conn, KEYS) as node:
        for name in (node, ""):
            assert incremental(conn, name, [(key, SET, value)], validate_only=True) == answer
            assert incremental(conn, name, [(key, SET, value)]) == answer


ACCEPTED = [("num.io.threads", "16"), ("num.io.threads", "4"), ("num.network.threads", "1"),
            ("num.replica.fetchers", "2"), ("num.recovery.threads.per.data.dir", "3"), ("log.cleaner.threads", "2"),
            ("log.cleaner.io.buffer.load.factor", "5"), ("max.connections", "5000"),
            ("max.connections.per.ip.overrides", "a:1:2"), ("max.connections.per.ip.overrides", " h : 3 , "),
            ("max.connections.per.ip.overrides", "h:-1"), ("producer.id.expiration.ms", "100000"),
            ("log.retention.ms", "-5"), ("log.flush.interval.ms", "-3")]


@pytest.mark.parametrize("key, value", ACCEPTED, ids=[f"{k}={v}" for k, v in ACCEPTED])
def test_accepted_settings(target, key, value):
    with Connection(target.bootstrap) as conn, restored(conn, KEYS) as node:
        for name in (node, ""):
            assert incremental(conn, name, [(key, SET, value)], validate_only=True) == (0, None)


def test_settings_are_described_with_their_sources(target):
    with Connection(target.bootstrap) as conn, restored(conn, KEYS) as node:
        keys = ["num.io.threads", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "max.connections",
                "max.connections.per.ip.overrides", "producer.id.expiration.ms"]
        assert incremental(conn, "", [("num.io.threads", SET, "12"), ("log.cleaner.threads", SET, "2"),
                                      ("max.connections.per.ip.overrides", SET, "127.0.0.9:5")]) == (0, None)
        assert incremental(conn, node, [("num.io.threads", SET, "16"),
                                        ("producer.id.expiration.ms", SET, "100000")]) == (0, None)
        expected = {
            "num.io.threads": ("16", False, DYNAMIC_BROKER, [("num.io.threads", "16", DYNAMIC_BROKER),
                                                             ("num.io.threads", "12", DYNAMIC_DEFAULT),
                                                             ("num.io.threads", "8", DEFAULT)], INT),
            "log.cleaner.threads": ("2", False, DYNAMIC_DEFAULT, [("log.cleaner.threads", "2", DYNAMIC_DEFAULT),
                                                                  ("log.cleaner.threads", "1", DEFAULT)], INT),
            "log.cleaner.dedupe.buffer.size": ("134217728", False, DEFAULT,
                                               [("log.cleaner.dedupe.buffer.size", "134217728", DEFAULT)], LONG),
            "max.connections": ("2147483647", False, DEFAULT, [("max.connections", "2147483647", DEFAULT)], INT),
            "max.connections.per.ip.overrides": ("127.0.0.9:5", False, DYNAMIC_DEFAULT,
                                                 [("max.connections.per.ip.overrides", "127.0.0.9:5", DYNAMIC_DEFAULT),
                                                  ("max.connections.per.ip.overrides", "", DEFAULT)], STRING),
            "producer.id.expiration.ms": ("100000", False, DYNAMIC_BROKER,
                                          [("producer.id.expiration.ms", "100000", DYNAMIC_BROKER),
                                           ("producer.id.expiration.ms", "86400000", DEFAULT)], INT)}
        got = poll(lambda: described(conn, BROKER, node, keys), lambda found: found == expected, 10)
        assert got == expected
        # the cleaner now runs two threads: halving and doubling count from there
        assert incremental(conn, "", [("log.cleaner.threads", SET, "5")]) == _dynamic(
            "Log cleaner threads cannot be increased to more than double the current value 2")
