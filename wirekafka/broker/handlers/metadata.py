"""Metadata (key 3), v0-13.

- The live brokers reachable on the listener the request came in on (each with its endpoint
  there: a broker without that listener is left out, as in Kafka), the controller and, per partition, leader, leader epoch, replicas, ISR and
  offline replicas as the cluster metadata records them (one node: itself for all of these). A
  partition without a leader answers LEADER_NOT_AVAILABLE, as Kafka does; one whose leader lacks
  the listener answers leader -1 and LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before).
- Topics by name (all versions) or by topic id (v12+); null topics (v1+) or an empty list at v0
  means every topic. A topic id or a topic without a name before v12 is Kafka's
  InvalidRequestException: every topic answered INVALID_REQUEST. By id, the answers come in
  Kafka's order (_by_id_in_kafka_order): unknown ids, topics, refused ones.
- Auto-creation of unknown, validly named, non-internal topics when auto.create.topics.enable
  is set and the request allows it (v4+), with num.partitions partitions. The request that
  creates a topic is answered as Kafka answers it, UNKNOWN_TOPIC_OR_PARTITION without partitions
  (Kafka's controller creates the topic after the answer), and so is a request that arrives
  while the creation is under way, or while this broker is still applying a topic it has read
  from ZooKeeper (ClusterView.being_created: no creation is tried, it would find the topic);
  the next request sees the topic.
- Authorization, as Kafka's KafkaApis checks it: DESCRIBE on each topic (implied by READ,
  WRITE, DELETE and ALTER). A topic named without it answers TOPIC_AUTHORIZATION_FAILED with the
  zero topic id and no partitions, whether it exists or not (by topic id: its id and no name);
  an all-topics request leaves it out. A describable topic that does not exist is auto-created
  only with CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED. Refused
  topics come after the others: first those refused creation, then those refused description.
- Topics by name are answered once per name, in Kafka's order: it keeps the names in a Scala
  immutable Set and splits it into sets (the existing topics, then the missing ones, then those
  refused creation, then those refused description), so up to four names keep the request's
  order and more follow the sets' hash order (kafka_set_order); the topics it auto-creates come
  after the missing ones it cannot create, in the order of a Scala mutable.HashMap.
- An all-topics answer is encoded once per version and listener and reused until the cluster
  metadata changes (ClusterMetadata.answer_cache, an AnswerCache; in a cluster, until a
  reconcile applies a snapshot that differs), when nothing else shapes it: no authorizer, no
  authorized operations asked for. So is an answer to a list of names that all exist (per list,
  up to MAX_CACHED_PARTITIONS in all): producers ask for the topics they know by name, again and
  again while leaders move, and at 10,000 partitions a failover's requests from eight producers
  kept the controller's loop building answers (its main thread was in Metadata in 38 of 45
  py-spy dumps) while it was to lead half the partitions.
- Such answers are made of parts, one per topic (its schema object and its bytes, encoded by the
  codec: protocol/spliced_array.py), kept across changes while the topic's partition views
  (AnswerCache.topic_key) and the brokers reachable on the listener are those the part
  was built with: at 10,000 partitions building and encoding a whole answer took about 100 ms on
  the event loop, after every change, however small. Versions whose parts are the same bytes
  share them (v10-v13: librdkafka asks with v13, Java clients with v12). In a cluster, a task
  (keep_parts_built) builds the parts each applied change made stale, for the versions and
  listeners clients have asked on, before the next request needs them.
- Topic authorized operations (v8+, when asked for) of every topic the client may describe,
  existing or not; cluster authorized operations (v8-10, when asked for): 0 without DESCRIBE on
  the cluster.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable, Iterable, cast

import trio
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from wirekafka.security.acl.authorizer import CLUSTER_NAME, OPERATIONS, AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata.answer_cache import AnswerCache
from wirekafka.broker.metadata.cluster_metadata import (
    INTERNAL_TOPICS,
    ClusterMetadata,
    PartitionView,
    Topic,
    topic_name_error,
)
from wirekafka.jvm import scala_hashset_order, scala_mutable_hashmap_order
from wirekafka.protocol.encoded_response import EncodedResponse
from wirekafka.protocol.spliced_array import encode_element, encode_spliced
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

ZERO_UUID = uuid.UUID(int=0)
# What became of a topic asked for by name, for Kafka's order of the answers: found; missing
# (no auto-creation); not creatable (an illegal name, a creation under way); being created;
# refused creation; refused description.
_FOUND, _MISSING, _UNCREATABLE, _CREATING = "found", "missing", "uncreatable", "creating"
_REFUSED_CREATION, _REFUSED = "refused creation", "refused"

# partitions in the answers to topics by name kept at once (until the metadata changes): every
# distinct list of names asked for is one answer, holding its schema object and its bytes, about
# 0.4 MB per 1,000 partitions (measured: 3.6 MB and 0.42 MB for 10,000); past this, answers are
# spliced from the topics' parts each time, so that no client's lists grow the cache beyond about 8 MB
MAX_CACHED_PARTITIONS = 20_000
# partitions whose topics' parts are built between two turns of the loop (_build_stale): a part
# of 100 partitions takes about 0.5 ms to build, so some 5 ms a step and shape. Counted in
# partitions, not topics: a request's first answer of a new shape at 10,000 partitions waited
# for the loop 20 times with a turn every 5 topics (27.9 ms on a busy broker), and topics of one
# partition would turn for next to nothing built
WARM_PARTITIONS = 1000
# topics whose parts are looked at (and found kept) between two turns: a look computes the
# topic's key, some microseconds for 100 partitions
LOOK_CHUNK = 500

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition


# An authorized-operations bit field left out: kafka-python types the field set[int] but encodes
# None as Kafka's "not requested" (-2^31)
NOT_REQUESTED = cast("set[int]", None)


def operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> set[int]:
    """An authorized-operations bit field as the codec takes it: the set of operation codes."""
    mask = ctx.authorized_operations(resource_type, name)
    return {op for op in OPERATIONS[resource_type] if mask >> op & 1}


def cluster_operations(ctx: RequestContext) -> set[int]:
    """The cluster's authorized operations, as Metadata (v8-10) and DescribeCluster give them:
    none without DESCRIBE on the cluster."""
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        return set()
    return operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def _leader_on_listener(view: PartitionView, reachable: set[int]) -> tuple[int, ErrorCode]:
    """The leader Metadata and DescribeTopicPartitions name for a partition, and the error
    Metadata gives it when it has none on this listener."""
    if view.leader < 0:
        return view.leader, ErrorCode.LEADER_NOT_AVAILABLE
    if view.leader not in reachable:  # alive, but without the listener this request came in on
        return -1, ErrorCode.LISTENER_NOT_FOUND
    return view.leader, ErrorCode.NONE


def partition_fields(ctx: RequestContext, topic: Topic, index: int, reachable: set[int]) -> tuple[ErrorCode, dict]:
    """A partition as Metadata and DescribeTopicPartitions describe it: the error Metadata gives
    a partition without a leader on this listener, and the fields both answers share."""
    view = ctx.state.metadata.partition_view(topic, index)
    leader, code = _leader_on_listener(view, reachable)
    return code, {"partition_index": index, "leader_id": leader, "leader_epoch": view.leader_epoch,
                  "replica_nodes": list(view.replicas), "isr_nodes": list(view.isr),
                  "offline_replicas": list(view.offline)}


@dataclass(slots=True)
class _PartitionRow:
    """A partition of a Metadata answer as the schema codec encodes it: its compiled encoder
    reads a partition's fields by name, so an object with those attributes encodes to the bytes
    of the schema's own MetadataResponsePartition (tests/test_metadata_answer_cache.py compares
    them at every version). Metadata makes one per partition of every topic it describes, and
    one of these costs a third of the schema's object to make (measured at 10,000 partitions)."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    offline_replicas: tuple[int, ...]


