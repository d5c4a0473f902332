"""A replication-throttled reassignment (`kafka-reassign-partitions --execute --throttle`, then
`--verify`), run the same way on a real Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py)
and on wirekafka's (compat-tests/test_cluster.py): one function, so both are held to the same test.

The tool sets both replication rates on every broker of the move (/config/brokers/<id>), lists the
moving partition's current replicas as leader-throttled and the new one as follower-throttled in
the topic's config, and --verify clears all of it once the move is done. While the throttle holds,
the new replica's copy grows at about the throttled rate: with RECORDS_MB of data and
THROTTLE bytes/s the move takes a few seconds where an unthrottled one takes well under one."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Callable

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from testsupport.cluster import wait_for

THROTTLE = 1_000_000  # bytes/s
RECORDS_MB = 5
# The move starts a moment before the tool exits; from then on, at THROTTLE bytes/s, RECORDS_MB
# MiB take over 4 s. An unthrottled move of them takes well under a second here.
MIN_THROTTLED_SECONDS = 2.5

Tool = Callable[[list[str]], subprocess.CompletedProcess]


def _config(client, path: str) -> bytes:
    return client.get(path)[0]


def _fill(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "compression.type": "none"})
    value = bytes(range(256)) * 40  # 10 KB, incompressible enough not to matter (no compression)
    for i in range(RECORDS_MB * 1024 * 1024 // len(value)):
        producer.produce(topic, value=value, key=b"%06d" % i)
        producer.poll(0)
    assert producer.flush(60) == 0


def check_throttled_reassignment(client, bootstrap: str, reassign: Tool, workdir: Path, source: int,
                                 target: int, topic: str = "throttled", timeout: float = 90.0) -> str:
    """Create `topic` on broker `source` alone, fill it, move it to [source, target] with
    --throttle; check the throttle znodes Kafka 3.9 writes, the move's pace, and --verify's
    clean-up. `client` is a kazoo client on the cluster's chroot. Returns a summary for the
    test output."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[source]])],
                        request_timeout=30)[topic].result(30)
    state_path = f"/brokers/topics/{topic}/partitions/0/state"
    wait_for(lambda: client.exists(state_path), timeout, f"{topic}-0 online")
    _fill(bootstrap, topic)

    plan = workdir / f"{topic}-plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [source, target]}]}))
    run = reassign(["--reassignment-json-file", str(plan), "--execute", "--throttle", str(THROTTLE)])
    started = time.monotonic()
    out = run.stdout if isinstance(run.stdout, str) else run.stdout.decode()
    assert run.returncode == 0, out
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s" in out, out

    rates = json.dumps({"version": 1, "config": {"leader.replication.throttled.rate": str(THROTTLE),
                                                 "follower.replication.throttled.rate": str(THROTTLE)}},
                       separators=(",", ":")).encode()
    for broker in (source, target):
        assert _config(client, f"/config/brokers/{broker}") == rates
    throttled = json.dumps({"version": 1, "config": {
        "leader.replication.throttled.replicas": f"0:{source}",
        "follower.replication.throttled.replicas": f"0:{target}"}}, separators=(",", ":")).encode()
    assert _config(client, f"/config/topics/{topic}") == throttled
    changes = [json.loads(client.get(f"/config/changes/{c}")[0]) for c in client.get_children("/config/changes")]
    for entity in (f"brokers/{source}", f"brokers/{target}", f"topics/{topic}"):
        assert {"version": 2, "entity_path": entity} in changes, changes

    def in_sync() -> bool:
        return sorted(json.loads(client.get(state_path)[0])["isr"]) == sorted([source, target])

    wait_for(in_sync, timeout, f"broker {target} to join {topic}-0's ISR")
    took = time.monotonic() - started
    assert took >= MIN_THROTTLED_SECONDS, f"{RECORDS_MB} MiB replicated in {took:.2f}s at {THROTTLE} B/s"

    def verify() -> str:
        done = reassign(["--reassignment-json-file", str(plan), "--verify"])
        text = done.stdout if isinstance(done.stdout, str) else done.stdout.decode()
        assert done.returncode == 0, text
        return text if "is completed" in text else ""

    verified = wait_for(verify, timeout, "--verify to report the move complete", interval=1.0)
    assert f"Clearing topic-level throttles on topic {topic}" in verified, verified
    empty = b'{"version":1,"config":{}}'
    for broker in (source, target):
        assert _config(client, f"/config/brokers/{broker}") == empty
    assert _config(client, f"/config/topics/{topic}") == empty
    return f"{RECORDS_MB} MiB moved from [{source}] to [{source}, {target}] at {THROTTLE} B/s in {took:.2f}s"
