"""The transactional workload: confluent-kafka producers writing 1 KB records in transactions of
a fixed size; bench.py then reads the topic back read_committed, as it reads the throughput rows.

Each producer has its own transactional id and librdkafka instance and runs in its own thread;
its clock covers begin -> produce -> commit for every transaction, and each commit_transaction()
call is timed on its own (the commit latency: flush of the transaction's records, EndTxn, and
the markers the broker writes before it answers). Bounded by a record count and a deadline."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import Producer

from scripts.benchlib.workloads import LatencyResult, ProducedTopic, create_topic, delete_topic, new_topic_name

log = logging.getLogger(__name__)

PARTITIONS = 3


class Target(Protocol):
    """A broker or a cluster: where the producers connect, and its name in the logs."""

    name: str

    @property
    def bootstrap(self) -> str: ...


@dataclass(frozen=True)
class TransactionalResult:
    produced: ProducedTopic  # its committed records; the caller reads it back read_committed and deletes it
    commit: LatencyResult


def _run_producer(bootstrap: str, topic: str, payloads: list[bytes], records: int, per_txn: int,
                  deadline: float, commits_ms: list[float], done: list[int], start: threading.Barrier) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex}",
                         "linger.ms": 5, "batch.size": 1_000_000, "log_level": 3})
    producer.init_transactions(30)
    start.wait()
    sent = 0
    pool = len(payloads)
    while sent < records and time.monotonic() < deadline:
        producer.begin_transaction()
        n = min(per_txn, records - sent)
        for i in range(n):
            producer.produce(topic, payloads[(sent + i) % pool], partition=(sent + i) % PARTITIONS)
        t0 = time.perf_counter()
        producer.commit_transaction(30)
        commits_ms.append((time.perf_counter() - t0) * 1000)
        sent += n
    done.append(sent)


def transactional(broker: Target, producers: int, records: int, per_txn: int, payloads: list[bytes],
                  timeout: float, replication: int = 1, config: dict[str, str] | None = None) -> TransactionalResult:
    """The workload on a fresh topic of PARTITIONS partitions (`replication` replicas each, with
    `config`), bounded by `timeout` seconds."""
    topic = new_topic_name("txn")
    create_topic(broker.bootstrap, topic, PARTITIONS, replication=replication, config=config)
    try:
        deadline = time.monotonic() + timeout
        commits_ms: list[float] = []
        done: list[int] = []
        start = threading.Barrier(producers + 1)
        shares = [records // producers + (i < records % producers) for i in range(producers)]
        threads = [threading.Thread(target=_run_producer, name=f"txn-producer-{i}",
                                    args=(broker.bootstrap, topic, payloads, shares[i], per_txn, deadline,
                                          commits_ms, done, start)) for i in range(producers)]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - t0
    except BaseException:
        delete_topic(broker.bootstrap, topic)
        raise
    committed = sum(done)
    log.info("%s: %d records in %d transactions committed in %.2fs", broker.name, committed, len(commits_ms), seconds)
    return TransactionalResult(ProducedTopic(topic, committed * len(payloads[0]) / seconds / 1e6, committed),
                               LatencyResult(commits_ms, len(commits_ms)))