def _listener_not_found_served(version: int) -> bool:
    """LISTENER_NOT_FOUND came with v6; before, such a partition answers LEADER_NOT_AVAILABLE."""
    return version >= 6


def _partition_metadata(metadata: ClusterMetadata, version: int, topic: Topic, index: int,
                        reachable: set[int]) -> _PartitionRow:
    view = metadata.partition_view(topic, index)
    leader, code = _leader_on_listener(view, reachable)
    if code == ErrorCode.LISTENER_NOT_FOUND and not _listener_not_found_served(version):
        code = ErrorCode.LEADER_NOT_AVAILABLE
    return _PartitionRow(code, index, leader, view.leader_epoch, view.replicas, view.isr, view.offline)


def _described(metadata: ClusterMetadata, version: int, topic: Topic, reachable: set[int],
               ops: set[int] = NOT_REQUESTED) -> _Topic:
    """A topic as Metadata at this version describes it to a client on a listener whose brokers
    are `reachable`."""
    # the rows stand for the schema's partition objects (_PartitionRow)
    partitions = [_partition_metadata(metadata, version, topic, i, reachable) for i in range(len(topic.partitions))]
    return _Topic(error_code=ErrorCode.NONE, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
                  partitions=cast("list[_Partition]", partitions), authorized_operations=ops)


