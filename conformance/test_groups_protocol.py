"""FindCoordinator and the classic group protocol at the wire level, with Kafka's error codes."""

from __future__ import annotations

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
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from conformance.harness.wire import Connection, create_topic, ensure_group_coordinator, retry_transient, unique

PROTOCOLS = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff")]


def _join(conn, group, member_id="", version=9, session=10000):
    req = JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=10000,
                           member_id=member_id, group_instance_id=None, protocol_type="consumer",
                           protocols=PROTOCOLS, reason=None)
    return retry_transient(lambda: conn.call(req, version), lambda r: r.error_code)


def _member(conn, group):
    ensure_group_coordinator(conn, group)
    first = _join(conn, group)
    assert first.error_code == 79  # MEMBER_ID_REQUIRED
    joined = _join(conn, group, first.member_id)
    assert joined.error_code == 0
    return joined


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator(target, version):
    group = unique("grp")
    with Connection(target.bootstrap) as conn:
        req = FindCoordinatorRequest(key=group, key_type=0, coordinator_keys=[group])
        resp = retry_transient(lambda: conn.call(req, version),
                               lambda r: r.coordinators[0].error_code if version >= 4 else r.error_code)
    if version >= 4:
        (c,) = resp.coordinators
        assert c.error_code == 0 and c.key == group and c.port > 0
    else:
        assert resp.error_code == 0 and resp.port > 0


@pytest.mark.parametrize("version", [3, 4])
def test_find_coordinator_empty_group_and_unknown_key_type(target, version):
    """An empty group id is a group like any other to FindCoordinator (JoinGroup refuses it); an
    unknown key type is INVALID_REQUEST."""
    def ask(key, key_type):
        req = FindCoordinatorRequest(key=key, key_type=key_type, coordinator_keys=[key])
        resp = retry_transient(lambda: conn.call(req, version),
                               lambda r: r.coordinators[0].error_code if version >= 4 else r.error_code)
        return resp.coordinators[0].error_code if version >= 4 else resp.error_code

    with Connection(target.bootstrap) as conn:
        assert ask("", 0) == 0
        assert ask(unique("grp"), 5) == 42


@pytest.mark.parametrize("version", range(4, 10))
def test_join_requires_member_id_then_completes(target, version):
    group = unique("grp")
    with Connection(target.bootstrap) as conn:
        ensure_group_coordinator(conn, group)
        first = _join(conn, group, version=version)
        assert first.error_code == 79 and first.member_id
        joined = _join(conn, group, first.member_id, version=version)
    assert joined.error_code == 0 and joined.generation_id == 1
    assert joined.leader == joined.member_id == first.member_id
    assert [m.member_id for m in joined.members] == [first.member_id]
    assert joined.protocol_name == "range"


def test_join_invalid_session_timeout(target):
    group = unique("grp")
    with Connection(target.bootstrap) as conn:
        ensure_group_coordinator(conn, group)
        assert _join(conn, group, session=10).error_code == 26


def test_sync_heartbeat_commit_fetch_leave(target):
    group = unique("grp")
    topic = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, 2)
        j = _member(conn, group)
        sync = conn.call(SyncGroupRequest(group_id=group, generation_id=j.generation_id, member_id=j.member_id,
                                          group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                          assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                              member_id=j.member_id, assignment=b"ASSIGN")]), 5)
        assert sync.error_code == 0 and sync.assignment == b"ASSIGN"

        def hb(gen, member):
            return conn.call(HeartbeatRequest(group_id=group, generation_id=gen, member_id=member,
                                              group_instance_id=None), 4).error_code
        assert hb(j.generation_id, j.member_id) == 0
        assert hb(j.generation_id + 1, j.member_id) == 22   # ILLEGAL_GENERATION
        assert hb(j.generation_id, "nobody") == 25          # UNKNOWN_MEMBER_ID

        T = OffsetCommitRequest.OffsetCommitRequestTopic
        commit = conn.call(OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=j.generation_id, member_id=j.member_id,
            group_instance_id=None, topics=[T(name=topic, partitions=[
                T.OffsetCommitRequestPartition(partition_index=0, committed_offset=42, committed_leader_epoch=-1,
                                               committed_metadata="m")])]), 9)
        assert commit.topics[0].partitions[0].error_code == 0
        bad = conn.call(OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=j.generation_id + 3, member_id=j.member_id,
            group_instance_id=None, topics=[T(name=topic, partitions=[
                T.OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="")])]), 9)
        assert bad.topics[0].partitions[0].error_code == 22

        G = OffsetFetchRequest.OffsetFetchRequestGroup
        fetched = conn.call(OffsetFetchRequest(groups=[G(group_id=group, topics=[
            G.OffsetFetchRequestTopics(name=topic, partition_indexes=[0, 1])])], require_stable=True), 9)
        parts = {p.partition_index: (p.committed_offset, p.metadata) for p in fetched.groups[0].topics[0].partitions}
        assert parts == {0: (42, "m"), 1: (-1, "")}

        listed = conn.call(ListGroupsRequest(states_filter=["Stable"]), 4)
        assert group in {g.group_id for g in listed.groups}
        described = conn.call(DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5)
        d = described.groups[0]
        assert d.group_state == "Stable" and d.protocol_data == "range" and len(d.members) == 1
        assert d.members[0].member_assignment == b"ASSIGN"

        deleted = conn.call(DeleteGroupsRequest(groups_names=[group]), 2)
        assert deleted.results[0].error_code == 68   # NON_EMPTY_GROUP
        left = conn.call(LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(
            member_id=j.member_id, group_instance_id=None, reason=None)]), 5)
        assert left.error_code == 0 and left.members[0].error_code == 0
        missing = unique("nogroup")
        deleted = conn.call(DeleteGroupsRequest(groups_names=[group, missing]), 2)
        # Kafka does not keep request order in this response; compare by group.
        assert {r.group_id: r.error_code for r in deleted.results} == {group: 0, missing: 69}


def test_standalone_commit_and_fetch(target):
    group = unique("grp")
    topic = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, 1)
        ensure_group_coordinator(conn, group)
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        commit = conn.call(OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[T(name=topic, partitions=[T.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=7, committed_metadata=None)])]), 8)
        assert commit.topics[0].partitions[0].error_code == 0
        fetched = conn.call(OffsetFetchRequest(group_id=group, topics=None, require_stable=False), 7)
        assert fetched.error_code == 0
        assert [(t.name, p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions] \
            == [(topic, 0, 7)]
