"""OffsetCommit (key 8), v2-10.

- Group members commit with their generation and member id; standalone consumers with
  generation -1 (the group is created, or must be Empty). Checks in Kafka's order: the member
  (UNKNOWN_MEMBER_ID; by group instance id from v7: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), its
  generation (ILLEGAL_GENERATION), then REBALANCE_IN_PROGRESS (CompletingRebalance). A member
  commit to a group that does not exist is ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND
  from v9.
- v2-4: retention_time_ms other than -1 gives the offsets their own expire timestamp (commit
  time + retention, wrapping as Kafka's long addition does for a huge retention), kept in the
  offset record as Kafka keeps it.
- Authorization, as Kafka's KafkaApis checks it before the coordinator: without READ on the
  group every partition is GROUP_AUTHORIZATION_FAILED, in request order; then a topic without
  READ is TOPIC_AUTHORIZATION_FAILED whether it exists or not (at v10 an unknown topic id has no
  name to authorize and is UNKNOWN_TOPIC_ID).
- Per partition: UNKNOWN_TOPIC_OR_PARTITION for topics and partitions that do not exist
  (UNKNOWN_TOPIC_ID at v10 for an unknown topic id) — sorted out before the group is looked at,
  and when nothing is left the group is not looked at at all — OFFSET_METADATA_TOO_LARGE beyond
  offset.metadata.max.bytes.
- The answer is built as Kafka's: the partitions refused or unknown first (a topic's entry made
  where it first fails, by name, or by id at v10), then the coordinator's answers, merged into
  an entry of the same topic when there is one.
- Commits are written to __consumer_offsets before they are answered."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import Topic
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Topic = OffsetCommitResponse.OffsetCommitResponseTopic
_Part = _Topic.OffsetCommitResponsePartition
NO_RETENTION = -1  # retention_time_ms's default: the broker's offsets.retention.minutes applies
GROUP_ID_NOT_FOUND_FROM = 9
TOPIC_IDS_FROM = 10


class _Answer:
    """The topics of the answer, each entry found again by its key (name, or id at v10)."""

    def __init__(self, by_id: bool) -> None:
        self.topics: list[_Topic] = []
        self._by_key: dict[object, _Topic] = {}
        self._by_id = by_id

    def entry(self, t: OffsetCommitRequest.OffsetCommitRequestTopic) -> _Topic:
        """The entry of request topic `t`, made at the end if there is none yet."""
        key = t.topic_id if self._by_id else t.name
        topic = self._by_key.get(key)
        if topic is None:
            topic = self._by_key[key] = _Topic(name=t.name, topic_id=t.topic_id, partitions=[])
            self.topics.append(topic)
        return topic

    def add(self, t: OffsetCommitRequest.OffsetCommitRequestTopic, partition: int, code: ErrorCode) -> None:
        self.entry(t).partitions.append(_Part(partition_index=partition, error_code=code))


def _refused(ctx: RequestContext, request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    """Every partition answered `code`, in request order."""
    return OffsetCommitResponse(version=ctx.version, throttle_time_ms=0, topics=[
        _Topic(name=t.name, topic_id=t.topic_id, partitions=[
            _Part(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in request.topics])


def _topic_error(t: OffsetCommitRequest.OffsetCommitRequestTopic, topic: Topic | None, unknown: ErrorCode, readable: set[str], by_id: bool
                 ) -> ErrorCode | None:
    """What every partition of request topic `t` is answered by KafkaApis (None: look at each)."""
    if by_id and topic is None:
        return unknown
    if (topic.name if topic else t.name) not in readable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return unknown if topic is None else None


# a request topic, its topic, and the request's partitions of it that exist
_Valid = tuple[OffsetCommitRequest.OffsetCommitRequestTopic, Topic,
               list[OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition]]


def _sort_out(ctx: RequestContext, request: OffsetCommitRequest, answer: _Answer) -> list[_Valid]:
    """Answer the partitions KafkaApis refuses or does not know; return the rest, per request
    topic: (request topic, topic, [request partition])."""
    by_id = ctx.version >= TOPIC_IDS_FROM
    resolved = [(t, *ctx.state.metadata.resolve(t.name, t.topic_id, by_id)) for t in request.topics]
    readable = ctx.authorized_names(AclOperation.READ, ResourceType.TOPIC,
                                    {topic.name if topic else t.name for t, topic, _ in resolved})
    valid: list[_Valid] = []
    for t, topic, unknown in resolved:
        code = _topic_error(t, topic, unknown, readable, by_id)
        known: list[OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition] = []
        for p in t.partitions:
            if code is None and topic is not None and 0 <= p.partition_index < len(topic.partitions):
                known.append(p)
            else:
                answer.add(t, p.partition_index, code or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if known and topic is not None:
            valid.append((t, topic, known))
    return valid


def commit_error(group_error: ErrorCode, metadata: str | None, max_metadata: int) -> ErrorCode:
    """A committed offset's error once the coordinator has checked the group (OffsetCommit and
    TxnOffsetCommit alike): the group's error, else OFFSET_METADATA_TOO_LARGE for metadata over
    offset.metadata.max.bytes."""
    if group_error != ErrorCode.NONE:
        return group_error
    if metadata is not None and len(metadata.encode()) > max_metadata:
        return ErrorCode.OFFSET_METADATA_TOO_LARGE
    return ErrorCode.NONE


def _java_long(value: int) -> int:
    """A sum as Java's long holds it: the low 64 bits, signed (the offset record's int64)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _coordinator_answer(ctx: RequestContext, valid: list[_Valid], answer: _Answer,
                        group_error: ErrorCode, retention: int) -> tuple[dict[tuple[str, int], gr.OffsetValue], list[_Part]]:
    """Answer the partitions left for the coordinator; return the offsets to write and their
    answers (which a failed write turns into its error)."""
    max_metadata = ctx.state.config.int("offset.metadata.max.bytes")
    now_ms = ctx.state.now_ms()
    expire_ms = None if retention == NO_RETENTION else _java_long(now_ms + retention)
    accepted: dict[tuple[str, int], gr.OffsetValue] = {}
    accepted_parts: list[_Part] = []
    # with nothing answered yet the coordinator's answer is the whole answer, a topic named
    # twice included; else each of its topics joins the entry of that topic
    merge = bool(answer.topics)
    for t, topic, partitions in valid:
        entry = answer.entry(t) if merge else _Topic(name=t.name, topic_id=t.topic_id, partitions=[])
        if not merge:
            answer.topics.append(entry)
        for p in partitions:
            code = commit_error(group_error, p.committed_metadata, max_metadata)
            if code == ErrorCode.NONE:
                accepted[(topic.name, p.partition_index)] = gr.OffsetValue(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now_ms, expire_ms)
            entry.partitions.append(_Part(partition_index=p.partition_index, error_code=code))
            if code == ErrorCode.NONE:
                accepted_parts.append(entry.partitions[-1])
    return accepted, accepted_parts


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    r = request
    state = ctx.state
    v = ctx.version
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, r.group_id):
        return _refused(ctx, r, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    answer = _Answer(by_id=v >= TOPIC_IDS_FROM)
    valid = _sort_out(ctx, r, answer)
    if not valid:
        return OffsetCommitResponse(version=v, throttle_time_ms=0, topics=answer.topics)
    try:
        group = state.groups.offsets.validate_commit(
            r.group_id, r.generation_id_or_member_epoch, r.member_id,
            getattr(r, "group_instance_id", None),
            ErrorCode.GROUP_ID_NOT_FOUND if v >= GROUP_ID_NOT_FOUND_FROM else ErrorCode.ILLEGAL_GENERATION)
        group_error = ErrorCode.NONE
    except KafkaApiError as exc:
        group, group_error = None, exc.code
    retention = r.retention_time_ms if v <= 4 else NO_RETENTION
    accepted, accepted_parts = _coordinator_answer(ctx, valid, answer, group_error, retention)
    if group is not None and accepted:
        try:
            await state.groups.offsets.commit(group, accepted)
        except KafkaApiError as exc:  # not replicated in time: every accepted partition fails
            for part in accepted_parts:
                part.error_code = exc.code
    return OffsetCommitResponse(version=v, throttle_time_ms=0, topics=answer.topics)
