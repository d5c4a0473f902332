"""The group coordinator for the classic consumer-group protocol: membership and rebalances, over
the groups' log in __consumer_offsets. A group's data and its pure rules are group_model.py;
committed offsets are group_offsets.py (`GroupCoordinator.offsets`).

State machine per group (Kafka's): Empty -> PreparingRebalance -> CompletingRebalance -> Stable,
back to PreparingRebalance when membership or subscriptions change, Dead once deleted.
- JoinGroup waits until every known member has rejoined (or the rebalance timeout drops the
  stragglers; a new group also waits group.initial.rebalance.delay.ms, extended per new member up
  to the rebalance timeout), then bumps the generation, picks the protocol every member supports
  (by member votes), and answers all joiners; only the leader gets the member list.
- SyncGroup from the leader stores the assignments (a member the leader left out gets an empty
  one), persists the group, and answers every waiting member with its own assignment.
- Members that stop heartbeating for their session timeout are removed, as are members that
  never answered MEMBER_ID_REQUIRED (KIP-394). Static members (KIP-345) keep their assignment
  across a restart within the session timeout; an old instance is fenced.
- group.max.size: a join that would take the group past it is GROUP_MAX_SIZE_REACHED (Kafka's
  acceptJoiningMember), and a group loaded with more members than that rebalances.
- Offsets and group metadata are records in __consumer_offsets (group_records.py); the
  partition for a group is Utils.abs(javaHashCode(group)) % offsets.topic.num.partitions, so clients'
  and tools' expectations of the coordinator partition hold.
Timers use trio's clock; nothing here blocks."""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING

import trio

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.broker.coordinator.group_model import (Group, GroupState, JoinResult, Member, fail_waiters,
                                                      find_member, group_value, partition_for, replay,
                                                      replay_pending)
from wirekafka.broker.coordinator.group_offsets import OffsetManager
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

if TYPE_CHECKING:
    from wirekafka.broker.coordinator.runtime import CoordinatorRuntime
    from wirekafka.broker.replica.partition import Partition

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
TIMER_TICK = 0.1


