"""Dynamic broker configs: the replication throttles set, described and removed through
IncrementalAlterConfigs and AlterConfigs on BROKER resources (this node's id and "", the cluster
default), with the answers Kafka 4.3.1 gives.

Every test leaves the broker as it found it (the throttles deleted), because the configs outlive
the test on the shared brokers."""

from __future__ import annotations

import time

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest

from conformance.harness.broker_configs import (APPEND, BROKER, DELETE, DYNAMIC_BROKER, DYNAMIC_DEFAULT, SET, SUBTRACT,
                                        described, incremental, legacy, node_id, restored)
from conformance.harness import transcript
from conformance.harness.wire import Connection, poll, settled

LEADER, FOLLOWER = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
ALTER_DIRS = "replica.alter.log.dirs.io.max.bytes.per.second"
THROTTLES = [LEADER, FOLLOWER, ALTER_DIRS]
SHORT, LONG = 4, 5
INVALID_CONFIG, INVALID_REQUEST = 40, 42


def _described(conn: Connection, name: str, version: int = 4) -> dict[str, tuple]:
    """The throttles the broker lists for a BROKER resource."""
    return described(conn, BROKER, name, THROTTLES, version)


@pytest.mark.parametrize("version", range(0, 2))
def test_throttles_are_set_described_and_deleted(target, version):
    with Connection(target.bootstrap) as conn, restored(conn, THROTTLES) as node:
        assert settled(lambda: _described(conn, node), {}) == {}  # unset throttles are not listed
        assert incremental(conn, node, [(LEADER, SET, "1000000"), (FOLLOWER, SET, "2000000")], version) == (0, None)
        expected = {
            LEADER: ("1000000", False, DYNAMIC_BROKER, [(LEADER, "1000000", DYNAMIC_BROKER)], LONG),
            FOLLOWER: ("2000000", False, DYNAMIC_BROKER, [(FOLLOWER, "2000000", DYNAMIC_BROKER)], LONG)}
        assert settled(lambda: _described(conn, node), expected) == expected
        assert incremental(conn, "", [(LEADER, SET, "3000000")], version) == (0, None)
        expected = {LEADER: ("3000000", False, DYNAMIC_DEFAULT, [(LEADER, "3000000", DYNAMIC_DEFAULT)], LONG)}
        assert settled(lambda: _described(conn, ""), expected) == expected
        expected = {
            LEADER: ("1000000", False, DYNAMIC_BROKER,
                     [(LEADER, "1000000", DYNAMIC_BROKER), (LEADER, "3000000", DYNAMIC_DEFAULT)], LONG),
            FOLLOWER: ("2000000", False, DYNAMIC_BROKER, [(FOLLOWER, "2000000", DYNAMIC_BROKER)], LONG)}
        assert settled(lambda: _described(conn, node), expected) == expected
        assert incremental(conn, node, [(LEADER, DELETE, None)], version) == (0, None)
        expected = {
            LEADER: ("3000000", False, DYNAMIC_DEFAULT, [(LEADER, "3000000", DYNAMIC_DEFAULT)], LONG),
            FOLLOWER: ("2000000", False, DYNAMIC_BROKER, [(FOLLOWER, "2000000", DYNAMIC_BROKER)], LONG)}
        assert settled(lambda: _described(conn, node), expected) == expected
        assert incremental(conn, node, [(ALTER_DIRS, SET, "0")], version) == (0, None)
        expected[ALTER_DIRS] = ("0", False, DYNAMIC_BROKER, [(ALTER_DIRS, "0", DYNAMIC_BROKER)], LONG)
        assert settled(lambda: _described(conn, node), expected) == expected


@pytest.mark.parametrize("value, message", [
    ("-1", f"Invalid value -1 for configuration {LEADER}: Value must be at least 0"),
    ("abc", f"Invalid value abc for configuration {LEADER}: Not a number of type LONG"),
    ("1.5", f"Invalid value 1.5 for configuration {LEADER}: Not a number of type LONG"),
    ("", f"Invalid value  for configuration {LEADER}: Not a number of type LONG"),
    ("9223372036854775808", f"Invalid value 9223372036854775808 for configuration {LEADER}: Not a number of type LONG"),
])
def test_invalid_throttle_values(target, value, message):
    with Connection(target.bootstrap) as conn, restored(conn, THROTTLES) as node:
        assert incremental(conn, node, [(LEADER, SET, value)]) == (INVALID_REQUEST, message)
        assert incremental(conn, "", [(LEADER, SET, value)]) == (INVALID_REQUEST, message)
        assert settled(lambda: _described(conn, node), {}) == {}


def test_throttle_request_errors(target):
    with Connection(target.bootstrap) as conn, restored(conn, THROTTLES) as node:
        other = str(int(node) + 1)
        assert incremental(conn, other, [(LEADER, SET, "1")]) == (
            INVALID_REQUEST, f"Unexpected broker id, expected {node}, but received {other}")
        assert incremental(conn, "x", [(LEADER, SET, "1")]) == (
            INVALID_REQUEST, "Node id must be an integer, but it is: x")
        for op in (APPEND, SUBTRACT):
            assert incremental(conn, node, [(LEADER, op, "1")]) == (INVALID_CONFIG, f"Unknown config name: {LEADER}")
        assert incremental(conn, node, [(LEADER, SET, None)]) == (
            INVALID_REQUEST, f"Null value not supported for : {LEADER}")
        assert incremental(conn, node, [(LEADER, SET, "1"), (LEADER, SET, "2")]) == (
            INVALID_REQUEST, "Error due to duplicate config keys")
        assert incremental(conn, node, [(LEADER, SET, "5")], validate_only=True) == (0, None)
        assert incremental(conn, node, [(LEADER, SET, "-5")], validate_only=True)[0] == INVALID_REQUEST
        time.sleep(0.5)  # what a change would take to show
        assert _described(conn, node) == {}  # validate_only changed nothing
        assert incremental(conn, node, [(LEADER, DELETE, None)]) == (0, None)  # deleting an unset one


