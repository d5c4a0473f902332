"""Where the Spark tests run: wirekafka, and the same tests against real Apache Kafka 4.x
(scripts/realkafka.py) so that every expectation is Kafka's, not ours.

Real Kafka is a target when WIREKAFKA_CONFORMANCE_KAFKA=1 (scripts/test.sh sets it) or when its
jars are already cached, the same rule as the conformance suite."""

from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator, Protocol

from scripts import realkafka

WIREKAFKA, KAFKA = "wirekafka", "kafka"


class Cluster(Protocol):
    bootstrap: str


def targets() -> list[str]:
    if os.environ.get("WIREKAFKA_CONFORMANCE_KAFKA") == "1":
        return [WIREKAFKA, KAFKA]
    try:
        cached = (realkafka.kafka_home() / ".complete").exists()
    except Exception:  # no java/mvn here: wirekafka only
        cached = False
    return [WIREKAFKA, KAFKA] if cached else [WIREKAFKA]


@contextlib.contextmanager
def real_kafka(overrides: dict[str, str] | None = None) -> Iterator[Cluster]:
    with realkafka.RealKafka(overrides=overrides) as kafka:
        yield kafka


@contextlib.contextmanager
def dedicated(target: str, broker_factory: Callable[..., Cluster], overrides: dict[str, str],
              kafka_only: dict[str, str] | None = None) -> Iterator[Cluster]:
    """A broker of its own for a test that changes broker-wide settings (e.g. how often retention
    runs). `kafka_only` holds settings that exist only in Kafka (wirekafka would log them as
    ignored): e.g. log.initial.task.delay.ms, Kafka's 30 s delay before the first retention pass."""
    if target == WIREKAFKA:
        yield broker_factory(overrides)
    else:
        with real_kafka({**overrides, **(kafka_only or {})}) as kafka:
            yield kafka


def all_records(bootstrap: str, topic: str, timeout: float = 20.0) -> list:
    """Every record of `topic`, read up to the end offsets it had when called, in partition then
    offset order: exactly what is in the log (so duplicates show)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-tests-reader",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                for p in partitions}
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        pending = {p for p, (low, high) in ends.items() if high > low}
        records = []
        for _ in range(int(timeout / 0.1)):
            if not pending:
                break
            msg = consumer.poll(0.1)
            if msg is None or msg.error():
                continue
            records.append(msg)
            if msg.offset() + 1 >= ends[msg.partition()][1]:
                pending.discard(msg.partition())
        assert not pending, f"could not read {topic} to its end offsets {ends}"
    finally:
        consumer.close()
    return sorted(records, key=lambda m: (m.partition(), m.offset()))