def topic_metadata(ctx: RequestContext, topic: Topic, with_ops: bool, reachable: set[int]) -> _Topic:
    ops = operations(ctx, ResourceType.TOPIC, topic.name) if with_ops else NOT_REQUESTED
    return _described(ctx.state.metadata, ctx.version, topic, reachable, ops)


def _error_topic(code: ErrorCode, name: str | None, topic_id: uuid.UUID = ZERO_UUID,
                 ops: set[int] = NOT_REQUESTED, is_internal: bool = False) -> _Topic:
    return _Topic(error_code=code, name=name, topic_id=topic_id, is_internal=is_internal, partitions=[],
                  authorized_operations=ops)


def kafka_set_order(requested: list[str], subset: Iterable[str]) -> list[str]:
    """`subset` of the requested names in the order Kafka iterates it: its Set of the request's
    names keeps insertion order up to four names (Set1..Set4, and so do the sets split from it);
    beyond that it is a HashSet, and every set split from it iterates in its own hash order."""
    wanted = set(subset)
    if len(set(requested)) <= 4:
        return [n for n in dict.fromkeys(requested) if n in wanted]
    return scala_hashset_order(n for n in dict.fromkeys(requested) if n in wanted)


def _by_name_in_kafka_order(requested: list[str], answers: dict[str, tuple[str, _Topic]]) -> list[_Topic]:
    """The answers to the topics asked for by name, in Kafka's order: the existing topics in the
    order of the set of every topic it looks up, then the missing ones in their set's order — when
    auto-creating, those it cannot create (an illegal name, a creation under way) first, then the
    ones it asks its controller to create, from a Scala mutable.HashMap —, then those refused
    creation and those refused description, each set in its own order."""
    of = lambda *kinds: [n for n, (k, _) in answers.items() if k in kinds]  # noqa: E731
    looked_up = kafka_set_order(requested, of(_FOUND, _MISSING, _UNCREATABLE, _CREATING))
    missing = kafka_set_order(requested, of(_MISSING, _UNCREATABLE, _CREATING))
    kind = {n: k for n, (k, _) in answers.items()}
    names = ([n for n in looked_up if kind[n] == _FOUND] + [n for n in missing if kind[n] != _CREATING]
             + scala_mutable_hashmap_order(n for n in missing if kind[n] == _CREATING)
             + kafka_set_order(requested, of(_REFUSED_CREATION)) + kafka_set_order(requested, of(_REFUSED)))
    return [answers[n][1] for n in names]


def _describable(ctx: RequestContext, name: str) -> bool:
    return ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name)


