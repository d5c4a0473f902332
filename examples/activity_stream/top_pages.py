"""Print the current top pages from the compacted counts topic.

Reads the topic from the beginning and keeps the latest value per key (what compaction keeps),
then sums each page's window counts.

    python -m examples.activity_stream.top_pages --bootstrap 127.0.0.1:9092 [--top 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from confluent_kafka import Consumer, TopicPartition


def latest_counts(bootstrap: str, topic: str, timeout: float = 10.0) -> dict[str, dict]:
    """key -> latest value of the counts topic."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "top-pages", "enable.auto.commit": False,
                         "log_level": 3})
    md = consumer.list_topics(topic, timeout=timeout).topics[topic]
    parts = [TopicPartition(topic, p, 0) for p in md.partitions]
    ends = {p.partition: consumer.get_watermark_offsets(p, timeout=timeout)[1] for p in parts}
    consumer.assign(parts)
    latest: dict[str, dict] = {}
    done = {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + timeout
    while len(done) < len(ends) and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        if msg.value() is None:
            latest.pop(msg.key().decode(), None)
        else:
            latest[msg.key().decode()] = json.loads(msg.value())
        if msg.offset() + 1 >= ends[msg.partition()]:
            done.add(msg.partition())
    consumer.close()
    return latest


def top_pages(latest: dict[str, dict], n: int) -> list[tuple[str, int]]:
    totals: Counter[str] = Counter()
    for value in latest.values():
        totals[value["page"]] += value["count"]
    return totals.most_common(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--topic", default="page-view-counts")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    latest = latest_counts(args.bootstrap, args.topic)
    print(f"{'page':<16} views   ({len(latest)} page/window counts)")
    for page, views in top_pages(latest, args.top):
        print(f"{page:<16} {views}")


if __name__ == "__main__":
    main()
