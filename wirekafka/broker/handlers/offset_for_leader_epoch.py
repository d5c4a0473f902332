"""OffsetForLeaderEpoch (key 23), v2-4.

This node has led every partition since it was created, in one leader epoch
(Partition.leader_epoch, 0), so its leader-epoch cache holds a single entry: that epoch,
starting at the log start offset (Kafka assigns the entry when the leader is elected, so it
exists even for an empty log, and truncating from the start moves its start offset).
Kafka's LeaderEpochFileCache.endOffsetFor over that cache:
- requested epoch -1 (undefined): (-1, -1);
- requested epoch == the current epoch: (that epoch, log end offset), 0 for an empty log;
- requested epoch above it: (-1, -1), no error;
- requested epoch below it (no earlier epoch known): (requested epoch, start of the entry).
current_leader_epoch fencing (-1 skips it): FENCED_LEADER_EPOCH below ours,
UNKNOWN_LEADER_EPOCH above; unknown partitions UNKNOWN_TOPIC_OR_PARTITION. replica_id (v3+) does
not change the answer: the log end offset is also the high watermark with one replica."""

from __future__ import annotations

from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.partition import Partition
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

UNDEFINED = -1
_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Part = _Topic.EpochEndOffset


def end_offset_for(partition: Partition, requested_epoch: int) -> tuple[int, int]:
    """(epoch, end offset) for a requested epoch, by Kafka's rules over a one-entry cache."""
    if requested_epoch == UNDEFINED or requested_epoch > partition.leader_epoch:
        return UNDEFINED, UNDEFINED
    if requested_epoch == partition.leader_epoch:
        return requested_epoch, partition.log.log_end_offset
    return requested_epoch, partition.log_start_offset


def handle(ctx: RequestContext, request: object) -> OffsetForLeaderEpochResponse:
    topics = []
    for t in request.topics:  # type: ignore[attr-defined]
        parts = []
        for p in t.partitions:
            try:
                partition = ctx.state.get_partition(t.topic, p.partition)
                partition.check_leader_epoch(p.current_leader_epoch)
                epoch, end = end_offset_for(partition, p.leader_epoch)
                parts.append(_Part(error_code=ErrorCode.NONE, partition=p.partition, leader_epoch=epoch, end_offset=end))
            except KafkaApiError as exc:
                parts.append(_Part(error_code=exc.code, partition=p.partition, leader_epoch=UNDEFINED,
                                   end_offset=UNDEFINED))
        topics.append(_Topic(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(version=ctx.version, throttle_time_ms=0, topics=topics)
