"""Produce (key 0), v3-13. v0-2 are advertised, as Kafka 4.3.1 does, but not served: a request
at those versions closes the connection (protocol/api_versions.py).

- Topics by name (v3-12) or topic id (v13+).
- Request-level record checks first, answered without offsets or message as Kafka does: one
  magic-2 batch per partition (INVALID_RECORD), no ZStandard before v7
  (UNSUPPORTED_COMPRESSION_TYPE).
- Batch checks (broker/batch_validation.py): max.message.bytes, CRC-32C, no client control
  batches; then Kafka's per-record checks (keys on compacted topics, timestamp bounds), answered
  as Kafka does with its summary message and, v8+, each rejected record's index and message
  (record_errors).
- LogAppendTime topics get the broker's time stamped into the batch header.
- Idempotent batches go through the partition's producer state (duplicates answered with their
  original offset).
- acks=all waits in the replica manager until the in-sync replicas have the batch (timeout_ms,
  then REQUEST_TIMED_OUT); with fewer in-sync replicas than min.insync.replicas it is
  NOT_ENOUGH_REPLICAS. Internal topics only take writes from Kafka's admin client id
  (INVALID_TOPIC_EXCEPTION otherwise).
- acks=0 gets no response; if any partition failed the connection is closed, as Kafka does.
- From v10 a partition answered NOT_LEADER_OR_FOLLOWER carries the leader this broker knows and
  the response that leader's endpoint (KIP-951, broker/leader_hints.py); such an answer is encoded
  by the schema codec, every other by the fast encoder.
- Batches are stored as received: no recompression to the topic's compression.type.
- Authorization, as Kafka's KafkaApis checks it: a request holding a transaction's batch needs
  a transactional id (with or without an authorizer) and, with an authorizer, WRITE on it. Else
  Kafka answers the whole request with its error response: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  on every partition, in the order of its HashMap of partitions (acks=0: the connection closes).
  Then WRITE on each topic, asked once per topic and before its existence: a topic without it
  answers TOPIC_AUTHORIZATION_FAILED whether it exists or not (an unknown topic id stays
  UNKNOWN_TOPIC_ID: there is no name to authorize)."""

from __future__ import annotations

import uuid
from typing import cast

from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.replica.batch_validation import request_records_error, starts_transactional
from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.metadata.leader_hints import leader_hint
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replica.replica_manager import ProduceEntry
from wirekafka.jvm import TopicPartitionKey, java_hash, java_hashmap_order, java_objects_hash
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.produce_response import FastProduceResponse, PartitionAnswer, TopicAnswer

_UNAUTHORIZED_TOPIC = KafkaApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
LEADER_HINTS_FROM = 10  # KIP-951: the current leader and its endpoint in Produce v10+


def _records(pd: ProduceRequest.TopicProduceData.PartitionProduceData) -> bytes | memoryview | None:
    """A partition's records as decoded: kafka-python types a records field `bytes | ApiData |
    None`, but decoding a request leaves the bytes as they came."""
    return cast("bytes | memoryview | None", pd.records)


def _transactional_id_refused(ctx: RequestContext, request: ProduceRequest) -> bool:
    """Kafka's first check: a request holding a transaction's batch needs a transactional id,
    and WRITE on it (always granted without an authorizer; a missing id is refused even then)."""
    if not any(starts_transactional(_records(pd)) for td in request.topic_data
               for pd in td.partition_data):
        return False
    txn_id = request.transactional_id
    return txn_id is None or not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)


def _refused(request: ProduceRequest, code: ErrorCode) -> FastProduceResponse:
    """Kafka's error answer to the whole request (ProduceRequest.getErrorResponse): every
    partition gets the error, without a message. Kafka walks a HashMap of the request's
    partitions (a partition named twice answers once), opening a topic entry at its first
    partition met."""
    parts = [(td.name, td.topic_id, pd.index) for td in request.topic_data
             for pd in td.partition_data]
    topics: dict[tuple[str, uuid.UUID | None], TopicAnswer] = {}
    for name, topic_id, index in java_hashmap_order(parts, hash=_topic_id_partition_hash):
        answer = topics.setdefault((name, topic_id), TopicAnswer(name, topic_id, []))
        answer.partitions.append(PartitionAnswer(index, code, -1, -1, -1))
    return FastProduceResponse(list(topics.values()), throttle_time_ms=0)


def _topic_id_partition_hash(part: tuple[str, uuid.UUID | None, int]) -> int:
    """hashCode() of Kafka's TopicIdPartition(topic id, partition, name): a request by name has
    the zero id, which hashes to 0 as null does."""
    name, topic_id, index = part
    return java_objects_hash(java_hash(topic_id), java_hash(TopicPartitionKey(name, index)))


