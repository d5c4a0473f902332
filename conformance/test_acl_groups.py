"""Authorization of the consumer-group APIs against Kafka 4.3.1 with StandardAuthorizer, as
KafkaApis checks it before the group coordinator answers:

- FindCoordinator: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); v4+ answers each batched key on its own.
- JoinGroup, SyncGroup, Heartbeat, LeaveGroup: READ on the group, with Kafka's error shapes (a
  SyncGroup v5 without protocol type or name is INCONSISTENT_GROUP_PROTOCOL before that).
- OffsetCommit: READ on the group (every partition GROUP_AUTHORIZATION_FAILED), then READ on each
  topic (TOPIC_AUTHORIZATION_FAILED, before it is known whether the topic exists); the failures
  KafkaApis finds come first, in request order, with the coordinator's answers after them.
- OffsetFetch: DESCRIBE on each group; a topic without DESCRIBE is TOPIC_AUTHORIZATION_FAILED
  when named, and left out when all the group's offsets are fetched.
- OffsetDelete: DELETE on the group, READ on each topic.
- DescribeGroups: DESCRIBE per group (refused groups first), authorized operations when asked;
  ListGroups: DESCRIBE on the cluster lists every group, else those the principal may DESCRIBE;
  DeleteGroups: DELETE per group.
- DENY wins over ALLOW (a DENY of READ leaves the DESCRIBE an ALLOW ALL gives), PREFIXED and
  "*" grants on groups, and a full consumer cycle as alice with READ on its group and topic.

The pair is this module's own (conformance/harness/acl_brokers.py): alice and bob log in with PLAIN and
have only what a scenario grants them; the PLAINTEXT listener's ANONYMOUS is a super user and
sets the scene. Grants that would reach other scenarios' groups ("*", the cluster) are revoked
at the scenario's end."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from conformance.harness.acl_brokers import (
    ALL,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_NAME,
    DELETE,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    PREFIXED,
    READ,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Acl,
    acl_pair,
    grant,
    login,
    revoke,
    super_user,
)
from conformance.harness.own_brokers import TwoListeners
from conformance.harness.wire import TRANSIENT, Connection, create_topic, metadata, owned, retry_transient, unique

own_wirekafka, own_kafka, target = acl_pair()

NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_MEMBER_ID, MEMBER_ID_REQUIRED = 0, 3, 25, 79
INCONSISTENT_GROUP_PROTOCOL, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_ID = 23, 69, 100
GROUP_KEY, TRANSACTION_KEY = 0, 1
PROTOCOLS = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")]
# a group's operations, as the authorized-operations bit field decodes (None: not given)
ALL_GROUP_OPERATIONS = {READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS}
_CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
_FetchGroup = OffsetFetchRequest.OffsetFetchRequestGroup
_DeleteTopic = OffsetDeleteRequest.OffsetDeleteRequestTopic



# ---- requests --------------------------------------------------------------------------------
def _find(conn: Connection, keys: list[str], key_type: int, version: int) -> list[tuple[str, int, bool]]:
    """(key, error code, node found) per key: one request for all at v4+, one each below."""
    if version >= 4:
        answer = retry_transient(
            lambda: conn.call(FindCoordinatorRequest(key_type=key_type, coordinator_keys=keys), version),
            lambda r: max((c.error_code for c in r.coordinators if c.error_code in TRANSIENT), default=NONE))
        return [(c.key, c.error_code, c.node_id >= 0) for c in answer.coordinators]
    out = []
    for key in keys:
        answer = retry_transient(lambda: conn.call(FindCoordinatorRequest(key=key, key_type=key_type), version),
                                 lambda r: r.error_code)
        out.append((key, answer.error_code, answer.node_id >= 0))
    return out


def _join(conn: Connection, group: str, member_id: str = "", version: int = 9) -> Any:
    request = JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                               member_id=member_id, group_instance_id=None, protocol_type="consumer",
                               protocols=PROTOCOLS, reason=None)
    return retry_transient(lambda: conn.call(request, version), lambda r: r.error_code)


def _member(conn: Connection, group: str) -> Any:
    """Join `group` as its only member (v9: first MEMBER_ID_REQUIRED, then the join)."""
    first = _join(conn, group)
    assert first.error_code == MEMBER_ID_REQUIRED, first
    joined = _join(conn, group, first.member_id)
    assert joined.error_code == NONE, joined
    return joined


def _sync(conn: Connection, group: str, generation: int, member: str, version: int = 5,
          protocol_type: str | None = "consumer") -> Any:
    return conn.call(SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member, group_instance_id=None,
        protocol_type=protocol_type, protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"A")]), version)


def _heartbeat(conn: Connection, group: str, generation: int, member: str, version: int = 4) -> int:
    return conn.call(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member,
                                      group_instance_id=None), version).error_code


def _leave(conn: Connection, group: str, member: str, version: int = 5) -> Any:
    return conn.call(LeaveGroupRequest(group_id=group, member_id=member, members=[
        LeaveGroupRequest.MemberIdentity(member_id=member, group_instance_id=None, reason=None)]), version)


def _commit(conn: Connection, group: str, topics: list[tuple[str, list[int]]], generation: int = -1,
            member: str = "", version: int = 9, topic_ids: dict[str, Any] | None = None) -> list:
    """[(topic, [(partition, error)])] in the answer's order; offset 10 + partition each."""
    answer = conn.call(OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member, group_instance_id=None,
        retention_time_ms=-1, topics=[_CommitTopic(name=t, topic_id=(topic_ids or {}).get(t), partitions=[
            _CommitTopic.OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p,
                                                      committed_leader_epoch=-1, committed_metadata="m")
            for p in parts]) for t, parts in topics]), version)
    return [(t.name if version < 10 else str(t.topic_id), [(p.partition_index, p.error_code) for p in t.partitions])
            for t in answer.topics]


