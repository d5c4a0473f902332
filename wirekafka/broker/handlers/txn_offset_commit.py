"""TxnOffsetCommit (key 28), v0-5: a transactional producer commits a group's offsets inside
its transaction; they take effect with the COMMIT marker.

- The producer must own the transactional id at its epoch and have added the group's offsets
  partition (AddOffsetsToTxn), else Kafka's errors: INVALID_PRODUCER_ID_MAPPING, a stale epoch
  INVALID_PRODUCER_EPOCH at every version (Kafka 4 finds it when verifying the write to
  __consumer_offsets, as for a produce), a partition outside the transaction INVALID_TXN_STATE.
- v3+ carries the member's generation and member id (KIP-447): a stale generation is
  ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID; generation -1 skips the check.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist,
  OFFSET_METADATA_TOO_LARGE beyond offset.metadata.max.bytes."""

from __future__ import annotations

from kafka.protocol.producer.transaction import TxnOffsetCommitResponse

from wirekafka.broker import group_records as gr
from wirekafka.broker.context import RequestContext
from wirekafka.broker.groups import OFFSETS_TOPIC
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_Part = _Topic.TxnOffsetCommitResponsePartition


def _check_transaction(ctx: RequestContext, r: object) -> ErrorCode:
    coordinator = ctx.state.transactions
    offsets_partition = ctx.state.groups.partition_of(r.group_id)  # type: ignore[attr-defined]
    try:
        codes = coordinator.verify_only(r.transactional_id, r.producer_id, r.producer_epoch,  # type: ignore[attr-defined]
                                        [(OFFSETS_TOPIC, offsets_partition)])
    except KafkaApiError as exc:
        return ErrorCode.INVALID_PRODUCER_EPOCH if exc.code is ErrorCode.PRODUCER_FENCED else exc.code
    code = next(iter(codes.values()))
    return ErrorCode.INVALID_TXN_STATE if code is ErrorCode.TRANSACTION_ABORTABLE else code


async def handle(ctx: RequestContext, request: object) -> TxnOffsetCommitResponse:
    r = request
    state = ctx.state
    v = ctx.version
    group = None
    try:
        group = state.groups.validate_txn_commit(r.group_id, getattr(r, "generation_id", -1),  # type: ignore[attr-defined]
                                                 getattr(r, "member_id", ""), getattr(r, "group_instance_id", None))
        error = _check_transaction(ctx, r)
    except KafkaApiError as exc:
        error = exc.code
    max_metadata = state.config.int("offset.metadata.max.bytes")
    now_ms = state.now_ms()
    accepted: dict[tuple[str, int], gr.OffsetValue] = {}
    accepted_parts: list[_Part] = []
    topics = []
    for t in r.topics:  # type: ignore[attr-defined]
        topic = state.metadata.topic(t.name)
        parts = []
        for p in t.partitions:
            code = error
            if code == ErrorCode.NONE:
                if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > max_metadata:
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                else:
                    accepted[(t.name, p.partition_index)] = gr.OffsetValue(
                        p.committed_offset, getattr(p, "committed_leader_epoch", -1), p.committed_metadata or "",
                        now_ms)
            parts.append(_Part(partition_index=p.partition_index, error_code=code))
            if code == ErrorCode.NONE:
                accepted_parts.append(parts[-1])
        topics.append(_Topic(name=t.name, partitions=parts))
    if group is not None and accepted and error == ErrorCode.NONE:
        try:
            await state.groups.txn_commit(group, r.producer_id, r.producer_epoch, accepted)  # type: ignore[attr-defined]
        except KafkaApiError as exc:
            for part in accepted_parts:
                part.error_code = exc.code
    return TxnOffsetCommitResponse(version=v, throttle_time_ms=0, topics=topics)
