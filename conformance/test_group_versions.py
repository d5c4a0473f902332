"""The classic group APIs at every version wirekafka advertises, each checked for what that
version means in Kafka 4.3.1: JoinGroup before KIP-394's MEMBER_ID_REQUIRED and before the
rebalance timeout, SyncGroup's v5 protocol fields, static members (group instance ids) in
Heartbeat, SyncGroup, LeaveGroup and DescribeGroups, LeaveGroup's single member and member
batches, DescribeGroups' authorized operations and v6 errors, ListGroups' state and type filters,
DeleteGroups, OffsetCommit's retention (v2-4), leader epoch (v6+), static members (v7+), error for
an unknown group (v9+) and topic ids (v10), and OffsetFetch from one group (v1-7) to several
(v8+) and by topic id (v10)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

from conformance.harness import transcript
from conformance.harness.scenarios import fetch
from conformance.harness.wire import Connection, create_topic, ensure_group_coordinator, metadata, poll, retry_transient, unique
from wirekafka.broker.coordinator import group_records
from wirekafka.broker.coordinator.group_model import partition_for
from wirekafka.protocol import records

# A consumer-protocol subscription (v0, no topics): Kafka parses it, so keep it well formed.
SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"
PROTOCOLS = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)]
SESSION_MS, REBALANCE_MS = 10_000, 7_000
CLIENT_ID = "conformance"  # wire.Connection's client id; member ids start with it
GROUP_OPERATIONS = {3, 6, 8, 10, 11}  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS

# Error codes
NONE, UNKNOWN_TOPIC_OR_PARTITION, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL = 0, 3, 22, 23
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 25, 27, 68, 69
MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID, UNKNOWN_TOPIC_ID = 79, 82, 100

_Assignment = SyncGroupRequest.SyncGroupRequestAssignment
_Leaving = LeaveGroupRequest.MemberIdentity
_CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
_FetchGroup = OffsetFetchRequest.OffsetFetchRequestGroup


# ---- building blocks ----------------------------------------------------------------------------

def _join_request(group: str, member_id: str = "", instance_id: str | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                            member_id=member_id, group_instance_id=instance_id, protocol_type="consumer",
                            protocols=PROTOCOLS, reason=None)


def _join(conn: Connection, group: str, version: int, member_id: str = "", instance_id: str | None = None) -> Any:
    req = _join_request(group, member_id, instance_id)
    return retry_transient(lambda: conn.call(req, version), lambda r: r.error_code)


def _sync(conn: Connection, group: str, joined: Any, assignments: dict[str, bytes], version: int = 5,
          instance_id: str | None = None, protocol_type: str | None = "consumer",
          protocol_name: str | None = "range") -> Any:
    return conn.call(SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
        group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
        assignments=[_Assignment(member_id=m, assignment=a) for m, a in assignments.items()]), version)


def _stable_member(conn: Connection, group: str, instance_id: str | None = None,
                   assignment: bytes = b"ASSIGN") -> Any:
    """The only member of a new group, synced with `assignment` (JoinGroup v5: static members
    need it; a dynamic one goes through MEMBER_ID_REQUIRED)."""
    ensure_group_coordinator(conn, group)
    joined = _join(conn, group, 5, instance_id=instance_id)
    if joined.error_code == MEMBER_ID_REQUIRED:
        joined = _join(conn, group, 5, joined.member_id, instance_id)
    assert joined.error_code == NONE, joined
    synced = _sync(conn, group, joined, {joined.member_id: assignment}, instance_id=instance_id)
    assert synced.error_code == NONE and synced.assignment == assignment, synced
    return joined


def _wait_for_state(conn: Connection, group: str, state: str, timeout: float = 30.0) -> None:
    """Poll (quietly: timing, not behaviour) until the group is in `state`."""
    described = poll(lambda: _describe(conn, group), lambda d: d.group_state == state, timeout, interval=0.05)
    assert described.group_state == state, f"group {group} never reached {state}"


def _start_joining(conn: Connection, group: str, observer: Connection, instance_id: str | None = None) -> int:
    """Send a second member's join to a Stable group on `conn` and return its correlation id once
    the broker is rebalancing, as seen on `observer` (a broker answers a connection's requests in
    order, so not on `conn`). The join is answered when the existing members rejoin. A dynamic
    member first gets its member id (MEMBER_ID_REQUIRED, answered at once)."""
    member_id = ""
    if instance_id is None:
        first = _join(conn, group, 5)
        assert first.error_code == MEMBER_ID_REQUIRED, first
        member_id = first.member_id
    pending = conn.send(_join_request(group, member_id, instance_id), 5)
    _wait_for_state(observer, group, "PreparingRebalance")
    return pending


def _stable_pair(conn_a: Connection, conn_b: Connection, group: str,
                 instance_ids: tuple[str | None, str | None] = (None, None)) -> tuple[Any, Any]:
    """A Stable group of two members, A (conn_a) assigned b"A" and B (conn_b) assigned b"B":
    B's join is answered once A rejoins, and the follower's sync once the leader's arrives."""
    a_id, b_id = instance_ids
    first_a = _stable_member(conn_a, group, a_id)
    pending = _start_joining(conn_b, group, conn_a, b_id)
    joined_a = _join(conn_a, group, 5, first_a.member_id, a_id)
    joined_b = conn_b.receive(11, 5, pending)
    assert joined_a.error_code == joined_b.error_code == NONE, (joined_a, joined_b)
    assert joined_a.generation_id == joined_b.generation_id == first_a.generation_id + 1
    members = {joined_a.member_id: (conn_a, joined_a, a_id), joined_b.member_id: (conn_b, joined_b, b_id)}
    leader_conn, leader, leader_instance = members.pop(joined_a.leader)
    ((follower_conn, follower, follower_instance),) = members.values()
    waiting = follower_conn.send(SyncGroupRequest(
        group_id=group, generation_id=follower.generation_id, member_id=follower.member_id,
        group_instance_id=follower_instance, protocol_type="consumer", protocol_name="range", assignments=[]), 5)
    synced = _sync(leader_conn, group, leader, {joined_a.member_id: b"A", joined_b.member_id: b"B"},
                   instance_id=leader_instance)
    follower_synced = follower_conn.receive(14, 5, waiting)
    assert synced.error_code == follower_synced.error_code == NONE, (synced, follower_synced)
    return joined_a, joined_b