def _fetch(conn: Connection, groups: list[tuple[str, list[tuple[str, list[int]]] | None]], version: int = 9
           ) -> list[tuple[str, int, list]]:
    """[(group, error, [(topic, [(partition, offset, error)])])], one request (v8+) or one each."""
    if version >= 8:
        answer = conn.call(OffsetFetchRequest(require_stable=False, groups=[_FetchGroup(
            group_id=g, member_id=None, member_epoch=-1, topics=None if topics is None else [
                _FetchGroup.OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in topics])
            for g, topics in groups]), version)
        return [(g.group_id, g.error_code, _fetched(g.topics)) for g in answer.groups]
    out = []
    for g, topics in groups:
        answer = conn.call(OffsetFetchRequest(group_id=g, require_stable=False, topics=None if topics is None else [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in topics]), version)
        out.append((g, answer.error_code if version >= 2 else None, _fetched(answer.topics)))
    return out


def _fetched(topics: list) -> list:
    return [(t.name, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions]) for t in topics]


def _offset_delete(conn: Connection, group: str, topics: list[tuple[str, list[int]]]) -> tuple[int, list]:
    answer = conn.call(OffsetDeleteRequest(group_id=group, topics=[_DeleteTopic(name=t, partitions=[
        _DeleteTopic.OffsetDeleteRequestPartition(partition_index=p) for p in parts]) for t, parts in topics]), 0)
    return answer.error_code, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
                               for t in answer.topics]


def _describe(conn: Connection, groups: list[str], version: int = 5, operations: bool = True
              ) -> tuple[list[str], dict[str, tuple[int, str, set[int] | None]]]:
    """(the refused groups, which Kafka answers first, in request order; the others' group ->
    (error, state, authorized operations or None)). The coordinator answers the others grouped by
    their partition of __consumer_offsets, in hash order: the transcripts compare that order."""
    answer = conn.call(DescribeGroupsRequest(groups=groups, include_authorized_operations=operations), version)
    refused = []
    for g in answer.groups:
        if g.error_code != GROUP_AUTHORIZATION_FAILED:
            break
        assert (g.group_state, g.protocol_type, g.members, getattr(g, "authorized_operations", None)) == ("", "", [], None)
        refused.append(g.group_id)
    return refused, {g.group_id: (g.error_code, g.group_state, getattr(g, "authorized_operations", None))
                     for g in answer.groups[len(refused):]}


