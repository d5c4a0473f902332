"""The leader hints of KIP-951, checked the same way on a real Kafka 3.9 cluster
(compat-tests/test_zookeeper_launcher.py) and on wirekafka's (compat-tests/test_cluster.py).

A partition on brokers 1 and 2 (1 leads). Asked by broker 2 (a follower) or broker 3 (no replica):
- Produce v10+ answers NOT_LEADER_OR_FOLLOWER with the current leader (id, epoch) and the
  leader's endpoint in node_endpoints; v9 has neither;
- Fetch v16+ from broker 3 answers NOT_LEADER_OR_FOLLOWER with the same; v15 has neither."""

from __future__ import annotations

import base64
import json
import time
import uuid
from types import SimpleNamespace

from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from client_support import raw_call
from testsupport.cluster import wait_for
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode


def _port(address: str) -> SimpleNamespace:
    return SimpleNamespace(port=int(address.rsplit(":", 1)[1]))


def _produce(address: str, topic: str, version: int):
    T = ProduceRequest.TopicProduceData
    batch = records.build_batch([(None, b"hint", int(time.time() * 1000))])
    req = ProduceRequest(version=version, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        T(name=topic, partition_data=[T.PartitionProduceData(index=0, records=batch)])])
    return raw_call(_port(address), req, ProduceResponse)


def _fetch(address: str, topic_id, version: int, leader_epoch: int = -1):
    T = FetchRequest.FetchTopic
    req = FetchRequest(version=version, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                       topics=[T(topic_id=topic_id, partitions=[T.FetchPartition(
                           partition=0, current_leader_epoch=leader_epoch, fetch_offset=0, last_fetched_epoch=-1,
                           log_start_offset=-1, partition_max_bytes=1 << 20)])])
    return raw_call(_port(address), req, FetchResponse)


def check_leader_hints(client, bootstrap: str, addresses: dict[int, str], topic: str = "hinted") -> str:
    """`client`: kazoo on the cluster's chroot; `addresses`: each broker's host:port."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]])],
                        request_timeout=30)[topic].result(30)
    state_path = f"/brokers/topics/{topic}/partitions/0/state"

    def full_isr() -> bool:
        return client.exists(state_path) is not None and sorted(json.loads(client.get(state_path)[0])["isr"]) == [1, 2]

    wait_for(full_isr, 60, f"{topic}-0 with 2 in-sync replicas")
    state = json.loads(client.get(state_path)[0])
    leader, epoch = state["leader"], state["leader_epoch"]
    assert leader == 1
    host, port = addresses[1].rsplit(":", 1)
    endpoint = (1, host, int(port))
    topic_id = zk_topic_id(client, topic)

    def leader_known_everywhere() -> bool:
        """Until brokers 2 and 3 have learned of the topic (no hint with UNKNOWN_TOPIC_OR_PARTITION)."""
        hints = [_produce(addresses[n], topic, 10).responses[0].partition_responses[0].current_leader for n in (2, 3)]
        return all(h is not None and h.leader_id == 1 for h in hints)

    wait_for(leader_known_everywhere, 30, "brokers 2 and 3 to know the leader")
    for n in (2, 3):
        answer = _produce(addresses[n], topic, 10)
        part = answer.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, epoch)
        assert [(e.node_id, e.host, e.port) for e in answer.node_endpoints] == [endpoint]
        old = _produce(addresses[n], topic, 9).responses[0].partition_responses[0]
        assert old.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    fetched = _fetch(addresses[3], topic_id, 16)
    part = fetched.responses[0].partitions[0]
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, epoch)
    assert [(e.node_id, e.host, e.port) for e in fetched.node_endpoints] == [endpoint]
    older = _fetch(addresses[3], topic_id, 15).responses[0].partitions[0]
    assert older.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and older.current_leader is None  # no such field
    return f"leader {leader} epoch {epoch}: produce v10 and fetch v16 point at {endpoint}"


def zk_topic_id(client, topic: str) -> uuid.UUID:
    """The topic id from /brokers/topics/<topic> (Kafka's URL-safe base64 of the UUID)."""
    raw = json.loads(client.get(f"/brokers/topics/{topic}")[0])["topic_id"]
    return uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=="))