def _describe(conn: Connection, group: str, version: int = 5, operations: bool = False) -> Any:
    (described,) = conn.call(DescribeGroupsRequest(groups=[group], include_authorized_operations=operations),
                             version).groups
    return described


def _commit(conn: Connection, group: str, version: int, topic: str, topic_id: uuid.UUID | None = None,
            generation: int = -1, member_id: str = "", instance_id: str | None = None, partition: int = 0,
            offset: int = 5, leader_epoch: int = -1, metadata: str | None = "m", retention_ms: int = -1) -> int:
    """One partition's commit; its error code."""
    req = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
        group_instance_id=instance_id, retention_time_ms=retention_ms,
        topics=[_CommitTopic(name=topic, topic_id=topic_id, partitions=[_CommitTopic.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=leader_epoch,
            committed_metadata=metadata)])])
    (t,) = conn.call(req, version).topics
    (p,) = t.partitions
    assert p.partition_index == partition
    return p.error_code


def _committed(conn: Connection, group: str, topic: str) -> dict[int, tuple[int, int, str]]:
    """partition -> (offset, leader epoch, metadata) committed for `topic` (OffsetFetch v9)."""
    resp = conn.call(OffsetFetchRequest(groups=[_FetchGroup(group_id=group, member_id=None, member_epoch=-1,
                                                           topics=None)], require_stable=False), 9)
    (g,) = resp.groups
    assert g.error_code == NONE
    return {p.partition_index: (p.committed_offset, p.committed_leader_epoch, p.metadata)
            for t in g.topics if t.name == topic for p in t.partitions}


def _offsets_topic_records(conn: Connection, group: str) -> list[tuple[object, int, bytes | None]]:
    """(key, value version, value) of every record about `group` in __consumer_offsets, oldest
    first. Read quietly: the raw records carry member ids and timestamps of their broker; the
    scenarios compare the decoded fields that the API version is about."""
    out: list[tuple[object, int, bytes | None]] = []
    with transcript.unrecorded():
        (offsets_topic,) = metadata(conn, ["__consumer_offsets"]).topics
        partition = partition_for(group, len(offsets_topic.partitions))
        position = 0
        while True:
            answer = fetch(conn, "__consumer_offsets", position, partition=partition)
            data = answer.records or b""
            for start, end in records.split_batches(data):
                header = records.parse_header(data, start)
                position = header.base_offset + header.last_offset_delta + 1
                if header.is_control:
                    continue
                for record in records.iter_records(bytes(data[start:end])):
                    key = group_records.decode_key(record.key)
                    if key is not None and key.group == group:
                        version = int.from_bytes(record.value[:2], "big") if record.value else -1
                        out.append((key, version, record.value))
            if position >= answer.high_watermark or not data:
                return out


