"""The nemesis suite's workload: an idempotent acks=all producer that logs every acknowledgement,
and a read-back of the whole topic once the faults healed (read_committed for the copy job's
output, faults/copy_job.py)."""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from faults.checkers import Ack

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
                self.producer.poll(min(due - time.monotonic(), 0.05))
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
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
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
    """Every value a read_committed consumer returns from the start of each partition, read until
    it reports the end of each at the high watermark or beyond: the last stable offset caught up,
    so no transaction is left open (a hanging one is a TimeoutError here)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"nemesis-committed-reader-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed", "logger": _LIBRDKAFKA})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        values: list[bytes] = []
        reached: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout
        while len(reached) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read_committed of {topic} reached the end of {sorted(reached)} only "
                                   f"(high watermarks {ends}): a transaction left open?")
            for msg in consumer.consume(500, 1.0):
                error = msg.error()
                if error is None:
                    values.append(msg.value())
                elif error.code() == KafkaError._PARTITION_EOF and msg.offset() >= ends[msg.partition()]:
                    reached.add(msg.partition())
        return values
    finally:
        consumer.close()