def _listed(conn: Connection, version: int = 5) -> dict[str, str]:
    """This scenario's groups ListGroups shows (group -> state): others' are not compared."""
    answer = conn.call(ListGroupsRequest(states_filter=[], types_filter=[]), version)
    assert answer.error_code == NONE, answer
    return {g.group_id: getattr(g, "group_state", "") for g in answer.groups if owned(g.group_id)}


def _delete_groups(conn: Connection, groups: list[str]) -> dict[str, int]:
    """group -> error; each group answered once (Kafka's order is its HashMap's: compared sorted)."""
    results = conn.call(DeleteGroupsRequest(groups_names=groups), 2).results
    answered = {r.group_id: r.error_code for r in results}
    assert len(answered) == len(results), results
    return answered


def _standalone_group(conn: Connection, group: str, topic: str) -> None:
    """Make `group` exist (Empty) with an offset for partition 0 of `topic`, as a super user."""
    retry_transient(lambda: conn.call(FindCoordinatorRequest(key=group, key_type=GROUP_KEY), 3),
                    lambda r: r.error_code)
    assert _first_commit(conn, group, [(topic, [0])]) == [(topic, [(0, NONE)])]


def _first_commit(conn: Connection, group: str, topics: list[tuple[str, list[int]]], **kw: Any) -> list:
    """A group's first commit: Kafka may still be loading its partition of __consumer_offsets
    (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS on the partitions it was asked for)."""
    return retry_transient(lambda: _commit(conn, group, topics, **kw),
                           lambda answer: max((c for _t, parts in answer for _p, c in parts if c in TRANSIENT),
                                              default=NONE))


@pytest.fixture
def alice(target: TwoListeners) -> Iterator[Connection]:
    with login(target, "alice") as conn:
        yield conn


# ---- scenarios -------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 3, 4, 6])
def test_find_coordinator_needs_describe_on_the_key(target, alice, version):
    allowed, refused = unique("grp"), unique("grp")
    txn_allowed, txn_refused = unique("txn"), unique("txn")
    grant(target, Acl(GROUP, allowed, DESCRIBE), Acl(TRANSACTIONAL_ID, txn_allowed, DESCRIBE))
    assert _find(alice, [allowed, refused], GROUP_KEY, version) == [
        (allowed, NONE, True), (refused, GROUP_AUTHORIZATION_FAILED, False)]
    assert _find(alice, [txn_allowed, txn_refused], TRANSACTION_KEY, version) == [
        (txn_allowed, NONE, True), (txn_refused, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False)]
    # READ implies DESCRIBE; DESCRIBE on a group says nothing of a transactional id of that name
    read = unique("grp")
    grant(target, Acl(GROUP, read, READ))
    assert _find(alice, [read], GROUP_KEY, version) == [(read, NONE, True)]
    assert _find(alice, [allowed], TRANSACTION_KEY, version) == [
        (allowed, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False)]
    # the empty transactional id is refused before it is found invalid
    assert _find(alice, [""], TRANSACTION_KEY, version) == [("", TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False)]


def test_consumer_cycle_with_read_on_group_and_topic(target, alice):
    group, topic = unique("grp"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, topic, 2)
    grant(target, Acl(GROUP, group, READ), Acl(TOPIC, topic, READ))
    assert _find(alice, [group], GROUP_KEY, 4) == [(group, NONE, True)]
    joined = _member(alice, group)
    sync = _sync(alice, group, joined.generation_id, joined.member_id)
    assert (sync.error_code, sync.assignment) == (NONE, b"A")
    assert _heartbeat(alice, group, joined.generation_id, joined.member_id) == NONE
    assert _commit(alice, group, [(topic, [0, 1])], joined.generation_id, joined.member_id) == [
        (topic, [(0, NONE), (1, NONE)])]
    assert _fetch(alice, [(group, [(topic, [0, 1])])]) == [(group, NONE, [(topic, [(0, 10, NONE), (1, 11, NONE)])])]
    assert _fetch(alice, [(group, None)], 7) == [(group, NONE, [(topic, [(0, 10, NONE), (1, 11, NONE)])])]
    # READ implies DESCRIBE: the group can be described and is listed; it cannot be deleted
    assert _describe(alice, [group]) == ([], {group: (NONE, "Stable", {READ, DESCRIBE})})
    assert _listed(alice) == {group: "Stable"}
    left = _leave(alice, group, joined.member_id)
    assert (left.error_code, [m.error_code for m in left.members]) == (NONE, [NONE])
    assert _delete_groups(alice, [group]) == {group: GROUP_AUTHORIZATION_FAILED}
    assert _offset_delete(alice, group, [(topic, [0])]) == (GROUP_AUTHORIZATION_FAILED, [])
    assert _fetch(alice, [(group, [(topic, [0, 1])])]) == [(group, NONE, [(topic, [(0, 10, NONE), (1, 11, NONE)])])]


