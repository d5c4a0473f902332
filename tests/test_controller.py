"""The controller's decisions (broker/replication/controller.py) on hand-built cluster snapshots."""

from __future__ import annotations

import dataclasses
import uuid

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk.controller import (
    PREFERRED,
    RECOVERING,
    UNCLEAN,
    ClusterSnapshot,
    LeaderAndIsr,
    StateWrite,
    TopicView,
    completed_reassignments,
    elect,
    imbalanced_leaders,
    plan_legacy_reassignments,
    plan_state_changes,
    start_reassignment,
    state_changes_in_steps,
    without_bounced,
)

EPOCH = 7


def snapshot(live: list[int], states: dict[int, LeaderAndIsr | None], assignment: dict[int, tuple[int, ...]],
             adding: dict | None = None, removing: dict | None = None) -> ClusterSnapshot:
    view = TopicView(uuid.uuid4(), assignment, {}, {p: (s, 3) for p, s in states.items() if s is not None},
                     adding or {}, removing or {})
    return ClusterSnapshot({b: BrokerInfo(b, "127.0.0.1", 9000 + b) for b in live}, live[0], EPOCH, 5, {"t": view})


def never(_topic: str) -> bool:
    return False


def test_new_partition_comes_online_with_its_live_replicas() -> None:
    s = snapshot([1, 2], {0: None}, {0: (3, 2, 1)})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 0, (2, 1), EPOCH), None)]
    assert plan_state_changes(snapshot([4], {0: None}, {0: (3, 2, 1)}), EPOCH, never) == []


def test_dead_leader_is_replaced_by_the_first_live_isr_member_in_assignment_order() -> None:
    s = snapshot([2, 3], {0: LeaderAndIsr(1, 4, (1, 3, 2), 6)}, {0: (1, 2, 3)})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 5, (3, 2), EPOCH), 3)]


def test_dead_follower_leaves_the_isr_with_an_epoch_bump() -> None:
    s = snapshot([1, 2], {0: LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {0: (1, 2, 3)})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(1, 5, (1, 2), EPOCH), 3)]
    assert plan_state_changes(snapshot([1, 2, 3], {0: LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {0: (1, 2, 3)}),
                              EPOCH, never) == []


def test_a_broker_that_re_registered_unnoticed_counts_as_failed_for_one_round() -> None:
    """Issue 34, hole 5: broker 1 restarted before its old session expired, so the set of live
    ids never changed; its registration's epoch did. Its leadership moves to the next in-sync
    replica and it leaves the ISR, with an epoch bump (KafkaController's bounced brokers); the
    next round, with its new epoch acted on, it is an ordinary live broker again. Failed before:
    ids alone were compared and broker 1 kept leading in the same epoch."""
    s = dataclasses.replace(snapshot([1, 2, 3], {0: LeaderAndIsr(1, 4, (1, 2, 3), 6)}, {0: (1, 2, 3)}),
                            broker_epochs={1: 500, 2: 20, 3: 30})
    planning, bounced = without_bounced(s, {1: 10, 2: 20, 3: 30})
    assert bounced == {1}
    assert plan_state_changes(planning, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(2, 5, (2, 3), EPOCH), 3)]
    again, none = without_bounced(s, {1: 500, 2: 20, 3: 30})
    assert not none and again is s
    first_sight, none = without_bounced(s, {})  # a new controller knows no earlier epochs
    assert not none and first_sight is s


def test_no_live_isr_member_leaves_the_partition_leaderless_unless_unclean() -> None:
    s = snapshot([3], {0: LeaderAndIsr(1, 4, (1, 2), 6)}, {0: (1, 2, 3)})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(-1, 5, (1,), EPOCH), 3)]
    unclean = plan_state_changes(s, EPOCH, lambda _t: True)
    assert unclean == [StateWrite("t", 0, LeaderAndIsr(3, 5, (3,), EPOCH, RECOVERING), 3)]
    # already leaderless: nothing more to write until an ISR member returns
    s = snapshot([3], {0: LeaderAndIsr(-1, 5, (1,), 6)}, {0: (1, 2, 3)})
    assert plan_state_changes(s, EPOCH, never) == []
    s = snapshot([1, 3], {0: LeaderAndIsr(-1, 5, (1,), 6)}, {0: (1, 2, 3)})
    assert plan_state_changes(s, EPOCH, never) == [StateWrite("t", 0, LeaderAndIsr(1, 6, (1,), EPOCH), 3)]


def test_a_plan_in_steps_is_the_whole_plan_cut_every_so_many_partitions() -> None:
    """The controller plans 10,000 partitions a step at a time, its loop turning between two:
    the steps hold the same writes in the same order, each step's after `step` partitions
    looked at (written or not)."""
    states = {p: [LeaderAndIsr(1, 4, (1, 2, 3), 6), LeaderAndIsr(3, 4, (3, 1), 6), None][p % 3] for p in range(10)}
    s = snapshot([1, 2], states, {p: (1, 2, 3) for p in range(10)})
    whole = plan_state_changes(s, EPOCH, never)
    steps = list(state_changes_in_steps(s, EPOCH, never, 3))
    assert [w for step in steps for w in step] == whole
    assert len(whole) == 10  # every partition changes: the new ones start, the others lose broker 3
    assert [[w.partition for w in step] for step in steps] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    steady = snapshot([1, 2, 3], {p: LeaderAndIsr(1, 4, (1, 2, 3), 6) for p in range(7)}, {p: (1, 2, 3) for p in range(7)})
    assert list(state_changes_in_steps(steady, EPOCH, never, 3)) == [[], [], []]


