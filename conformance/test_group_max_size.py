"""group.max.size at the wire level: JoinGroup answers GROUP_MAX_SIZE_REACHED (81) with an empty
member id once a classic group is full (Kafka's acceptJoiningMember).

The session brokers run realkafka.DEFAULT_BROKER_CONFIG, shared by every scenario, and Kafka
cannot change group.max.size at runtime; so this module overrides `target` with a pair of its own,
started once for the module with group.max.size=2 (a real Kafka start costs a few seconds)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsRequest
from kafka.protocol.consumer.group import JoinGroupRequest, SyncGroupRequest

from conformance.harness.own_brokers import own_broker_pair
from conformance.harness.wire import Connection, ensure_group_coordinator, poll, retry_transient, unique

MAX_SIZE = {"group.max.size": "2"}
# Rebalances that must wait for their deadline (a refusal does not complete them) wait this long.
SESSION_MS, REBALANCE_MS = 10_000, 2_000
PROTOCOLS = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff")]
GROUP_MAX_SIZE_REACHED, MEMBER_ID_REQUIRED = 81, 79


own_wirekafka, own_kafka, target = own_broker_pair(MAX_SIZE)


def _request(group: str, member_id: str, instance_id: str | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                            member_id=member_id, group_instance_id=instance_id, protocol_type="consumer",
                            protocols=PROTOCOLS, reason=None)


def _join(conn: Connection, group: str, member_id: str = "", version: int = 9, instance_id: str | None = None) -> Any:
    return retry_transient(lambda: conn.call(_request(group, member_id, instance_id), version),
                           lambda r: r.error_code)


def _sync(conn: Connection, group: str, joined: Any, assign_to: list[str]) -> int:
    """Send SyncGroup (the leader assigns to `assign_to`); returns the correlation id."""
    assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b"") for m in assign_to]
    return conn.send(SyncGroupRequest(group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
                                      group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                      assignments=assignments), 5)


def _described(conn: Connection, group: str, state: str, members: int) -> Any:
    """DescribeGroups until the group is in `state` with `members` members: a JoinGroup sent on
    another connection has then been handled."""
    def ask() -> Any:
        return conn.call(DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5).groups[0]

    return poll(ask, lambda g: g.group_state == state and len(g.members) == members, timeout=10)


def _stable_pair(a: Connection, b: Connection, d: Connection, group: str) -> tuple[str, str]:
    """Leader A alone, then B joins and A rejoins: a Stable group of two (the maximum)."""
    ensure_group_coordinator(a, group)
    first = _join(a, group)
    leader = _join(a, group, first.member_id)
    assert a.receive(14, 5, _sync(a, group, leader, [leader.member_id])).error_code == 0
    follower_id = _join(b, group).member_id
    b_join = b.send(_request(group, follower_id), 9)
    _described(d, group, "PreparingRebalance", 2)
    a_join = a.send(_request(group, leader.member_id), 9)
    joined_a, joined_b = a.receive(11, 9, a_join), b.receive(11, 9, b_join)
    assert joined_a.error_code == joined_b.error_code == 0 and joined_a.leader == leader.member_id
    b_sync = _sync(b, group, joined_b, [])
    assert a.receive(14, 5, _sync(a, group, joined_a, [leader.member_id, follower_id])).error_code == 0
    assert b.receive(14, 5, b_sync).error_code == 0
    return leader.member_id, follower_id


def _refused(result: Any) -> bool:
    return result.error_code == GROUP_MAX_SIZE_REACHED and result.member_id == ""


def test_full_stable_group_refuses_new_members(target):
    """Only members get back into a full Stable group: a new member (JoinGroup v9 and v3), a
    static member with an empty member id and an unknown member id are refused."""
    group = unique("grp")
    with Connection(target.bootstrap) as a, Connection(target.bootstrap) as b, Connection(target.bootstrap) as d:
        _, follower = _stable_pair(a, b, d, group)
        assert _refused(_join(d, group))
        assert _refused(_join(d, group, version=3))
        assert _refused(_join(d, group, instance_id="static-1"))
        assert _refused(_join(d, group, "no-such-member"))
        again = _join(b, group, follower)
        assert again.error_code == 0 and again.member_id == follower
        _described(d, group, "Stable", 2)


def test_rebalancing_group_counts_members_awaiting_their_join(target):
    """PreparingRebalance: new members get in while fewer than group.max.size members await their
    join; once two do, a MEMBER_ID_REQUIRED id and an existing member that had not rejoined yet
    are refused (that one leaves the group), and the join completes at the rebalance deadline."""
    group = unique("grp")
    bootstrap = target.bootstrap
    with Connection(bootstrap) as a, Connection(bootstrap) as b, Connection(bootstrap) as c, \
            Connection(bootstrap) as d:
        leader, follower = _stable_pair(a, b, d, group)
        a_join = a.send(_request(group, leader), 9)
        _described(d, group, "PreparingRebalance", 2)
        newcomer, late = _join(c, group), _join(d, group)
        assert newcomer.error_code == late.error_code == MEMBER_ID_REQUIRED  # one member awaiting
        c_join = c.send(_request(group, newcomer.member_id), 9)
        _described(d, group, "PreparingRebalance", 3)
        assert _refused(_join(d, group, late.member_id))
        assert _refused(_join(b, group, follower))
        _described(d, group, "PreparingRebalance", 2)
        joined_a, joined_c = a.receive(11, 9, a_join), c.receive(11, 9, c_join)
        assert joined_a.error_code == joined_c.error_code == 0
        assert joined_a.generation_id == joined_c.generation_id == 3
        assert sorted(m.member_id for m in joined_a.members) == sorted([leader, newcomer.member_id])