async def _named_topic(ctx: RequestContext, name: str, auto: bool, may_create: Callable[[str], bool],
                       with_ops: bool, describe: Callable[[Topic], _Topic]) -> tuple[str, _Topic]:
    """A describable topic asked for by name: what became of it (for the order of the answers)
    and its answer (describe: an existing topic's)."""
    state = ctx.state
    ops = operations(ctx, ResourceType.TOPIC, name) if with_ops else NOT_REQUESTED
    topic = state.metadata.topic(name)
    if topic is not None:
        return _FOUND, describe(topic)
    if not auto:
        return _MISSING, _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, ops=ops)
    if not may_create(name):
        return _REFUSED_CREATION, _error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name,
                                               is_internal=name in INTERNAL_TOPICS)
    if name in INTERNAL_TOPICS:
        return _CREATING, _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, ops=ops)
    if topic_name_error(name):
        return _UNCREATABLE, _error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION, name, ops=ops)
    if state.metadata.being_created(name):  # another request is creating it now
        return _UNCREATABLE, _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, ops=ops)
    try:
        await state.metadata.create_topic(name, state.config.int("num.partitions"), wait=False)
    except KafkaApiError as exc:  # in a cluster another broker may be creating it
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            raise
    return _CREATING, _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, ops=ops)


def _creation_check(ctx: RequestContext) -> Callable[[str], bool]:
    """Kafka's auto-creation check: CREATE on the cluster (asked once, when first needed), or
    else CREATE on the topic."""
    cluster: list[bool] = []

    def may_create(name: str) -> bool:
        if not cluster:
            cluster.append(ctx.authorized_cluster(AclOperation.CREATE))
        return cluster[0] or ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, name)
    return may_create


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse | EncodedResponse:
    with_ops = bool(getattr(request, "include_topic_authorized_operations", False)) and ctx.version >= 8
    cache = _answer_cache(ctx, request, with_ops)
    key = _answer_key(ctx, request)
    if cache is not None and key is not None:
        if (cached := cache.answers.get(key)) is not None:
            return cached.again()
        # the parts of the topics asked for that a change made stale are built first, with turns
        # of the loop; the answer is then made in one step, from the metadata as it is then
        metadata = ctx.state.metadata
        asked = (metadata.all_topics() if key[0] == _ALL_TOPICS
                 else [t for name in key[3] if (t := metadata.topic(name)) is not None])
        await _build_stale([_request_parts(ctx, cache, {b.node_id for b in metadata.brokers(ctx.listener)})],
                           cache.topic_key, asked)
    return await _answer(ctx, request, with_ops, key)


_ALL_TOPICS = "all topics"


def _answer_key(ctx: RequestContext, request: MetadataRequest) -> tuple | None:
    """The key of the request's whole answer in the answer cache (every topic, or a list of
    names); None for an answer that is never kept (topics by id, an invalid request)."""
    requested = request.topics
    if requested is None or (ctx.version == 0 and not requested):
        return (_ALL_TOPICS, ctx.version, ctx.listener)
    if any(t.name is None or (getattr(t, "topic_id", None) or ZERO_UUID) != ZERO_UUID for t in requested):
        return None
    return ("topics", ctx.version, ctx.listener, tuple(t.name for t in requested))


