"""What the classic group coordinator keeps of a group: its state, members and offsets, and the
rules that read them alone (Kafka's GroupMetadata and MemberMetadata)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable

import trio

from wirekafka.broker.coordinator import group_records as gr
from wirekafka.jvm import java_string_hash
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

log = logging.getLogger(__name__)


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

    def accepts_joining_member(self, member_id: str, max_size: int) -> bool:
        """Kafka's acceptJoiningMember (group.max.size). While rebalancing, the members awaiting
        their join response are counted, not the group's size: that may exceed the limit after
        it was lowered, and counting rejoiners lets the last existing members to rejoin be the
        ones kept out. Otherwise existing members always get back in and new ones up to the
        limit. The empty member id (a new or a restarted static member) is never an existing
        member; ids still owing their MEMBER_ID_REQUIRED rejoin are not members yet."""
        member = self.members.get(member_id)
        if self.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if self.state == GroupState.PREPARING_REBALANCE:
            return (member is not None and member.join_waiter is not None) or self.awaiting_join() < max_size
        return member is not None or len(self.members) < max_size

    def remove_member(self, m: Member) -> None:
        """Drop a member; its pending JoinGroup/SyncGroup answers UNKNOWN_MEMBER_ID."""
        self.members.pop(m.member_id, None)
        if m.group_instance_id and self.static.get(m.group_instance_id) == m.member_id:
            del self.static[m.group_instance_id]
        fail_waiters(m, ErrorCode.UNKNOWN_MEMBER_ID)

    def common_protocols(self, protocols: Iterable[tuple[str, bytes]]) -> set[str]:
        common = {n for n, _ in protocols}
        for m in self.members.values():
            common &= {n for n, _ in m.protocols}
        return common


    def join_result_for(self, member: Member) -> JoinResult:
        is_leader = member.member_id == self.leader
        return JoinResult(ErrorCode.NONE, self.generation, self.protocol_type, self.protocol, self.leader or "",
                          member.member_id, self.member_list() if is_leader else [])


    def member_list(self) -> list[tuple[str, str | None, bytes]]:
        return [(m.member_id, m.group_instance_id, m.metadata_for(self.protocol)) for m in self.members.values()]


    def select_protocol(self) -> str:
        candidates = set.intersection(*({n for n, _ in m.protocols} for m in self.members.values()))
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = next(n for n, _ in m.protocols if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first_member_order = [n for n, _ in next(iter(self.members.values())).protocols]
        return max(votes, key=lambda n: (votes[n], -first_member_order.index(n) if n in first_member_order else 0))


def find_member(g: Group | None, member_id: str, instance_id: str | None) -> Member:
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


def subscribed_topics(g: Group) -> set[str]:
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


def group_value(g: Group) -> gr.GroupValue:
    """The group's metadata record, as SyncGroup and a completed join persist it."""
    return gr.GroupValue(
        protocol_type=g.protocol_type or "",
        generation=g.generation,
        protocol=g.protocol,
        leader=g.leader,
        state_timestamp=g.state_timestamp_ms,
        members=[gr.MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout_ms, m.session_timeout_ms,
                                m.metadata_for(g.protocol), m.assignment) for m in g.members.values()],
    )


def fail_waiters(m: Member, code: ErrorCode) -> None:
    """Answer a member's pending JoinGroup/SyncGroup with an error (it was fenced or removed)."""
    if m.join_waiter is not None:
        m.join_result = JoinResult(code, member_id=m.member_id)
        m.join_waiter.set()
        m.join_waiter = None
    if m.sync_waiter is not None:
        m.sync_error = code
        m.sync_waiter.set()
        m.sync_waiter = None


def replay_pending(groups: dict[str, Group], producer_id: int,
                   entries: list[tuple[int, bytes, bytes | None]]) -> None:
    """Offsets (offset, key, value) of a transaction still open in the log: pending until its
    marker, which applies each only if no later record of its partition took effect meanwhile."""
    for offset, key, value in entries:
        k = gr.decode_key(key)
        if isinstance(k, gr.OffsetKey) and value is not None:
            g = groups.setdefault(k.group, Group(k.group))
            v = gr.decode_offset_value(value)
            v.record_offset = offset
            g.pending_txn.setdefault(producer_id, {})[(k.topic, k.partition)] = v

def replay(groups: dict[str, Group], key: bytes, value: bytes | None, now: float, record_offset: int = -1,
           committed_txn: bool = False) -> None:
    """One __consumer_offsets record applied to the groups it rebuilds (a tombstone removes), at
    record_offset in the log. A committed transaction's offset (committed_txn: replayed at its
    COMMIT marker) takes effect only over an older record, as in Kafka's
    replayEndTransactionMarker: a plain commit written between the transaction's record and its
    marker stays — the answer the cleaner's keeping the latest record of each key gives too."""
    k = gr.decode_key(key)
    if isinstance(k, gr.OffsetKey):
        g = groups.get(k.group)
        if value is None:
            if g is not None:
                g.offsets.pop((k.topic, k.partition), None)
            return
        g = g or groups.setdefault(k.group, Group(k.group))
        v = gr.decode_offset_value(value)
        v.record_offset = record_offset
        if not committed_txn or v.newer_than(g.offsets.get((k.topic, k.partition))):
            g.offsets[(k.topic, k.partition)] = v
    elif isinstance(k, gr.GroupKey):
        if value is None:
            groups.pop(k.group, None)
            return
        v = gr.decode_group_value(value)
        g = groups.setdefault(k.group, Group(k.group))
        g.protocol_type = v.protocol_type or None
        g.generation = v.generation
        g.protocol = v.protocol
        g.leader = v.leader
        g.state_timestamp_ms = v.state_timestamp
        g.members.clear()
        g.static.clear()
        for m in v.members:
            g.members[m.member_id] = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                            m.session_timeout, m.rebalance_timeout, v.protocol_type,
                                            [(v.protocol or "", m.subscription)], now, m.assignment)
            if m.group_instance_id:
                g.static[m.group_instance_id] = m.member_id
        g.state = GroupState.STABLE if g.members else GroupState.EMPTY
