"""A cluster-wide dynamic log default (log.message.timestamp.type set on the BROKER resource "")
reaching every broker of a ZooKeeper-mode cluster, run the same way on a real Kafka 3.9 cluster
(compat-tests/test_zookeeper_launcher.py) and on wirekafka's (compat-tests/test_cluster.py): one
function, so both are held to the same test.

The default lands in /config/brokers/<default> in Kafka 3.9's JSON; each broker then reports it
with source DYNAMIC_DEFAULT_BROKER_CONFIG and, as leader, stamps records with its own clock;
deleting it brings every broker back to the static value (the producer's timestamps).

(Not message.max.bytes: Kafka restarts its log cleaner for that key, and a 256 MB broker heap,
as these clusters run, then cannot hold the old and the new 128 MB dedupe buffer: the broker's
config-change thread dies of an OutOfMemoryError and it never sees a later change.)"""

from __future__ import annotations

import json

from types import SimpleNamespace

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from client_support import raw_call
from testsupport.cluster import wait_for

BROKER, SET, DELETE = 4, 0, 1
KEY, VALUE = "log.message.timestamp.type", "LogAppendTime"
TOPIC = "dynamic-default"
SENT_AT = 1_600_000_000_000  # the producer's timestamp: far from any broker's clock


def _set(bootstrap: str, op: int, value: str | None) -> None:
    """IncrementalAlterConfigs of the cluster default (confluent-kafka's admin client cannot
    name the resource "")."""
    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    request = IncrementalAlterConfigsRequest(version=1, validate_only=False, resources=[resource(
        resource_type=BROKER, resource_name="",
        configs=[resource.AlterableConfig(name=KEY, config_operation=op, value=value)])])
    answer = raw_call(SimpleNamespace(port=port), request, IncrementalAlterConfigsResponse).responses[0]
    assert (answer.error_code, answer.error_message) == (0, None), answer


def _seen_by(admin: AdminClient, broker: int) -> tuple[str, ConfigSource]:
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    entry = admin.describe_configs([resource])[resource].result(timeout=30)[KEY]
    return entry.value, ConfigSource(entry.source)


def _timestamps(bootstrap: str, partitions: int) -> list[tuple[int, int] | None]:
    """(timestamp type, timestamp) of one record written to each partition (None: not acked)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    stamps: dict[int, tuple[int, int] | None] = {}

    def done(err: KafkaError | None, msg) -> None:
        stamps[msg.partition()] = None if err is not None else msg.timestamp()

    for p in range(partitions):
        producer.produce(TOPIC, b"x", partition=p, timestamp=SENT_AT, on_delivery=done)
    producer.flush(30)
    return [stamps.get(p) for p in range(partitions)]


def check_dynamic_default(zk, bootstrap: str, brokers: list[int]) -> str:
    """Set, observe and delete the default on a running cluster; returns a one-line summary."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, len(brokers), len(brokers))])[TOPIC].result(timeout=30)
    created = [(TIMESTAMP_CREATE_TIME, SENT_AT)] * len(brokers)
    wait_for(lambda: _timestamps(bootstrap, len(brokers)) == created, 30, "every partition takes writes")
    _set(bootstrap, SET, VALUE)
    stored = json.loads(zk.get("/config/brokers/<default>")[0])
    assert stored == {"version": 1, "config": {KEY: VALUE}}, stored
    expected = (VALUE, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    wait_for(lambda: all(_seen_by(admin, b) == expected for b in brokers), 30, "every broker sees the default")
    stamped = _timestamps(bootstrap, len(brokers))
    assert all(s is not None and s[0] == TIMESTAMP_LOG_APPEND_TIME and s[1] > SENT_AT for s in stamped), stamped
    _set(bootstrap, DELETE, None)
    wait_for(lambda: all(_seen_by(admin, b)[1] != ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG for b in brokers), 30,
             "every broker is back to the static value")
    assert _timestamps(bootstrap, len(brokers)) == created
    return (f"{KEY}={VALUE} on the cluster default: seen by brokers {brokers}, their {len(brokers)} partitions "
            "stamped with the broker's clock, back to the producer's after the delete")