async def _answer(ctx: RequestContext, request: MetadataRequest, with_ops: bool,
                  key: tuple | None) -> MetadataResponse | EncodedResponse:
    """The answer (key: _answer_key's, where a whole answer is kept)."""
    v = ctx.version
    state = ctx.state
    requested = request.topics
    brokers = state.metadata.brokers(ctx.listener)
    reachable = {b.node_id for b in brokers}
    topics: list[_Topic] = []
    if requested is None or (v == 0 and not requested):
        cache = _answer_cache(ctx, request, with_ops)
        cached = cache.answers.get(key) if cache is not None and key is not None else None
        if cached is not None:
            return cached.again()
        every = [t for t in state.metadata.all_topics() if _describable(ctx, t.name)]
        if cache is not None and key is not None:
            kept_part = _request_parts(ctx, cache, reachable)
            cache.answers[key] = _spliced(ctx, request, brokers, [kept_part(t) for t in every])
            return cache.answers[key].again()
        topics = [topic_metadata(ctx, t, with_ops, reachable) for t in every]
    else:
        if v < 12 and any(t.name is None or (getattr(t, "topic_id", None) or ZERO_UUID) != ZERO_UUID
                          for t in requested):
            return _invalid_request(v, requested)
        ids = [getattr(t, "topic_id", None) or ZERO_UUID for t in requested]
        if any(i != ZERO_UUID for i in ids):
            return _response(ctx, request, brokers, _by_id_in_kafka_order(ctx, ids, with_ops, reachable))
        cache = _answer_cache(ctx, request, with_ops)
        cached = cache.answers.get(key) if cache is not None and key is not None else None
        if cached is not None:
            return cached.again()
        auto = state.config.bool("auto.create.topics.enable") and (v < 4 or request.allow_auto_topic_creation)
        may_create = _creation_check(ctx)
        kept_part = _request_parts(ctx, cache, reachable) if cache is not None else None
        part_of: dict[str, bytes] = {}  # the bytes of the kept parts described

        def describe(topic: Topic) -> _Topic:
            if kept_part is None:
                return topic_metadata(ctx, topic, with_ops, reachable)
            described, part_of[topic.name] = kept_part(topic)
            return described

        by_name: dict[str, tuple[str, _Topic]] = {}
        for req_topic in requested:
            name = req_topic.name
            if name is None:  # v12+, with neither a name nor an id
                topics.append(_error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, ZERO_UUID))
                continue
            if name in by_name:  # Kafka answers a name once
                continue
            if not _describable(ctx, name):
                by_name[name] = (_REFUSED, _error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
                continue
            by_name[name] = await _named_topic(ctx, name, auto, may_create, with_ops, describe)
        topics += _by_name_in_kafka_order([t.name for t in requested if t.name is not None], by_name)
        if cache is not None:
            # spliced from the kept parts whether kept or not: encoding a whole answer of 10,000
            # partitions took 40-60 ms of CPU a request in the cluster-scale bench's create, once
            # the producers' lists of names had filled the cache
            answer = _spliced(ctx, request, brokers, [
                (t, part_of[t.name] if t.name in part_of else encode_element(MetadataResponse, "topics", t, v))
                for t in topics])
            # kept only when every topic asked for exists: an answer about a missing one may have
            # created it, and follows creations the cache does not see
            if key is not None and len(topics) == len(by_name) and all(k == _FOUND for k, _ in by_name.values()):
                held = cache.named_partitions + sum(len(t.partitions) for t in topics)
                if held <= MAX_CACHED_PARTITIONS:
                    cache.named_partitions = held
                    cache.answers[key] = answer
                    return answer.again()
            return answer
    return _response(ctx, request, brokers, topics)


def _same_parts_from() -> dict[int, int]:
    """Metadata version -> the lowest version whose topic parts are the same bytes, so that
    clients asking with different versions share one set of parts (librdkafka asks with v13, Java
    clients with v12 or v13, tools and benches with others): versions whose encoding of a probe
    topic, every field set to a value other than its default, is the same and that describe a
    partition alike (_listener_not_found_served). v10-v13 come out as one."""
    row = _PartitionRow(ErrorCode.LEADER_NOT_AVAILABLE, 7, 3, 5, (1, 2, 3), (1, 2), (3,))
    probe = _Topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name="probe", topic_id=uuid.UUID(int=1),
                   is_internal=True, partitions=cast("list[_Partition]", [row]), authorized_operations=NOT_REQUESTED)
    first: dict[tuple[bytes, bool], int] = {}
    return {v: first.setdefault((encode_element(MetadataResponse, "topics", probe, v),
                                 _listener_not_found_served(v)), v)
            for v in range(MetadataResponse.min_version, MetadataResponse.max_version + 1)}


_PARTS_OF_VERSION = _same_parts_from()


