"""The group coordinator for the classic consumer-group protocol, and committed offsets.

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
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Iterable

import trio

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.jvm import java_string_hash
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

if TYPE_CHECKING:
    from wirekafka.broker.coordinator.runtime import CoordinatorRuntime
    from wirekafka.broker.replica.partition import Partition

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
TIMER_TICK = 0.1


class GroupState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's Utils.abs of the hash (Math.abs, but 0 for Integer.MIN_VALUE) modulo the count."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % partitions


@dataclass
class JoinResult:
    error: ErrorCode
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_seen: float
    assignment: bytes = b""
    join_waiter: trio.Event | None = None
    join_result: JoinResult | None = None
    sync_waiter: trio.Event | None = None
    sync_error: ErrorCode = ErrorCode.NONE

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, float] = field(default_factory=dict)  # member ids awaiting their first join
    static: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    rebalance_deadline: float = 0.0
    initial_delay_deadline: float = 0.0
    state_timestamp_ms: int = -1
    offsets: dict[tuple[str, int], gr.OffsetValue] = field(default_factory=dict)
    # TxnOffsetCommit offsets by producer id, in effect once its transaction commits
    pending_txn: dict[int, dict[tuple[str, int], gr.OffsetValue]] = field(default_factory=dict)
    offset_writes: int = 0  # offset records written and not yet in `offsets` / `pending_txn`
    refused_at: float | None = None  # a GROUP_MAX_SIZE_REACHED refusal while rebalancing, not yet followed by a check

    def awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join_waiter is not None)


class GroupCoordinator:
    def __init__(self, runtime: "CoordinatorRuntime") -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.groups: dict[str, Group] = {}
        self.num_partitions = runtime.config.int("offsets.topic.num.partitions")
        self.loading: set[int] = set()

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
    def _codec(self) -> int:
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

    def _write(self, group_id: str, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Append now without waiting: group metadata and tombstones, whose callers answer
        from memory (a crash before the write is durable loses it, as in Kafka with acks=1)."""
        if entries:
            self.runtime.write(self.offsets_partition(group_id), entries, compression=self._codec)

    def _persist_group(self, g: Group) -> None:
        value = gr.GroupValue(
            protocol_type=g.protocol_type or "",
            generation=g.generation,
            protocol=g.protocol,
            leader=g.leader,
            state_timestamp=g.state_timestamp_ms,
            members=[gr.MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout_ms, m.session_timeout_ms,
                                    m.metadata_for(g.protocol), m.assignment) for m in g.members.values()],
        )
        self._write(g.group_id, [(gr.encode_group_key(gr.GroupKey(g.group_id)), gr.encode_group_value(value))])

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
            replay = await self.runtime.read_entries(partition)
            for key, value in replay.entries:
                self._replay(key, value)
            for producer_id, entries in replay.open_transactions.items():
                self._replay_pending(producer_id, entries)
            self._rebalance_over_capacity(partition.index)
        finally:
            self.loading.discard(partition.index)
        await trio.lowlevel.checkpoint()

    def _rebalance_over_capacity(self, index: int) -> None:
        """Kafka's onLoaded: a group loaded with more members than group.max.size (the limit was
        lowered since it formed) rebalances at once, so its members can commit their offsets
        and only group.max.size of them get back in (see _accepts_joining_member)."""
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

    def _replay_pending(self, producer_id: int, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Offsets of a transaction still open in the log: pending until its marker."""
        for key, value in entries:
            k = gr.decode_key(key)
            if isinstance(k, gr.OffsetKey) and value is not None:
                g = self.groups.setdefault(k.group, Group(k.group))
                g.pending_txn.setdefault(producer_id, {})[(k.topic, k.partition)] = gr.decode_offset_value(value)

    def _replay(self, key: bytes, value: bytes | None) -> None:
        k = gr.decode_key(key)
        if isinstance(k, gr.OffsetKey):
            g = self.groups.get(k.group)
            if value is None:
                if g is not None:
                    g.offsets.pop((k.topic, k.partition), None)
                return
            g = g or self.groups.setdefault(k.group, Group(k.group))
            g.offsets[(k.topic, k.partition)] = gr.decode_offset_value(value)
        elif isinstance(k, gr.GroupKey):
            if value is None:
                self.groups.pop(k.group, None)
                return
            v = gr.decode_group_value(value)
            g = self.groups.setdefault(k.group, Group(k.group))
            g.protocol_type = v.protocol_type or None
            g.generation = v.generation
            g.protocol = v.protocol
            g.leader = v.leader
            g.state_timestamp_ms = v.state_timestamp
            g.members.clear()
            g.static.clear()
            now = self.now()
            for m in v.members:
                g.members[m.member_id] = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                                m.session_timeout, m.rebalance_timeout, v.protocol_type,
                                                [(v.protocol or "", m.subscription)], now, m.assignment)
                if m.group_instance_id:
                    g.static[m.group_instance_id] = m.member_id
            g.state = GroupState.STABLE if g.members else GroupState.EMPTY

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
        if not self._accepts_joining_member(g, member_id):
            return self._refuse_joining_member(g, member_id)
        if not protocols or (g.members and (protocol_type != g.protocol_type or not self._common_protocols(g, protocols))):
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
                return self._current_join_result(g, member)
            if g.state != GroupState.PREPARING_REBALANCE:
                self._prepare_rebalance(g)
        return await self._await_join(g, member)

    def _accepts_joining_member(self, g: Group, member_id: str) -> bool:
        """Kafka's acceptJoiningMember (group.max.size). While rebalancing, the members awaiting
        their join response are counted, not the group's size: that may exceed the limit after
        it was lowered, and counting rejoiners lets the last existing members to rejoin be the
        ones kept out. Otherwise existing members always get back in and new ones up to the
        limit. The empty member id (a new or a restarted static member) is never an existing
        member; ids still owing their MEMBER_ID_REQUIRED rejoin are not members yet."""
        max_size = self.config.int("group.max.size")
        member = g.members.get(member_id)
        if g.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if g.state == GroupState.PREPARING_REBALANCE:
            return (member is not None and member.join_waiter is not None) or g.awaiting_join() < max_size
        return member is not None or len(g.members) < max_size

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
            self._remove(g, member)
        if g.state == GroupState.PREPARING_REBALANCE:
            g.refused_at = self.now()
        return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id="")

    def _common_protocols(self, g: Group, protocols: Iterable[tuple[str, bytes]]) -> set[str]:
        common = {n for n, _ in protocols}
        for m in g.members.values():
            common &= {n for n, _ in m.protocols}
        return common

    def _current_join_result(self, g: Group, member: Member) -> JoinResult:
        is_leader = member.member_id == g.leader
        return JoinResult(ErrorCode.NONE, g.generation, g.protocol_type, g.protocol, g.leader or "",
                          member.member_id, self._member_list(g) if is_leader else [])

    def _member_list(self, g: Group) -> list[tuple[str, str | None, bytes]]:
        return [(m.member_id, m.group_instance_id, m.metadata_for(g.protocol)) for m in g.members.values()]

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
            result = self._current_join_result(g, member)
            result.skip_assignment = g.leader == new_id
            return result
        if g.state != GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(g)
        return await self._await_join(g, member)

    def _fence(self, old: Member) -> None:
        _fail_waiters(old, ErrorCode.FENCED_INSTANCE_ID)

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
                self._remove(g, m)
        g.pending.clear()
        g.refused_at = None
        g.generation += 1
        g.state_timestamp_ms = self.runtime.now_ms()
        if not g.members:
            g.state = GroupState.EMPTY
            g.protocol = None
            g.leader = None
            self._persist_group(g)
            return
        g.protocol = self._select_protocol(g)
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.state = GroupState.COMPLETING_REBALANCE
        now = self.now()
        for m in g.members.values():
            m.last_seen = now
            m.join_result = self._current_join_result(g, m)
            assert m.join_waiter is not None
            m.join_waiter.set()
            m.join_waiter = None

    def _select_protocol(self, g: Group) -> str:
        candidates = set.intersection(*({n for n, _ in m.protocols} for m in g.members.values()))
        votes: dict[str, int] = {}
        for m in g.members.values():
            choice = next(n for n, _ in m.protocols if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first_member_order = [n for n, _ in next(iter(g.members.values())).protocols]
        return max(votes, key=lambda n: (votes[n], -first_member_order.index(n) if n in first_member_order else 0))

    # ---- membership ----------------------------------------------------------------------------
    def _member(self, g: Group | None, member_id: str, instance_id: str | None) -> Member:
        """Kafka's validateMember: a static member is looked up by its instance id first (an
        unknown instance is UNKNOWN_MEMBER_ID, another member id for it FENCED_INSTANCE_ID)."""
        if g is None or g.state == GroupState.DEAD:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if instance_id:
            static_id = g.static.get(instance_id)
            if static_id is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
            if static_id != member_id:
                raise KafkaApiError(ErrorCode.FENCED_INSTANCE_ID)
        member = g.members.get(member_id)
        if member is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def _remove(self, g: Group, m: Member) -> None:
        g.members.pop(m.member_id, None)
        if m.group_instance_id and g.static.get(m.group_instance_id) == m.member_id:
            del g.static[m.group_instance_id]
        _fail_waiters(m, ErrorCode.UNKNOWN_MEMBER_ID)

    def _member_left(self, g: Group) -> None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(g)
        self._maybe_complete_join(g)
        if g.state == GroupState.PREPARING_REBALANCE and not g.members:
            self._complete_join(g)

    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> tuple[ErrorCode, bytes, str | None, str | None]:
        self.check_available(group_id)
        g = self.groups.get(group_id)
        member = self._member(g, member_id, instance_id)
        assert g is not None
        if generation != g.generation:
            raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
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
            self._persist_group(g)
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
        self.check_available(group_id)
        g = self.groups.get(group_id)
        member = self._member(g, member_id, instance_id)
        assert g is not None
        if generation != g.generation:
            raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
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
                member = self._member(g, member_id, instance_id)
                assert g is not None
                self._remove(g, member)
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
            self.expire_members()
            if self.now() >= next_retention:
                next_retention = self.now() + retention_check
                self.expire_offsets()

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
                    self._remove(g, m)
                    removed = True
            if removed:
                self._member_left(g)
            else:
                self._maybe_complete_join(g, on_timer=not expired_pending)

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
            self._write(g.group_id, tombstones)

    # ---- offsets ---------------------------------------------------------------------------------
    def validate_commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                        unknown_group: ErrorCode) -> Group:
        """Kafka's checks, in Kafka's order, for a commit from a group member or a standalone
        (generation -1) consumer: a standalone commit creates the group or needs it Empty; a
        member commit to a group that does not exist is `unknown_group` (the error depends on
        the request version); the member, then its generation, then the group's state."""
        self.check_available(group_id, allow_empty_id=True)
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            if generation >= 0:
                raise KafkaApiError(unknown_group)
            g = self.groups[group_id] = Group(group_id)
            return g
        if generation < 0 and g.state == GroupState.EMPTY:
            return g
        if generation >= 0 or member_id or instance_id:
            member = self._member(g, member_id, instance_id)
            if generation != g.generation:
                raise KafkaApiError(ErrorCode.ILLEGAL_GENERATION)
            member.last_seen = self.now()
        else:  # an anonymous commit, but the group has members
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if g.state == GroupState.COMPLETING_REBALANCE:
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS)
        return g

    async def commit(self, g: Group, offsets: dict[tuple[str, int], gr.OffsetValue]) -> None:
        """Write the offsets and answer once they are replicated, like an acks=all produce
        (offsets.commit.timeout.ms, then REQUEST_TIMED_OUT); the cache follows the log."""
        await self._write_offsets(g, offsets)
        g.offsets.update(offsets)

    async def _write_offsets(self, g: Group, offsets: dict[tuple[str, int], gr.OffsetValue],
                             producer: tuple[int, int] | None = None) -> None:
        """Offset records for the group's partition of __consumer_offsets, written and waited for
        (offsets.commit.timeout.ms); with producer (id, epoch), inside that transaction."""
        if not offsets:
            return
        entries: list[tuple[bytes, bytes | None]] = [
            (gr.encode_offset_key(gr.OffsetKey(g.group_id, t, p)), gr.encode_offset_value(v))
            for (t, p), v in offsets.items()]
        g.offset_writes += 1  # until the caller caches them, the group must not expire
        try:
            await self.runtime.write_and_wait(self.offsets_partition(g.group_id), entries,
                                              self.config.int("offsets.commit.timeout.ms"), producer, self._codec)
        finally:
            g.offset_writes -= 1

    def validate_txn_commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> Group:
        """Kafka's checks for TxnOffsetCommit: the member and generation only when given (a
        producer outside the group sends generation -1 and no member id)."""
        self.check_available(group_id)
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
        the groups of that partition take effect (commit) or are dropped (abort)."""
        for g in self.groups.values():
            if producer_id in g.pending_txn and self.partition_of(g.group_id) == partition_index:
                pending = g.pending_txn.pop(producer_id)
                if commit:
                    g.offsets.update(pending)

    def has_pending_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        g = self.groups.get(group_id)
        return g is not None and any((topic, partition) in p for p in g.pending_txn.values())

    def committed(self, group_id: str) -> dict[tuple[str, int], gr.OffsetValue]:
        self.check_available(group_id, allow_empty_id=True)
        g = self.groups.get(group_id)
        return g.offsets if g is not None else {}

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        self.check_available(group_id)
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND)
        subscribed = self.subscribed_topics(g)
        out: dict[tuple[str, int], ErrorCode] = {}
        doomed = []
        for t, p in partitions:
            if t in subscribed:
                out[(t, p)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                out[(t, p)] = ErrorCode.NONE
                if (t, p) in g.offsets:
                    doomed.append((t, p))
        self._write(group_id, [(gr.encode_offset_key(gr.OffsetKey(group_id, t, p)), None) for t, p in doomed])
        for tp in doomed:
            del g.offsets[tp]
        return out

    def subscribed_topics(self, g: Group) -> set[str]:
        """Topics the group's consumers subscribe to (consumer protocol metadata)."""
        from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

        if g.protocol_type != "consumer" or g.state == GroupState.EMPTY:
            return set()
        topics: set[str] = set()
        for m in g.members.values():
            try:
                topics.update(ConsumerProtocolSubscription.decode(m.metadata_for(g.protocol)).topics)
            except Exception:  # opaque or foreign metadata: nothing known to be subscribed
                log.debug("unreadable subscription of member %s", m.member_id)
        return topics

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
        self._write(group_id, tombstones)
        g.state = GroupState.DEAD
        del self.groups[group_id]


def _fail_waiters(m: Member, code: ErrorCode) -> None:
    """Answer a member's pending JoinGroup/SyncGroup with an error (it was fenced or removed)."""
    if m.join_waiter is not None:
        m.join_result = JoinResult(code, member_id=m.member_id)
        m.join_waiter.set()
        m.join_waiter = None
    if m.sync_waiter is not None:
        m.sync_error = code
        m.sync_waiter.set()
        m.sync_waiter = None