def test_preferred_and_unclean_elections() -> None:
    s = snapshot([1, 2, 3], {0: LeaderAndIsr(2, 4, (2, 1), 6)}, {0: (1, 2, 3)})
    e = elect(s, EPOCH, "t", 0, PREFERRED)
    assert (e.error, e.write) == ("NONE", StateWrite("t", 0, LeaderAndIsr(1, 5, (2, 1), EPOCH), 3))
    assert elect(s, EPOCH, "t", 0, UNCLEAN).error == "ELECTION_NOT_NEEDED"
    out_of_sync = snapshot([1, 2, 3], {0: LeaderAndIsr(2, 4, (2,), 6)}, {0: (1, 2, 3)})
    assert elect(out_of_sync, EPOCH, "t", 0, PREFERRED).error == "PREFERRED_LEADER_NOT_AVAILABLE"
    leads = snapshot([1, 2], {0: LeaderAndIsr(1, 4, (1, 2), 6)}, {0: (1, 2)})
    assert elect(leads, EPOCH, "t", 0, PREFERRED).error == "ELECTION_NOT_NEEDED"
    assert elect(leads, EPOCH, "t", 9, PREFERRED).error == "UNKNOWN_TOPIC_OR_PARTITION"
    dead = snapshot([3], {0: LeaderAndIsr(1, 4, (1,), 6)}, {0: (1, 2)})
    assert elect(dead, EPOCH, "t", 0, UNCLEAN).error == "ELIGIBLE_LEADERS_NOT_AVAILABLE"


def test_leader_rebalance_moves_leaderships_home_past_the_imbalance_threshold() -> None:
    states = {p: LeaderAndIsr(2, 1, (1, 2), 6) for p in range(4)}
    s = snapshot([1, 2], states, {p: (1, 2) for p in range(4)})
    writes = imbalanced_leaders(s, EPOCH, 10)
    assert [(w.partition, w.state.leader) for w in writes] == [(0, 1), (1, 1), (2, 1), (3, 1)]
    balanced = snapshot([1, 2], {p: LeaderAndIsr(1, 1, (1, 2), 6) for p in range(4)}, {p: (1, 2) for p in range(4)})
    assert imbalanced_leaders(balanced, EPOCH, 10) == []


def test_reassignment_steps() -> None:
    assert start_reassignment((1, 2), (2, 3)) == ((2, 3, 1), (3,), (1,))
    assert start_reassignment((1, 2), (1, 2)) == ((1, 2), (), ())
    moving = {0: (2, 3, 1)}
    waiting = snapshot([1, 2, 3], {0: LeaderAndIsr(1, 2, (1, 2), 6)}, moving, {0: (3,)}, {0: (1,)})
    assert completed_reassignments(waiting, EPOCH) == []
    caught_up = snapshot([1, 2, 3], {0: LeaderAndIsr(1, 2, (1, 2, 3), 6)}, moving, {0: (3,)}, {0: (1,)})
    [done] = completed_reassignments(caught_up, EPOCH)
    assert done.replicas == (2, 3)
    assert done.state == StateWrite("t", 0, LeaderAndIsr(2, 3, (2, 3), EPOCH), 3)  # the leaving leader hands over


def test_legacy_reassignment_znode_entries_start_wait_finish_or_drop() -> None:
    """/admin/reassign_partitions: a new target starts; the same target in flight waits; a
    partition already on its target is done; unknown partitions and bad lists are dropped."""
    s = snapshot([1, 2, 3], {0: LeaderAndIsr(1, 4, (1, 2), 6), 1: LeaderAndIsr(2, 0, (2,), 6)},
                 {0: (1, 2), 1: (3, 2)}, adding={1: (3,)}, removing={1: (1,)})
    s.topics["t"].assignment[1] = (3, 2, 1)  # moving from (1, 2) to (3, 2)
    requests = {("t", 0): (2, 3), ("t", 1): (3, 2), ("gone", 0): (1,), ("t", 9): (1,)}
    plan = plan_legacy_reassignments(dataclasses.replace(s, legacy_reassignments=(requests, 0)))
    assert plan.start == {("t", 0): (2, 3)}
    assert plan.drop == {("gone", 0): "the partition does not exist", ("t", 9): "the partition does not exist"}
    # another target for the partition in flight restarts it; a partition on its target is done
    plan = plan_legacy_reassignments(dataclasses.replace(
        s, legacy_reassignments=({("t", 0): (1, 2), ("t", 1): (2, 3)}, 0)))
    assert plan.start == {("t", 1): (2, 3)} and plan.drop == {("t", 0): "completed"}
    invalid = plan_legacy_reassignments(dataclasses.replace(
        s, legacy_reassignments=({("t", 0): (2, 2), ("t", 1): ()}, 0)))
    assert invalid.start == {} and invalid.drop == {("t", 0): "invalid replica list [2, 2]",
                                                    ("t", 1): "invalid replica list []"}
    # a topic being deleted takes its entries with it; no znode, nothing to do
    deleting = dataclasses.replace(s, deleting=("t",), legacy_reassignments=({("t", 0): (2, 3)}, 0))
    assert plan_legacy_reassignments(deleting).drop == {("t", 0): "the partition does not exist"}
    assert plan_legacy_reassignments(s).start == {} and plan_legacy_reassignments(s).drop == {}