def _last_group_value(conn: Connection, group: str) -> group_records.GroupValue:
    values = [v for k, _, v in _offsets_topic_records(conn, group) if isinstance(k, group_records.GroupKey)]
    assert values and values[-1] is not None
    return group_records.decode_group_value(values[-1])


# ---- JoinGroup ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 4))
def test_join_before_v4_completes_the_first_join(target, version):
    """Before v4 (KIP-394) a member without an id is given one and joins at once: no
    MEMBER_ID_REQUIRED round trip. v0 has no rebalance timeout: the session timeout serves as one
    (visible in the group's record in __consumer_offsets)."""
    group = unique("grp")
    with Connection(target.bootstrap) as conn:
        ensure_group_coordinator(conn, group)
        joined = _join(conn, group, version)
        assert joined.error_code == NONE and joined.generation_id == 1
        assert joined.member_id.startswith(CLIENT_ID + "-")
        assert joined.leader == joined.member_id and joined.protocol_name == "range"
        assert [(m.member_id, m.metadata) for m in joined.members] == [(joined.member_id, SUBSCRIPTION)]
        if version >= 2:
            assert joined.throttle_time_ms == 0
        assert _sync(conn, group, joined, {joined.member_id: b"ASSIGN"}, version=0).assignment == b"ASSIGN"
        stored = _last_group_value(conn, group)
    (member,) = stored.members
    assert (stored.generation, stored.protocol, stored.leader) == (1, "range", joined.member_id)
    assert member.member_id == joined.member_id and member.session_timeout == SESSION_MS
    assert member.rebalance_timeout == (SESSION_MS if version == 0 else REBALANCE_MS)


# ---- SyncGroup ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 6))
def test_sync_group(target, version):
    """Every version hands a member its assignment and checks generation and member id; v3+
    carry the group instance id (an unknown one is UNKNOWN_MEMBER_ID); v5 makes protocol type and
    name mandatory, checks them against the group's and echoes them."""
    group = unique("grp")
    with Connection(target.bootstrap) as conn:
        joined = _stable_member(conn, group)
        again = _sync(conn, group, joined, {}, version=version)
        assert again.error_code == NONE and again.assignment == b"ASSIGN"
        if version >= 5:
            assert (again.protocol_type, again.protocol_name) == ("consumer", "range")
            for ptype, pname in (("other", "range"), ("consumer", "roundrobin"), (None, "range"), ("consumer", None)):
                refused = _sync(conn, group, joined, {}, version=version, protocol_type=ptype, protocol_name=pname)
                assert refused.error_code == INCONSISTENT_GROUP_PROTOCOL and refused.assignment == b""
                assert (refused.protocol_type, refused.protocol_name) == (None, None)
        if version >= 3:
            unknown_instance = _sync(conn, group, joined, {}, version=version, instance_id="no-such-instance")
            assert unknown_instance.error_code == UNKNOWN_MEMBER_ID
        stale = conn.call(SyncGroupRequest(group_id=group, generation_id=joined.generation_id + 1,
                                           member_id=joined.member_id, group_instance_id=None, protocol_type="consumer",
                                           protocol_name="range", assignments=[]), version)
        stranger = conn.call(SyncGroupRequest(group_id=group, generation_id=joined.generation_id, member_id="nobody",
                                              group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                              assignments=[]), version)
    assert stale.error_code == ILLEGAL_GENERATION and stranger.error_code == UNKNOWN_MEMBER_ID


# ---- Heartbeat ---------------------------------------------------------------------------------

def _heartbeat(conn: Connection, group: str, generation: int, member_id: str, version: int,
               instance_id: str | None = None) -> int:
    return conn.call(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                                      group_instance_id=instance_id), version).error_code


