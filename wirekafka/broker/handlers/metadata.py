"""Metadata (key 3), v0-13.

- The live brokers reachable on the listener the request came in on (each with its endpoint
  there: a broker without that listener is left out, as in Kafka), the controller and, per partition, leader, leader epoch, replicas, ISR and
  offline replicas as the cluster metadata records them (one node: itself for all of these). A
  partition without a leader answers LEADER_NOT_AVAILABLE, as Kafka does; one whose leader lacks
  the listener answers leader -1 and LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before).
- Topics by name (all versions) or by topic id (v10+); null topics (v1+) or an empty list at v0
  means every topic.
- Auto-creation of unknown, validly named, non-internal topics when auto.create.topics.enable
  is set and the request allows it (v4+), with num.partitions partitions. The request that
  creates a topic is answered as Kafka answers it, UNKNOWN_TOPIC_OR_PARTITION without partitions
  (Kafka's controller creates the topic after the answer), and so is a request that arrives
  while the creation is under way; the next request sees the topic.
- Topic authorized operations (v8+) when asked for: no authorizer, so everything is allowed.
"""

from __future__ import annotations

import uuid

from kafka.protocol.metadata.metadata import MetadataResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata import INTERNAL_TOPICS, Topic, topic_name_error
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

ZERO_UUID = uuid.UUID(int=0)
TOPIC_OPERATIONS = {3, 4, 5, 6, 7, 8, 10, 11}  # READ..ALTER_CONFIGS, as AclOperation codes
CLUSTER_OPERATIONS = {5, 7, 8, 9, 10, 11, 12}  # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, ..., IDEMPOTENT_WRITE

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition


def partition_fields(ctx: RequestContext, topic: Topic, index: int, reachable: set[int]) -> tuple[ErrorCode, dict]:
    """A partition as Metadata and DescribeTopicPartitions describe it: the error Metadata gives
    a partition without a leader on this listener, and the fields both answers share."""
    view = ctx.state.metadata.partition_view(topic, index)
    leader, code = view.leader, ErrorCode.NONE
    if leader < 0:
        code = ErrorCode.LEADER_NOT_AVAILABLE
    elif leader not in reachable:  # alive, but without the listener this request came in on
        leader, code = -1, ErrorCode.LISTENER_NOT_FOUND
    return code, {"partition_index": index, "leader_id": leader, "leader_epoch": view.leader_epoch,
                  "replica_nodes": list(view.replicas), "isr_nodes": list(view.isr),
                  "offline_replicas": list(view.offline)}


def _partition_metadata(ctx: RequestContext, topic: Topic, index: int, reachable: set[int]) -> _Partition:
    code, fields = partition_fields(ctx, topic, index, reachable)
    if code == ErrorCode.LISTENER_NOT_FOUND and ctx.version < 6:
        code = ErrorCode.LEADER_NOT_AVAILABLE
    return _Partition(error_code=code, **fields)


def topic_metadata(ctx: RequestContext, topic: Topic, with_ops: bool, reachable: set[int]) -> _Topic:
    return _Topic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=[_partition_metadata(ctx, topic, i, reachable) for i in range(len(topic.partitions))],
        authorized_operations=TOPIC_OPERATIONS if with_ops else None,
    )


def _error_topic(code: ErrorCode, name: str | None, topic_id: uuid.UUID = ZERO_UUID) -> _Topic:
    return _Topic(error_code=code, name=name, topic_id=topic_id, is_internal=False, partitions=[],
                  authorized_operations=None)


async def handle(ctx: RequestContext, request: object) -> MetadataResponse:
    v = ctx.version
    state = ctx.state
    with_ops = bool(getattr(request, "include_topic_authorized_operations", False)) and v >= 8
    requested = request.topics  # type: ignore[attr-defined]
    brokers = state.metadata.brokers(ctx.listener)
    reachable = {b.node_id for b in brokers}
    topics: list[_Topic] = []
    if requested is None or (v == 0 and not requested):
        topics = [topic_metadata(ctx, t, with_ops, reachable) for t in state.metadata.all_topics()]
    else:
        auto = state.config.bool("auto.create.topics.enable") and (v < 4 or request.allow_auto_topic_creation)  # type: ignore[attr-defined]
        for req_topic in requested:
            name = req_topic.name
            if name is None:
                tid = req_topic.topic_id
                found = state.metadata.topic_by_id(tid) if tid else None
                topics.append(
                    topic_metadata(ctx, found, with_ops, reachable) if found
                    else _error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, tid or ZERO_UUID)
                )
                continue
            topic = state.metadata.topic(name)
            if topic is None and auto and name not in INTERNAL_TOPICS:
                if topic_name_error(name):
                    topics.append(_error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION, name))
                else:
                    if not state.metadata.being_created(name):  # another request may be creating it now
                        try:
                            await state.metadata.create_topic(name, state.config.int("num.partitions"),
                                                              wait=False)
                        except KafkaApiError as exc:  # in a cluster another broker may be creating it
                            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                                raise
                    topics.append(_error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name))
                continue
            if topic is None:
                topics.append(_error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name))
            else:
                topics.append(topic_metadata(ctx, topic, with_ops, reachable))
    include_cluster_ops = v <= 10 and bool(getattr(request, "include_cluster_authorized_operations", False))
    return MetadataResponse(
        version=v,
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in brokers],
        cluster_id=state.cluster_id,
        controller_id=state.metadata.controller_id(),
        topics=topics,
        authorized_operations=CLUSTER_OPERATIONS if include_cluster_ops else None,
        error_code=ErrorCode.NONE,
    )
