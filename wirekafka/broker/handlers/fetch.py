"""Fetch (key 1), v4-18.

- Topics by name (v4-12) or topic id (v13+); the response answers exactly the partitions asked
  for, in request order.
- Whole batches only, starting with the batch that holds the fetch offset (it may begin before
  it; clients skip the earlier records), never past the high watermark (read_uncommitted) or
  the last stable offset (read_committed, equal to it without transactions).
- Limits: partition_max_bytes per partition and max_bytes (v3+) for the response, except that
  the first partition with data always returns at least one whole batch (KIP-74).
- Long-poll: while fewer than min_bytes are available, wait up to max_wait_ms for an append to
  any requested partition; never a busy loop.
- Errors per partition: UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, OFFSET_OUT_OF_RANGE
  (below the log start or past the high watermark), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH;
  an errored partition reports -1 watermarks and log start, as Kafka does.
- Fetch sessions: every response is a full one with session id 0 (no session created), which
  clients answer with full fetches; a request naming a session id gets FETCH_SESSION_ID_NOT_FOUND.
- Not implemented: incremental fetch sessions, preferred read replicas, aborted transactions."""

from __future__ import annotations

from dataclasses import dataclass

import trio
from kafka.protocol.consumer.fetch import FetchResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.partition import Partition
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_TopicResp = FetchResponse.FetchableTopicResponse
_PartResp = _TopicResp.PartitionData


@dataclass(slots=True)
class _Target:
    topic_name: str | None
    topic_id: object
    index: int
    partition: Partition | None
    unknown: ErrorCode
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int


def _targets(ctx: RequestContext, request: object) -> list[list[_Target]]:
    state = ctx.state
    out = []
    for ft in request.topics:  # type: ignore[attr-defined]
        if ctx.version >= 13:
            topic = state.topics_by_id.get(ft.topic_id)
            unknown = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            topic = state.topics.get(ft.topic)
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        row = []
        for fp in ft.partitions:
            part = topic.partitions[fp.partition] if topic and 0 <= fp.partition < len(topic.partitions) else None
            row.append(_Target(ft.topic, ft.topic_id, fp.partition, part, unknown, fp.fetch_offset,
                               fp.partition_max_bytes, fp.current_leader_epoch))
        out.append(row)
    return out


def _read(targets: list[list[_Target]], max_bytes: int, read_committed: bool) -> tuple[list, int, bool]:
    """Build per-partition responses; returns (topics, bytes returned, any error)."""
    remaining = max_bytes
    total = 0
    errored = False
    topics = []
    for row in targets:
        parts = []
        for t in row:
            p = t.partition
            if p is None:
                parts.append(_PartResp(partition_index=t.index, error_code=t.unknown, high_watermark=-1,
                                       last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                                       preferred_read_replica=-1, records=b""))
                errored = True
                continue
            data = b""
            code = ErrorCode.NONE
            try:
                p.check_leader_epoch(t.current_leader_epoch)
                p.check_fetch_offset(t.fetch_offset)
                limit = p.last_stable_offset if read_committed else p.high_watermark
                budget = min(t.max_bytes, remaining)
                if budget > 0 or total == 0:
                    data = p.log.read(t.fetch_offset, max(budget, 0), limit, min_one=total == 0)
            except KafkaApiError as exc:
                code = exc.code
                errored = True
            total += len(data)
            remaining -= len(data)
            ok = code == ErrorCode.NONE  # Kafka answers -1 watermarks with a partition error
            parts.append(_PartResp(partition_index=t.index, error_code=code,
                                   high_watermark=p.high_watermark if ok else -1,
                                   last_stable_offset=p.last_stable_offset if ok else -1,
                                   log_start_offset=p.log_start_offset if ok else -1,
                                   aborted_transactions=None if not read_committed else [],
                                   preferred_read_replica=-1, records=data))
        topics.append(_TopicResp(topic=row[0].topic_name if row else None,
                                 topic_id=row[0].topic_id if row else None, partitions=parts))
    return topics, total, errored


async def handle(ctx: RequestContext, request: object) -> FetchResponse:
    v = ctx.version
    session_id = getattr(request, "session_id", 0)
    if session_id != 0:
        return FetchResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                             session_id=0, responses=[], node_endpoints=[])
    targets = _targets(ctx, request)
    read_committed = getattr(request, "isolation_level", 0) == 1
    max_bytes = request.max_bytes  # type: ignore[attr-defined]
    min_bytes = request.min_bytes  # type: ignore[attr-defined]
    deadline = trio.current_time() + max(request.max_wait_ms, 0) / 1000  # type: ignore[attr-defined]
    while True:
        topics, total, errored = _read(targets, max_bytes, read_committed)
        if total >= min_bytes or errored or trio.current_time() >= deadline or not targets:
            break
        woken = trio.Event()
        parts = [t.partition for row in targets for t in row if t.partition is not None]
        for p in parts:
            p.add_waiter(woken)
        try:
            with trio.move_on_at(deadline):
                await woken.wait()
        finally:
            for p in parts:
                p.remove_waiter(woken)
        targets = _targets(ctx, request)  # topics may have been deleted while we waited
    return FetchResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0,
                         responses=topics, node_endpoints=[])