def _request_parts(ctx: RequestContext, cache: AnswerCache, reachable: set[int]) -> _KeptParts:
    """The topics' parts of this request's answer (_KeptParts), for its listener and version:
    those kept for the lowest version whose parts are the same bytes."""
    version = _PARTS_OF_VERSION[ctx.version]
    return _KeptParts(ctx.state.metadata, cache.topic_key, cache.parts(ctx.listener, version), version, reachable)


class _KeptParts:
    """Topics' parts of answers at one version and listener (a topic's schema object and its
    encoded bytes): the one kept in `parts` while the topic's partition views and the brokers
    reachable on the listener are those it was built with, else a new one, kept."""

    def __init__(self, metadata: ClusterMetadata, topic_key: Callable[[Topic], object],
                 parts: dict[str, tuple[object, tuple[_Topic, bytes]]], version: int, reachable: set[int]) -> None:
        self._metadata = metadata
        self._topic_key = topic_key
        self._parts = parts
        self._version = version
        self._reachable = reachable
        self._reach = tuple(sorted(reachable))

    def kept(self, topic: Topic, topic_key_now: object) -> bool:
        """Whether the topic's part is kept and current (topic_key_now: topic_key(topic))."""
        held = self._parts.get(topic.name)
        return held is not None and held[0] == (topic_key_now, self._reach)

    def __call__(self, topic: Topic, topic_key_now: object = None) -> tuple[_Topic, bytes]:
        """The topic's part, built if it is not kept. The caller may pass the topic's key
        (topic_key(topic)) when it has it."""
        key = (self._topic_key(topic) if topic_key_now is None else topic_key_now, self._reach)
        held = self._parts.get(topic.name)
        if held is not None and held[0] == key:
            return held[1]
        described = _described(self._metadata, self._version, topic, self._reachable)
        part = (described, encode_element(MetadataResponse, "topics", described, self._version))
        self._parts[topic.name] = (key, part)
        return part


async def _build_stale(shapes: list[_KeptParts], topic_key: Callable[[Topic], object],
                       topics: Iterable[Topic]) -> None:
    """Build the parts of these topics that are not kept, in every shape, with a turn of the
    loop once WARM_PARTITIONS partitions were built and every LOOK_CHUNK topics looked at: a
    request for 10,000 partitions whose parts a change made stale built them in one step (over
    100 ms of CPU on a busy broker of the cluster-scale bench)."""
    looked = LoopTurns(LOOK_CHUNK)
    built = 0  # partitions built since the last turn
    for topic in topics:
        if looked.due():
            await looked.turn()
        key = topic_key(topic)  # once for every shape
        if all(shape.kept(topic, key) for shape in shapes):
            continue
        if built >= WARM_PARTITIONS:
            await looked.turn_now()
            built = 0
        for shape in shapes:
            shape(topic, key)
        built += len(topic.partitions)