def test_group_apis_without_rights(target, alice):
    group, topic, missing = unique("grp"), unique("t"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, topic)
        _standalone_group(admin, group, topic)
        joined = _member(admin, group)
        for version in (0, 6, 7, 9):
            answer = alice.call(JoinGroupRequest(
                group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id=joined.member_id,
                group_instance_id=None, protocol_type="consumer", protocols=PROTOCOLS, reason=None), version)
            assert (answer.error_code, answer.member_id, answer.generation_id) == (GROUP_AUTHORIZATION_FAILED, "", -1)
        for version in (0, 4, 5):
            assert _sync(alice, group, joined.generation_id, joined.member_id, version).error_code == \
                GROUP_AUTHORIZATION_FAILED
        # v5+ needs the protocol type and name: that is checked before the group's rights
        assert _sync(alice, group, joined.generation_id, joined.member_id, 5, None).error_code == \
            INCONSISTENT_GROUP_PROTOCOL
        for version in (0, 4):
            assert _heartbeat(alice, group, joined.generation_id, joined.member_id, version) == \
                GROUP_AUTHORIZATION_FAILED
        for version in (0, 3, 5):
            left = _leave(alice, group, joined.member_id, version)
            assert (left.error_code, left.members) == (GROUP_AUTHORIZATION_FAILED, [])
        # the topics are not looked at: every partition carries the group's refusal
        for version in (2, 9):
            assert _commit(alice, group, [(missing, [0]), (topic, [0, 7])], version=version) == [
                (missing, [(0, GROUP_AUTHORIZATION_FAILED)]),
                (topic, [(0, GROUP_AUTHORIZATION_FAILED), (7, GROUP_AUTHORIZATION_FAILED)])]
        # before v2 there is no group error: the partitions asked for carry it
        assert _fetch(alice, [(group, [(topic, [0])])], 1) == [
            (group, None, [(topic, [(0, -1, GROUP_AUTHORIZATION_FAILED)])])]
        for version in (2, 7):
            assert _fetch(alice, [(group, [(topic, [0])])], version) == [(group, GROUP_AUTHORIZATION_FAILED, [])]
        assert _fetch(alice, [(group, None), (group, [(topic, [0])])], 9) == [
            (group, GROUP_AUTHORIZATION_FAILED, []), (group, GROUP_AUTHORIZATION_FAILED, [])]
        assert _offset_delete(alice, group, [(topic, [0])]) == (GROUP_AUTHORIZATION_FAILED, [])
        for version in (0, 3, 5, 6):
            assert _describe(alice, [group, missing], version) == ([group, missing], {})
        assert _delete_groups(alice, [group]) == {group: GROUP_AUTHORIZATION_FAILED}
        for version in (0, 5):
            assert _listed(alice, version) == {}
        assert _leave(admin, group, joined.member_id).error_code == NONE
        # nothing alice asked for changed the group
        assert _fetch(admin, [(group, None)]) == [(group, NONE, [(topic, [(0, 10, NONE)])])]


