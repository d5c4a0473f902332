"""DeleteRecords (key 21), v0-2.

- Moves a partition's log start offset up to the requested offset (-1: the high watermark);
  whole segments below it are deleted; the log-start checkpoint is written at once so the new
  start survives a crash.
- OFFSET_OUT_OF_RANGE past the high watermark; UNKNOWN_TOPIC_OR_PARTITION.
- low_watermark is the resulting log start offset."""

from __future__ import annotations

from kafka.protocol.admin.topics import DeleteRecordsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

HIGH_WATERMARK = -1
_Topic = DeleteRecordsResponse.DeleteRecordsTopicResult
_Part = _Topic.DeleteRecordsPartitionResult


async def handle(ctx: RequestContext, request: object) -> DeleteRecordsResponse:
    state = ctx.state
    topics = []
    moved = False
    for t in request.topics:  # type: ignore[attr-defined]
        parts = []
        for p in t.partitions:
            try:
                partition = state.metadata.partition(t.name, p.partition_index)
                offset = partition.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if offset < 0 or offset > partition.high_watermark:
                    raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE)
                if offset > partition.log_start_offset:
                    await state.replicas.delete_records(partition, offset)
                    moved = True
                parts.append(_Part(partition_index=p.partition_index, low_watermark=partition.log_start_offset,
                                   error_code=ErrorCode.NONE))
            except KafkaApiError as exc:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1, error_code=exc.code))
        topics.append(_Topic(name=t.name, partitions=parts))
    if moved:
        await state.checkpoint()
    return DeleteRecordsResponse(version=ctx.version, throttle_time_ms=0, topics=topics)
