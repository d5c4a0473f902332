"""TxnOffsetCommit (key 28), v0-5: a transactional producer commits a group's offsets inside
its transaction; they take effect with the COMMIT marker.

- The producer must own the transactional id at its epoch and have added the group's offsets
  partition (AddOffsetsToTxn), else Kafka's errors: INVALID_PRODUCER_ID_MAPPING, a stale epoch
  INVALID_PRODUCER_EPOCH at every version (Kafka 4 finds it when verifying the write to
  __consumer_offsets, as for a produce), a partition outside the transaction INVALID_TXN_STATE
  (TRANSACTION_ABORTABLE from v4, KIP-890).
- The transaction is verified by its own coordinator: this broker's, or in a cluster the broker
  leading the transactional id's __transaction_state partition, asked with AddPartitionsToTxn v4
  verify_only as Kafka's AddPartitionsToTxnManager asks (its answer mapped as Kafka's group
  coordinator maps it: no coordinator COORDINATOR_NOT_AVAILABLE, an unreachable one
  COORDINATOR_LOAD_IN_PROGRESS).
- v5+ on a single node (transaction version 2, KIP-890 part 2): the client sends no
  AddOffsetsToTxn; the group's offsets partition is added to the transaction here instead.
- v3+ carries the member's generation and member id (KIP-447): a stale generation is
  ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID; generation -1 skips the check.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist (whatever the
  transaction's state: Kafka sorts them out before asking the coordinator),
  OFFSET_METADATA_TOO_LARGE beyond offset.metadata.max.bytes.
- Authorization first, as Kafka's: WRITE on the transactional id, then READ on the group, else
  every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED; then READ
  on each topic, else its partitions TOPIC_AUTHORIZATION_FAILED (whether it exists or not)."""

from __future__ import annotations

from kafka.protocol.producer.transaction import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC
from wirekafka.broker.coordinator.transactions import TXN_TOPIC
from wirekafka.broker.coordinator.txn_metadata import TV2
from wirekafka.broker.handlers.offset_commit import commit_error
from wirekafka.broker.metadata.cluster_metadata import leader_of
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

ABORTABLE_FROM = 4  # KIP-890: TRANSACTION_ABORTABLE for an offsets partition outside the transaction
ADDS_PARTITION_FROM = 5  # KIP-890 part 2: the offsets partition joins the transaction here
_RETRIED = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
_Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_Part = _Topic.TxnOffsetCommitResponsePartition


async def _check_transaction(ctx: RequestContext, r: TxnOffsetCommitRequest) -> ErrorCode:
    """Is the group's offsets partition in the producer's open transaction? Asked of the
    transaction's coordinator wherever it is: this broker's own, or in a cluster the broker
    leading the transactional id's __transaction_state partition (Kafka's group coordinator
    verifies through its AddPartitionsToTxnManager). The answer as a TxnOffsetCommit error."""
    state = ctx.state
    offsets_partition = (OFFSETS_TOPIC, state.groups.partition_of(r.group_id))
    if ctx.version >= ADDS_PARTITION_FROM and not state.config.zookeeper_mode:
        return await _add_to_transaction(ctx, r, offsets_partition)
    coordinator = _transaction_coordinator(ctx, r.transactional_id)
    if state.txn_peers is not None and coordinator != state.node_id:
        code = (await state.txn_peers.verify(coordinator, r.transactional_id, r.producer_id, r.producer_epoch,
                                             [offsets_partition]))[offsets_partition]
    else:
        try:
            codes = state.transactions.verify_only(r.transactional_id, r.producer_id, r.producer_epoch,
                                                   [offsets_partition])
        except KafkaApiError as exc:
            return ErrorCode.INVALID_PRODUCER_EPOCH if exc.code is ErrorCode.PRODUCER_FENCED else exc.code
        code = codes[offsets_partition]
    return _commit_facing(code, ctx.version)


async def _add_to_transaction(ctx: RequestContext, r: TxnOffsetCommitRequest,
                              offsets_partition: tuple[str, int]) -> ErrorCode:
    """Transaction version 2 (v5+, single node): the client sends no AddOffsetsToTxn, so the
    group's offsets partition joins the transaction here, as Kafka's group coordinator has it
    added (AddPartitionsToTxn v5). A fenced producer is INVALID_PRODUCER_EPOCH; a transaction
    still completing, or a coordinator not ready, COORDINATOR_NOT_AVAILABLE (Kafka's leader
    answers NOT_ENOUGH_REPLICAS there, which its group coordinator reports so): retried."""
    try:
        await ctx.state.transactions.add_partitions(r.transactional_id, r.producer_id, r.producer_epoch,
                                                    [offsets_partition], client_transaction_version=TV2)
    except KafkaApiError as exc:
        if exc.code is ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return ErrorCode.COORDINATOR_NOT_AVAILABLE if exc.code in _RETRIED else exc.code
    return ErrorCode.NONE


