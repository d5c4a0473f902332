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
  UNKNOWN_TOPIC_ID: there is no name to authorize).
- A transactional batch for a partition outside the producer's transaction (verified with the
  transaction coordinator, transaction.partition.verification.enable) is INVALID_TXN_STATE with
  Kafka's message, and at v11 TRANSACTION_ABORTABLE without one, as Kafka answers each version.
  In a cluster, a coordinator on another broker is asked (AddPartitionsToTxn verify_only) about
  the first batch of a transaction on each partition, before the append; a marker appended while
  it answers voids the answer, as Kafka's verification guard.
- Transaction version 2 (v12+, KIP-890 part 2; single node only, where transaction.version 2 is
  finalized): the partitions of the request's transactional batches are added to the producer's
  transaction by this broker, as Kafka's leader asks its coordinator (AddPartitionsToTxn v5), so
  the client sends no AddPartitionsToTxn. A partition that knows the producer at a newer epoch
  (a version 2 marker moved it on) answers INVALID_PRODUCER_EPOCH without asking, as Kafka's
  leader does. The coordinator's refusals are answered as Kafka's
  ReplicaManager maps them: a fenced producer INVALID_PRODUCER_EPOCH; a transaction still
  completing (CONCURRENT_TRANSACTIONS) or a coordinator not ready NOT_ENOUGH_REPLICAS, which
  every client retries without refreshing metadata. In ZooKeeper mode (no features advertised,
  Kafka 3.9's behaviour) a batch must be in a transaction its client opened."""

from __future__ import annotations

import uuid
from typing import cast

from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.replica.batch_validation import request_records_error, starts_transactional
from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.coordinator.txn_metadata import TV2
from wirekafka.broker.metadata.leader_hints import leader_hint
from wirekafka.broker.coordinator.transactions import TXN_TOPIC
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, leader_of
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replica.replica_manager import ProduceEntry
from wirekafka.jvm import TopicPartitionKey, java_hash, java_hashmap_order, java_objects_hash
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.produce_response import FastProduceResponse, PartitionAnswer, TopicAnswer

_UNAUTHORIZED_TOPIC = KafkaApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
LEADER_HINTS_FROM = 10  # KIP-951: the current leader and its endpoint in Produce v10+
ADDS_PARTITIONS_FROM = 12  # KIP-890 part 2: the leader adds a transaction's partitions itself
# the one version that answers a batch outside the transaction TRANSACTION_ABORTABLE (KIP-890's
# error for clients that abort on it); before it INVALID_TXN_STATE, from v12 the leader adds it
ABORTABLE_VERSION = 11
# coordinator answers a producer would not retry: Kafka turns them into one it retries
_RETRIED_AS_NOT_ENOUGH_REPLICAS = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION,
                                   ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                   ErrorCode.NOT_COORDINATOR}


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
    places: list[int] = []  # per entry: its partition's place in rejected
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
                places.append(len(rejected) - 1)
    if v >= ADDS_PARTITIONS_FROM and request.transactional_id is not None and not state.config.zookeeper_mode:
        refused = await _add_to_transaction(ctx, request.transactional_id, entries)
        for i, refusal in refused.items():
            rejected[places[i]] = refusal
        entries = [e for i, e in enumerate(entries) if i not in refused]
    verdicts = None
    if (request.transactional_id is not None and state.txn_peers is not None
            and state.replicas.verifies_transactions()):
        verdicts = await _verify_elsewhere(ctx, request.transactional_id, entries)
    if acks not in (-1, 0, 1):
        outcomes = None
    else:
        outcomes = iter(await state.replicas.append_records(entries, acks, request.timeout_ms,
                                                            ctx.header.client_id, verdicts))
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
            elif v == ABORTABLE_VERSION and o.error == ErrorCode.INVALID_TXN_STATE and o.log_start_offset < 0:
                # refused by the verification before the log: Kafka's answer for a v11 client
                parts.append(PartitionAnswer(pd.index, ErrorCode.TRANSACTION_ABORTABLE, -1, -1, -1))
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


