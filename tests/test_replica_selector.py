"""Which replica a consumer should read from (broker/replica_selector.py): Kafka's
RackAwareReplicaSelector over the leader and its in-sync followers that hold the fetch offset."""

from __future__ import annotations

from pathlib import Path

from tests.test_replica_set import Clock, append, leader

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replica.replica_selector import NO_PREFERENCE, ReplicaView, preferred_read_replica, rack_aware_choice

RACKS = [BrokerInfo(1, "h", 1, "a"), BrokerInfo(2, "h", 2, "b"), BrokerInfo(3, "h", 3, "b")]


def test_rack_aware_choice() -> None:
    lead = ReplicaView(1, "a", 10, 0)
    b_behind, b_ahead = ReplicaView(2, "b", 8, 0), ReplicaView(3, "b", 10, 500)
    assert rack_aware_choice("", lead, [lead, b_behind, b_ahead]) is lead  # no client rack
    assert rack_aware_choice("z", lead, [lead, b_behind, b_ahead]) is lead  # no replica in it
    assert rack_aware_choice("a", lead, [lead, ReplicaView(2, "a", 10, 0)]) is lead  # the leader is there
    assert rack_aware_choice("b", lead, [lead, b_behind, b_ahead]) is b_ahead  # the furthest log end
    fresher = ReplicaView(2, "b", 10, 100)
    assert rack_aware_choice("b", lead, [lead, fresher, b_ahead]) is fresher  # then the latest caught up


def test_preferred_read_replica_needs_an_in_sync_follower_holding_the_offset(tmp_path: Path) -> None:
    clock = Clock()
    p = leader(tmp_path, clock, isr=(1, 2))
    append(p, 5)
    assert preferred_read_replica(p, RACKS, "b", 0, 1000) == NO_PREFERENCE  # followers' log ends unknown
    p.record_follower_fetch(2, 5, 0)
    p.record_follower_fetch(3, 5, 0)  # out of the ISR: not a candidate
    assert preferred_read_replica(p, RACKS, "b", 3, 1000) == 2
    assert preferred_read_replica(p, RACKS, "b", 6, 1000) == NO_PREFERENCE  # past what broker 2 has
    assert preferred_read_replica(p, RACKS, "a", 3, 1000) == NO_PREFERENCE  # the leader's own rack
    assert preferred_read_replica(p, RACKS[:1] + RACKS[2:], "b", 3, 1000) == NO_PREFERENCE  # broker 2 not registered
    p.record_follower_fetch(2, 5, 4)  # broker 2 deleted up to offset 4
    assert preferred_read_replica(p, RACKS, "b", 3, 1000) == NO_PREFERENCE