async def keep_parts_built(metadata: ClusterMetadata, *,
                           task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """After each change the metadata applies, build again the topic parts it made stale, for
    every shape (listener, version) whose parts are kept, off any request: a cluster's first
    all-topics request after a create of 10,000 partitions built the whole answer, 56 ms in
    process and 62-790 ms on a busy broker (the p99 of the cluster-scale bench's 50 requests),
    and every producer's request by name after a failover rebuilt the parts of the topics it
    asked for. A request then splices kept parts (about 2 ms at 10,000 partitions). Built in
    steps (_build_stale), so the loop serves meanwhile; the parts of shapes no client asked
    for are never built. Where the metadata keeps no answers (one node), there is nothing to do."""
    task_status.started()
    cache = metadata.answer_cache()
    if cache is None:
        return
    while True:
        await cache.wait_applied()
        cache = metadata.answer_cache()  # empties the whole answers the change made stale
        if cache is None:
            return
        shapes = [_KeptParts(metadata, cache.topic_key, parts, version,
                             {b.node_id for b in metadata.brokers(listener)})
                  for listener, version, parts in cache.held()]
        if shapes:
            await _build_stale(shapes, cache.topic_key, metadata.all_topics())


def _spliced(ctx: RequestContext, request: MetadataRequest, brokers: list,
             parts: list[tuple[_Topic, bytes]]) -> EncodedResponse:
    """An answer holding these topics, encoded from their parts' bytes."""
    body = _response(ctx, request, brokers, [described for described, _ in parts])
    return EncodedResponse(body, ctx.version, encode_spliced(body, ctx.version, "topics", [b for _, b in parts]))


def _answer_cache(ctx: RequestContext, request: MetadataRequest, with_ops: bool) -> AnswerCache | None:
    """Where an answer may be kept: the cluster metadata's answer cache, emptied when the
    metadata changes, when the answer depends on nothing else (no authorizer, no authorized
    operations asked for); None otherwise."""
    if ctx.state.authorizer is not None or with_ops or getattr(request, "include_cluster_authorized_operations", False):
        return None
    return ctx.state.metadata.answer_cache()


def _response(ctx: RequestContext, request: MetadataRequest, brokers: list, topics: list[_Topic]) -> MetadataResponse:
    v = ctx.version
    include_cluster_ops = 8 <= v <= 10 and bool(getattr(request, "include_cluster_authorized_operations", False))
    return MetadataResponse(
        version=v,
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in brokers],
        cluster_id=ctx.state.cluster_id,
        controller_id=ctx.state.metadata.controller_id(),
        topics=topics,
        authorized_operations=cluster_operations(ctx) if include_cluster_ops else NOT_REQUESTED,
        error_code=ErrorCode.NONE,
    )


def _by_id_in_kafka_order(ctx: RequestContext, ids: list[uuid.UUID], with_ops: bool,
                          reachable: set[int]) -> list[_Topic]:
    """Kafka's answer when topics are asked for by id (v12+; names in the same request are then
    ignored): UNKNOWN_TOPIC_ID for the ids no topic has, then the topics, then those the principal
    may not describe (TOPIC_AUTHORIZATION_FAILED, with the id and no name), each id answered once.
    Kafka keeps the request's ids in a Scala Set (the zero id of a named topic among them until it
    filters it out): up to four keep the request's order, more a HashSet's hash order (by
    Uuid.hashCode), and the names it finds for them are a Set built from that one (a HashSet
    again when the ids were). Its answers to the unknown and the refused ids hash alike (only the
    null name counts), so they stay in their sets' order."""
    state = ctx.state
    distinct = list(dict.fromkeys(ids))
    hashed = len(distinct) > 4
    in_order: Callable[[list], list] = scala_hashset_order if hashed else list
    id_order = in_order([i for i in distinct if i != ZERO_UUID])
    found = {i: state.metadata.topic_by_id(i) for i in id_order}
    # a HashSet split or filtered is a HashSet of what it keeps: its own hash order, not the whole's
    unknown = [_error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, i) for i in in_order([i for i in id_order
                                                                                    if found[i] is None])]
    by_name = {t.name: t for t in (found[i] for i in id_order) if t is not None}
    names = in_order(list(by_name))
    shown = [topic_metadata(ctx, by_name[n], with_ops, reachable)
             for n in in_order([n for n in names if _describable(ctx, n)])]
    refused = [_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, by_name[n].topic_id)
               for n in in_order([n for n in names if not _describable(ctx, n)])]
    return unknown + shown + refused


def _invalid_request(version: int, requested: list) -> MetadataResponse:
    """Kafka's answer to topic ids (or a topic without a name) before v12, its
    InvalidRequestException as Metadata's error response: every requested topic with
    INVALID_REQUEST, named as asked ("" for none), no brokers."""
    return MetadataResponse(version=version, throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1,
                            topics=[_error_topic(ErrorCode.INVALID_REQUEST, t.name if t.name is not None else "",
                                                 getattr(t, "topic_id", None) or ZERO_UUID) for t in requested],
                            error_code=ErrorCode.NONE)
