"""Produce page-view events (user, page, event time) keyed by user into a topic.

Deterministic for a given --seed/--count/--start, so a test knows the exact answer:
event i is at start + i * --spacing-ms, user "user{i % 37}", page PAGES[(i % 13 + seed) % len(PAGES)]
(so the pages are not equally popular).

    python -m examples.activity_stream.generator --bootstrap 127.0.0.1:9092 --count 600
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger("activity_stream.generator")
PAGES = ["/home", "/search", "/cart", "/checkout", "/product/42"]


@dataclass(frozen=True)
class PageView:
    user: str
    page: str
    ts: int  # event time, epoch milliseconds


def events(count: int, start_ms: int, spacing_ms: int = 300, seed: int = 0, offset: int = 0) -> Iterator[PageView]:
    for i in range(offset, offset + count):
        yield PageView(f"user{i % 37}", PAGES[(i % 13 + seed) % len(PAGES)], start_ms + i * spacing_ms)


def ensure_topic(bootstrap: str, topic: str, partitions: int = 3, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=configs or {})])
    try:
        futures[topic].result(30)
    except Exception as exc:  # an existing topic is fine
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def produce(bootstrap: str, topic: str, views: Iterator[PageView]) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "log_level": 0})
    n = 0
    for v in views:
        producer.produce(topic, key=v.user.encode(), timestamp=v.ts,
                         value=json.dumps({"user": v.user, "page": v.page, "ts": v.ts}).encode())
        n += 1
        if n % 1000 == 0:
            producer.poll(0)
    if producer.flush(30):
        raise RuntimeError("not every page view was acknowledged")
    return n


def default_start() -> int:
    """Ten minutes ago, on a minute boundary (inside the broker's accepted timestamp range)."""
    return (int(time.time()) // 60 - 10) * 60_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--topic", default="page-views")
    ap.add_argument("--count", type=int, default=600)
    ap.add_argument("--offset", type=int, default=0, help="index of the first event (to continue a series)")
    ap.add_argument("--start-ms", type=int, default=None)
    ap.add_argument("--spacing-ms", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ensure_topic(args.bootstrap, args.topic)
    start = args.start_ms if args.start_ms is not None else default_start()
    n = produce(args.bootstrap, args.topic, events(args.count, start, args.spacing_ms, args.seed, args.offset))
    log.info("produced %d page views to %s (event times from %d)", n, args.topic, start)


if __name__ == "__main__":
    main()
