"""Fetch (key 1), v4-18.

- Topics by name (v4-12) or topic id (v13+). The partitions answered are those of the request
  (a repeated partition once, in its first place), or, in an incremental fetch, of the session:
  those read first, in order, then those answered with an error without reading (unknown topic
  or partition, refused), as Kafka's KafkaApis lists them.
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
- Fetch sessions (KIP-227, broker/fetch_sessions.py): a full fetch with epoch 0 creates a session
  when the cache has room; an incremental fetch answers only the partitions with news, and
  looks only at those that may have some: a partition it does not name, whose last answer still
  holds and whose position is where a read finds nothing, is set aside, watched on its replica,
  and waited on until it moves (broker/replica/quiet_partitions.py), so a fetch costs in
  proportion to what changed; the session errors are Kafka's.
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
  whether the topic exists or not (an unknown topic id stays UNKNOWN_TOPIC_ID). Refused and
  unknown partitions are not read and do not end a long poll.
- From v16 a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the leader
  this broker knows, and the response that leader's endpoint (KIP-951, broker/leader_hints.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import cast

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from wirekafka.broker.quotas import request_quota
from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.replica.fetch_sessions import (FINAL_EPOCH, Answer, IncrementalFetchContext, Key, NoSuchShard,
                                                     SessionPartition)
from wirekafka.broker.replica.quiet_partitions import QuietTerms, SessionQuiet, settle, target
from wirekafka.broker.metadata.leader_hints import leader_hint
from wirekafka.broker.metadata.cluster_metadata import ZERO_UUID, BrokerInfo, ClusterMetadata, Topic
from wirekafka.broker.replica.partition import Isolation, Partition, ReadResult
from wirekafka.broker.quotas.stats import INT_MAX
from wirekafka.broker.replica.replica_manager import FetchOutcome, FetchParams, fetching_replica
from wirekafka.protocol import codec
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.response_parts import RegionResponse, part_size

_TopicResp = FetchResponse.FetchableTopicResponse
_PartResp = _TopicResp.PartitionData
_Aborted = _PartResp.AbortedTransaction
LEADER_HINTS_FROM = 16  # KIP-951: the current leader and its endpoint in Fetch v16+
_HINTED = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
# partitions of one fetch targeted, answered or shaped between two turns of the loop: a
# restarted follower's full fetch names the 3,333 partitions it follows from a leader of a
# 10,000-partition cluster (those steps took 20-60 ms of CPU together, measured at N=10,000)
SHAPE_CHUNK = 250


@dataclass(slots=True)
class _Answer(Answer):
    """One partition's answer, with what the response is shaped from besides what the session
    needs."""

    last_stable_offset: int = -1
    read: ReadResult | None = None
    aborted_transactions: list[_Aborted] | None = field(default_factory=list)

    def close(self) -> None:
        if self.read is not None and self.read.region is not None:
            self.read.region.close()


def _wanted(request: FetchRequest, by_id: bool, metadata: ClusterMetadata) -> dict[Key, SessionPartition]:
    """The request's partitions keyed as Kafka keys them (a repeated partition counts once, in
    its first place, with its last values); names resolved from topic ids from v13, None for
    an unknown id."""
    wanted: dict[Key, SessionPartition] = {}
    for ft in request.topics:
        name = _topic_name(metadata, ft.topic_id) if by_id else ft.topic
        topic_id = ft.topic_id if by_id else ZERO_UUID
        for fp in ft.partitions:
            part = SessionPartition(name, topic_id, fp.partition, fp.fetch_offset, fp.partition_max_bytes,
                                    getattr(fp, "current_leader_epoch", -1), getattr(fp, "log_start_offset", -1),
                                    getattr(fp, "last_fetched_epoch", -1))
            wanted[part.key(by_id)] = part
    return wanted


def _topic_name(metadata: ClusterMetadata, topic_id: uuid.UUID) -> str | None:
    topic, _ = metadata.resolve(None, topic_id, by_id=True)
    return topic.name if topic is not None else None


def _forgotten(request: FetchRequest, by_id: bool) -> list[Key]:
    return [((ft.topic_id if by_id else ft.topic), p)
            for ft in getattr(request, "forgotten_topics_data", None) or [] for p in ft.partitions]


def _classify(ctx: RequestContext, parts: list[SessionPartition],
              follower: bool) -> tuple[list[tuple[SessionPartition, Partition | None]], list[_Answer]]:
    """The partitions to read and those answered with an error without reading, as Kafka's
    KafkaApis sorts them: a follower needs CLUSTER_ACTION (asked once); a consumer's unknown topic
    ids come first, then READ on each topic (asked once per topic); then the topic and partition
    must exist."""
    readable: list[tuple[SessionPartition, Partition | None]] = []  # None: no replica here
    erroneous: list[_Answer] = []
    metadata = ctx.state.metadata
    if follower:
        if not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
            return [], [_Answer(p, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in parts]
        named = parts
    else:
        named = []
        for p in parts:
            if p.topic is None:
                erroneous.append(_Answer(p, ErrorCode.UNKNOWN_TOPIC_ID))
            else:
                named.append(p)
    allowed: dict[str, bool] = {}
    topics: dict[str, Topic | None] = {}  # each topic looked up once, as its READ is asked once
    for p in named:
        if p.topic is None:  # a follower's unknown topic id
            erroneous.append(_Answer(p, ErrorCode.UNKNOWN_TOPIC_ID))
            continue
        if not follower:
            ok = allowed.get(p.topic)
            if ok is None:
                ok = allowed[p.topic] = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, p.topic)
            if not ok:
                erroneous.append(_Answer(p, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
        topic = topics.get(p.topic)
        if topic is None and p.topic not in topics:
            topic = topics[p.topic] = metadata.resolve(p.topic, None, by_id=False)[0]
        if topic is None or not 0 <= p.partition < len(topic.partitions):
            erroneous.append(_Answer(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        else:
            readable.append((p, topic.partitions[p.partition]))
    return readable, erroneous


def _request_error(request: FetchRequest, v: int, code: ErrorCode) -> FetchResponse:
    """Kafka's answer to a fetch that failed as a whole: the error at the top, the request's
    session id echoed, and, before v13, the error on every partition asked for too."""
    topics = [] if v >= 13 else [
        _TopicResp(topic=ft.topic, topic_id=ft.topic_id, partitions=[
            _PartResp(partition_index=fp.partition, error_code=code, high_watermark=-1, last_stable_offset=-1,
                      log_start_offset=-1, aborted_transactions=[], preferred_read_replica=-1, records=b"")
            for fp in ft.partitions])
        for ft in request.topics]
    return FetchResponse(version=v, throttle_time_ms=0, error_code=code,
                         session_id=request.session_id, responses=topics, node_endpoints=[])


async def handle(ctx: RequestContext, request: FetchRequest) -> FetchResponse | RegionResponse:
    v = ctx.version
    read_committed = getattr(request, "isolation_level", 0) == 1
    replica = fetching_replica(request)
    follower = replica >= 0
    by_id = v >= 13
    session_id, epoch = (request.session_id, request.session_epoch) if v >= 7 else (0, FINAL_EPOCH)
    try:
        context = ctx.state.fetch_sessions.new_context(by_id, session_id, epoch, follower,
                                                       _wanted(request, by_id, ctx.state.metadata),
                                                       _forgotten(request, by_id))
    except NoSuchShard:
        return _request_error(request, v, ErrorCode.UNKNOWN_SERVER_ERROR)
    user, client_id = ctx.principal, ctx.client_id
    quota = ctx.state.client_quotas.fetch
    # a consumer gets at most what its byte quota allows in one window; followers have no client quota
    window_bytes = INT_MAX if follower else quota.max_value_in_window(user, client_id)
    max_bytes = min(request.max_bytes, ctx.state.config.int("fetch.max.bytes"), window_bytes)
    params = FetchParams(max_bytes, min(request.min_bytes, max_bytes), request.max_wait_ms,
                         Isolation.READ_COMMITTED if read_committed else Isolation.READ_UNCOMMITTED,
                         replica, getattr(request, "rack_id", None) if v >= 11 else None,
                         ctx.listener)
    incremental = context if isinstance(context, IncrementalFetchContext) else None
    idle = _quiet_partitions(ctx, incremental, params) if incremental is not None else None
    readable, erroneous = _classify(ctx, context.partitions(lambda topic_id: _topic_name(ctx.state.metadata, topic_id)), follower)
    if idle is not None and incremental is not None:
        readable = idle.split(readable, incremental.named, incremental.session.uses_topic_ids,
                              ctx.state.replicas.now_ms())
    turns = LoopTurns(SHAPE_CHUNK)  # a follower's full fetch names every partition it follows here
    targets = []
    for p, partition in readable:
        if turns.due():
            await turns.turn()
        targets.append(target(p, partition))
    outcomes = await ctx.state.replicas.fetch(params, targets, idle)
    answers = []
    for t, o in zip(targets, outcomes):
        if turns.due():
            await turns.turn()
        answers.append(_answered(t.source, t.partition, o))
    answers += erroneous
    charged = not follower and (quota.resolver.enabled or ctx.timing_since is not None)
    error, sid, selected = context.answer(answers, commit=not charged)
    response = await _shaped(ctx, error, sid, selected, turns)
    if charged:
        throttle = _charge(ctx, response, user, client_id)
        if throttle > 0:
            for a in answers:
                a.close()
            error, sid = context.throttled()
            return FetchResponse(version=v, throttle_time_ms=throttle, error_code=error, session_id=sid,
                                 responses=[], node_endpoints=[])
        error, sid, selected = context.answer(answers, commit=True)
        if (error, sid) != (response.body.error_code, response.body.session_id):
            response.body.error_code, response.body.session_id, response.frame = error, sid, None
    kept = {id(a) for a in selected}
    for a in answers:
        if id(a) not in kept:
            a.close()
    return response


def _quiet_partitions(ctx: RequestContext, context: IncrementalFetchContext, params: FetchParams) -> SessionQuiet | None:
    """The session's quiet partitions under this fetch's terms, kept from its earlier fetches
    if those were decided alike; None for a consumer with a rack, whose reads may send it to
    another replica."""
    session = context.session
    if params.client_rack:
        session.set_watch(None)
        return None
    authorizer = ctx.state.authorizer
    terms = QuietTerms(params.isolation if params.replica_id < 0 else Isolation.LOG_END, params.replica_id,
                       authorizer.generation if authorizer is not None else 0, ctx.kafka_principal, ctx.client_host)
    watch = session.watch
    if isinstance(watch, SessionQuiet) and watch.terms == terms:
        return watch
    quiet = SessionQuiet(terms, session.partitions.values())
    session.set_watch(quiet)
    return quiet


def _answered(part: SessionPartition, replica: Partition | None, o: FetchOutcome) -> _Answer:
    r = o.read
    settle(part, replica, o.error == ErrorCode.NONE and r is not None and o.diverging_epoch is None
           and o.preferred_read_replica < 0)
    if r is None:  # Kafka answers -1 watermarks with a partition error
        return _Answer(part, o.error, aborted_transactions=None)
    if r.region is not None and r.region.length == 0:
        r.region.close()
        r.region = None
    return _Answer(part, ErrorCode.NONE, r.high_watermark, r.log_start_offset,
                   r.region.length if r.region is not None else 0, o.preferred_read_replica, o.diverging_epoch,
                   r.last_stable_offset, r,
                   None if r.aborted is None else [_Aborted(producer_id=a.producer_id, first_offset=a.first_offset)
                                                   for a in r.aborted])


async def _shaped(ctx: RequestContext, error: ErrorCode, session_id: int, answers: list[_Answer],
                  turns: LoopTurns) -> RegionResponse[FetchResponse]:
    """The response: the answers' partitions, records as file regions. From v16 a partition
    answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the leader this broker knows,
    and the response lists that leader's endpoint (KIP-951). The loop turns as `turns` says."""
    v = ctx.version
    body = FetchResponse(version=v, throttle_time_ms=0, error_code=error, session_id=session_id, responses=[],
                         node_endpoints=[])
    response = RegionResponse(body)
    nodes: dict[int, BrokerInfo] = {}
    for a in answers:
        if turns.due():
            await turns.turn()
        region = a.read.region if a.read is not None else None
        part = _PartResp(partition_index=a.part.partition, error_code=a.error, high_watermark=a.high_watermark,
                         last_stable_offset=a.last_stable_offset, log_start_offset=a.log_start_offset,
                         aborted_transactions=a.aborted_transactions, preferred_read_replica=a.preferred_read_replica,
                         records=response.placeholder(region) if region is not None else b"")
        if a.diverging_epoch is not None:  # only asked from v12, where the field exists
            epoch, end = a.diverging_epoch
            part.diverging_epoch = _PartResp.EpochEndOffset(epoch=epoch, end_offset=end)
        if a.error in _HINTED and v >= LEADER_HINTS_FROM:
            topic, _ = ctx.state.metadata.resolve(a.part.topic, None, by_id=False)
            hint = leader_hint(ctx.state.metadata, topic, a.part.partition, ctx.listener)
            part.current_leader = _PartResp.LeaderIdAndEpoch(leader_id=hint.leader_id, leader_epoch=hint.leader_epoch)
            if hint.node is not None:
                nodes[hint.node.node_id] = hint.node
        _append(body, a.part.topic, a.part.topic_id, part)
    body.node_endpoints = [FetchResponse.NodeEndpoint(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
                           for _, n in sorted(nodes.items())]
    return response


def _append(body: FetchResponse, topic: str | None, topic_id: uuid.UUID, part: _PartResp) -> None:
    """Add a partition's answer as Kafka's FetchResponse lists them: consecutive partitions of one
    topic under one topic entry."""
    responses = body.responses
    if not responses or responses[-1].topic != topic or responses[-1].topic_id != topic_id:
        # no name from v13 (by topic id): the stubs type fields without their versions
        responses.append(_TopicResp(topic=cast(str, topic), topic_id=topic_id, partitions=[]))
    responses[-1].partitions.append(part)


def _charge(ctx: RequestContext, response: RegionResponse, user: str, client_id: str) -> int:
    """Charge a consumer's fetch to its quotas, request time first, then the response's size,
    and return the throttle time. A throttled fetch's bytes are taken back: it will answer with
    no topics, as Kafka's throttled fetch response does."""
    quota = ctx.state.client_quotas.fetch
    request_throttle = request_quota.record(ctx)
    # Kafka counts 4 + the body's size; the frame's parts also hold the response header
    header = 4 + (1 if response.body.flexible_version_q(ctx.version) else 0)
    size = sum(part_size(p) for p in codec.encode_response_parts(ctx.header.api_key, ctx.version,
                                                                  ctx.header.correlation_id, response)) - header
    byte_throttle = quota.record(user, client_id, size)
    throttle = max(request_throttle, byte_throttle)
    if throttle > 0:
        quota.unrecord(user, client_id, size)
        ctx.mute(byte_throttle)
    return throttle
