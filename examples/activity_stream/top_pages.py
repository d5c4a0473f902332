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


def latest_counts(bootstrap: str, topic: str, timeout: float = 30.0) -> dict[str, dict]:
    """key -> latest value of the counts topic, read from the log start to the end offsets the
    topic has when called (a tombstone removes its key, as compaction eventually would)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "top-pages", "enable.auto.commit": False,
                         "log_level": 0})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        bounds = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout) for p in partitions}
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in bounds.items()])
        pending = {p for p, (low, high) in bounds.items() if high > low}
        latest: dict[str, dict] = {}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            if msg.value() is None:
                latest.pop(msg.key().decode(), None)
            else:
                latest[msg.key().decode()] = json.loads(msg.value())
            if msg.offset() + 1 >= bounds[msg.partition()][1]:
                pending.discard(msg.partition())
        if pending:
            raise TimeoutError(f"could not read {topic} to its end offsets {bounds} within {timeout}s")
        return latest
    finally:
        consumer.close()


def top_pages(latest: dict[str, dict], n: int) -> list[tuple[str, int]]:
    totals: Counter[str] = Counter()
    for value in latest.values():
        totals[value["page"]] += value["count"]
    return totals.most_common(n)


def render(latest: dict[str, dict], n: int) -> str:
    lines = [f"{'page':<16} views   ({len(latest)} page/window counts)"]
    lines += [f"{page:<16} {views}" for page, views in top_pages(latest, n)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--topic", default="page-view-counts")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    print(render(latest_counts(args.bootstrap, args.topic), args.top))


if __name__ == "__main__":
    main()