@pytest.mark.parametrize("version", range(0, 5))
def test_heartbeat(target, version):
    """A member's heartbeat is answered NONE while the group is Stable and REBALANCE_IN_PROGRESS
    once another member is joining; a stale generation, an unknown member or group are refused."""
    group = unique("grp")
    with Connection(target.bootstrap) as conn, Connection(target.bootstrap) as other:
        joined = _stable_member(conn, group)
        gen, me = joined.generation_id, joined.member_id
        assert _heartbeat(conn, group, gen, me, version) == NONE
        assert _heartbeat(conn, group, gen + 1, me, version) == ILLEGAL_GENERATION
        assert _heartbeat(conn, group, gen, "nobody", version) == UNKNOWN_MEMBER_ID
        assert _heartbeat(conn, unique("nogrp"), 1, me, version) == UNKNOWN_MEMBER_ID
        pending = _start_joining(other, group, conn)
        assert _heartbeat(conn, group, gen, me, version) == REBALANCE_IN_PROGRESS
        rejoined = _join(conn, group, 5, me)
        newcomer_joined = other.receive(11, 5, pending)
    assert rejoined.error_code == newcomer_joined.error_code == NONE
    assert rejoined.generation_id == newcomer_joined.generation_id == gen + 1


@pytest.mark.parametrize("version", range(3, 5))
def test_heartbeat_of_a_static_member(target, version):
    """v3+ carry the group instance id: a static member is known by it, so an unknown instance is
    UNKNOWN_MEMBER_ID and a known instance with another member id is FENCED_INSTANCE_ID."""
    group = unique("grp")
    with Connection(target.bootstrap) as conn:
        joined = _stable_member(conn, group, instance_id="instance-1")
        gen, me = joined.generation_id, joined.member_id
        assert _heartbeat(conn, group, gen, me, version, "instance-1") == NONE
        assert _heartbeat(conn, group, gen, me, version, "instance-2") == UNKNOWN_MEMBER_ID
        assert _heartbeat(conn, group, gen, "someone-else", version, "instance-1") == FENCED_INSTANCE_ID


# ---- LeaveGroup --------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 6))
def test_leave_group(target, version):
    """v0-2 remove one member, named by its id, with the answer in the top-level error; v3+ remove
    a batch of members at once, each answered on its own (the top-level error stays NONE)."""
    group = unique("grp")
    with Connection(target.bootstrap) as conn_a, Connection(target.bootstrap) as conn_b:
        a, b = _stable_pair(conn_a, conn_b, group)
        if version < 3:
            unknown = conn_a.call(LeaveGroupRequest(group_id=group, member_id="nobody"), version)
            left = conn_a.call(LeaveGroupRequest(group_id=group, member_id=a.member_id), version)
            assert unknown.error_code == UNKNOWN_MEMBER_ID and left.error_code == NONE
            remaining = _describe(conn_a, group)
            assert remaining.group_state == "PreparingRebalance"
            assert [m.member_id for m in remaining.members] == [b.member_id]
        else:
            left = conn_a.call(LeaveGroupRequest(group_id=group, members=[
                _Leaving(member_id=m, group_instance_id=None, reason="done" if version >= 5 else None)
                for m in (a.member_id, b.member_id, "nobody")]), version)
            assert left.error_code == NONE
            assert [(m.member_id, m.group_instance_id, m.error_code) for m in left.members] == [
                (a.member_id, None, NONE), (b.member_id, None, NONE), ("nobody", None, UNKNOWN_MEMBER_ID)]
            remaining = _describe(conn_a, group)
            assert remaining.group_state == "Empty" and remaining.members == []


@pytest.mark.parametrize("version", range(3, 6))
def test_leave_group_by_instance_id(target, version):
    """v3+ name static members by group instance id, with or without their member id: a wrong
    member id for an instance is FENCED_INSTANCE_ID, an unknown instance UNKNOWN_MEMBER_ID."""
    group = unique("grp")
    with Connection(target.bootstrap) as conn_a, Connection(target.bootstrap) as conn_b:
        _stable_pair(conn_a, conn_b, group, ("instance-a", "instance-b"))
        left = conn_a.call(LeaveGroupRequest(group_id=group, members=[
            _Leaving(member_id="", group_instance_id="instance-a"),
            _Leaving(member_id="not-its-member-id", group_instance_id="instance-b"),
            _Leaving(member_id="", group_instance_id="instance-c")]), version)
        remaining = _describe(conn_a, group, version=4)
    assert left.error_code == NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in left.members] == [
        ("", "instance-a", NONE), ("not-its-member-id", "instance-b", FENCED_INSTANCE_ID),
        ("", "instance-c", UNKNOWN_MEMBER_ID)]
    assert [m.group_instance_id for m in remaining.members] == ["instance-b"]


