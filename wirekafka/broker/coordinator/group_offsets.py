"""Committed offsets of the classic groups (Kafka's OffsetMetadataManager): commits from members,
standalone consumers and transactions, their expiry, and deletion. The groups themselves and
their log belong to the GroupCoordinator; this is its offsets half."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.broker.coordinator.group_model import Group, GroupState, find_member, subscribed_topics
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

if TYPE_CHECKING:
    from wirekafka.broker.coordinator.groups import GroupCoordinator

log = logging.getLogger(__name__)


class OffsetManager:
    def __init__(self, coordinator: "GroupCoordinator") -> None:
        self.coordinator = coordinator
        self.groups = coordinator.groups
        self.runtime = coordinator.runtime
        self.config = coordinator.config

    def expire_offsets(self) -> None:
        """Drop the offsets of Empty groups that outlived their retention: an offset committed
        with OffsetCommit v2-4's retention_time_ms expires at its own expire timestamp, as in
        Kafka; any other after offsets.retention.minutes. An Empty group left without offsets
        (and no transaction's, no commit in flight, no member joining) is deleted with a
        tombstone for its metadata, as Kafka 4's cleanupGroupMetadata does: with the offsets'
        tombstones, that lets the cleaner bound __consumer_offsets."""
        retention_ms = self.config.int("offsets.retention.minutes") * 60_000
        now_ms = self.runtime.now_ms()
        for g in list(self.groups.values()):
            if g.state != GroupState.EMPTY:
                continue
            since = max(g.state_timestamp_ms, 0)
            expired = [tp for tp, v in g.offsets.items()
                       if (now_ms >= v.expire_timestamp if v.expire_timestamp is not None
                           else now_ms - max(since, v.commit_timestamp) > retention_ms)]
            tombstones: list[tuple[bytes, bytes | None]] = [
                (gr.encode_offset_key(gr.OffsetKey(g.group_id, t, p)), None) for t, p in expired]
            for tp in expired:
                del g.offsets[tp]
            if expired:
                log.info("expired %d offsets of empty group %s", len(expired), g.group_id)
            dead = not g.offsets and not g.pending_txn and not g.offset_writes and not g.pending
            if dead:
                tombstones.append((gr.encode_group_key(gr.GroupKey(g.group_id)), None))
                g.state = GroupState.DEAD
                del self.groups[g.group_id]
                log.info("deleted empty group %s: no offsets left", g.group_id)
            self.coordinator.write(g.group_id, tombstones)

    def validate_commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                        unknown_group: ErrorCode) -> Group:
        """Kafka's checks, in Kafka's order, for a commit from a group member or a standalone
        (generation -1) consumer: a standalone commit creates the group or needs it Empty; a
        member commit to a group that does not exist is `unknown_group` (the error depends on
        the request version); the member, then its generation, then the group's state."""
        self.coordinator.check_available(group_id, allow_empty_id=True)
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            if generation >= 0:
                raise KafkaApiError(unknown_group)
            g = self.groups[group_id] = Group(group_id)
            return g
        if generation < 0 and g.state == GroupState.EMPTY:
            return g
        if generation >= 0 or member_id or instance_id:
            member = find_member(g, member_id, instance_id)
            if generation != g.generation:
                raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
            member.last_seen = self.coordinator.now()
        else:  # an anonymous commit, but the group has members
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if g.state == GroupState.COMPLETING_REBALANCE:
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS)
        return g

    async def commit(self, g: Group, offsets: dict[tuple[str, int], gr.OffsetValue]) -> None:
        """Write the offsets and answer once they are replicated, like an acks=all produce
        (offsets.commit.timeout.ms, then REQUEST_TIMED_OUT); the cache follows the log."""
        await self._write_offsets(g, offsets)
        for tp, v in offsets.items():
            if v.newer_than(g.offsets.get(tp)):  # a commit answered late keeps a newer one
                g.offsets[tp] = v

    async def _write_offsets(self, g: Group, offsets: dict[tuple[str, int], gr.OffsetValue],
                             producer: tuple[int, int] | None = None) -> None:
        """Offset records for the group's partition of __consumer_offsets, written and waited for
        (offsets.commit.timeout.ms); with producer (id, epoch), inside that transaction. Each
        value learns its record's offset (newer_than compares them)."""
        if not offsets:
            return
        entries: list[tuple[bytes, bytes | None]] = [
            (gr.encode_offset_key(gr.OffsetKey(g.group_id, t, p)), gr.encode_offset_value(v))
            for (t, p), v in offsets.items()]
        g.offset_writes += 1  # until the caller caches them, the group must not expire
        try:
            result = await self.runtime.write_and_wait(self.coordinator.offsets_partition(g.group_id), entries,
                                                       self.config.int("offsets.commit.timeout.ms"), producer,
                                                       self.coordinator.codec)
            for i, v in enumerate(offsets.values()):
                v.record_offset = result.base_offset + i
        finally:
            g.offset_writes -= 1

    def validate_txn_commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> Group:
        """Kafka's checks for TxnOffsetCommit: the member and generation only when given (a
        producer outside the group sends generation -1 and no member id)."""
        self.coordinator.check_available(group_id)
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        if g.state == GroupState.DEAD:
            raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if instance_id and g.static.get(instance_id) not in (None, member_id):
            raise KafkaApiError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id and member_id not in g.members:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation >= 0 and generation != g.generation:
            raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
        return g

    async def txn_commit(self, g: Group, producer_id: int, producer_epoch: int,
                         offsets: dict[tuple[str, int], gr.OffsetValue]) -> None:
        """Write offsets as part of the producer's transaction; they stay pending (OffsetFetch
        with require_stable: UNSTABLE_OFFSET_COMMIT) until its COMMIT marker, and vanish on ABORT."""
        if not offsets:
            return
        await self._write_offsets(g, offsets, (producer_id, producer_epoch))
        g.pending_txn.setdefault(producer_id, {}).update(offsets)

    def complete_transaction(self, partition_index: int, producer_id: int, commit: bool) -> None:
        """A marker reached a __consumer_offsets partition: the producer's pending offsets in
        the groups of that partition take effect (commit) or are dropped (abort). A committed
        offset takes effect only where no later record of its partition did (Kafka's
        completePendingTxnOffsetCommit): a plain commit written after the transaction's record
        and before its marker stays, as replay and the cleaner would have it."""
        for g in self.groups.values():
            if producer_id in g.pending_txn and self.coordinator.partition_of(g.group_id) == partition_index:
                pending = g.pending_txn.pop(producer_id)
                if commit:
                    for tp, v in pending.items():
                        if v.newer_than(g.offsets.get(tp)):
                            g.offsets[tp] = v

    def has_pending_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        g = self.groups.get(group_id)
        return g is not None and any((topic, partition) in p for p in g.pending_txn.values())

    def committed(self, group_id: str) -> dict[tuple[str, int], gr.OffsetValue]:
        self.coordinator.check_available(group_id, allow_empty_id=True)
        g = self.groups.get(group_id)
        return g.offsets if g is not None else {}

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        self.coordinator.check_available(group_id)
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND)
        subscribed = subscribed_topics(g)
        out: dict[tuple[str, int], ErrorCode] = {}
        doomed = []
        for t, p in partitions:
            if t in subscribed:
                out[(t, p)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                out[(t, p)] = ErrorCode.NONE
                if (t, p) in g.offsets:
                    doomed.append((t, p))
        self.coordinator.write(group_id, [(gr.encode_offset_key(gr.OffsetKey(group_id, t, p)), None) for t, p in doomed])
        for tp in doomed:
            del g.offsets[tp]
        return out
