"""The broker's compression levels (KIP-390) against Kafka 4.3.1: compression.gzip.level,
compression.lz4.level and compression.zstd.level in server.properties are the defaults of every
topic's levels, listed as STATIC_BROKER_CONFIG synonyms, and a topic's own setting wins.

The pair is this module's own, started with levels other than Kafka's defaults."""

from __future__ import annotations

from conformance.harness.broker_configs import DEFAULT, STATIC, TOPIC, described
from conformance.harness.own_brokers import own_broker_pair
from conformance.harness.wire import Connection, create_topic, unique

LEVELS = {"compression.gzip.level": "4", "compression.lz4.level": "12", "compression.zstd.level": "10"}
KAFKA_DEFAULTS = {"compression.gzip.level": "-1", "compression.lz4.level": "9", "compression.zstd.level": "3"}
DYNAMIC_TOPIC = 1

own_wirekafka, own_kafka, target = own_broker_pair(LEVELS)


def test_broker_levels_are_every_topics_defaults(target):
    plain, own = unique("levels"), unique("levels-own")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, plain)
        create_topic(conn, own, configs={"compression.zstd.level": "1"})
        shown = described(conn, TOPIC, plain, list(LEVELS))
        assert {k: (v[0], v[2], v[3]) for k, v in shown.items()} == {
            k: (level, STATIC, [(k, level, STATIC), (k, KAFKA_DEFAULTS[k], DEFAULT)]) for k, level in LEVELS.items()}
        value, _ro, source, synonyms, _type = described(conn, TOPIC, own, ["compression.zstd.level"])[
            "compression.zstd.level"]
        assert (value, source, synonyms[0], synonyms[1][1:]) == (
            "1", DYNAMIC_TOPIC, ("compression.zstd.level", "1", DYNAMIC_TOPIC), ("10", STATIC))
