"""Offsets sent to a transaction whose coordinator is not the group's, checked the same way on a
real Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py) and on wirekafka's
(compat-tests/test_cluster.py).

A transactional producer whose transactional id is coordinated by another broker than the
group's sends a consumer's offset to its transaction and commits: TxnOffsetCommit reaches the
group's coordinator, which must verify the transaction with the transaction's coordinator (Kafka's
AddPartitionsToTxnManager); the group then reads the offset back as committed."""

from __future__ import annotations

from types import SimpleNamespace

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from client_support import raw_call
from testsupport.cluster import wait_for

GROUP = "copier"
OFFSET = 42


def _coordinator(address: str, key: str, key_type: int) -> int:
    """The broker FindCoordinator names for a group (0) or a transactional id (1); the first ask
    creates the coordinator's topic, so it waits until that has leaders."""
    broker = SimpleNamespace(port=int(address.rsplit(":", 1)[1]))

    def ask() -> int | None:
        answer = raw_call(broker, FindCoordinatorRequest(version=1, key=key, key_type=key_type), FindCoordinatorResponse)
        return answer.node_id if answer.error_code == 0 else None

    return int(wait_for(ask, 60, f"a coordinator for {key}"))  # type: ignore[arg-type]


def check_txn_offsets_across_coordinators(bootstrap: str, address: str) -> str:
    """`address`: one broker's host:port, asked where the coordinators are."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name in ("txn-offsets-in", "txn-offsets-out"):
        admin.create_topics([NewTopic(name, 1, 3)])[name].result(30)
    group_coordinator = _coordinator(address, GROUP, 0)
    tid = next(t for t in (f"copier-{i}" for i in range(100)) if _coordinator(address, t, 1) != group_coordinator)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 30000})
    producer.init_transactions(60)
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                       "isolation.level": "read_committed"})
    try:
        producer.begin_transaction()
        producer.produce("txn-offsets-out", value=b"copied")
        producer.send_offsets_to_transaction([TopicPartition("txn-offsets-in", 0, OFFSET)],
                                             reader.consumer_group_metadata(), 60)
        producer.commit_transaction(60)
        wait_for(lambda: reader.committed([TopicPartition("txn-offsets-in", 0)], timeout=10)[0].offset == OFFSET,
                 30, "the offset committed with the transaction")
    finally:
        reader.close()
    return (f"group {GROUP} on broker {group_coordinator}, transactional id {tid} on broker "
            f"{_coordinator(address, tid, 1)}: the offset committed with the transaction")
