"""A confluent-kafka group consumer run as its own process, so a test can SIGKILL it.

Prints one JSON line per event to stdout: {"assigned": [...]}, {"record": [partition, offset]},
{"committed": [[partition, offset], ...]} (the partitions that commit wrote). Commits synchronously
after every `--commit-every` records. Stops after --seconds."""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import Consumer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--commit-every", type=int, default=10)
    ap.add_argument("--instance-id", default=None)
    args = ap.parse_args()
    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "log_level": 3}
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id

    def emit(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    consumer = Consumer(conf)
    consumer.subscribe([args.topic], on_assign=lambda c, ps: emit({"assigned": sorted(p.partition for p in ps)}))
    deadline = time.monotonic() + args.seconds
    since_commit = 0
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        emit({"record": [msg.partition(), msg.offset()]})
        since_commit += 1
        if since_commit >= args.commit_every:
            done = consumer.commit(asynchronous=False)
            # librdkafka lists every assigned partition, with offset -1001 (OFFSET_INVALID) for one
            # whose position did not move since the last commit: nothing was committed for it.
            emit({"committed": [[tp.partition, tp.offset] for tp in done if tp.offset >= 0]})
            since_commit = 0
    consumer.close()


if __name__ == "__main__":
    main()