async def handle(ctx: RequestContext, request: ProduceRequest) -> FastProduceResponse | ProduceResponse | None:
    v = ctx.version
    state = ctx.state
    acks = request.acks
    if _transactional_id_refused(ctx, request):
        if acks == 0:
            raise CloseConnection("acks=0 produce refused: transactional id not authorized")
        return _refused(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    entries: list[ProduceEntry] = []
    rejected: list[KafkaApiError | None] = []  # per partition: refused before any append
    for td in request.topic_data:
        topic, unknown = state.metadata.resolve(td.name, td.topic_id, by_id=v >= 13)
        name = topic.name if topic is not None else td.name
        # an unknown topic id has no name to authorize: UNKNOWN_TOPIC_ID, as Kafka answers
        allowed = (topic is None and v >= 13) or ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, name)
        for pd in td.partition_data:
            if not allowed:
                rejected.append(_UNAUTHORIZED_TOPIC)
                continue
            known = topic is not None and 0 <= pd.index < len(topic.partitions)
            rejected.append(request_records_error(v, _records(pd)) if known else None)
            if rejected[-1] is None:
                entries.append(ProduceEntry(topic, pd.index, _records(pd), unknown))
    if acks not in (-1, 0, 1):
        outcomes = None
    else:
        outcomes = iter(await state.replicas.append_records(entries, acks, request.timeout_ms,
                                                            ctx.header.client_id))
    topics = []
    failed = False
    refusals = iter(rejected)
    for td in request.topic_data:
        parts = []
        for pd in td.partition_data:
            refusal = next(refusals)
            o = next(outcomes) if outcomes is not None and refusal is None else None
            if refusal is not None:
                parts.append(PartitionAnswer(pd.index, refusal.code, -1, -1, -1, refusal.message))
            elif o is None:
                parts.append(PartitionAnswer(pd.index, ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, -1))
            else:
                parts.append(PartitionAnswer(pd.index, o.error, o.base_offset, o.log_append_time,
                                             o.log_start_offset, o.message, o.record_errors))
            failed = failed or parts[-1].error_code != ErrorCode.NONE
        topics.append(TopicAnswer(td.name, td.topic_id, parts))
    # the produce byte quota charges the whole request once it is answered, whatever happened to it
    throttle = state.client_quotas.produce.record(ctx.principal, ctx.client_id, ctx.request_size)
    ctx.mute(throttle)
    if acks == 0:
        if failed:
            raise CloseConnection("acks=0 produce failed")
        return None  # no response: the mute is all a throttled acks=0 producer gets
    if failed and v >= LEADER_HINTS_FROM and any(p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                                                 for t in topics for p in t.partitions):
        return _with_leader_hints(ctx, topics, throttle)
    return FastProduceResponse(topics, throttle_time_ms=throttle)


def _with_leader_hints(ctx: RequestContext, topics: list[TopicAnswer], throttle: int) -> ProduceResponse:
    """The answer through the schema codec, with the current leader of each partition answered
    NOT_LEADER_OR_FOLLOWER and those leaders' endpoints (KIP-951), as Kafka's KafkaApis adds them."""
    T = ProduceResponse.TopicProduceResponse
    P = T.PartitionProduceResponse
    metadata = ctx.state.metadata
    nodes: dict[int, BrokerInfo] = {}
    responses = []
    for t in topics:
        topic, _ = metadata.resolve(t.name, t.topic_id, by_id=ctx.version >= 13)
        parts = []
        for a in t.partitions:
            part = P(index=a.index, error_code=a.error_code, base_offset=a.base_offset,
                     log_append_time_ms=a.log_append_time_ms, log_start_offset=a.log_start_offset,
                     record_errors=[P.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                    for i, m in a.record_errors], error_message=a.error_message)
            if a.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                hint = leader_hint(metadata, topic, a.index, ctx.listener)
                part.current_leader = P.LeaderIdAndEpoch(leader_id=hint.leader_id, leader_epoch=hint.leader_epoch)
                if hint.node is not None:
                    nodes[hint.node.node_id] = hint.node
            parts.append(part)
        # None where the version lacks the field (the stubs type fields without their versions)
        responses.append(T(name=cast(str, t.name), topic_id=cast(uuid.UUID, t.topic_id), partition_responses=parts))
    return ProduceResponse(version=ctx.version, responses=responses, throttle_time_ms=throttle, node_endpoints=[
        ProduceResponse.NodeEndpoint(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
        for _, n in sorted(nodes.items())])
