"""Request builders shared by the scenarios (produce, fetch, list offsets) — thin wrappers over
kafka-python's schema classes so each scenario reads as the protocol exchange it checks."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.producer.produce import ProduceRequest

from conformance.harness.wire import Connection
from wirekafka.protocol.records import build_batch


def batch(values: list[bytes], timestamps: list[int] | None = None, **kw: Any) -> bytes:
    ts = timestamps or [1_700_000_000_000 + i for i in range(len(values))]
    return build_batch([(b"k%d" % i, v, t) for i, (v, t) in enumerate(zip(values, ts))], **kw)


def produce(conn: Connection, topic: str, records: bytes | None, partition: int = 0, acks: int = -1,
            version: int = 9, topic_id: Any = None, transactional_id: str | None = None) -> Any:
    req = ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, topic_id=topic_id, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])
    if acks == 0:
        conn.send(req, version, expect_response=False)
        return None
    return conn.call(req, version).responses[0].partition_responses[0]


def fetch(conn: Connection, topic: str, offset: int, partition: int = 0, version: int = 12, max_wait_ms: int = 0,
          min_bytes: int = 1, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
          topic_id: Any = None, isolation_level: int = 0) -> Any:
    return fetch_partitions(conn, topic, {partition: offset}, version, max_wait_ms, min_bytes, max_bytes,
                            partition_max_bytes, topic_id, isolation_level)[0]


def fetch_partitions(conn: Connection, topic: str, offsets: dict[int, int], version: int = 12, max_wait_ms: int = 0,
                     min_bytes: int = 1, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
                     topic_id: Any = None, isolation_level: int = 0) -> list[Any]:
    """One Fetch of several partitions of a topic (partition -> fetch offset, in that order)."""
    req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                       isolation_level=isolation_level, session_id=0, session_epoch=-1, topics=[
                           FetchRequest.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
                               FetchRequest.FetchTopic.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                   last_fetched_epoch=-1, log_start_offset=-1,
                                   partition_max_bytes=partition_max_bytes)
                               for partition, offset in offsets.items()])],
                       forgotten_topics_data=[], rack_id="")
    return conn.call(req, version).responses[0].partitions


def list_offsets(conn: Connection, topic: str, timestamp: int, partition: int = 0, version: int = 8,
                 isolation_level: int = 0) -> Any:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=timestamp)])], timeout_ms=10000)
    return conn.call(req, version).topics[0].partitions[0]


def record_offsets(data: bytes) -> list[int]:
    from wirekafka.protocol import records

    out = []
    for s, e in records.split_batches(data or b""):
        out += [r.offset for r in records.iter_records(data[s:e])]
    return out


def batch_bases(data: bytes) -> list[int]:
    from wirekafka.protocol import records

    return [records.parse_header(data, s).base_offset for s, _ in records.split_batches(data or b"")]