# ---- DescribeGroups ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 7))
def test_describe_groups(target, version):
    """Every version describes state, protocol and members (client id and host, metadata of the
    chosen protocol, assignment); v3+ add the authorized operations when asked (without an
    authorizer: every group operation); v4+ the members' group instance ids. An unknown group is
    "Dead" without error before v6 and GROUP_ID_NOT_FOUND, with a message, from v6."""
    group, missing = unique("grp"), unique("nogrp")
    with Connection(target.bootstrap) as conn:
        joined = _stable_member(conn, group, instance_id="instance-1")
        ensure_group_coordinator(conn, missing)
        described = _describe(conn, group, version, operations=version >= 3)
        plain = _describe(conn, group, version) if version >= 3 else None
        unknown = _describe(conn, missing, version, operations=version >= 3)
    assert (described.error_code, described.group_id, described.group_state) == (NONE, group, "Stable")
    assert (described.protocol_type, described.protocol_data) == ("consumer", "range")
    (member,) = described.members
    assert (member.member_id, member.client_id, member.client_host) == (joined.member_id, CLIENT_ID, "/127.0.0.1")
    assert (member.member_metadata, member.member_assignment) == (SUBSCRIPTION, b"ASSIGN")
    if version >= 4:
        assert member.group_instance_id == "instance-1"
    if version >= 3:
        assert described.authorized_operations == GROUP_OPERATIONS
        assert plain.authorized_operations is None
    assert unknown.group_id == missing and unknown.group_state == "Dead" and unknown.members == []
    if version >= 6:
        assert unknown.error_code == GROUP_ID_NOT_FOUND
        assert unknown.error_message == f"Group {missing} not found."
        assert unknown.authorized_operations is None
    else:
        assert unknown.error_code == NONE
        if version >= 3:
            assert unknown.authorized_operations == GROUP_OPERATIONS


# ---- ListGroups --------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 6))
def test_list_groups(target, version):
    """Every version lists groups with their protocol type (empty for a group that only has
    committed offsets); v4+ add each group's state and filter on states (case-insensitively);
    v5 adds the group type ("classic") and filters on types."""
    consumers, simple = unique("grp"), unique("grp")
    topic = unique()
    mine = {consumers, simple}

    def listed(states: list[str] | None = None, types: list[str] | None = None) -> dict[str, Any]:
        resp = conn.call(ListGroupsRequest(states_filter=states or [], types_filter=types or []), version)
        assert resp.error_code == NONE
        return {g.group_id: g for g in resp.groups if g.group_id in mine}

    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        _stable_member(conn, consumers)
        ensure_group_coordinator(conn, simple)
        assert _commit(conn, simple, 8, topic) == NONE
        everything = listed()
        assert {g: everything[g].protocol_type for g in everything} == {consumers: "consumer", simple: ""}
        if version >= 4:
            assert {g: everything[g].group_state for g in everything} == {consumers: "Stable", simple: "Empty"}
            assert set(listed(states=["stable"])) == {consumers}
            assert set(listed(states=["Empty", "Dead"])) == {simple}
            assert listed(states=["NoSuchState"]) == {}
        if version >= 5:
            assert {everything[g].group_type for g in everything} == {"classic"}
            assert set(listed(types=["Classic"])) == mine
            assert listed(types=["consumer"]) == {}
            assert set(listed(states=["Stable"], types=["classic"])) == {consumers}


# ---- DeleteGroups ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 3))
def test_delete_groups(target, version):
    """A group with members is NON_EMPTY_GROUP; an Empty one is deleted with its offsets (it is
    then unknown: "Dead", GROUP_ID_NOT_FOUND when deleted again); results are by group."""
    busy, idle, missing = unique("grp"), unique("grp"), unique("nogrp")
    topic = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        _stable_member(conn, busy)
        ensure_group_coordinator(conn, idle)
        assert _commit(conn, idle, 8, topic, offset=9) == NONE
        assert _committed(conn, idle, topic) == {0: (9, -1, "m")}
        results = {}
        for group in (busy, idle, missing):  # one per request: Kafka answers several in any order
            (result,) = conn.call(DeleteGroupsRequest(groups_names=[group]), version).results
            results[result.group_id] = result.error_code
        assert results == {busy: NON_EMPTY_GROUP, idle: NONE, missing: GROUP_ID_NOT_FOUND}
        assert _describe(conn, idle).group_state == "Dead"
        assert _committed(conn, idle, topic) == {}
        (again,) = conn.call(DeleteGroupsRequest(groups_names=[idle]), version).results
    assert again.error_code == GROUP_ID_NOT_FOUND