def test_legacy_alter_configs_replaces_the_brokers_set(target):
    with Connection(target.bootstrap) as conn, restored(conn, THROTTLES) as node:
        assert legacy(conn, node, {LEADER: "100", FOLLOWER: "200", ALTER_DIRS: "300"}) == (0, None)
        assert set(poll(lambda: _described(conn, node), lambda found: len(found) == 3, 10)) == {
            LEADER, FOLLOWER, ALTER_DIRS}
        assert legacy(conn, node, {LEADER: "500"}) == (0, None)
        expected = {LEADER: ("500", False, DYNAMIC_BROKER, [(LEADER, "500", DYNAMIC_BROKER)], LONG)}
        assert settled(lambda: _described(conn, node), expected) == expected
        assert legacy(conn, node, {LEADER: "-1"}) == (
            INVALID_REQUEST, f"Invalid value -1 for configuration {LEADER}: Value must be at least 0")
        assert legacy(conn, node, {}) == (0, None)
        assert settled(lambda: _described(conn, node), {}) == {}


def test_legacy_alter_configs_cannot_drop_the_cluster_min_insync_replicas(target):
    """A Kafka 4 cluster default holds min.insync.replicas (formatted with ELR on): replacing the
    whole default without it is refused, and nothing changes."""
    message = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
    with Connection(target.bootstrap) as conn, restored(conn, THROTTLES):
        assert legacy(conn, "", {LEADER: "500"}) == (INVALID_CONFIG, message)
        assert legacy(conn, "", {}) == (INVALID_CONFIG, message)
        time.sleep(0.5)
        assert _described(conn, "") == {}


# Broker keys described with Kafka 4.3.1's values, types and sources all the same: most are
# accepted with Kafka's defaults though nothing in wirekafka acts on them (config.py INERT_KEYS);
# queued.max.request.bytes is one wirekafka acts on (server/memory_pool.py).
INERT_DESCRIBED = ["background.threads", "num.recovery.threads.per.data.dir", "queued.max.requests",
                   "queued.max.request.bytes", "fetch.purgatory.purge.interval.requests",
                   "producer.purgatory.purge.interval.requests", "delete.records.purgatory.purge.interval.requests",
                   "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level",
                   "kafka.metrics.polling.interval.secs", "connection.failed.authentication.delay.ms",
                   "transaction.state.log.load.buffer.size", "num.io.threads", "num.network.threads",
                   "connections.max.idle.ms", "max.connections", "max.connections.per.ip",
                   "max.connections.per.ip.overrides", "socket.listen.backlog.size", "fetch.max.bytes",
                   "replication.quota.window.num", "replication.quota.window.size.seconds",
                   "transaction.partition.verification.enable", "replica.socket.receive.buffer.bytes"]


def test_accepted_broker_keys_are_described_as_kafka_describes_them(target):
    with Connection(target.bootstrap) as conn:
        node = node_id(conn)
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=BROKER, resource_name=node, configuration_keys=INERT_DESCRIBED)],
            include_synonyms=True, include_documentation=False)
        result = conn.call(req, 4).results[0]
        assert result.error_code == 0
        assert sorted(c.name for c in result.configs) == sorted(INERT_DESCRIBED)


# Broker keys whose Kafka type the Python default does not tell (LONG, CLASS) or whose default
# Kafka prints as a Java double ("1.7976931348623157E308").
TYPED_KEYS = {"connections.max.reauth.ms": LONG, "leader.imbalance.check.interval.seconds": LONG,
              "replica.high.watermark.checkpoint.interval.ms": LONG, "replica.lag.time.max.ms": LONG,
              "offsets.topic.replication.factor": SHORT, "transaction.state.log.replication.factor": SHORT,
              "client.quota.callback.class": 8, "principal.builder.class": 8, "log.cleaner.io.max.bytes.per.second": 6}


def test_broker_keys_have_kafkas_types_and_formats(target):
    with Connection(target.bootstrap) as conn:
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=BROKER, resource_name=node_id(conn), configuration_keys=list(TYPED_KEYS))],
            include_synonyms=True, include_documentation=False)
        configs = {c.name: c for c in conn.call(req, 4).results[0].configs}
        assert {name: c.config_type for name, c in configs.items()} == TYPED_KEYS
        assert configs["log.cleaner.io.max.bytes.per.second"].value == "1.7976931348623157E308"


def test_a_full_listing_leaves_out_keys_kafka_4_dropped(target):
    """Described in full, a broker lists no ZooKeeper-era key it was not started with (Kafka 4
    knows none of them). Off the record: the full listing's other differences are not this
    scenario's subject (wirekafka leaves out Kafka's keys for features it does not have)."""
    with transcript.unrecorded(), Connection(target.bootstrap) as conn:
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=BROKER, resource_name=node_id(conn), configuration_keys=None)],
            include_synonyms=False, include_documentation=False)
        names = {c.name for c in conn.call(req, 4).results[0].configs}
    assert "log.retention.hours" in names and "num.partitions" in names
    assert not {n for n in names if n.startswith(("zookeeper.", "password.encoder."))}
    assert not names & {"broker.id.generation.enable", "reserved.broker.max.id", "controlled.shutdown.max.retries",
                        "log.message.downconversion.enable", "offsets.commit.required.acks", "shutdown.timeout.ms"}