async def _add_to_transaction(ctx: RequestContext, transactional_id: str,
                              entries: list[ProduceEntry]) -> dict[int, KafkaApiError]:
    """Transaction version 2: add the partitions of the entries holding a transaction's batch to
    the producer's transaction before they are appended; the refused ones, by entry index."""
    txn = {i: e for i, e in enumerate(entries)
           if e.topic is not None and 0 <= e.index < len(e.topic.partitions) and starts_transactional(e.records)}
    if not txn:
        return {}
    producers = {(h.producer_id, h.producer_epoch) for h in
                 (records.parse_header(cast("bytes | memoryview", e.records)) for e in txn.values())}
    if len(producers) > 1:
        refusal = KafkaApiError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                                "Transactional records contained more than one producer ID")
        return dict.fromkeys(txn, refusal)
    [(producer_id, producer_epoch)] = producers
    # a partition that knows the producer at a newer epoch fences it without asking (as Kafka's)
    refused = {i: KafkaApiError(ErrorCode.INVALID_PRODUCER_EPOCH) for i, e in txn.items()
               if (p := _partition(e)) is not None and p.producers.older_epoch(producer_id, producer_epoch)}
    wanted = [(e.topic.name, e.index) for i, e in txn.items() if e.topic is not None and i not in refused]
    if not wanted:
        return refused
    try:
        await ctx.state.transactions.add_partitions(transactional_id, producer_id, producer_epoch, wanted,
                                                    client_transaction_version=TV2)
    except KafkaApiError as exc:
        refused.update(dict.fromkeys((i for i in txn if i not in refused), _producer_facing(exc.code)))
    return refused


async def _verify_elsewhere(ctx: RequestContext, transactional_id: str,
                            entries: list[ProduceEntry]) -> dict[int, tuple[ErrorCode, int]]:
    """In a cluster, a transaction whose coordinator is another broker: the first batch of the
    transaction on each partition this broker leads is verified with that coordinator
    (AddPartitionsToTxn verify_only, as Kafka's leader asks through its AddPartitionsToTxnManager),
    so that a late batch of a finished transaction cannot open a transaction no marker will
    close. Later batches of the transaction need no asking (the partition has it open). Returns
    entry index -> (the answer as the leader gives it, the producer's marker stamp at asking)."""
    state = ctx.state
    coordinator = leader_of(state.metadata, TXN_TOPIC, state.transactions.partition_of(transactional_id))
    if coordinator == state.node_id or state.txn_peers is None:
        return {}  # this broker's coordinator answers in the append, without an await
    pending: dict[int, tuple[Partition, records.BatchHeader]] = {}
    for i, e in enumerate(entries):
        p = _partition(e) if e.topic is not None and 0 <= e.index < len(e.topic.partitions) else None
        if p is None or not p.is_leader or not starts_transactional(e.records):
            continue
        header = records.parse_header(cast("bytes | memoryview", e.records))
        if not p.producers.in_transaction(header.producer_id, header.producer_epoch):
            pending[i] = (p, header)
    verdicts: dict[int, tuple[ErrorCode, int]] = {}
    for (producer_id, producer_epoch) in {(h.producer_id, h.producer_epoch) for _, h in pending.values()}:
        asked = {i: (p, p.producers.marker_stamp(producer_id)) for i, (p, h) in pending.items()
                 if (h.producer_id, h.producer_epoch) == (producer_id, producer_epoch)}
        answers = await state.txn_peers.verify(coordinator, transactional_id, producer_id, producer_epoch,
                                               [(p.topic, p.index) for p, _ in asked.values()])
        for i, (p, stamp) in asked.items():
            verdicts[i] = (_as_leader_answers(answers[(p.topic, p.index)]), stamp)
    return verdicts


def _as_leader_answers(code: ErrorCode) -> ErrorCode:
    """A verification answer as Kafka's leader passes it on (AddPartitionsToTxnManager, then
    ReplicaManager): a partition outside the transaction is INVALID_TXN_STATE (answered per
    Produce version after the append loop), a retriable refusal NOT_ENOUGH_REPLICAS."""
    if code is ErrorCode.TRANSACTION_ABORTABLE:
        return ErrorCode.INVALID_TXN_STATE
    return ErrorCode.NOT_ENOUGH_REPLICAS if code in _RETRIED_AS_NOT_ENOUGH_REPLICAS else code


def _partition(entry: ProduceEntry) -> Partition | None:
    """The entry's partition, where this broker holds a replica of it."""
    return entry.topic.partitions[entry.index] if entry.topic is not None else None


def _producer_facing(code: ErrorCode) -> KafkaApiError:
    """The coordinator's refusal as Kafka's leader answers it to the producer."""
    if code is ErrorCode.PRODUCER_FENCED:
        return KafkaApiError(ErrorCode.INVALID_PRODUCER_EPOCH)
    if code in _RETRIED_AS_NOT_ENOUGH_REPLICAS:
        return KafkaApiError(ErrorCode.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to "
                                                            f"the transaction. Underlying error: {code.name}")
    if code is ErrorCode.INVALID_TXN_STATE:
        return KafkaApiError(code, "Partition was not added to the transaction")
    return KafkaApiError(code)


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