def _transaction_coordinator(ctx: RequestContext, transactional_id: str) -> int:
    """The broker leading transactional_id's partition of __transaction_state; -1 for none."""
    return leader_of(ctx.state.metadata, TXN_TOPIC, ctx.state.transactions.partition_of(transactional_id))


def _commit_facing(code: ErrorCode, version: int) -> ErrorCode:
    """A verification answer as Kafka's group coordinator reports it for an offset commit
    (maybeConvertOffsetCommitError): a partition outside the transaction is INVALID_TXN_STATE
    before v4 (v4 clients know KIP-890's TRANSACTION_ABORTABLE), an unreachable coordinator
    COORDINATOR_LOAD_IN_PROGRESS (the client retries, no new lookup)."""
    if code is ErrorCode.TRANSACTION_ABORTABLE and version < ABORTABLE_FROM:
        return ErrorCode.INVALID_TXN_STATE
    return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if code is ErrorCode.NETWORK_EXCEPTION else code


def _refusal(ctx: RequestContext, r: TxnOffsetCommitRequest) -> ErrorCode:
    """The error of every partition when the request is not authorized, NONE when it is."""
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, r.transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, r.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return ErrorCode.NONE


def _refused_response(ctx: RequestContext, r: TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(version=ctx.version, throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_Part(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in r.topics])


def _sorted_out(ctx: RequestContext, topics: list) -> tuple[dict[str, list[_Part]], list[tuple[str, list]]]:
    """Kafka's checks before the coordinator: the partitions refused (topics the principal may not
    READ, topics and partitions that do not exist) by topic, in the order Kafka's response builder
    lists them, and the partitions left for the coordinator."""
    readable = ctx.authorized_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in topics})
    refused: dict[str, list[_Part]] = {}
    valid: list[tuple[str, list]] = []
    for t in topics:
        topic = ctx.state.metadata.topic(t.name)
        if t.name not in readable or topic is None:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if t.name not in readable else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            refused.setdefault(t.name, []).extend(_Part(partition_index=p.partition_index, error_code=code)
                                                  for p in t.partitions)
            continue
        kept = []
        for p in t.partitions:
            if 0 <= p.partition_index < len(topic.partitions):
                kept.append(p)
            else:
                refused.setdefault(t.name, []).append(
                    _Part(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if kept:
            valid.append((t.name, kept))
    return refused, valid


def _merged(refused: dict[str, list[_Part]], answered: list[_Topic]) -> list[_Topic]:
    """The coordinator's answers after the refused partitions, as Kafka merges them: into the
    refused topic's entry, or as a new topic at the end."""
    topics = [_Topic(name=name, partitions=parts) for name, parts in refused.items()]
    by_name = {t.name: t for t in topics}
    for t in answered:
        if t.name in by_name:
            by_name[t.name].partitions.extend(t.partitions)
        else:
            topics.append(t)
    return topics


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    r = request
    refused_all = _refusal(ctx, r)
    if refused_all != ErrorCode.NONE:
        return _refused_response(ctx, r, refused_all)
    refused, valid = _sorted_out(ctx, r.topics)
    answered = await _commit(ctx, r, valid) if valid else []
    return TxnOffsetCommitResponse(version=ctx.version, throttle_time_ms=0, topics=_merged(refused, answered))


async def _commit(ctx: RequestContext, r: TxnOffsetCommitRequest, valid: list[tuple[str, list]]) -> list[_Topic]:
    """The coordinator's part: the transaction and group checks, then the offsets."""
    state = ctx.state
    group = None
    try:
        group = state.groups.offsets.validate_txn_commit(r.group_id, getattr(r, "generation_id", -1),
                                                 getattr(r, "member_id", ""), getattr(r, "group_instance_id", None))
        error = await _check_transaction(ctx, r)
    except KafkaApiError as exc:
        error = exc.code
    max_metadata = state.config.int("offset.metadata.max.bytes")
    now_ms = state.now_ms()
    accepted: dict[tuple[str, int], gr.OffsetValue] = {}
    accepted_parts: list[_Part] = []
    topics = []
    for name, partitions in valid:
        parts = []
        for p in partitions:
            code = commit_error(error, p.committed_metadata, max_metadata)
            if code == ErrorCode.NONE:
                accepted[(name, p.partition_index)] = gr.OffsetValue(
                    p.committed_offset, getattr(p, "committed_leader_epoch", -1), p.committed_metadata or "", now_ms)
            parts.append(_Part(partition_index=p.partition_index, error_code=code))
            if code == ErrorCode.NONE:
                accepted_parts.append(parts[-1])
        topics.append(_Topic(name=name, partitions=parts))
    if group is not None and accepted and error == ErrorCode.NONE:
        try:
            await state.groups.offsets.txn_commit(group, r.producer_id, r.producer_epoch, accepted)
        except KafkaApiError as exc:
            for part in accepted_parts:
                part.error_code = exc.code
    return topics
