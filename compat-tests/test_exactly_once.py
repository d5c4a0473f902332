"""Exactly-once under crashes: a consume-transform-produce job (read A, write B in transactions
with the consumed offsets sent to each transaction) keeps running while the broker is killed
with SIGKILL twenty times; afterwards B, read with read_committed, holds every record of A
exactly once — none lost, none duplicated.

The job does what an EOS application does after any error: it drops its producer and consumer,
starts a new producer with the same transactional id (InitProducerId fences the old one and
aborts its open transaction) and resumes from the offsets the last committed transaction
stored. Kills are spaced by progress (each waits for a transaction committed since the last
restart), so the run is bounded and makes progress whatever the machine's speed. The copier may
commit only as many transactions as the test allows: one per broker life until the last kill, so
it cannot finish its copy before all twenty kills happened, however fast it runs; it waits for
that allowance with its next transaction open, so the kills land mid-transaction."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from txn_support import read_values

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
log = logging.getLogger(__name__)

RECORDS = 3000
PARTITIONS = 2
KILLS = 20
BATCH = 50


def _conf(bootstrap: str, **extra: Any) -> dict[str, Any]:
    # metadata.recovery.strategy=none: with every broker down (one node, killed), librdkafka's
    # re-bootstrap decommissions the broker it knew, and a handle left terminating can keep a
    # transactional request waiting past its timeout; reconnecting to the same address is what
    # a one-node cluster needs.
    return {"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka"),
            "metadata.recovery.strategy": "none", **extra}


class Copier:
    """The EOS job: copies A to B one transaction per batch of up to BATCH records."""

    def __init__(self, bootstrap: str, source: str, sink: str, group: str, tid: str) -> None:
        self.bootstrap, self.source, self.sink, self.group, self.tid = bootstrap, source, sink, group, tid
        self.commits = 0
        self.restarts = 0
        self.committed_total = 0
        self.progress = threading.Condition()
        self.stop = threading.Event()
        self._allowed = 0  # commits the test allows from now on (None: any number)

    def _start(self) -> tuple[Producer, Consumer]:
        producer = Producer(_conf(self.bootstrap, **{"transactional.id": self.tid, "transaction.timeout.ms": 30000,
                                                      "message.timeout.ms": 30000}))
        producer.init_transactions(60)
        consumer = Consumer(_conf(self.bootstrap, **{"group.id": self.group, "enable.auto.commit": False,
                                                     "isolation.level": "read_committed",
                                                     "auto.offset.reset": "earliest"}))
        partitions = [TopicPartition(self.source, p) for p in range(PARTITIONS)]
        committed = consumer.committed(partitions, timeout=30)
        consumer.assign([TopicPartition(self.source, tp.partition, tp.offset if tp.offset >= 0 else 0)
                         for tp in committed])
        return producer, consumer

    def run(self, deadline: float) -> None:
        while not self.stop.is_set() and time.monotonic() < deadline:
            producer = consumer = None
            try:
                producer, consumer = self._start()
                while not self.stop.is_set() and time.monotonic() < deadline:
                    msgs = [m for m in consumer.consume(BATCH, timeout=0.5) if not m.error()]
                    if not msgs:
                        if self.done(consumer):
                            return
                        continue
                    producer.begin_transaction()
                    for m in msgs:
                        producer.produce(self.sink, key=m.key(), value=m.value(), partition=m.partition())
                    if not self._wait_for_allowance(deadline):
                        return
                    positions = consumer.position(consumer.assignment())
                    producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
                    producer.commit_transaction(30)
                    with self.progress:  # only a commit that succeeded uses up the allowance
                        self.commits += 1
                        if self._allowed is not None:
                            self._allowed -= 1
                        self.progress.notify_all()
            except KafkaException as exc:  # any failure: fence ourselves and resume from the last commit
                log.info("copier restarts after %s", exc.args[0])
                self.restarts += 1
            finally:
                if consumer is not None:
                    consumer.close()
                if producer is not None:
                    producer.flush(0)

    def done(self, consumer: Consumer) -> bool:
        committed = consumer.committed([TopicPartition(self.source, p) for p in range(PARTITIONS)], timeout=30)
        total = sum(max(tp.offset, 0) for tp in committed)
        self.committed_total = total
        return total >= RECORDS

    def allow(self, commits: int | None) -> None:
        """Let the copier commit that many more transactions (None: any number)."""
        with self.progress:
            self._allowed = None if commits is None or self._allowed is None else self._allowed + commits
            self.progress.notify_all()

    def _wait_for_allowance(self, deadline: float) -> bool:
        """Wait until a commit is allowed; False if stopped or past the deadline."""
        with self.progress:
            while self._allowed == 0:
                if self.stop.is_set() or time.monotonic() >= deadline:
                    return False
                self.progress.wait(0.1)
            return True

    def wait_for_commit_after(self, count: int, timeout: float) -> bool:
        with self.progress:
            return self.progress.wait_for(lambda: self.commits > count, timeout)


def test_copy_is_exactly_once_across_twenty_broker_kills(broker_factory, topic_name: str) -> None:
    b = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    source, sink = f"{topic_name}-a", f"{topic_name}-b"
    admin = AdminClient(_conf(b.bootstrap))
    for t in admin.create_topics([NewTopic(source, PARTITIONS, 1), NewTopic(sink, PARTITIONS, 1)]).values():
        t.result(30)
    producer = Producer(_conf(b.bootstrap, **{"enable.idempotence": True}))
    expected = [b"record-%05d" % i for i in range(RECORDS)]
    for i, value in enumerate(expected):
        producer.produce(source, value=value, partition=i % PARTITIONS)
    assert producer.flush(60) == 0

    copier = Copier(b.bootstrap, source, sink, f"eos-{topic_name}", f"eos-{topic_name}")
    deadline = time.monotonic() + 480
    job = threading.Thread(target=copier.run, args=(deadline,), daemon=True)
    job.start()
    kills = 0
    try:
        while kills < KILLS and job.is_alive():
            seen = copier.commits
            copier.allow(1)
            if not copier.wait_for_commit_after(seen, timeout=120):
                break
            b.kill()
            kills += 1
            b.start()
        copier.allow(None)
        job.join(max(deadline - time.monotonic(), 1))
    finally:
        copier.stop.set()
        job.join(30)
    assert kills == KILLS, f"only {kills} kills: the copier stopped making progress ({copier.restarts} restarts)"
    assert copier.committed_total >= RECORDS, f"copier committed {copier.committed_total} of {RECORDS}"
    got = read_values(b.bootstrap, sink, "read_committed", RECORDS, PARTITIONS, timeout=60)
    missing = set(expected) - set(got)
    duplicated = len(got) - len(set(got))
    assert not missing and duplicated == 0, f"{len(missing)} lost, {duplicated} duplicated of {RECORDS}"
    assert sorted(got) == expected