@pytest.mark.parametrize("version", [2, 9, 10])
def test_offset_commit_checks_group_then_topics(target, alice, version):
    group, refused_group = unique("grp"), unique("grp")
    readable, unreadable, missing_readable, missing = unique("t"), unique("t"), unique("t"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, readable, 2)
        create_topic(admin, unreadable)
        ids = {t.name: t.topic_id for t in metadata(admin, [readable, unreadable]).topics}
        ids.update({t: uuid.uuid5(uuid.NAMESPACE_DNS, t) for t in (missing_readable, missing)})
        retry_transient(lambda: admin.call(FindCoordinatorRequest(key=group, key_type=GROUP_KEY), 3),
                        lambda r: r.error_code)
    grant(target, Acl(GROUP, group, READ), Acl(TOPIC, readable, READ), Acl(TOPIC, missing_readable, READ))
    request = [(readable, [0, 5]), (unreadable, [0]), (missing_readable, [0]), (missing, [0]), (readable, [1])]
    answer = _first_commit(alice, group, request, version=version, topic_ids=ids)
    # refusals and unknown partitions first, in request order, then the coordinator's answers
    # (merged into a topic already there); v10 names topics by id: an unknown id cannot be
    # authorized by name and is UNKNOWN_TOPIC_ID
    name = (lambda t: t) if version < 10 else (lambda t: str(ids[t]))
    missing_error = (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION) if version < 10 else (UNKNOWN_TOPIC_ID,) * 2
    assert answer == [(name(readable), [(5, UNKNOWN_TOPIC_OR_PARTITION), (0, NONE), (1, NONE)]),
                      (name(unreadable), [(0, TOPIC_AUTHORIZATION_FAILED)]),
                      (name(missing_readable), [(0, missing_error[1])]),
                      (name(missing), [(0, missing_error[0])])]
    # READ on the topics but not on the group: every partition is refused for the group
    grant(target, Acl(TOPIC, unreadable, READ))
    assert _commit(alice, refused_group, [(readable, [0]), (missing, [0]), (unreadable, [0])], version=version,
                   topic_ids=ids) == [(name(t), [(0, GROUP_AUTHORIZATION_FAILED)]) for t in (readable, missing, unreadable)]
    with super_user(target) as admin:
        assert _fetch(admin, [(group, None), (refused_group, None)]) == [
            (group, NONE, [(readable, [(0, 10, NONE), (1, 11, NONE)])]), (refused_group, NONE, [])]
        assert _listed(admin) == {group: "Empty"}


@pytest.mark.parametrize("version", [1, 2, 7, 8, 9])
def test_offset_fetch_filters_topics_without_describe(target, alice, version):
    group, other = unique("grp"), unique("grp")
    visible, hidden, missing = unique("t"), unique("t"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, visible)
        create_topic(admin, hidden)
        for g in (group, other):
            _standalone_group(admin, g, visible)
            assert _commit(admin, g, [(hidden, [0])]) == [(hidden, [(0, NONE)])]
    grant(target, Acl(GROUP, group, DESCRIBE), Acl(TOPIC, visible, DESCRIBE))
    named = [(hidden, [0]), (visible, [0, 1]), (missing, [0])]
    shown_named = [(visible, [(0, 10, NONE), (1, -1, NONE)]), (hidden, [(0, -1, TOPIC_AUTHORIZATION_FAILED)]),
                   (missing, [(0, -1, TOPIC_AUTHORIZATION_FAILED)])]
    if version < 2:  # no fetch of all the group's offsets, and no group error
        assert _fetch(alice, [(group, named), (other, named)], version) == [
            (group, None, shown_named),
            (other, None, [(t, [(p, -1, GROUP_AUTHORIZATION_FAILED) for p in parts]) for t, parts in named])]
        return
    assert _fetch(alice, [(group, named), (group, None), (other, named), (other, None)], version) == [
        (group, NONE, shown_named), (group, NONE, [(visible, [(0, 10, NONE)])]),
        (other, GROUP_AUTHORIZATION_FAILED, []), (other, GROUP_AUTHORIZATION_FAILED, [])]


