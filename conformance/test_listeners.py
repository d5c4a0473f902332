"""Two listeners on one broker: each connection is answered with the brokers' endpoints on the
listener it came in on — Metadata's broker list, FindCoordinator's node and DescribeCluster's
brokers — as Kafka's broker answers them (its metadata cache looks them up by the request's
listener name). Clients that bootstrap on either listener then stay on it.

The pair is this module's own: wirekafka and Kafka 4.3.1 each with a PLAINTEXT and an INTERNAL
listener (both plain TCP), INTERNAL the inter-broker one. Comparisons ignore port values (each
side has its own), so every scenario also checks the ports against the listener's."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.cluster import DescribeClusterRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.harness.wire import Connection, create_topic, metadata, retry_transient, unique

LISTENER_MAP = "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"


def _settings(plaintext: int, internal: int) -> dict[str, str]:
    return {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{plaintext},INTERNAL://127.0.0.1:{internal}",
            "listener.security.protocol.map": LISTENER_MAP, "inter.broker.listener.name": "INTERNAL"}


own_wirekafka, own_kafka, target = own_two_listener_pair("INTERNAL", _settings)


def _brokers(response: Any) -> list[tuple[int, str, int]]:
    return [(b.node_id, b.host, b.port) for b in response.brokers]


def test_metadata_lists_each_broker_on_the_requests_listener(target):
    topic = unique("listeners")
    with Connection(target.bootstrap(target.plaintext)) as conn:
        create_topic(conn, topic, partitions=2)
    for port in (target.plaintext, target.second):
        with Connection(target.bootstrap(port)) as conn:
            answer = metadata(conn, [topic], version=12)
            assert [(host, p) for _node, host, p in _brokers(answer)] == [("127.0.0.1", port)]
            assert [t.error_code for t in answer.topics] == [0]
            assert sorted(p.error_code for p in answer.topics[0].partitions) == [0, 0]


def test_find_coordinator_names_the_node_on_the_requests_listener(target):
    group = unique("listeners-group")
    for port in (target.second, target.plaintext):
        with Connection(target.bootstrap(port)) as conn:
            answer = retry_transient(lambda: conn.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4),
                                     lambda r: r.coordinators[0].error_code)
            assert [(c.error_code, c.host, c.port) for c in answer.coordinators] == [(0, "127.0.0.1", port)]
            legacy = retry_transient(lambda: conn.call(FindCoordinatorRequest(key_type=0, key=group), 3),
                                     lambda r: r.error_code)
            assert (legacy.error_code, legacy.host, legacy.port) == (0, "127.0.0.1", port)


def test_describe_cluster_lists_the_brokers_on_the_requests_listener(target):
    for port in (target.plaintext, target.second):
        with Connection(target.bootstrap(port)) as conn:
            answer = conn.call(DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                      endpoint_type=1, include_fenced_brokers=False), 1)
            assert answer.error_code == 0
            assert [(host, p) for _node, host, p in _brokers_of_cluster(answer)] == [("127.0.0.1", port)]


def _brokers_of_cluster(response: Any) -> list[tuple[int, str, int]]:
    return [(b.broker_id, b.host, b.port) for b in response.brokers]
