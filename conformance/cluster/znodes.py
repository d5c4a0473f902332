"""The ZooKeeper data of a cluster in Kafka 3.9's shapes, checked the same way for a real Kafka 3.9
cluster (compat-tests/test_zookeeper_launcher.py) and for wirekafka's (compat-tests/test_cluster.py):
one function, so both are held to the same test."""

from __future__ import annotations

import json
import re

BROKER_KEYS = {"features", "listener_security_protocol_map", "endpoints", "jmx_port", "port", "host", "version",
               "timestamp"}
CONTROLLER_KEYS = {"version", "brokerid", "timestamp", "kraftControllerEpoch"}
TOPIC_KEYS = {"partitions", "topic_id", "adding_replicas", "removing_replicas", "version"}
STATE_KEYS = {"controller_epoch", "leader", "version", "leader_epoch", "isr"}


def check_kafka39_znodes(client, brokers: dict[int, int], topic: str, cluster_id: str,
                         topic_config: dict[str, str]) -> str:
    """Assert the registry, controller, cluster id and a freshly created RF=3, one-partition
    topic's znodes have Kafka 3.9's exact shapes; brokers maps broker id -> port. Returns the raw
    znodes as text (for the assertion messages and the test output)."""
    state_path = f"/brokers/topics/{topic}/partitions/0/state"
    paths = [f"/brokers/ids/{b}" for b in brokers] + [
        "/controller", "/controller_epoch", "/cluster/id", f"/brokers/topics/{topic}", state_path,
        f"/config/topics/{topic}"]
    raw: dict[str, str] = {}
    ephemeral: dict[str, bool] = {}
    for path in paths:
        data, stat = client.get(path)
        raw[path] = data.decode()
        ephemeral[path] = stat.ephemeralOwner != 0
    seen = "\n".join(f"{p} ({'ephemeral' if ephemeral[p] else 'persistent'}): {raw[p]}" for p in raw)
    parsed = {p: json.loads(v) for p, v in raw.items()}

    for broker_id, port in brokers.items():
        reg = parsed[f"/brokers/ids/{broker_id}"]
        assert set(reg) == BROKER_KEYS and ephemeral[f"/brokers/ids/{broker_id}"], seen
        assert reg["version"] == 5, seen
        assert reg["host"] == "127.0.0.1" and reg["port"] == port, seen
        assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"], seen
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}, seen
        assert reg["jmx_port"] == -1 and reg["features"] == {}, seen
        assert isinstance(reg["timestamp"], str) and reg["timestamp"].isdigit(), seen
        assert raw[f"/brokers/ids/{broker_id}"].startswith('{"features":{},"listener_security_protocol_map"'), seen

    controller = parsed["/controller"]
    assert set(controller) == CONTROLLER_KEYS and ephemeral["/controller"], seen
    assert controller["version"] == 2 and controller["brokerid"] in brokers, seen
    assert controller["kraftControllerEpoch"] == -1, seen
    assert isinstance(controller["timestamp"], str) and controller["timestamp"].isdigit(), seen
    assert re.fullmatch(r"[1-9]\d*", raw["/controller_epoch"]), seen  # a bare integer, not JSON
    assert parsed["/cluster/id"] == {"version": "1", "id": cluster_id}, seen

    assignment = parsed[f"/brokers/topics/{topic}"]
    assert set(assignment) == TOPIC_KEYS and assignment["version"] == 3, seen
    assert sorted(assignment["partitions"]["0"]) == sorted(brokers)[:3], seen
    assert list(assignment["partitions"]) == ["0"], seen
    assert assignment["adding_replicas"] == {} and assignment["removing_replicas"] == {}, seen
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", assignment["topic_id"]), seen

    state = parsed[state_path]
    assert set(state) == STATE_KEYS and state["version"] == 1, seen
    assert state["leader"] == assignment["partitions"]["0"][0], seen  # the preferred leader
    assert state["leader_epoch"] == 0, seen
    assert state["controller_epoch"] == int(raw["/controller_epoch"]), seen
    assert sorted(state["isr"]) == sorted(assignment["partitions"]["0"]), seen
    assert raw[state_path].startswith('{"controller_epoch":'), seen

    assert parsed[f"/config/topics/{topic}"] == {"version": 1, "config": topic_config}, seen
    return seen
