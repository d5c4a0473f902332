"""Fetch (key 1), v4-18.

- Topics by name (v4-12) or topic id (v13+); the response answers exactly the partitions asked
  for, in request order.
- Whole batches only, starting with the batch that holds the fetch offset (it may begin before
  it; clients skip the earlier records), never past the high watermark (read_uncommitted) or
  the last stable offset (read_committed, equal to it without transactions).
- Limits: partition_max_bytes per partition and max_bytes (v3+, capped at the broker's
  fetch.max.bytes, and min_bytes at that, as Kafka caps them) for the response, except that
  the first partition with data always returns at least one whole batch (KIP-74). Kafka's answer
  may also end with the first bytes of the next batch, which clients discard; wirekafka does not
  send them (conformance/deviations.toml).
- Long-poll: while fewer than min_bytes are available, the replica manager waits up to
  max_wait_ms for a high-watermark move on any requested partition; never a busy loop.
- Zero-copy: records are file regions, spliced into the schema-encoded response and sent with
  sendfile by the connection; no record bytes pass through Python.
- Errors per partition: UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, OFFSET_OUT_OF_RANGE
  (below the log start or past the high watermark), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH;
  an errored partition reports -1 watermarks and log start, as Kafka does, and aborted
  transactions as Kafka does: an empty list for a partition it does not know, null when the
  read failed.
- Fetch sessions: every response is a full one with session id 0 (no session created), which
  clients answer with full fetches; a request naming a session id gets FETCH_SESSION_ID_NOT_FOUND.
- read_committed reads stop at the last stable offset and list the aborted transactions in
  what they return (from the segments' transaction indexes).
- Fetching from followers (KIP-392): a consumer's fetch v11+ (it carries the client's rack) is
  served by a follower too, up to the follower's high watermark; with replica.selector.class set
  to Kafka's RackAwareReplicaSelector the leader answers a consumer in another replica's rack
  with preferred_read_replica and no records (broker/replica_selector.py). Follower fetches and
  consumers before v11 are served by the leader only (NOT_LEADER_OR_FOLLOWER elsewhere).
- Authorization, as Kafka's KafkaApis checks it: a follower's fetch (replica_id >= 0) needs
  CLUSTER_ACTION, else every partition answers TOPIC_AUTHORIZATION_FAILED; a consumer needs READ
  on each topic (asked once per topic), else its partitions answer TOPIC_AUTHORIZATION_FAILED
  whether the topic exists or not (an unknown topic id stays UNKNOWN_TOPIC_ID). Refused
  partitions are not read, do not end a long poll, and are listed after the others, as Kafka
  lists the partitions it did not pass to its replica manager.
- Not implemented: incremental fetch sessions."""

from __future__ import annotations

from kafka.protocol.consumer.fetch import FetchResponse

from wirekafka.broker import request_quota
from wirekafka.broker.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.partition import Isolation
from wirekafka.broker.quota_stats import INT_MAX
from wirekafka.broker.replica_manager import FetchParams, FetchTarget, fetching_replica
from wirekafka.protocol import codec
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.response_parts import RegionResponse, part_size

_TopicResp = FetchResponse.FetchableTopicResponse
_PartResp = _TopicResp.PartitionData
_Aborted = _PartResp.AbortedTransaction


def _targets(ctx: RequestContext, request: object, follower: bool) -> tuple[list[FetchTarget | None], bool]:
    """What to read for each requested partition, in request order, and whether any is refused:
    None for a partition the client may not fetch (TOPIC_AUTHORIZATION_FAILED). A follower needs
    CLUSTER_ACTION, asked once; a consumer READ on each topic, asked once per topic. An unknown topic id has no name to
    authorize: a consumer gets UNKNOWN_TOPIC_ID for it, as from Kafka."""
    by_id = ctx.version >= 13
    cluster_action = follower and ctx.authorized_cluster(AclOperation.CLUSTER_ACTION)
    targets: list[FetchTarget | None] = []
    refused = False
    for ft in request.topics:  # type: ignore[attr-defined]
        topic, unknown = ctx.state.metadata.resolve(ft.topic, ft.topic_id, by_id=by_id)
        if follower:
            allowed = cluster_action
        else:
            allowed = (topic is None and by_id) or ctx.authorized(
                AclOperation.READ, ResourceType.TOPIC, topic.name if topic is not None else ft.topic)
        if not allowed:
            targets.extend([None] * len(ft.partitions))
            refused = True
            continue
        for fp in ft.partitions:
            known = topic is not None and 0 <= fp.partition < len(topic.partitions)
            part = topic.partitions[fp.partition] if known else None  # type: ignore[union-attr]
            targets.append(FetchTarget(part, fp.fetch_offset, fp.partition_max_bytes, fp.current_leader_epoch,
                                       ErrorCode.NOT_LEADER_OR_FOLLOWER if known else unknown,
                                       getattr(fp, "log_start_offset", -1)))
    return targets, refused