# ---- OffsetCommit ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(2, 11))
def test_offset_commit(target, version):
    """A member commits with its generation and member id; a standalone consumer with generation
    -1 (which creates an Empty group). Partition errors come before group errors. Per version:
    the leader epoch is kept from v6, static members are checked from v7, a member commit to a
    group that does not exist is ILLEGAL_GENERATION before v9 and GROUP_ID_NOT_FOUND from v9, and
    v10 names topics by id (UNKNOWN_TOPIC_ID for an unknown one)."""
    group, standalone, missing = unique("grp"), unique("grp"), unique("nogrp")
    topic = unique()
    by_id = version >= 10
    with Connection(target.bootstrap) as conn:
        created = create_topic(conn, topic, 2)
        topic_id = created.topic_id if by_id else None
        name = "" if by_id else topic
        joined = _stable_member(conn, group)
        gen, me = joined.generation_id, joined.member_id

        def commit(g: str, **kw: Any) -> int:
            return _commit(conn, g, version, name, topic_id, **kw)

        assert commit(group, generation=gen, member_id=me, offset=42, leader_epoch=3, metadata="meta") == NONE
        assert commit(group, generation=gen, member_id=me, partition=1, offset=7, metadata=None) == NONE
        assert commit(group, generation=gen + 1, member_id=me) == ILLEGAL_GENERATION
        assert commit(group, generation=gen, member_id="nobody") == UNKNOWN_MEMBER_ID
        assert commit(group) == UNKNOWN_MEMBER_ID  # anonymous, but the group has a member
        assert commit(group, generation=-1, member_id=me) == ILLEGAL_GENERATION
        assert commit(group, generation=gen + 1, member_id=me, partition=9) == UNKNOWN_TOPIC_OR_PARTITION
        if version >= 7:
            assert commit(group, generation=gen, member_id=me, instance_id="no-such-instance") == UNKNOWN_MEMBER_ID
        no_group = GROUP_ID_NOT_FOUND if version >= 9 else ILLEGAL_GENERATION
        assert commit(missing, generation=1, member_id="m") == no_group
        if by_id:
            assert _commit(conn, group, version, "", uuid.uuid4(), generation=gen, member_id=me) == UNKNOWN_TOPIC_ID
        else:
            assert _commit(conn, group, version, unique("nosuch"), generation=gen, member_id=me) \
                == UNKNOWN_TOPIC_OR_PARTITION
        assert _committed(conn, group, topic) == {0: (42, 3 if version >= 6 else -1, "meta"), 1: (7, -1, "")}

        ensure_group_coordinator(conn, standalone)
        assert commit(standalone, offset=11) == NONE
        created = _describe(conn, standalone)
        assert (created.group_state, created.protocol_type, created.members) == ("Empty", "", [])
        assert _committed(conn, standalone, topic) == {0: (11, -1, "m")}


@pytest.mark.parametrize("version", range(2, 6))
def test_offset_commit_retention(target, version):
    """v2-4 carry retention_time_ms: other than -1 it gives the offset its own expire timestamp
    (commit time + retention), which Kafka keeps in the offset record (value version 1, the one
    with an expire timestamp). v5 dropped the field: the broker's retention applies."""
    group, topic = unique("grp"), unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, 2)
        ensure_group_coordinator(conn, group)
        assert _commit(conn, group, version, topic, partition=0, offset=1, retention_ms=3_600_000) == NONE
        assert _commit(conn, group, version, topic, partition=1, offset=2, retention_ms=-1) == NONE
        stored = {k.partition: (v, group_records.decode_offset_value(value))
                  for k, v, value in _offsets_topic_records(conn, group)
                  if isinstance(k, group_records.OffsetKey) and value is not None}
        assert _committed(conn, group, topic) == {0: (1, -1, "m"), 1: (2, -1, "m")}
    with_retention, default = stored[0], stored[1]
    if version <= 4:
        assert with_retention[0] == 1
        assert with_retention[1].expire_timestamp == with_retention[1].commit_timestamp + 3_600_000
    else:
        assert with_retention[0] != 1 and with_retention[1].expire_timestamp is None
    assert default[0] != 1 and default[1].expire_timestamp is None


