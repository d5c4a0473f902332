"""The nemesis suite's workload: an idempotent acks=all producer that logs every acknowledgement,
a consumer group that logs what it receives and commits, and a read-back of the whole topic once the faults healed (read_committed for the copy job's
output, faults/copy_job.py)."""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from faults.checkers import Ack, Commit, Delivery
from testsupport.watermarks import high_watermarks

log = logging.getLogger(__name__)
_LIBRDKAFKA = logging.getLogger("librdkafka")


class AckingProducer(threading.Thread):
    """Writes numbered values round-robin over the partitions at about `rate` a second, each
    acknowledgement logged as (partition, offset, value); what fails is only counted (a write
    that was never acknowledged may or may not be stored)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float) -> None:
        super().__init__(name=f"acking-producer-{topic}", daemon=True)
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "logger": _LIBRDKAFKA})
        self.acks: list[Ack] = []
        self.failed = 0
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def _delivered(self, err, msg) -> None:
        with self._lock:
            if err is None:
                self.acks.append((msg.partition(), msg.offset(), msg.value()))
            else:
                self.failed += 1

    def run(self) -> None:
        seq = 0
        start = time.monotonic()
        while not self._halt.is_set():
            due = start + seq / self.rate
            if time.monotonic() < due:
                self.producer.poll(max(0.0, min(due - time.monotonic(), 0.05)))  # never negative: -1 waits forever
                continue
            self.producer.produce(self.topic, value=b"v%09d" % seq, partition=seq % self.partitions,
                                  on_delivery=self._delivered)
            self.producer.poll(0)
            seq += 1

    def finish(self, timeout: float) -> int:
        """Stop writing and wait for the outstanding acknowledgements; how many are left."""
        self._halt.set()
        self.join(10)
        return self.producer.flush(timeout)


def read_back(bootstrap: str, topic: str, partitions: int,
              timeout: float) -> tuple[dict[tuple[int, int], bytes], dict[int, int]]:
    """Every record of the topic up to each partition's high watermark, by (partition, offset),
    and each partition's high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"nemesis-reader-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": False, "logger": _LIBRDKAFKA})
    try:
        ends = high_watermarks(consumer, topic, range(partitions))
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + timeout
        while any(len([k for k in got if k[0] == p]) < end for p, end in ends.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read back {len(got)} of {sum(ends.values())} records of {topic}")
            for msg in consumer.consume(500, 1.0):
                if msg.error() is None:
                    got[(msg.partition(), msg.offset())] = msg.value()
        return got, ends
    finally:
        consumer.close()


def read_committed(bootstrap: str, topic: str, partitions: int, timeout: float) -> list[bytes]:
    """Every value a read_committed consumer returns from the start of each partition, once per
    offset, read until it reports the end of each at the high watermark or beyond: the last stable
    offset caught up, so no transaction is left open (a hanging one is a TimeoutError here). A
    record returned twice at one offset (the client fetching a range again, after a leader change
    say) is one record; a value at two offsets is two, which the exactly-once check counts."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"nemesis-committed-reader-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed", "logger": _LIBRDKAFKA})
    try:
        ends = high_watermarks(consumer, topic, range(partitions))
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        values: dict[tuple[int, int], bytes] = {}
        reached: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout
        while len(reached) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read_committed of {topic} reached the end of {sorted(reached)} only "
                                   f"(high watermarks {ends}): a transaction left open?")
            for msg in consumer.consume(500, 1.0):
                error = msg.error()
                if error is None:
                    values[(msg.partition(), msg.offset())] = msg.value()
                elif error.code() == KafkaError._PARTITION_EOF and msg.offset() >= ends[msg.partition()]:
                    reached.add(msg.partition())
        return list(values.values())
    finally:
        consumer.close()


class ConsumerGroup:
    """A consumer group of `members` confluent-kafka consumers, one thread each, subscribed to the
    topic, with auto commit off: each commits, synchronously, the offsets of what it processed
    (received and logged), after every few records and when its partitions are revoked, so a
    rebalance never makes it commit in a generation whose partitions are not its own. A consumer
    whose client fails is closed and made again (it rejoins). Every received record and every
    commit seen to succeed (with when it was sent and answered) is logged for
    faults.checkers.judge_group."""

    def __init__(self, bootstrap: str, topic: str, members: int = 3, commit_every: int = 50) -> None:
        self.bootstrap, self.topic, self.commit_every = bootstrap, topic, commit_every
        self.group_id = f"nemesis-group-{topic}"
        self.deliveries: set[Delivery] = set()
        self.delivered = 0
        self.commits: list[Commit] = []
        self.rejoins = 0
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._threads = [threading.Thread(target=self._member, args=(n,), name=f"group-member-{n}-{topic}",
                                          daemon=True) for n in range(members)]

    def start(self) -> "ConsumerGroup":
        for thread in self._threads:
            thread.start()
        return self

    def committed_by_members(self) -> dict[int, int]:
        """The highest offset committed per partition, as the members saw it succeed."""
        with self._lock:
            highest: dict[int, int] = {}
            for partition, offset, _, _ in self.commits:
                highest[partition] = max(offset, highest.get(partition, -1))
            return highest

    def drain(self, ends: dict[int, int], timeout: float) -> bool:
        """Wait until the members committed each partition up to `ends` (its high watermark once
        the producer stopped); whether they got there within timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            committed = self.committed_by_members()
            if all(committed.get(p, 0) >= end for p, end in ends.items()):
                return True
            time.sleep(0.2)
        log.error("consumer group %s committed %s of %s after %gs", self.group_id, self.committed_by_members(),
                  ends, timeout)
        return False

    def stop(self, timeout: float = 90) -> list[str]:
        """Stop the members and wait for them (a synchronous commit is bounded by the client's
        socket.timeout.ms, 60 s); the members still running after timeout, left behind (daemon
        threads) with a warning: a librdkafka call that never returns (a close during a
        rebalance, seen once in a 200-fault run) is the client's, not a finding on the broker,
        and what the members recorded is judged all the same (`recorded`)."""
        self._halt.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck:
            log.warning("consumer group members %s did not stop in %gs (a client call that never returned); "
                        "judging what they recorded", stuck, timeout)
        return stuck

    def recorded(self) -> tuple[set[Delivery], int, list[Commit], int]:
        """What the members recorded, copied under the lock (a member left running may add to it):
        deliveries, records delivered, commits seen to succeed, rejoins."""
        with self._lock:
            return set(self.deliveries), self.delivered, list(self.commits), self.rejoins

    def final_offsets(self, partitions: int, timeout: float = 30) -> dict[int, int]:
        """The group's committed offsets as the coordinator now answers them (a client that asks,
        without joining the group)."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group_id,
                             "enable.auto.commit": False, "logger": _LIBRDKAFKA})
        try:
            answer = consumer.committed([TopicPartition(self.topic, p) for p in range(partitions)], timeout=timeout)
            return {tp.partition: tp.offset for tp in answer}
        finally:
            consumer.close()

    def _member(self, n: int) -> None:
        while not self._halt.is_set():
            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group_id,
                                 "client.id": f"{self.group_id}-{n}", "enable.auto.commit": False,
                                 "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                                 "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
                                 "enable.partition.eof": False, "logger": _LIBRDKAFKA})
            pending: dict[int, int] = {}  # processed, not yet committed: partition -> next offset

            def revoked(consumer: Consumer, partitions: list[TopicPartition]) -> None:
                # still in the generation that owned them: commit what was processed, then forget it
                self._commit(consumer, {tp.partition: pending.pop(tp.partition) for tp in partitions
                                        if tp.partition in pending})

            try:
                consumer.subscribe([self.topic], on_revoke=revoked, on_lost=lambda c, ps: pending.clear())
                since_commit = 0
                last_commit = time.monotonic()
                while not self._halt.is_set():
                    msg = consumer.poll(0.2)
                    if msg is not None:
                        error = msg.error()
                        if error is not None:
                            if error.fatal():
                                raise KafkaException(error)
                            continue
                        with self._lock:
                            self.deliveries.add((msg.partition(), msg.offset(), msg.value()))
                            self.delivered += 1
                        pending[msg.partition()] = msg.offset() + 1
                        since_commit += 1
                    if pending and (since_commit >= self.commit_every or time.monotonic() - last_commit > 0.5):
                        self._commit(consumer, dict(pending))
                        pending.clear()
                        since_commit, last_commit = 0, time.monotonic()
            except KafkaException as exc:
                log.warning("group member %d of %s: %s; rejoining", n, self.group_id, exc)
                with self._lock:
                    self.rejoins += 1
            finally:
                consumer.close()

    def _commit(self, consumer: Consumer, offsets: dict[int, int]) -> None:
        """Commit synchronously; log each partition the answer says was committed. A failed commit
        (a rebalance, the coordinator moving) is only logged: what it covered is read again by
        whoever owns the partition next, or committed by this member's next commit."""
        if not offsets:
            return
        sent = time.monotonic()
        try:
            answer = consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                                     asynchronous=False)
        except KafkaException as exc:
            log.info("group %s: commit of %s failed: %s", self.group_id, offsets, exc)
            return
        answered = time.monotonic()
        with self._lock:
            for tp in answer or ():
                if tp.error is None and tp.offset >= 0:
                    self.commits.append((tp.partition, tp.offset, sent, answered))
