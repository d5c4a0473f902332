"""OffsetForLeaderEpoch (key 23), v2-4.

This node has led every partition since it was created, in leader epoch 0, so the epoch cache
holds the single entry (epoch 0, start offset 0) once anything was written. Kafka's rule over
that cache:
- requested epoch == the latest epoch: (that epoch, log end offset);
- requested epoch above every known epoch, or nothing written yet: (-1, -1);
- requested epoch below every known epoch: (requested epoch, start offset of the first epoch).
- current_leader_epoch fencing: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; unknown partitions
  UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.partition import Partition
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

UNDEFINED = -1
_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Part = _Topic.EpochEndOffset


def end_offset_for(partition: Partition, requested_epoch: int) -> tuple[int, int]:
    if partition.log.log_end_offset == 0 or requested_epoch == UNDEFINED or requested_epoch > partition.leader_epoch:
        return UNDEFINED, UNDEFINED
    if requested_epoch == partition.leader_epoch:
        return requested_epoch, partition.log.log_end_offset
    return requested_epoch, 0


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
