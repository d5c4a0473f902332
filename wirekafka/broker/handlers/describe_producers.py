"""DescribeProducers (key 61), v0: the producers a partition remembers (idempotent and
transactional): id, epoch, last sequence, last timestamp, coordinator epoch, and the first
offset of the open transaction (-1 if none). UNKNOWN_TOPIC_OR_PARTITION for partitions that do
not exist, as Kafka answers."""

from __future__ import annotations

from kafka.protocol.admin.transactions import DescribeProducersResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

_Topic = DescribeProducersResponse.TopicResponse
_Part = _Topic.PartitionResponse
_Producer = _Part.ProducerState


def handle(ctx: RequestContext, request: object) -> DescribeProducersResponse:
    topics = []
    for t in request.topics:  # type: ignore[attr-defined]
        topic = ctx.state.metadata.topic(t.name)
        parts = []
        for index in t.partition_indexes:
            if topic is None or not 0 <= index < len(topic.partitions):
                parts.append(_Part(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   error_message=None, active_producers=[]))
                continue
            partition = topic.partitions[index]
            if partition is None or not partition.is_leader:
                parts.append(_Part(partition_index=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   error_message=None, active_producers=[]))
                continue
            producers = partition.producers
            parts.append(_Part(partition_index=index, error_code=ErrorCode.NONE, error_message=None,
                               active_producers=[
                                   _Producer(producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq,
                                             last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                                             current_txn_start_offset=e.current_txn_first_offset)
                                   for pid, e in sorted(producers.entries.items())]))
        topics.append(_Topic(name=t.name, partitions=parts))
    return DescribeProducersResponse(version=ctx.version, throttle_time_ms=0, topics=topics)
