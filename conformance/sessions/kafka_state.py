"""Look-ups of Kafka's own state, off the record (straight to Kafka, not through the proxy), for
sessions that must wait until Kafka shows what an admin request changed (see `settle`)."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, ConfigResource


def _admin(kafka: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka, "log_level": 3})


def led_partitions(kafka: str, topic: str) -> int:
    """How many of the topic's partitions Kafka reports with a leader (0 if it knows no topic)."""
    admin = _admin(kafka)  # kept referenced until its answer is in: a dropped client cancels it
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    return 0 if found is None or found.error else sum(1 for p in found.partitions.values() if p.leader >= 0)


def topic_config(kafka: str, topic: str, name: str) -> str | None:
    resource = ConfigResource("topic", topic)
    admin = _admin(kafka)
    return admin.describe_configs([resource])[resource].result(10)[name].value
