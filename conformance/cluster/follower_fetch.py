"""Fetching from the closest replica (KIP-392), checked the same way on a real Kafka 3.9 cluster
(compat-tests/test_zookeeper_launcher.py) and on wirekafka's (compat-tests/test_cluster.py): one
function, so both are held to the same test.

The brokers sit in racks RACKS (broker n in RACKS[n]) with replica.selector.class set to Kafka's
RackAwareReplicaSelector. A consumer's Fetch v11+ carries its rack: the leader answers one from a
follower's rack with that follower as preferred_read_replica and no records; the follower then
serves it up to its own high watermark. Without a rack, from the leader's rack, from a rack no
replica is in, or with a Fetch older than v11, the leader serves and followers refuse."""

from __future__ import annotations

import json
from types import SimpleNamespace

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from client_support import raw_call
from testsupport.cluster import wait_for
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode

RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
SELECTOR = {"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"}
COUNT = 20


def rack_overrides(node: int) -> dict[str, str]:
    return {"broker.rack": RACKS[node], **SELECTOR}


def _fetch(address: str, topic: str, rack: str | None, offset: int = 0, version: int = 11):
    T = FetchRequest.FetchTopic
    fields = dict(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                  session_epoch=-1, forgotten_topics_data=[],
                  topics=[T(topic=topic, partitions=[T.FetchPartition(
                      partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                      partition_max_bytes=1 << 20)])])
    if rack is not None:
        fields["rack_id"] = rack
    port = int(address.rsplit(":", 1)[1])
    response = raw_call(SimpleNamespace(port=port), FetchRequest(version=version, **fields), FetchResponse)
    return response.responses[0].partitions[0]


def _count(data: bytes | None) -> int:
    view = memoryview(data or b"")
    return sum(records.check_integrity(view[a:b]).last_offset_delta + 1 for a, b in records.split_batches(view))


def check_follower_fetch(client, bootstrap: str, addresses: dict[int, str], topic: str = "nearby") -> str:
    """`client`: kazoo on the cluster's chroot; `addresses`: each broker's host:port. Creates
    `topic` on replicas [1, 2, 3] (broker 1 leads) and checks the fetches above. Returns a summary."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2, 3]])],
                        request_timeout=30)[topic].result(30)
    state_path = f"/brokers/topics/{topic}/partitions/0/state"

    def full_isr() -> bool:
        return client.exists(state_path) is not None and sorted(json.loads(client.get(state_path)[0])["isr"]) == [1, 2, 3]

    wait_for(full_isr, 60, f"{topic}-0 with 3 in-sync replicas")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(COUNT):
        producer.produce(topic, value=b"v%02d" % i)
    assert producer.flush(30) == 0
    leader, follower = addresses[1], addresses[3]

    # the leader knows the followers' log ends from their next fetches: poll until it redirects
    sent = wait_for(lambda: (p := _fetch(leader, topic, RACKS[3])).preferred_read_replica == 3 and p, 30,
                    "the leader to send a rack-c consumer to broker 3")
    assert (sent.error_code, sent.high_watermark, _count(sent.records)) == (0, COUNT, 0)
    for rack in (RACKS[1], "", "rack-z"):  # the leader's rack, no rack, a rack with no replica
        own = _fetch(leader, topic, rack)
        assert (own.error_code, own.preferred_read_replica, _count(own.records)) == (0, -1, COUNT), rack
    old = _fetch(leader, topic, None, version=10)
    assert (old.error_code, old.preferred_read_replica, _count(old.records)) == (0, -1, COUNT)

    served = wait_for(lambda: (p := _fetch(follower, topic, RACKS[3])).high_watermark == COUNT and p, 30,
                      "broker 3's high watermark to reach the leader's")
    assert (served.error_code, served.preferred_read_replica, _count(served.records)) == (0, -1, COUNT)
    assert _fetch(follower, topic, "", offset=5).error_code == 0  # any v11+ consumer, from any offset it holds
    assert _fetch(follower, topic, RACKS[3], offset=COUNT + 100).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert _fetch(follower, topic, None, version=10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "client.rack": RACKS[3],
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values = []
    try:
        def drained() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
            return len(values) >= COUNT

        wait_for(drained, 60, f"a rack-c consumer to read {COUNT} records", interval=0)
    finally:
        consumer.close()
    assert values == [b"v%02d" % i for i in range(COUNT)]
    return (f"leader sends rack-c to broker 3 (hw {sent.high_watermark}); broker 3 serves {COUNT} records; "
            f"a rack-c confluent-kafka consumer read {len(values)}")