def test_offset_delete_needs_delete_on_group_and_read_on_topics(target, alice):
    group, readonly_group, missing_group = unique("grp"), unique("grp"), unique("grp")
    readable, unreadable, missing = unique("t"), unique("t"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, readable)
        create_topic(admin, unreadable)
        for g in (group, readonly_group):
            _standalone_group(admin, g, readable)
            assert _commit(admin, g, [(unreadable, [0])]) == [(unreadable, [(0, NONE)])]
    grant(target, Acl(GROUP, group, DELETE), Acl(GROUP, missing_group, DELETE), Acl(GROUP, readonly_group, READ),
          Acl(TOPIC, readable, READ))
    assert _offset_delete(alice, group, [(readable, [0, 7]), (unreadable, [0]), (missing, [0])]) == (NONE, [
        (readable, [(7, UNKNOWN_TOPIC_OR_PARTITION), (0, NONE)]), (unreadable, [(0, TOPIC_AUTHORIZATION_FAILED)]),
        (missing, [(0, TOPIC_AUTHORIZATION_FAILED)])])
    assert _offset_delete(alice, readonly_group, [(readable, [0])]) == (GROUP_AUTHORIZATION_FAILED, [])
    assert _offset_delete(alice, missing_group, [(readable, [0]), (unreadable, [0])]) == (GROUP_ID_NOT_FOUND, [])
    with super_user(target) as admin:
        assert _fetch(admin, [(group, None), (readonly_group, None)]) == [
            (group, NONE, [(unreadable, [(0, 10, NONE)])]),
            (readonly_group, NONE, [(readable, [(0, 10, NONE)]), (unreadable, [(0, 10, NONE)])])]


def test_deny_wins_over_allow(target, alice):
    group, denied_group, topic = unique("grp"), unique("grp"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, topic)
        _standalone_group(admin, group, topic)
    # each DENY on a prefix that is the whole name: one ACL per resource pattern keeps the
    # DescribeAcls answers that grant() waits with free of Kafka's order within a resource
    grant(target, Acl(GROUP, group, ALL), Acl(GROUP, group, READ, permission=DENY, pattern=PREFIXED),
          Acl(GROUP, denied_group, READ),
          Acl(GROUP, denied_group, READ, principal="User:*", permission=DENY, pattern=PREFIXED),
          Acl(TOPIC, topic, READ), Acl(TOPIC, topic, DESCRIBE, permission=DENY, pattern=PREFIXED))
    # READ is denied; ALL still allows DESCRIBE and DELETE (a DENY implies nothing)
    assert _join(alice, group).error_code == GROUP_AUTHORIZATION_FAILED
    assert _join(alice, denied_group).error_code == GROUP_AUTHORIZATION_FAILED
    assert _commit(alice, group, [(topic, [0])]) == [(topic, [(0, GROUP_AUTHORIZATION_FAILED)])]
    assert _find(alice, [group, denied_group], GROUP_KEY, 4) == [
        (group, NONE, True), (denied_group, NONE, True)]
    # the topic may be read (committed to) but not described: its offsets are not shown
    assert _fetch(alice, [(group, [(topic, [0])]), (group, None)]) == [
        (group, NONE, [(topic, [(0, -1, TOPIC_AUTHORIZATION_FAILED)])]), (group, NONE, [])]
    assert _describe(alice, [group, denied_group]) == ([], {
        group: (NONE, "Empty", {DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS}),
        denied_group: (NONE, "Dead", {DESCRIBE})})
    assert _offset_delete(alice, group, [(topic, [0])]) == (NONE, [(topic, [(0, NONE)])])


def test_prefixed_and_wildcard_group_grants(target, alice):
    prefix, topic = unique("pfx"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, topic)
    grant(target, Acl(GROUP, prefix, READ, pattern=PREFIXED), Acl(TOPIC, topic, READ),
          Acl(TOPIC, topic, READ, principal="User:bob", pattern=PREFIXED))
    inside, outside = f"{prefix}-a", unique("grp")
    joined = _member(alice, inside)
    assert _sync(alice, inside, joined.generation_id, joined.member_id).error_code == NONE
    assert _commit(alice, inside, [(topic, [0])], joined.generation_id, joined.member_id) == [(topic, [(0, NONE)])]
    assert _leave(alice, inside, joined.member_id).error_code == NONE
    assert _join(alice, outside).error_code == GROUP_AUTHORIZATION_FAILED
    assert _join(alice, prefix[:-1]).error_code == GROUP_AUTHORIZATION_FAILED
    wildcard = Acl(GROUP, "*", READ, principal="User:bob")
    grant(target, wildcard)
    try:
        with login(target, "bob") as bob:
            assert _find(bob, [outside, inside], GROUP_KEY, 4) == [(outside, NONE, True), (inside, NONE, True)]
            assert _first_commit(bob, outside, [(topic, [0])]) == [(topic, [(0, NONE)])]
            assert _describe(bob, [outside, inside]) == ([], {
                outside: (NONE, "Empty", {READ, DESCRIBE}), inside: (NONE, "Empty", {READ, DESCRIBE})})
            assert _delete_groups(bob, [outside]) == {outside: GROUP_AUTHORIZATION_FAILED}
    finally:
        revoke(target, wildcard)
    with login(target, "bob") as bob:
        assert _join(bob, outside).error_code == GROUP_AUTHORIZATION_FAILED


