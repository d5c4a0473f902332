"""OffsetCommit (key 8), v2-10.

- Group members commit with their generation and member id; standalone consumers with
  generation -1 (the group is created, or must be Empty). Checks in Kafka's order: the member
  (UNKNOWN_MEMBER_ID; by group instance id from v7: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), its
  generation (ILLEGAL_GENERATION), then REBALANCE_IN_PROGRESS (CompletingRebalance). A member
  commit to a group that does not exist is ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND
  from v9.
- v2-4: retention_time_ms other than -1 gives the offsets their own expire timestamp (commit
  time + retention), kept in the offset record as Kafka keeps it.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist (UNKNOWN_TOPIC_ID
  at v10 for an unknown topic id) — before any group error, as Kafka checks them first —
  OFFSET_METADATA_TOO_LARGE beyond offset.metadata.max.bytes.
- Commits are written to __consumer_offsets before they are answered."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetCommitResponse

from wirekafka.broker import group_records as gr
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Topic = OffsetCommitResponse.OffsetCommitResponseTopic
_Part = _Topic.OffsetCommitResponsePartition
NO_RETENTION = -1  # retention_time_ms's default: the broker's offsets.retention.minutes applies
GROUP_ID_NOT_FOUND_FROM = 9
TOPIC_IDS_FROM = 10


async def handle(ctx: RequestContext, request: object) -> OffsetCommitResponse:
    r = request
    state = ctx.state
    v = ctx.version
    try:
        group = state.groups.validate_commit(
            r.group_id, r.generation_id_or_member_epoch, r.member_id,  # type: ignore[attr-defined]
            getattr(r, "group_instance_id", None),
            ErrorCode.GROUP_ID_NOT_FOUND if v >= GROUP_ID_NOT_FOUND_FROM else ErrorCode.ILLEGAL_GENERATION)
        group_error = ErrorCode.NONE
    except KafkaApiError as exc:
        group, group_error = None, exc.code
    max_metadata = state.config.int("offset.metadata.max.bytes")
    now_ms = state.now_ms()
    retention = r.retention_time_ms if v <= 4 else NO_RETENTION  # type: ignore[attr-defined]
    expire_ms = None if retention == NO_RETENTION else now_ms + retention
    accepted: dict[tuple[str, int], gr.OffsetValue] = {}
    accepted_parts: list[_Part] = []
    topics = []
    for t in r.topics:  # type: ignore[attr-defined]
        topic, unknown = state.metadata.resolve(t.name, t.topic_id, by_id=v >= TOPIC_IDS_FROM)
        parts = []
        for p in t.partitions:
            if topic is None:
                code = unknown
            elif not 0 <= p.partition_index < len(topic.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif group_error != ErrorCode.NONE:
                code = group_error
            elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > max_metadata:
                code = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                code = ErrorCode.NONE
                accepted[(topic.name, p.partition_index)] = gr.OffsetValue(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now_ms, expire_ms)
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
