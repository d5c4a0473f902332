"""OffsetFetch (key 9), v1-10.

- v1-7: one group; v8+: several groups, each with its own topics (null: every committed
  partition) and error; v10 names topics by id, and an unknown topic id is UNKNOWN_TOPIC_ID on
  each of its partitions.
- A partition without a committed offset answers offset -1, empty metadata, no error (also for
  an unknown topic name, an unknown group and the empty group id, as in Kafka 4).
- require_stable (v7+): a partition with offsets pending in an open transaction
  (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT with offset -1, as Kafka does.
- COORDINATOR_LOAD_IN_PROGRESS while the group's partition of __consumer_offsets is loading."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetFetchResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

NO_OFFSET = -1
Answer = tuple[int, int, int, str, ErrorCode]  # partition, offset, leader epoch, metadata, error


def _answer(ctx: RequestContext, group_id: str, wanted: list | None, by_id: bool, require_stable: bool
            ) -> tuple[ErrorCode, list[tuple[str, object, list[Answer]]]]:
    """(group error, [(topic name, topic id, [(partition, offset, epoch, metadata, error)])])."""
    groups = ctx.state.groups
    try:
        committed = groups.committed(group_id)
    except KafkaApiError as exc:
        return exc.code, []

    def part(topic: str, p: int, missing: ErrorCode = ErrorCode.NONE) -> Answer:
        if require_stable and groups.has_pending_offsets(group_id, topic, p):
            return p, NO_OFFSET, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT
        v = committed.get((topic, p))
        return (p, v.offset, v.leader_epoch, v.metadata, ErrorCode.NONE) if v else (p, NO_OFFSET, -1, "", missing)

    out = []
    if wanted is None:
        by_topic: dict[str, list] = {}
        for t, p in sorted(committed):
            by_topic.setdefault(t, []).append(part(t, p))
        for t, parts in by_topic.items():
            topic = ctx.state.metadata.topic(t)
            out.append((t, topic.topic_id if topic else None, parts))
        return ErrorCode.NONE, out
    for t in wanted:
        topic, unknown = ctx.state.metadata.resolve(getattr(t, "name", None), getattr(t, "topic_id", None), by_id)
        name = topic.name if topic else ("" if by_id else t.name)
        missing = unknown if by_id and topic is None else ErrorCode.NONE
        out.append((name, getattr(t, "topic_id", None), [part(name, p, missing) for p in t.partition_indexes]))
    return ErrorCode.NONE, out


def handle(ctx: RequestContext, request: object) -> OffsetFetchResponse:
    v = ctx.version
    R = OffsetFetchResponse
    if v >= 8:
        groups = []
        stable = request.require_stable  # type: ignore[attr-defined]
        for g in request.groups:  # type: ignore[attr-defined]
            code, topics = _answer(ctx, g.group_id, g.topics, by_id=v >= 10, require_stable=stable)
            T = R.OffsetFetchResponseGroup.OffsetFetchResponseTopics
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
                T(name=name, topic_id=tid, partitions=[
                    T.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m, error_code=err) for p, o, e, m, err in parts])
                for name, tid, parts in topics]))
        return R(version=v, throttle_time_ms=0, groups=groups)
    code, topics = _answer(ctx, request.group_id, request.topics, by_id=False,  # type: ignore[attr-defined]
                           require_stable=getattr(request, "require_stable", False))
    T = R.OffsetFetchResponseTopic
    return R(version=v, throttle_time_ms=0, error_code=code, topics=[
        T(name=name, partitions=[T.OffsetFetchResponsePartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m,
            error_code=code if v < 2 else err) for p, o, e, m, err in parts])
        for name, _tid, parts in topics])
