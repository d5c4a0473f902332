"""FindCoordinator when the internal topic it must create cannot be created, checked the same way on
a real Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py) and on wirekafka's
(compat-tests/test_cluster.py): neither __consumer_offsets nor __transaction_state exists yet, and
fewer brokers are alive than their replication factor (3). Kafka answers COORDINATOR_NOT_AVAILABLE
with no node (KafkaApis' getCoordinator, for any error creating the topic), in each key's own entry
from v4 on, and clients keep looking. wirekafka once let the error escape to its generic answer,
which has no entry for the key: Java's producer read that as coordinator node 0 at ":0" and its I/O
thread failed (found by the nemesis suite's copy job, whose first lookup came while a broker was down)."""

from __future__ import annotations

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kazoo.client import KazooClient

from conformance.harness.wire import Connection
from testsupport.cluster import wait_for
from wirekafka.protocol.errors import ErrorCode

GROUP, TRANSACTION = 0, 1
NOT_AVAILABLE = (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1)


def check_coordinator_unavailable(zk: KazooClient, address: str, live_brokers: int) -> str:
    """address: a live broker; live_brokers: how many are up (fewer than the internal topics'
    replication factors, offsets.topic.replication.factor and transaction.state.log.replication.factor)."""
    assert zk.exists("/brokers/topics/__consumer_offsets") is None
    assert zk.exists("/brokers/topics/__transaction_state") is None

    def knows_live_brokers() -> bool:
        with Connection(address) as conn:
            return len(conn.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12).brokers) == live_brokers

    wait_for(knows_live_brokers, 60, f"{address} seeing {live_brokers} live brokers")
    with Connection(address) as conn:
        for key_type in (GROUP, TRANSACTION):
            keys = [f"unavailable-{key_type}-a", f"unavailable-{key_type}-b"]
            batched = conn.call(FindCoordinatorRequest(key="", key_type=key_type, coordinator_keys=keys), 4)
            assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in batched.coordinators] == [
                (k, *NOT_AVAILABLE) for k in keys], batched
            single = conn.call(FindCoordinatorRequest(key=keys[0], key_type=key_type), 3)
            assert (single.error_code, single.node_id, single.host, single.port) == NOT_AVAILABLE, single
    assert zk.exists("/brokers/topics/__consumer_offsets") is None
    assert zk.exists("/brokers/topics/__transaction_state") is None
    return "FindCoordinator v3 and v4: COORDINATOR_NOT_AVAILABLE, no node, for group and transaction keys"
