"""Stock consumers in incremental fetch sessions (KIP-227): kafka-python's consumer opens a
session and keeps fetching incrementally while records arrive on some partitions and not others;
it reads every record once, in order. A broker without session slots serves the same consumer
with full fetches."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 4
ROUNDS = 6


def _create(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def _consume_while_producing(
        bootstrap: str, topic: str) -> tuple[dict[int, list[bytes]], dict[int, list[bytes]], object, set[int]]:
    """Produce ROUNDS rounds, each to one partition only (the others stay quiet), consuming all the
    while; returns what was sent and read per partition, the consumer's session handler, and every
    session id the handler held after a poll (0: none yet, or a session given up)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=100)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    session_ids: set[int] = set()
    try:
        consumer.poll(timeout_ms=500)  # the first, full fetch
        for r in range(ROUNDS):
            partition = r % (PARTITIONS - 1)  # the last partition never gets a record
            for i in range(20):
                value = f"{r}-{i}".encode()
                producer.send(topic, value=value, partition=partition)
                sent[partition].append(value)
            producer.flush(30)
            deadline = time.monotonic() + 30
            while sum(map(len, read.values())) < sum(map(len, sent.values())) and time.monotonic() < deadline:
                for tp, msgs in consumer.poll(timeout_ms=200).items():
                    read[tp.partition].extend(m.value for m in msgs)
                session_ids.update(h.next_metadata.session_id for h in consumer._fetcher._session_handlers.values())
        handlers = consumer._fetcher._session_handlers  # the client's own record of its sessions
        assert len(handlers) == 1
        return sent, read, next(iter(handlers.values())), session_ids
    finally:
        consumer.close()
        producer.close(10)


def test_kafka_python_reads_everything_through_an_incremental_session(broker, topic_name):
    _create(broker.bootstrap, topic_name)
    sent, read, session, session_ids = _consume_while_producing(broker.bootstrap, topic_name)
    assert read == sent
    # the broker gave one session and the client stayed in it: each round's records were produced
    # after the last round's were read, so each came in an answer of its own; the first may have
    # been the full fetch that opened the session, so at least ROUNDS epochs in all
    assert session.next_metadata.session_id != 0
    assert session_ids - {0} == {session.next_metadata.session_id}
    assert session.next_metadata.epoch >= ROUNDS


def test_kafka_python_without_session_slots_fetches_in_full(broker_factory, topic_name):
    broker = broker_factory({"max.incremental.fetch.session.cache.slots": "0"})
    _create(broker.bootstrap, topic_name)
    sent, read, session, session_ids = _consume_while_producing(broker.bootstrap, topic_name)
    assert read == sent
    assert session_ids == {0}
    assert (session.next_metadata.session_id, session.next_metadata.epoch) == (0, 0)  # asks anew each time
