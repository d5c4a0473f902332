"""Transactions with confluent-kafka (librdkafka) against a live wirekafka: commits are seen by
read_committed consumers and aborts never are, a second producer with the same transactional
id fences the first, offsets sent to a transaction take effect only with its commit, and the
broker's transaction state survives a restart.

The same tests run against real Kafka with WIREKAFKA_EXTERNAL_BOOTSTRAP=host:port."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from txn_support import read_values

pytestmark = pytest.mark.timeout(180)


def _conf(bootstrap: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka"), **extra}


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient(_conf(bootstrap))
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _producer(bootstrap: str, transactional_id: str, **extra: Any) -> Producer:
    p = Producer(_conf(bootstrap, **{"transactional.id": transactional_id, "transaction.timeout.ms": 60000},
                       **extra))
    p.init_transactions(30)
    return p


def test_commit_is_visible_and_abort_is_not(broker, topic_name: str) -> None:
    _create(broker.bootstrap, topic_name, partitions=2)
    p = _producer(broker.bootstrap, f"tx-{topic_name}")
    p.begin_transaction()
    for i in range(10):
        p.produce(topic_name, value=b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic_name, value=b"aborted-%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic_name, value=b"after-abort", partition=0)
    p.commit_transaction(30)
    committed = read_values(broker.bootstrap, topic_name, "read_committed", 11, partitions=2)
    assert sorted(committed) == sorted([b"committed-%d" % i for i in range(10)] + [b"after-abort"])
    everything = read_values(broker.bootstrap, topic_name, "read_uncommitted", 16, partitions=2)
    assert sorted(v for v in everything if v.startswith(b"aborted")) == [b"aborted-%d" % i for i in range(5)]


def test_open_transaction_is_invisible_to_read_committed_until_commit(broker, topic_name: str) -> None:
    _create(broker.bootstrap, topic_name)
    p = _producer(broker.bootstrap, f"tx-{topic_name}")
    p.begin_transaction()
    p.produce(topic_name, value=b"pending")
    p.flush(30)
    assert read_values(broker.bootstrap, topic_name, "read_committed", 1, timeout=3) == []
    c = Consumer(_conf(broker.bootstrap, **{"group.id": f"wm-{topic_name}", "isolation.level": "read_committed"}))
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10)
        assert (low, high) == (0, 0)  # read_committed: the high end is the last stable offset
    finally:
        c.close()
    p.commit_transaction(30)
    assert read_values(broker.bootstrap, topic_name, "read_committed", 1) == [b"pending"]


def test_second_producer_fences_the_first_and_aborts_its_transaction(broker, topic_name: str) -> None:
    _create(broker.bootstrap, topic_name)
    tid = f"tx-{topic_name}"
    old = _producer(broker.bootstrap, tid)
    old.begin_transaction()
    old.produce(topic_name, value=b"zombie")
    old.flush(30)
    new = _producer(broker.bootstrap, tid)  # aborts the zombie's open transaction
    new.begin_transaction()
    new.produce(topic_name, value=b"fresh")
    new.commit_transaction(30)
    old.produce(topic_name, value=b"zombie-2")
    with pytest.raises(KafkaException) as fenced:
        old.commit_transaction(30)
    assert fenced.value.args[0].fatal()
    assert read_values(broker.bootstrap, topic_name, "read_committed", 1) == [b"fresh"]


def test_offsets_sent_to_a_transaction_are_committed_with_it(broker, topic_name: str) -> None:
    source, sink = f"{topic_name}-in", f"{topic_name}-out"
    _create(broker.bootstrap, source)
    _create(broker.bootstrap, sink)
    group = f"copier-{topic_name}"
    plain = Producer(_conf(broker.bootstrap))
    for i in range(6):
        plain.produce(source, value=b"in-%d" % i)
    plain.flush(30)
    consumer = Consumer(_conf(broker.bootstrap, **{"group.id": group, "enable.auto.commit": False,
                                                   "auto.offset.reset": "earliest",
                                                   "isolation.level": "read_committed"}))
    consumer.subscribe([source])
    p = _producer(broker.bootstrap, f"tx-{topic_name}")
    try:
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg)
        assert len(got) == 3
        p.begin_transaction()
        for msg in got:
            p.produce(sink, value=msg.value().replace(b"in", b"out"))
        p.send_offsets_to_transaction([TopicPartition(source, 0, got[-1].offset() + 1)],
                                      consumer.consumer_group_metadata(), 30)
        p.abort_transaction(30)
        assert consumer.committed([TopicPartition(source, 0)], timeout=10)[0].offset < 0
        p.begin_transaction()
        for msg in got:
            p.produce(sink, value=msg.value().replace(b"in", b"out"))
        p.send_offsets_to_transaction([TopicPartition(source, 0, got[-1].offset() + 1)],
                                      consumer.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert consumer.committed([TopicPartition(source, 0)], timeout=10)[0].offset == 3
    finally:
        consumer.close()
    assert sorted(read_values(broker.bootstrap, sink, "read_committed", 3)) == [b"out-0", b"out-1", b"out-2"]


def test_transactions_survive_a_restart(broker_factory, topic_name: str) -> None:
    b = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    _create(b.bootstrap, topic_name)
    tid = f"tx-{topic_name}"
    p = _producer(b.bootstrap, tid)
    p.begin_transaction()
    p.produce(topic_name, value=b"committed")
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic_name, value=b"open")
    p.flush(30)
    b.kill()
    b.start()
    # The open transaction is still open after the crash: invisible to read_committed until the
    # new incarnation of the producer aborts it.
    assert read_values(b.bootstrap, topic_name, "read_committed", 1) == [b"committed"]
    again = _producer(b.bootstrap, tid)
    again.begin_transaction()
    again.produce(topic_name, value=b"second")
    again.commit_transaction(30)
    assert read_values(b.bootstrap, topic_name, "read_committed", 2) == [b"committed", b"second"]