class GroupCoordinator:
    def __init__(self, runtime: "CoordinatorRuntime") -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.groups: dict[str, Group] = {}
        self.num_partitions = runtime.config.int("offsets.topic.num.partitions")
        self.loading: set[int] = set()
        self.offsets = OffsetManager(self)

    # ---- helpers ---------------------------------------------------------------------------
    def now(self) -> float:
        return trio.current_time()

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def check_available(self, group_id: str, *, allow_empty_id: bool = False) -> None:
        """Raise what Kafka answers before it looks at a group. An empty group id is
        INVALID_GROUP_ID only where members are involved (JoinGroup, SyncGroup, Heartbeat,
        LeaveGroup, OffsetDelete); Kafka 4 commits, fetches, describes and deletes it like any id."""
        if not group_id and not allow_empty_id:
            raise KafkaApiError(ErrorCode.INVALID_GROUP_ID, "group id must not be empty")
        if self.partition_of(group_id) in self.loading:
            raise KafkaApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        self.offsets_partition(group_id)  # NOT_COORDINATOR until FindCoordinator created the topic

    @property
    def codec(self) -> int:
        """offsets.topic.compression.codec: every batch the coordinator writes is compressed with it,
        so that one commit's offsets are one compressed unit ("atomic" commits, in Kafka's words)."""
        return self.config.int("offsets.topic.compression.codec")

    def offsets_partition(self, group_id: str) -> "Partition":
        return self.runtime.partition(OFFSETS_TOPIC, self.partition_of(group_id))

    async def ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets on first use, with Kafka's settings for it."""
        await self.runtime.ensure_topic(OFFSETS_TOPIC, self.num_partitions, {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(self.config.int("offsets.topic.segment.bytes")),
        })

    def write(self, group_id: str, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Append now without waiting: group metadata and tombstones, whose callers answer
        from memory (a crash before the write is durable loses it, as in Kafka with acks=1)."""
        if entries:
            self.runtime.write(self.offsets_partition(group_id), entries, compression=self.codec)

    # ---- loading ---------------------------------------------------------------------------
    async def load(self) -> None:
        """Replay __consumer_offsets; groups on partitions not yet replayed answer
        COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
        started = time.monotonic()
        partitions = self.runtime.partitions(OFFSETS_TOPIC)
        self.loading = {p.index for p in partitions}
        for partition in partitions:
            await self.load_partition(partition)
        log.info("loaded %d consumer groups from %s in %d ms", len(self.groups), OFFSETS_TOPIC,
                 (time.monotonic() - started) * 1000)

    async def load_partition(self, partition: "Partition") -> None:
        """Replay one partition of __consumer_offsets (this broker became its leader); its groups
        answer COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
        self.loading.add(partition.index)
        try:
            entries_read = await self.runtime.read_entries(partition)
            now = self.now()
            for (key, value), (offset, transactional) in zip(entries_read.entries, entries_read.sources):
                replay(self.groups, key, value, now, offset, transactional)
            for producer_id, entries in entries_read.open_transactions.items():
                replay_pending(self.groups, producer_id, entries)
            self._rebalance_over_capacity(partition.index)
        finally:
            self.loading.discard(partition.index)
        await trio.lowlevel.checkpoint()

    def _rebalance_over_capacity(self, index: int) -> None:
        """Kafka's onLoaded: a group loaded with more members than group.max.size (the limit was
        lowered since it formed) rebalances at once, so its members can commit their offsets
        and only group.max.size of them get back in (see Group.accepts_joining_member)."""
        max_size = self.config.int("group.max.size")
        for g in self.groups.values():
            if len(g.members) > max_size and self.partition_of(g.group_id) == index:
                log.info("freshly-loaded group %s (size %d) is over capacity %d: rebalancing in order to give "
                         "a chance for consumers to commit offsets", g.group_id, len(g.members), max_size)
                self._prepare_rebalance(g)

    def unload_partition(self, index: int) -> None:
        """This broker no longer leads the partition: forget its groups (the new leader loads
        them from the log)."""
        gone = [gid for gid in self.groups if self.partition_of(gid) == index]
        for gid in gone:
            del self.groups[gid]
        if gone:
            log.info("unloaded %d consumer groups of %s-%d", len(gone), OFFSETS_TOPIC, index)

    # ---- JoinGroup -----------------------------------------------------------------------------
    async def join(self, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                   client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinResult:
        self.check_available(group_id)
        cfg = self.config
        if not cfg.int("group.min.session.timeout.ms") <= session_timeout_ms <= cfg.int("group.max.session.timeout.ms"):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=member_id)
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
            g = self.groups[group_id] = Group(group_id)
        if not g.accepts_joining_member(member_id, self.config.int("group.max.size")):
            return self._refuse_joining_member(g, member_id)
        if not protocols or (g.members and (protocol_type != g.protocol_type or not g.common_protocols(protocols))):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        now = self.now()
        fresh = False
        if not member_id:
            if instance_id and instance_id in g.static:
                return await self._rejoin_static(g, instance_id, client_id, client_host, session_timeout_ms,
                                                 rebalance_timeout_ms, protocol_type, protocols)
            new_id = f"{client_id}-{uuid.uuid4()}"
            if require_known_member_id and not instance_id:
                g.pending[new_id] = now + session_timeout_ms / 1000
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id)
            member_id = new_id
            fresh = True
        elif instance_id and g.static.get(instance_id) not in (None, member_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=member_id)
        member = g.members.get(member_id)
        if member is None:
            if member_id not in g.pending and not fresh:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
            g.pending.pop(member_id, None)
            member = Member(member_id, instance_id, client_id, client_host, session_timeout_ms,
                            rebalance_timeout_ms, protocol_type, list(protocols), now)
            g.members[member_id] = member
            if instance_id:
                g.static[instance_id] = member_id
            if len(g.members) == 1:
                g.protocol_type = protocol_type
            self._prepare_rebalance(g, new_member=True)
        else:
            changed = member.protocols != list(protocols)
            member.protocols = list(protocols)
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
            member.last_seen = now
            if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE) and not changed \
                    and member_id != g.leader:
                return g.join_result_for(member)
            if g.state != GroupState.PREPARING_REBALANCE:
                self._prepare_rebalance(g)
        return await self._await_join(g, member)

    def _refuse_joining_member(self, g: Group, member_id: str) -> JoinResult:
        """GROUP_MAX_SIZE_REACHED with an empty member id, as Kafka answers; the refused id leaves
        the group (an existing member is removed, a MEMBER_ID_REQUIRED id forgotten). That may
        leave every remaining member joined, but Kafka 4.3.1 does not check the join phase then:
        the rebalance completes at its deadline or at the next join or leave (_maybe_complete_join)."""
        g.pending.pop(member_id, None)
        member = g.members.get(member_id)
        if member is not None:
            log.info("removing member %s of group %s: the group is at group.max.size %d", member_id, g.group_id,
                     self.config.int("group.max.size"))
            g.remove_member(member)
        if g.state == GroupState.PREPARING_REBALANCE:
            g.refused_at = self.now()
        return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id="")

    async def _rejoin_static(self, g: Group, instance_id: str, client_id: str, client_host: str,
                             session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                             protocols: list[tuple[str, bytes]]) -> JoinResult:
        """KIP-345: a restarted static member replaces its old member id; if nothing it
        subscribes to changed and it is not the leader, it keeps its assignment with no rebalance."""
        old_id = g.static[instance_id]
        old = g.members.pop(old_id, None)
        new_id = f"{client_id}-{uuid.uuid4()}"
        member = Member(new_id, instance_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
                        protocol_type, list(protocols), self.now(), old.assignment if old else b"")
        g.members[new_id] = member
        g.static[instance_id] = new_id
        if old is not None:
            self._fence(old)
        if g.leader == old_id:
            g.leader = new_id
        if old is not None and g.state == GroupState.STABLE and old.protocols == member.protocols:
            # A returning leader gets the members but must not reassign (SkipAssignment): the
            # group stays Stable and its SyncGroup just returns the stored assignment.
            result = g.join_result_for(member)
            result.skip_assignment = g.leader == new_id
            return result
        if g.state != GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(g)
        return await self._await_join(g, member)

    def _fence(self, old: Member) -> None:
        fail_waiters(old, ErrorCode.FENCED_INSTANCE_ID)

    async def _await_join(self, g: Group, member: Member) -> JoinResult:
        waiter = trio.Event()
        member.join_waiter = waiter
        member.join_result = None
        self._maybe_complete_join(g)
        await waiter.wait()
        assert member.join_result is not None
        return member.join_result

    def _prepare_rebalance(self, g: Group, new_member: bool = False) -> None:
        now = self.now()
        max_rebalance = max((m.rebalance_timeout_ms for m in g.members.values()), default=0) / 1000
        if g.state in (GroupState.EMPTY, GroupState.DEAD):
            delay = self.config.int("group.initial.rebalance.delay.ms") / 1000
            g.initial_delay_deadline = now + delay
            g.rebalance_deadline = now + max(max_rebalance, delay)
        elif g.state == GroupState.PREPARING_REBALANCE:
            if new_member and g.initial_delay_deadline > now:
                delay = self.config.int("group.initial.rebalance.delay.ms") / 1000
                g.initial_delay_deadline = min(now + delay, g.rebalance_deadline)
            return
        else:
            g.initial_delay_deadline = now
            g.rebalance_deadline = now + max_rebalance
            for m in g.members.values():  # members waiting for their assignment must rejoin
                if m.sync_waiter is not None:
                    m.sync_error = ErrorCode.REBALANCE_IN_PROGRESS
                    m.sync_waiter.set()
                    m.sync_waiter = None
        g.state = GroupState.PREPARING_REBALANCE
        g.state_timestamp_ms = self.runtime.now_ms()

    def _maybe_complete_join(self, g: Group, *, on_timer: bool = False) -> None:
        """Complete the join phase once every member has rejoined (and any initial delay is
        over), or at the rebalance deadline. Kafka checks for the former on a join, a leave or
        an expiry, and when its initial-delay timer fires, but not after a GROUP_MAX_SIZE_REACHED
        refusal; `on_timer` is the periodic tick standing in for Kafka's timers, which therefore
        ignores a refusal no event has followed (unless an initial delay ends after it)."""
        if g.state != GroupState.PREPARING_REBALANCE:
            return
        now = self.now()
        if not on_timer:
            g.refused_at = None
        unchecked_refusal = g.refused_at is not None and g.initial_delay_deadline <= g.refused_at
        all_joined = g.awaiting_join() == len(g.members) and not g.pending and not unchecked_refusal
        if (all_joined and now >= g.initial_delay_deadline) or now >= g.rebalance_deadline:
            self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        for m in list(g.members.values()):
            if m.join_waiter is None:
                log.info("removing member %s of group %s: it did not rejoin in time", m.member_id, g.group_id)
                g.remove_member(m)
        g.pending.clear()
        g.refused_at = None
        g.generation += 1
        g.state_timestamp_ms = self.runtime.now_ms()
        if not g.members:
            g.state = GroupState.EMPTY
            g.protocol = None
            g.leader = None
            self.write(g.group_id, [(gr.encode_group_key(gr.GroupKey(g.group_id)), gr.encode_group_value(group_value(g)))])
            return
        g.protocol = g.select_protocol()
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.state = GroupState.COMPLETING_REBALANCE
        now = self.now()
        for m in g.members.values():
            m.last_seen = now
            m.join_result = g.join_result_for(m)
            assert m.join_waiter is not None
            m.join_waiter.set()
            m.join_waiter = None

    # ---- membership ----------------------------------------------------------------------------
    def _member_left(self, g: Group) -> None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(g)
        self._maybe_complete_join(g)
        if g.state == GroupState.PREPARING_REBALANCE and not g.members:
            self._complete_join(g)

    def _generation_member(self, group_id: str, generation: int, member_id: str, instance_id: str | None
                           ) -> tuple[Group, Member]:
        """Kafka's checks before SyncGroup and Heartbeat: the group is here, the member is in it,
        and it speaks of the group's current generation."""
        self.check_available(group_id)
        g = self.groups.get(group_id)
        member = find_member(g, member_id, instance_id)
        assert g is not None  # find_member refused a missing group
        if generation != g.generation:
            raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
        return g, member

    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> tuple[ErrorCode, bytes, str | None, str | None]:
        g, member = self._generation_member(group_id, generation, member_id, instance_id)
        if (protocol_type is not None and protocol_type != g.protocol_type) or \
                (protocol_name is not None and protocol_name != g.protocol):
            raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member.last_seen = self.now()
        if g.state == GroupState.PREPARING_REBALANCE:
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS)
        if g.state == GroupState.STABLE:
            return ErrorCode.NONE, member.assignment, g.protocol_type, g.protocol
        if member_id == g.leader:
            for m in g.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            g.state = GroupState.STABLE
            g.state_timestamp_ms = self.runtime.now_ms()
            self.write(g.group_id, [(gr.encode_group_key(gr.GroupKey(g.group_id)), gr.encode_group_value(group_value(g)))])
            for m in g.members.values():
                if m.sync_waiter is not None:
                    m.sync_error = ErrorCode.NONE
                    m.sync_waiter.set()
                    m.sync_waiter = None
            return ErrorCode.NONE, member.assignment, g.protocol_type, g.protocol
        waiter = trio.Event()
        member.sync_waiter = waiter
        await waiter.wait()
        if member.sync_error != ErrorCode.NONE:
            raise KafkaApiError(member.sync_error)
        return ErrorCode.NONE, member.assignment, g.protocol_type, g.protocol

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> None:
        g, member = self._generation_member(group_id, generation, member_id, instance_id)
        member.last_seen = self.now()
        if g.state == GroupState.PREPARING_REBALANCE:
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS)

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        self.check_available(group_id)
        g = self.groups.get(group_id)
        codes = []
        left = False
        for member_id, instance_id in members:
            try:
                if instance_id and not member_id:
                    member_id = (g.static.get(instance_id, "") if g else "")
                member = find_member(g, member_id, instance_id)
                assert g is not None
                g.remove_member(member)
                left = True
                codes.append(ErrorCode.NONE)
            except KafkaApiError as exc:
                codes.append(exc.code)
        if left and g is not None:
            self._member_left(g)
        return codes

    # ---- timers ----------------------------------------------------------------------------
    async def run_timers(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        retention_check = self.config.int("offsets.retention.check.interval.ms") / 1000
        next_retention = self.now() + retention_check
        while True:
            await trio.sleep(TIMER_TICK)
            try:
                self.expire_members()
                if self.now() >= next_retention:
                    next_retention = self.now() + retention_check
                    self.offsets.expire_offsets()
            except Exception:  # noqa: BLE001 - a bug in one group's timer must not stop the broker
                log.exception("group timers failed; trying again at the next tick")

    def expire_members(self) -> None:
        now = self.now()
        for g in list(self.groups.values()):
            expired_pending = [pid for pid, deadline in g.pending.items() if now > deadline]
            for pid in expired_pending:
                del g.pending[pid]
            removed = False
            for m in list(g.members.values()):
                if m.join_waiter is None and now - m.last_seen > m.session_timeout_ms / 1000:
                    log.info("member %s of group %s expired after %d ms without a heartbeat", m.member_id,
                             g.group_id, m.session_timeout_ms)
                    g.remove_member(m)
                    removed = True
            if removed:
                self._member_left(g)
            else:
                self._maybe_complete_join(g, on_timer=not expired_pending)



    def delete_group(self, group_id: str) -> None:
        self.check_available(group_id, allow_empty_id=True)
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND)
        if g.state != GroupState.EMPTY:
            raise KafkaApiError(ErrorCode.NON_EMPTY_GROUP)
        tombstones: list[tuple[bytes, bytes | None]] = [
            (gr.encode_offset_key(gr.OffsetKey(group_id, t, p)), None) for t, p in g.offsets]
        tombstones.append((gr.encode_group_key(gr.GroupKey(group_id)), None))
        self.write(group_id, tombstones)
        g.state = GroupState.DEAD
        del self.groups[group_id]
