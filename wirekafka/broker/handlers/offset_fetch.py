"""OffsetFetch (key 9), v1-10.

- v1-7: one group; v8+: several groups, each with its own topics (null: every committed
  partition) and error; v10 names topics by id, and an unknown topic id is UNKNOWN_TOPIC_ID on
  each of its partitions.
- A partition without a committed offset answers offset -1, empty metadata, no error (also for
  an unknown topic name, an unknown group and the empty group id, as in Kafka 4).
- require_stable (v7+): a partition with offsets pending in an open transaction
  (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT with offset -1, as Kafka does.
- COORDINATOR_LOAD_IN_PROGRESS while the group's partition of __consumer_offsets is loading.
- Authorization per group, as Kafka's KafkaApis: without DESCRIBE on the group its error is
  GROUP_AUTHORIZATION_FAILED with no topics. Topics without DESCRIBE are never shown: named ones
  come after the others, each partition offset -1 and TOPIC_AUTHORIZATION_FAILED (whether the
  topic exists or not); when all the group's offsets are fetched they are left out.
- v1 has no group error: the partitions asked for carry it (offset -1), as Kafka answers."""

from __future__ import annotations

import uuid
from typing import Callable

from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import ZERO_UUID
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

NO_OFFSET = -1
GROUP_ERROR_FROM = 2
Answer = tuple[int, int, int, str, ErrorCode]  # partition, offset, leader epoch, metadata, error


def _answer(ctx: RequestContext, group_id: str, wanted: list | None, by_id: bool, require_stable: bool
            ) -> tuple[ErrorCode, list[tuple[str, uuid.UUID, list[Answer]]]]:
    """(group error, [(topic name, topic id, [(partition, offset, epoch, metadata, error)])])."""
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    groups = ctx.state.groups
    try:
        committed = groups.offsets.committed(group_id)
    except KafkaApiError as exc:
        return exc.code, []

    def part(topic: str, p: int, missing: ErrorCode = ErrorCode.NONE) -> Answer:
        if require_stable and groups.offsets.has_pending_offsets(group_id, topic, p):
            return p, NO_OFFSET, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT
        v = committed.get((topic, p))
        return (p, v.offset, v.leader_epoch, v.metadata, ErrorCode.NONE) if v else (p, NO_OFFSET, -1, "", missing)

    out: list[tuple[str, uuid.UUID, list[Answer]]] = []
    if wanted is None:
        by_topic: dict[str, list] = {}
        for t, p in sorted(committed):
            by_topic.setdefault(t, []).append(part(t, p))
        describable = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic)
        for t, parts in by_topic.items():
            if t in describable:
                topic = ctx.state.metadata.topic(t)
                out.append((t, topic.topic_id if topic else ZERO_UUID, parts))  # the same bytes as a null id
        return ErrorCode.NONE, out
    return ErrorCode.NONE, _named(ctx, wanted, by_id, part)


def _named(ctx: RequestContext, wanted: list, by_id: bool, part: Callable[..., Answer]
           ) -> list[tuple[str, uuid.UUID, list[Answer]]]:
    """The answers for the topics asked for by name (or id), those without DESCRIBE last; an
    unknown topic id has no name to authorize and is answered in place."""
    resolved = []
    for t in wanted:
        topic, unknown = ctx.state.metadata.resolve(getattr(t, "name", None), getattr(t, "topic_id", None), by_id)
        name = topic.name if topic else ("" if by_id else t.name)
        resolved.append((name, getattr(t, "topic_id", None), t.partition_indexes,
                         unknown if by_id and topic is None else None))
    describable = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                       {name for name, _, _, unknown_id in resolved if unknown_id is None})
    shown = [(name, tid, [part(name, p, unknown_id or ErrorCode.NONE) for p in partitions])
             for name, tid, partitions, unknown_id in resolved if unknown_id is not None or name in describable]
    hidden = [(name, tid, [(p, NO_OFFSET, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in partitions])
              for name, tid, partitions, unknown_id in resolved if unknown_id is None and name not in describable]
    return shown + hidden


def handle(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    v = ctx.version
    R = OffsetFetchResponse
    if v >= 8:
        groups = []
        stable = request.require_stable
        for g in request.groups:
            code, topics = _answer(ctx, g.group_id, g.topics, by_id=v >= 10, require_stable=stable)
            T = R.OffsetFetchResponseGroup.OffsetFetchResponseTopics
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
                T(name=name, topic_id=tid, partitions=[
                    T.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m, error_code=err) for p, o, e, m, err in parts])
                for name, tid, parts in topics]))
        return R(version=v, throttle_time_ms=0, groups=groups)
    code, topics = _answer(ctx, request.group_id, request.topics, by_id=False,
                           require_stable=getattr(request, "require_stable", False))
    if code != ErrorCode.NONE and v < GROUP_ERROR_FROM:
        topics = [(t.name, None, [(p, NO_OFFSET, -1, "", code) for p in t.partition_indexes])
                  for t in request.topics or []]
    T = R.OffsetFetchResponseTopic
    return R(version=v, throttle_time_ms=0, error_code=code, topics=[
        T(name=name, partitions=[T.OffsetFetchResponsePartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m,
            error_code=err) for p, o, e, m, err in parts])
        for name, _tid, parts in topics])
