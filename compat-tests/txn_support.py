"""The transaction scenario every client's transaction tests share, and its expected log.

A producer of the client under test writes, to a topic of two partitions: transaction 1 commits
committed-0..9 (record i to partition i % 2); transaction 2 writes aborted-0..4 the same way and
aborts once they are in the log; transaction 3 commits end-0 and end-1. Each transaction ends
with a one-offset COMMIT/ABORT marker in each of its partitions, so the offsets are the same on
every broker and the tests can assert them exactly. A reader stops once it has the end record
of every partition (offsets in LAST): it never waits for a quiet period, and anything a
read_committed reader wrongly returned would come before that record."""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

Read = tuple[int, int, bytes]  # (partition, offset, value)

PARTITIONS = 2
COMMITTED: list[Read] = [(i % 2, i // 2, b"committed-%d" % i) for i in range(10)]  # markers at offset 5
ABORTED: list[Read] = [(0, 6, b"aborted-0"), (0, 7, b"aborted-2"), (0, 8, b"aborted-4"),
                       (1, 6, b"aborted-1"), (1, 7, b"aborted-3")]  # markers at 9 and 8
ENDS: list[Read] = [(0, 10, b"end-0"), (1, 9, b"end-1")]  # markers at 11 and 10
LAST: dict[int, int] = {0: 10, 1: 9}
# End offsets (ListOffsets LATEST) while transaction 2 is open with its records in the log: its
# first offset (the last stable offset) for read_committed, the high watermark otherwise.
OPEN_ENDS: dict[str, dict[int, int]] = {"read_committed": {0: 6, 1: 6}, "read_uncommitted": {0: 9, 1: 8}}
LOG_END: dict[int, int] = {0: 12, 1: 11}  # high watermark (and last stable offset) afterwards


def create_topics(bootstrap: str, *topics: tuple[str, int]) -> None:
    """Create (name, partitions) topics with replication factor 1."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka")})
    for future in admin.create_topics([NewTopic(t, p, 1) for t, p in topics]).values():
        future.result(30)


def settled_end(bootstrap: str, topic: str, partition: int, expected: int | None = None,
                timeout: float = 10.0) -> int:
    """The partition's high watermark once no transaction is open in it (the last stable offset
    has caught up) and, if given, it is `expected`; asked again until then (bounded). Kafka
    answers EndTxn once the decision is durable and writes the markers afterwards, so a marker
    can land a moment after commit_transaction() returned: a test that needs it in the log (for
    the next producer's offsets, or to compare the two ends) waits here."""
    ends = {isolation: Consumer({"bootstrap.servers": bootstrap, "group.id": f"settled-{topic}",
                                 "isolation.level": isolation, "logger": logging.getLogger("librdkafka")})
            for isolation in ("read_uncommitted", "read_committed")}
    tp = TopicPartition(topic, partition)
    deadline = time.monotonic() + timeout
    try:
        while True:
            high = ends["read_uncommitted"].get_watermark_offsets(tp, timeout=10)[1]
            stable = ends["read_committed"].get_watermark_offsets(tp, timeout=10)[1]
            if stable == high and expected in (None, high):
                return high
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}-{partition}: last stable offset {stable}, high watermark {high}, "
                                     f"expected {expected}")
            time.sleep(0.1)
    finally:
        for consumer in ends.values():
            consumer.close()


def check_commit_and_abort(committed: list[Read], uncommitted: list[Read]) -> None:
    """read_committed returned the committed records only; read_uncommitted every record."""
    assert sorted(committed) == sorted(COMMITTED + ENDS)
    assert sorted(uncommitted) == sorted(COMMITTED + ABORTED + ENDS)


def write_with_confluent(bootstrap: str, topic: str) -> None:
    """The scenario, written by a confluent-kafka (librdkafka) transactional producer: for
    tests whose client under test only reads."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}",
                         "transaction.timeout.ms": 60000, "logger": logging.getLogger("librdkafka")})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=b"committed-%d" % i, partition=i % 2)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=b"aborted-%d" % i, partition=i % 2)
    assert producer.flush(30) == 0  # in the log before the abort
    producer.abort_transaction(30)
    producer.begin_transaction()
    for p in range(PARTITIONS):
        producer.produce(topic, value=b"end-%d" % p, partition=p)
    producer.commit_transaction(30)


def read_values(bootstrap: str, topic: str, isolation: str, expected: int, partitions: int = 1,
                timeout: float = 20.0) -> list[bytes]:
    """Values a confluent-kafka consumer with `isolation` reads from the start of every partition,
    until `expected` arrived and every partition reported its end (bounded by timeout)."""
    c = Consumer({"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka"),
                  "group.id": f"reader-{topic}-{isolation}", "isolation.level": isolation,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and (len(values) < expected or len(at_end) < partitions):
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(msg.partition())
                    continue
                raise KafkaException(msg.error())
            at_end.discard(msg.partition())
            values.append(msg.value())
    finally:
        c.close()
    return values