def test_describe_groups_authorized_operations(target, alice):
    refused, read, describe_only, deletable, everything, unknown, hidden = (unique("grp") for _ in range(7))
    with super_user(target) as admin:
        topic = unique("t")
        create_topic(admin, topic)
        for g in (refused, read, describe_only, deletable, everything, hidden):
            _standalone_group(admin, g, topic)
    grant(target, Acl(GROUP, read, READ), Acl(GROUP, describe_only, DESCRIBE), Acl(GROUP, deletable, DELETE),
          Acl(GROUP, everything, ALL), Acl(GROUP, unknown, DESCRIBE))
    groups = [read, refused, describe_only, deletable, hidden, everything, unknown]
    described = {read: (NONE, "Empty", {READ, DESCRIBE}), describe_only: (NONE, "Empty", {DESCRIBE}),
                 deletable: (NONE, "Empty", {DELETE, DESCRIBE}), everything: (NONE, "Empty", ALL_GROUP_OPERATIONS)}
    assert _describe(alice, groups, 5) == ([refused, hidden], {**described, unknown: (NONE, "Dead", {DESCRIBE})})
    assert _describe(alice, groups, 6) == ([refused, hidden], {**described, unknown: (GROUP_ID_NOT_FOUND, "Dead", None)})
    # asked without them, or before v3, no operations are given
    for version, operations in ((5, False), (2, True)):
        assert _describe(alice, groups, version, operations) == (
            [refused, hidden], {g: (code, state, None) for g, (code, state, _ops) in
                                {**described, unknown: (NONE, "Dead", None)}.items()})


def test_list_groups_shows_describable_groups(target, alice):
    described, read, hidden, topic = unique("grp"), unique("grp"), unique("grp"), unique("t")
    with super_user(target) as admin:
        create_topic(admin, topic)
        for g in (described, read, hidden):
            _standalone_group(admin, g, topic)
    grant(target, Acl(GROUP, described, DESCRIBE), Acl(GROUP, read, READ),
          Acl(GROUP, hidden, DESCRIBE, permission=DENY))
    for version in (0, 4, 5):
        assert set(_listed(alice, version)) == {described, read}
    cluster = Acl(CLUSTER, CLUSTER_NAME, DESCRIBE)
    grant(target, cluster)
    try:
        for version in (0, 5):
            assert set(_listed(alice, version)) == {described, read, hidden}
    finally:
        revoke(target, cluster)
    assert set(_listed(alice)) == {described, read}


def test_delete_groups_needs_delete_per_group(target, alice):
    deletable, readable, refused, missing, topic = (unique("grp"), unique("grp"), unique("grp"), unique("grp"),
                                                    unique("t"))
    with super_user(target) as admin:
        create_topic(admin, topic)
        for g in (deletable, readable, refused):
            _standalone_group(admin, g, topic)
    grant(target, Acl(GROUP, deletable, DELETE), Acl(GROUP, readable, READ), Acl(GROUP, missing, DELETE))
    assert _delete_groups(alice, [refused, deletable, readable, missing, deletable]) == {
        refused: GROUP_AUTHORIZATION_FAILED, deletable: NONE, readable: GROUP_AUTHORIZATION_FAILED,
        missing: GROUP_ID_NOT_FOUND}
    with super_user(target) as admin:
        assert _listed(admin) == {readable: "Empty", refused: "Empty"}
