"""OffsetFetch (key 9), v1-10.

- v1-7: one group; v8+: several groups, each with its own topics (null: every committed
  partition) and error; v10 names topics by id.
- A partition without a committed offset answers offset -1, empty metadata, no error.
- require_stable (v7+): there are never pending transactional offsets here, so it is met.
- COORDINATOR_LOAD_IN_PROGRESS while the group's partition of __consumer_offsets is loading."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetFetchResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

NO_OFFSET = -1


def _answer(ctx: RequestContext, group_id: str, wanted: list | None, by_id: bool
            ) -> tuple[ErrorCode, list[tuple[str, object, list[tuple[int, int, int, str]]]]]:
    """(group error, [(topic name, topic id, [(partition, offset, epoch, metadata)])])."""
    try:
        committed = ctx.state.groups.committed(group_id)
    except KafkaApiError as exc:
        return exc.code, []
    out = []
    if wanted is None:
        by_topic: dict[str, list] = {}
        for (t, p), v in sorted(committed.items()):
            by_topic.setdefault(t, []).append((p, v.offset, v.leader_epoch, v.metadata))
        for t, parts in by_topic.items():
            topic = ctx.state.metadata.topic(t)
            out.append((t, topic.topic_id if topic else None, parts))
        return ErrorCode.NONE, out
    for t in wanted:
        topic, _ = ctx.state.metadata.resolve(getattr(t, "name", None), getattr(t, "topic_id", None), by_id)
        name = topic.name if topic else ("" if by_id else t.name)
        parts = []
        for p in t.partition_indexes:
            v = committed.get((name, p))
            parts.append((p, v.offset, v.leader_epoch, v.metadata) if v else (p, NO_OFFSET, -1, ""))
        out.append((name, getattr(t, "topic_id", None), parts))
    return ErrorCode.NONE, out


def handle(ctx: RequestContext, request: object) -> OffsetFetchResponse:
    v = ctx.version
    R = OffsetFetchResponse
    if v >= 8:
        groups = []
        for g in request.groups:  # type: ignore[attr-defined]
            code, topics = _answer(ctx, g.group_id, g.topics, by_id=v >= 10)
            T = R.OffsetFetchResponseGroup.OffsetFetchResponseTopics
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
                T(name=name, topic_id=tid, partitions=[
                    T.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m, error_code=ErrorCode.NONE) for p, o, e, m in parts])
                for name, tid, parts in topics]))
        return R(version=v, throttle_time_ms=0, groups=groups)
    code, topics = _answer(ctx, request.group_id, request.topics, by_id=False)  # type: ignore[attr-defined]
    T = R.OffsetFetchResponseTopic
    return R(version=v, throttle_time_ms=0, error_code=code, topics=[
        T(name=name, partitions=[T.OffsetFetchResponsePartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m,
            error_code=code if v < 2 else ErrorCode.NONE) for p, o, e, m in parts])
        for name, _tid, parts in topics])
