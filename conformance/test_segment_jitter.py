"""Segment roll jitter against Kafka 4.3.1: log.roll.jitter.hours (and log.roll.jitter.ms, which
wins) in server.properties are every topic's segment.jitter.ms default (described, as Kafka does,
with the source of log.roll.jitter.ms: the default while only the hours are set); a dynamic
log.roll.jitter.ms replaces them; a topic's own segment.jitter.ms wins. The broker describes
both keys. How a segment then rolls (a random time, below the jitter, before
segment.ms) is checked in tests/test_storage.py: its randomness has nothing to compare.

The pair is this module's own, started with log.roll.jitter.hours=2 and log.retention.hours=100."""

from __future__ import annotations

from conformance.harness.broker_configs import BROKER, DEFAULT, DELETE, DYNAMIC_BROKER, SET, TOPIC, described, incremental, \
    node_id
from conformance.harness.own_brokers import own_broker_pair
from conformance.harness.wire import Connection, create_topic, poll, unique

DYNAMIC_TOPIC = 1
# log.retention.hours too: the same synonym rule (CreateTopics calls a topic config static when any
# key of its broker synonym chain is set; DescribeConfigs goes by the first key), compared whole
own_wirekafka, own_kafka, target = own_broker_pair({"log.roll.jitter.hours": "2", "log.retention.hours": "100"})


def test_the_brokers_jitter_is_every_topics_default(target):
    plain, own = unique("jitter"), unique("jitter-own")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, plain)
        create_topic(conn, own, configs={"segment.jitter.ms": "1000"})
        value, _ro, source, _synonyms, _type = described(conn, TOPIC, plain, ["segment.jitter.ms"])["segment.jitter.ms"]
        assert (value, source) == ("7200000", DEFAULT)
        value, _ro, source, _synonyms, _type = described(conn, TOPIC, own, ["segment.jitter.ms"])["segment.jitter.ms"]
        assert (value, source) == ("1000", DYNAMIC_TOPIC)
        retention = described(conn, TOPIC, plain, ["retention.ms"])["retention.ms"]
        assert (retention[0], retention[2]) == ("360000000", DEFAULT)
        broker = described(conn, BROKER, node_id(conn), ["log.roll.jitter.hours", "log.roll.jitter.ms"])
        assert broker["log.roll.jitter.hours"][0] == "2" and broker["log.roll.jitter.ms"][0] is None


def test_a_dynamic_jitter_replaces_the_static_one(target):
    topic = unique("jitter-dynamic")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        node = node_id(conn)
        def jitter() -> tuple[str | None, int]:
            value, _ro, source, _synonyms, _type = described(conn, TOPIC, topic, ["segment.jitter.ms"])[
                "segment.jitter.ms"]
            return value, source

        assert incremental(conn, node, [("log.roll.jitter.ms", SET, "5000")]) == (0, None)
        try:  # Kafka applies a change a moment after acknowledging it
            assert poll(jitter, lambda found: found == ("5000", DYNAMIC_BROKER), timeout=10) == ("5000", DYNAMIC_BROKER)
        finally:
            assert incremental(conn, node, [("log.roll.jitter.ms", DELETE, None)]) == (0, None)
        assert poll(jitter, lambda found: found == ("7200000", DEFAULT), timeout=10) == ("7200000", DEFAULT)
