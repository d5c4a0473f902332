"""The legacy admin znodes, /admin/reassign_partitions and /admin/preferred_replica_election
(how tools asked the controller before KIP-455 and ElectLeaders), exercised the same way on a real
Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py) and on wirekafka's
(compat-tests/test_cluster.py): one function, so both are held to the same test."""

from __future__ import annotations

import json

from testsupport.cluster import wait_for

REASSIGN = "/admin/reassign_partitions"
ELECTION = "/admin/preferred_replica_election"
MISSING_TOPIC = "no-such-topic"


def check_legacy_admin_znodes(client, topic: str, timeout: float = 60.0) -> str:
    """For a one-partition topic whose replicas are all in sync: ask through REASSIGN for two of
    them, the current leader second (and to move a partition that does not exist); the controller
    moves it and deletes the znode. Then ask through ELECTION for the preferred leader (and one of a
    partition that does not exist); the first replica leads and the znode is deleted, as it is when
its data is not JSON. Returns the
    partition states seen, for the test output."""
    state_path = f"/brokers/topics/{topic}/partitions/0/state"

    def state() -> dict:
        return json.loads(client.get(state_path)[0])

    def state_when(holds) -> dict | None:
        current = state()
        return current if holds(current) else None

    before = state()
    leader = before["leader"]
    other = next(r for r in json.loads(client.get(f"/brokers/topics/{topic}")[0])["partitions"]["0"]
                 if r != leader and r in before["isr"])
    target = [other, leader]
    client.create(REASSIGN, json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": target},
        {"topic": MISSING_TOPIC, "partition": 0, "replicas": [leader]}]}).encode())
    wait_for(lambda: client.exists(REASSIGN) is None, timeout, f"the controller to delete {REASSIGN}")
    assignment = json.loads(client.get(f"/brokers/topics/{topic}")[0])
    assert assignment["partitions"] == {"0": target}, assignment
    assert assignment["adding_replicas"] == {} and assignment["removing_replicas"] == {}, assignment
    moved = wait_for(lambda: state_when(lambda s: sorted(s["isr"]) == sorted(target)), timeout,
                     f"the ISR to become {target}")
    assert moved["leader"] == leader and moved["leader_epoch"] > before["leader_epoch"], (before, moved)
    assert client.exists(f"/brokers/topics/{MISSING_TOPIC}") is None

    client.create(ELECTION, json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0}, {"topic": MISSING_TOPIC, "partition": 0}]}).encode())
    wait_for(lambda: client.exists(ELECTION) is None, timeout, f"the controller to delete {ELECTION}")
    elected = wait_for(lambda: state_when(lambda s: s["leader"] == other), timeout,
                       f"broker {other} (preferred) to lead")
    assert sorted(elected["isr"]) == sorted(target) and elected["leader_epoch"] > moved["leader_epoch"], elected
    client.create(ELECTION, b"not json")  # read as no partitions: deleted all the same
    wait_for(lambda: client.exists(ELECTION) is None, timeout, f"the controller to delete an invalid {ELECTION}")
    assert state() == elected
    return f"before: {before}\nafter {REASSIGN} {target}: {moved}\nafter {ELECTION}: {elected}"