def _refused(partition: int) -> _PartResp:
    return _PartResp(partition_index=partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, high_watermark=-1,
                     last_stable_offset=-1, log_start_offset=-1, aborted_transactions=[], preferred_read_replica=-1,
                     records=b"")


async def handle(ctx: RequestContext, request: object) -> FetchResponse | RegionResponse:
    v = ctx.version
    session_id = getattr(request, "session_id", 0)
    if session_id != 0:
        return FetchResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                             session_id=0, responses=[], node_endpoints=[])
    read_committed = getattr(request, "isolation_level", 0) == 1
    replica = fetching_replica(request)
    follower = replica >= 0
    user, client_id = ctx.principal, ctx.client_id
    quota = ctx.state.client_quotas.fetch
    # a consumer gets at most what its byte quota allows in one window; followers have no client quota
    window_bytes = INT_MAX if follower else quota.max_value_in_window(user, client_id)
    max_bytes = min(request.max_bytes, ctx.state.config.int("fetch.max.bytes"), window_bytes)  # type: ignore[attr-defined]
    params = FetchParams(max_bytes, min(request.min_bytes, max_bytes), request.max_wait_ms,  # type: ignore[attr-defined]
                         Isolation.READ_COMMITTED if read_committed else Isolation.READ_UNCOMMITTED,
                         replica, getattr(request, "rack_id", None) if v >= 11 else None,
                         ctx.listener)
    targets, some_refused = _targets(ctx, request, follower)
    fetched = [t for t in targets if t is not None] if some_refused else targets
    outcomes = iter(await ctx.state.replicas.fetch(params, fetched))  # type: ignore[arg-type]
    response = RegionResponse(FetchResponse(version=v, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                            session_id=0, responses=[], node_endpoints=[]))
    refused: list[tuple[object, _PartResp]] = []  # answered after the others, as Kafka lists them
    requested = iter(targets)
    for ft in request.topics:  # type: ignore[attr-defined]
        for fp in ft.partitions:
            target = next(requested)
            if target is None:
                refused.append((ft, _refused(fp.partition)))
            else:
                _append(response.body, ft, _partition_answer(response, fp.partition, target, next(outcomes)))
    for ft, part in refused:
        _append(response.body, ft, part)
    if follower or not (quota.resolver.enabled or ctx.timing_since is not None):
        return response
    return _charged(ctx, response, user, client_id)


def _partition_answer(response: RegionResponse, index: int, target: FetchTarget, o: object) -> _PartResp:
    r = o.read  # type: ignore[attr-defined]
    if r is None:  # Kafka answers -1 watermarks with a partition error
        return _PartResp(partition_index=index, error_code=o.error, high_watermark=-1,  # type: ignore[attr-defined]
                         last_stable_offset=-1, log_start_offset=-1,
                         aborted_transactions=[] if target.partition is None else None,
                         preferred_read_replica=-1, records=b"")
    data = response.placeholder(r.region) if r.region is not None else b""
    return _PartResp(partition_index=index, error_code=ErrorCode.NONE,
                     high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                     log_start_offset=r.log_start_offset,
                     aborted_transactions=None if r.aborted is None else [
                         _Aborted(producer_id=a.producer_id, first_offset=a.first_offset) for a in r.aborted],
                     preferred_read_replica=o.preferred_read_replica, records=data)  # type: ignore[attr-defined]


def _append(body: FetchResponse, ft: object, part: _PartResp) -> None:
    """Add a partition's answer as Kafka's FetchResponse lists them: consecutive partitions of one
    topic under one topic entry."""
    responses = body.responses
    topic, topic_id = ft.topic, ft.topic_id  # type: ignore[attr-defined]
    if not responses or responses[-1].topic != topic or responses[-1].topic_id != topic_id:
        responses.append(_TopicResp(topic=topic, topic_id=topic_id, partitions=[]))
    responses[-1].partitions.append(part)


def _charged(ctx: RequestContext, response: RegionResponse, user: str, client_id: str) -> FetchResponse | RegionResponse:
    """Charge a consumer's fetch to its quotas, request time first, then the response's size;
    a throttled fetch sends nothing (its bytes are taken back) and answers with no topics, as
    Kafka's throttled fetch response does."""
    quota = ctx.state.client_quotas.fetch
    request_throttle = request_quota.record(ctx)
    # Kafka counts 4 + the body's size; the frame's parts also hold the response header
    header = 4 + (1 if response.body.flexible_version_q(ctx.version) else 0)
    size = sum(part_size(p) for p in codec.encode_response_parts(ctx.header.api_key, ctx.version,
                                                                  ctx.header.correlation_id, response)) - header
    byte_throttle = quota.record(user, client_id, size)
    throttle = max(request_throttle, byte_throttle)
    if throttle <= 0:
        return response
    quota.unrecord(user, client_id, size)
    ctx.mute(byte_throttle)
    for region in response.regions():
        region.close()  # type: ignore[attr-defined]
    return FetchResponse(version=ctx.version, throttle_time_ms=throttle, error_code=ErrorCode.NONE, session_id=0,
                         responses=[], node_endpoints=[])