# ---- OffsetFetch -------------------------------------------------------------------------------

def _fetch_offsets(conn: Connection, version: int, groups: list[tuple[str, list[tuple[str, Any, list[int]]] | None]],
                   require_stable: bool = False) -> Any:
    """OffsetFetch of (group, [(topic name, topic id, partitions)] or None for all) at `version`:
    one group before v8, several from v8."""
    if version < 8:
        ((group, topics),) = groups
        return conn.call(OffsetFetchRequest(
            group_id=group, require_stable=require_stable, topics=None if topics is None else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=n, partition_indexes=p) for n, _, p in topics]), version)
    return conn.call(OffsetFetchRequest(require_stable=require_stable, groups=[_FetchGroup(
        group_id=group, member_id=None, member_epoch=-1, topics=None if topics is None else [
            _FetchGroup.OffsetFetchRequestTopics(name=n, topic_id=i, partition_indexes=p) for n, i, p in topics])
        for group, topics in groups]), version)


def _offsets(resp: Any, version: int) -> list[dict[tuple[str, int], tuple]]:
    """Per group asked: (topic name or id, partition) -> (offset, leader epoch, metadata, error),
    with leader epochs None before v5 (the field does not exist)."""
    def part(p: Any) -> tuple:
        return (p.committed_offset, p.committed_leader_epoch if version >= 5 else None, p.metadata, p.error_code)

    if version < 8:
        return [{(t.name, p.partition_index): part(p) for t in resp.topics for p in t.partitions}]
    return [{(t.topic_id if version >= 10 else t.name, p.partition_index): part(p) for t in g.topics
             for p in t.partitions} for g in resp.groups]


@pytest.mark.parametrize("version", range(1, 11))
def test_offset_fetch(target, version):
    """Committed offsets with their metadata (a partition without one: -1, empty metadata, no
    error; likewise for an unknown group and for the empty group id). Per version: v2+ a
    top-level error and null topics for "every committed partition", v5+ leader epochs, v7+
    require_stable, v8+ several groups per request, each answered with its own error, v10 topics
    by id (UNKNOWN_TOPIC_ID for an unknown one)."""
    group, missing, topic = unique("grp"), unique("nogrp"), unique()
    by_id = version >= 10
    with Connection(target.bootstrap) as conn:
        topic_id = create_topic(conn, topic, 2).topic_id
        ensure_group_coordinator(conn, group)
        assert _commit(conn, group, 9, topic, offset=11, leader_epoch=4, metadata="hello") == NONE
        key = topic_id if by_id else topic
        asked = [("" if by_id else topic, topic_id if by_id else None, [0, 1])]
        epoch = 4 if version >= 5 else None
        no_epoch = -1 if version >= 5 else None
        committed = {(key, 0): (11, epoch, "hello", NONE), (key, 1): (-1, no_epoch, "", NONE)}
        nothing = {(key, 0): (-1, no_epoch, "", NONE), (key, 1): (-1, no_epoch, "", NONE)}

        resp = _fetch_offsets(conn, version, [(group, asked)])
        assert _offsets(resp, version) == [committed]
        assert _offsets(_fetch_offsets(conn, version, [(missing, asked)]), version) == [nothing]
        assert _offsets(_fetch_offsets(conn, version, [("", asked)]), version) == [nothing]
        if 2 <= version < 8:
            assert resp.error_code == NONE
        if version >= 2:
            everything = _fetch_offsets(conn, version, [(group, None)])
            assert _offsets(everything, version) == [{(key, 0): (11, epoch, "hello", NONE)}]
        if version >= 7:
            stable = _fetch_offsets(conn, version, [(group, asked)], require_stable=True)
            assert _offsets(stable, version) == [committed]
        if version >= 8:
            several = _fetch_offsets(conn, version, [(group, asked), (missing, None)])
            assert [(g.group_id, g.error_code) for g in several.groups] == [(group, NONE), (missing, NONE)]
            assert _offsets(several, version) == [committed, {}]
        if by_id:
            stranger = uuid.uuid4()
            unknown = _fetch_offsets(conn, version, [(group, [("", stranger, [0])])])
            assert _offsets(unknown, version) == [{(stranger, 0): (-1, -1, "", UNKNOWN_TOPIC_ID)}]
