"""OffsetCommit (key 8), v2-10.

- Group members commit with their generation and member id; standalone consumers with
  generation -1 (the group is created, or must be Empty). Checks in Kafka's order:
  FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS (CompletingRebalance), UNKNOWN_MEMBER_ID,
  ILLEGAL_GENERATION; ILLEGAL_GENERATION for a member commit to a group that does not exist.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID at v10) for partitions that do
  not exist, OFFSET_METADATA_TOO_LARGE beyond offset.metadata.max.bytes.
- Commits are written to __consumer_offsets before they are answered."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetCommitResponse

from wirekafka.broker import group_records as gr
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Topic = OffsetCommitResponse.OffsetCommitResponseTopic
_Part = _Topic.OffsetCommitResponsePartition


async def handle(ctx: RequestContext, request: object) -> OffsetCommitResponse:
    r = request
    state = ctx.state
    v = ctx.version
    try:
        group = state.groups.validate_commit(r.group_id, r.generation_id_or_member_epoch, r.member_id,  # type: ignore[attr-defined]
                                             getattr(r, "group_instance_id", None))
        group_error = ErrorCode.NONE
    except KafkaApiError as exc:
        group, group_error = None, exc.code
    max_metadata = state.config.int("offset.metadata.max.bytes")
    now_ms = state.now_ms()
    accepted: dict[tuple[str, int], gr.OffsetValue] = {}
    accepted_parts: list[_Part] = []
    topics = []
    for t in r.topics:  # type: ignore[attr-defined]
        topic, unknown = state.metadata.resolve(t.name, t.topic_id, by_id=v >= 10)
        parts = []
        for p in t.partitions:
            code = group_error
            if code == ErrorCode.NONE:
                if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                    code = unknown
                elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > max_metadata:
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                else:
                    accepted[(topic.name, p.partition_index)] = gr.OffsetValue(
                        p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now_ms)
            parts.append(_Part(partition_index=p.partition_index, error_code=code))
            if code == ErrorCode.NONE:
                accepted_parts.append(parts[-1])
        topics.append(_Topic(name=t.name, topic_id=t.topic_id, partitions=parts))
    if group is not None and accepted:
        try:
            await state.groups.commit(group, accepted)
        except KafkaApiError as exc:  # not replicated in time: every accepted partition fails
            for part in accepted_parts:
                part.error_code = exc.code
    return OffsetCommitResponse(version=v, throttle_time_ms=0, topics=topics)
