"""confluent-kafka (librdkafka) sessions: an idempotent producer and a group consumer, a
two-consumer rebalance, and an AdminClient tour."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from conformance.sessions import Session, expect, settle
from conformance.sessions.kafka_state import led_partitions, topic_config

QUIET = {"log_level": 3}
# A short long-poll keeps a consumer's idle time, and so the replay's, short.
CONSUMER = {**QUIET, "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 200,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}


def _records(prefix: str, count: int, partitions: int) -> list[tuple[int, bytes, bytes]]:
    return [(i % partitions, f"{prefix}-key-{i}".encode(), f"{prefix}-value-{i}".encode()) for i in range(count)]


def _produce(bootstrap: str, topic: str, records: list[tuple[int, bytes, bytes]], **conf: Any) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, **QUIET, "linger.ms": 5, **conf})
    failures: list[Any] = []
    for partition, key, value in records:
        producer.produce(topic, value, key, partition=partition, headers=[("seq", key)],
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
    expect(producer.flush(20) == 0 and not failures, f"produce to {topic} failed: {failures}")


def _consume(consumers: list[Consumer], count: int, timeout: float = 20) -> list[Any]:
    """Poll the consumers in turn until ``count`` records arrived in all (bounded)."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for consumer in consumers:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg)
    expect(len(got) == count, f"consumed {len(got)} of {count} records")
    return got


def produce_consume(bootstrap: str, _kafka: str) -> None:
    """Idempotent produce to an auto-created topic, then a group consumer reads and commits."""
    topic, group = "cf-orders", "cf-orders-readers"
    _produce(bootstrap, topic, _records("order", 10, 1), **{"enable.idempotence": True})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **CONSUMER})
    consumer.subscribe([topic])
    got = _consume([consumer], 10)
    expect([m.value() for m in got] == [v for _, _, v in _records("order", 10, 1)], "records differ")
    consumer.commit(asynchronous=False)
    consumer.close()


def _assigned(consumers: list[Consumer], partitions: int, timeout: float = 30) -> None:
    """Poll until the group's partitions are spread over all consumers (a finished rebalance)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(0.1)
        owned = [len(c.assignment()) for c in consumers]
        if all(owned) and sum(owned) == partitions:
            return
    raise AssertionError(f"rebalance did not finish: {owned} of {partitions} partitions")


def rebalance(bootstrap: str, _kafka: str) -> None:
    """A second consumer joins a group whose first member is active: both rejoin, the leader
    spreads the two partitions, and each consumer reads the records produced afterwards."""
    topic, group = "cf-rebalance", "cf-rebalance-group"
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    _produce(bootstrap, topic, _records("before", 4, 2))
    first = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "first", **CONSUMER})
    first.subscribe([topic])
    _consume([first], 4)
    first.commit(asynchronous=False)
    second = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "second", **CONSUMER})
    second.subscribe([topic])
    _assigned([first, second], 2)
    _produce(bootstrap, topic, _records("after", 4, 2))
    _consume([first, second], 4)
    for consumer in (first, second):
        consumer.commit(asynchronous=False)
        consumer.close()


def admin_tour(bootstrap: str, kafka: str) -> None:
    """Topics created, listed, described, reconfigured, grown, trimmed and deleted; offsets and
    groups listed."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    futures = admin.create_topics([NewTopic("cf-admin-a", 2, 1, config={"retention.ms": "3600000"}),
                                   NewTopic("cf-admin-b", 1, 1)])
    for future in futures.values():
        future.result(20)
    settle(lambda: led_partitions(kafka, "cf-admin-a") == 2 and led_partitions(kafka, "cf-admin-b") == 1, "the topics")
    expect({"cf-admin-a", "cf-admin-b"} <= set(admin.list_topics(timeout=10).topics), "topics not listed")
    resource = ConfigResource("topic", "cf-admin-a")
    expect(admin.describe_configs([resource])[resource].result(10)["retention.ms"].value == "3600000",
           "retention.ms not described")
    change = ConfigResource("topic", "cf-admin-a", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([change])[change].result(10)
    settle(lambda: topic_config(kafka, "cf-admin-a", "cleanup.policy") == "compact", "the altered config")
    expect(admin.describe_configs([resource])[resource].result(10)["cleanup.policy"].value == "compact",
           "cleanup.policy not altered")
    admin.create_partitions([NewPartitions("cf-admin-a", 3)])["cf-admin-a"].result(10)
    settle(lambda: led_partitions(kafka, "cf-admin-a") == 3, "the new partition")
    described = admin.describe_topics(TopicCollection(["cf-admin-a"]))["cf-admin-a"].result(10)
    expect(len(described.partitions) == 3, "partitions not grown")
    admin.describe_cluster().result(10)
    _produce(bootstrap, "cf-admin-b", _records("trim", 3, 1))
    trimmed = admin.delete_records([TopicPartition("cf-admin-b", 0, 1)])
    expect(next(iter(trimmed.values())).result(10).low_watermark == 1, "records not deleted")
    latest = admin.list_offsets({TopicPartition("cf-admin-b", 0): OffsetSpec.latest()})
    expect(next(iter(latest.values())).result(10).offset == 3, "latest offset wrong")
    admin.list_consumer_groups().result(10)
    admin.delete_topics(["cf-admin-b"])["cf-admin-b"].result(10)


SESSIONS = [
    Session("confluent_produce_consume", "confluent-kafka", produce_consume.__doc__ or "", produce_consume),
    Session("confluent_rebalance", "confluent-kafka", rebalance.__doc__ or "", rebalance),
    Session("confluent_admin", "confluent-kafka", admin_tour.__doc__ or "", admin_tour),
]
