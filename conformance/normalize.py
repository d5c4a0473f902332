"""The one place where values that legitimately differ between brokers are normalised before a
decoded response of wirekafka is compared with real Kafka's: node ids, cluster ids, topic ids,
throttle times, ports, hosts, error messages, timestamps the broker stamps."""

from __future__ import annotations

from typing import Any

VOLATILE_KEYS = {
    "throttle_time_ms", "cluster_id", "controller_id", "node_id", "leader_id", "broker_id", "host", "port",
    "topic_id", "error_message", "log_append_time_ms", "session_id", "member_id", "leader", "producer_id",
    "replica_nodes", "isr_nodes", "authorized_operations", "client_host",
}


def normalize(value: Any) -> Any:
    """Recursively replace volatile fields with a placeholder; sort nothing (order matters)."""
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE_KEYS else normalize(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value
