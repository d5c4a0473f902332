#!/usr/bin/env python3
"""Produce/consume throughput and produce latency with confluent-kafka against any bootstrap.

Prints figures only; asserts nothing. Bounded in record count and wall time.

  python scripts/bench.py --bootstrap 127.0.0.1:9092 [--records 200000] [--size 100]

Throughput: one producer (linger 5 ms, batch 1 MB, acks=all, idempotent) sends N records of S bytes;
MB/s is payload bytes over the time from first send to the last delivery report. Consume: one
consumer reads them all back by assign(); MB/s likewise. Latency: records sent one at a time
(acks=all, linger 0), each waiting for its delivery report; p50/p99 of send->ack."""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger("bench")


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def produce_throughput(bootstrap: str, topic: str, n: int, size: int, deadline: float) -> tuple[float, int]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                         "log_level": 3})
    payload = os.urandom(size)
    acked = 0

    def on_delivery(err, _msg) -> None:
        nonlocal acked
        if err is None:
            acked += 1

    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value=payload, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
        if time.monotonic() > deadline:
            break
    producer.flush(max(1.0, deadline - time.monotonic()))
    elapsed = time.perf_counter() - start
    return acked * size / elapsed / 1e6, acked


def consume_throughput(bootstrap: str, topic: str, partitions: int, expected: int, size: int,
                       deadline: float) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "fetch.max.bytes": 50 * 1024 * 1024,
                         "log_level": 3})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    start = time.perf_counter()
    while got < expected and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            if not msg.error():
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return got * size / elapsed / 1e6


def produce_latency(bootstrap: str, topic: str, n: int, size: int, deadline: float) -> list[float]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "log_level": 3})
    payload = os.urandom(size)
    samples: list[float] = []
    for _ in range(n):
        if time.monotonic() > deadline:
            break
        done = []
        t0 = time.perf_counter()
        producer.produce(topic, value=payload, on_delivery=lambda err, msg: done.append(err))
        while not done:
            producer.poll(0.001)
        if done[0] is None:
            samples.append((time.perf_counter() - t0) * 1000)
    producer.flush(5)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--latency-records", type=int, default=2_000)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    create_topic(args.bootstrap, topic, args.partitions)
    deadline = time.monotonic() + args.max_seconds
    mbps, acked = produce_throughput(args.bootstrap, topic, args.records, args.size, deadline)
    cmbps = consume_throughput(args.bootstrap, topic, args.partitions, acked, args.size, deadline + 60)
    lat = produce_latency(args.bootstrap, topic, args.latency_records, args.size,
                          time.monotonic() + 60)
    lat.sort()
    p50 = statistics.median(lat) if lat else float("nan")
    p99 = lat[int(len(lat) * 0.99) - 1] if lat else float("nan")
    label = f"[{args.label}] " if args.label else ""
    log.info("%sbootstrap=%s records=%d size=%dB partitions=%d", label, args.bootstrap, acked, args.size,
             args.partitions)
    log.info("%sproduce throughput: %.1f MB/s (%.0f records/s)", label, mbps, mbps * 1e6 / args.size)
    log.info("%sconsume throughput: %.1f MB/s (%.0f records/s)", label, cmbps, cmbps * 1e6 / args.size)
    log.info("%sproduce latency (acks=all, 1 in flight, %d samples): p50 %.2f ms, p99 %.2f ms", label, len(lat),
             p50, p99)


if __name__ == "__main__":
    main()
