"""A leader's view of its followers (broker/replica_set.py) and the high watermark it allows
(broker/partition.py): the smallest log end over the ISR, never back, not below min.insync.replicas."""

from __future__ import annotations

from pathlib import Path

from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.broker.replica.replica_set import ReplicaSet
from wirekafka.protocol import records
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def leader(tmp_path: Path, clock: Clock, isr=(1, 2, 3), min_isr: int = 1) -> Partition:
    d = tmp_path / "t-0"
    p = Partition("t", 0, PartitionLog(d, LogConfig(), clock=clock), LeaderEpochCache(d / "leader-epoch-checkpoint"),
                  clock=clock, node_id=1, lead=False)
    p.min_insync_replicas = min_isr
    p.make_leader(3, (1, 2, 3), frozenset(isr))
    return p


def append(p: Partition, n: int = 1) -> None:
    batch = records.build_batch([(None, b"v", 0)] * n)
    p.append(batch, records.parse_header(batch), AppendOrigin.CLIENT)


def test_high_watermark_is_the_smallest_in_sync_log_end(tmp_path: Path) -> None:
    clock = Clock()
    p = leader(tmp_path, clock)
    append(p, 5)
    assert p.high_watermark == 0  # the followers' log ends are unknown until they fetch
    assert p.record_follower_fetch(2, 5)
    assert p.high_watermark == 0
    p.record_follower_fetch(3, 2)
    assert p.high_watermark == 2
    p.record_follower_fetch(3, 5)
    assert p.high_watermark == 5
    p.record_follower_fetch(3, 1)  # a follower going back (it truncated) does not move it back
    assert p.high_watermark == 5
    assert not p.record_follower_fetch(9, 5)  # not a replica of this partition


def test_high_watermark_waits_while_the_isr_is_under_min_insync(tmp_path: Path) -> None:
    clock = Clock()
    p = leader(tmp_path, clock, isr=(1,), min_isr=2)
    append(p, 3)
    assert p.high_watermark == 0
    p.record_follower_fetch(2, 3)
    assert p.isr_expansion() == frozenset({2})
    p.set_isr(frozenset({1, 2}))
    assert p.high_watermark == 3


def test_isr_shrinks_after_the_lag_time_and_expands_when_caught_up(tmp_path: Path) -> None:
    clock = Clock()
    p = leader(tmp_path, clock)
    append(p, 4)
    p.record_follower_fetch(2, 4)
    p.record_follower_fetch(3, 1)
    clock.now += 5
    p.record_follower_fetch(2, 4)
    assert p.isr_shrink(4000) == frozenset({3})
    p.set_isr(frozenset({1, 2}))
    assert p.high_watermark == 4
    p.record_follower_fetch(3, 4)
    assert p.isr_expansion() == frozenset({3})


def test_a_follower_at_the_leaders_log_end_stays_in_sync_however_long_it_is_silent(tmp_path: Path) -> None:
    """Kafka's Replica.isCaughtUp: an idle partition does not shrink its ISR; once the leader
    writes again, a follower silent for longer than the lag time is out at once."""
    clock = Clock()
    p = leader(tmp_path, clock)
    append(p, 2)
    p.record_follower_fetch(2, 2)
    p.record_follower_fetch(3, 2)
    clock.now += 60
    assert p.isr_shrink(4000) == frozenset()
    p.record_follower_fetch(2, 2)
    append(p, 1)
    assert p.isr_shrink(4000) == frozenset({3})


def test_follower_high_watermark_is_the_leaders_capped_at_its_log_end(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    p = Partition("t", 0, PartitionLog(d, LogConfig()), LeaderEpochCache(d / "leader-epoch-checkpoint"), node_id=2,
                  lead=False)
    p.make_follower(3, 1, (1, 2), frozenset({1, 2}))
    batch = bytearray(records.build_batch([(None, b"v", 0)] * 4))
    records.assign_offsets(batch, 0, 3)
    p.append_replicated(bytes(batch), records.parse_header(batch))
    p.set_follower_high_watermark(10)
    assert (p.log_end_offset, p.high_watermark) == (4, 4)
    p.set_follower_high_watermark(2)
    assert p.high_watermark == 2
    assert p.epochs.entries == [(3, 0)]


def test_replica_set_tracks_new_replicas_of_a_reassignment() -> None:
    rs = ReplicaSet.single(1)
    rs.lead((1, 2), frozenset({1, 2}), 0)
    rs.set_replicas((1, 2, 3))
    assert sorted(rs.followers) == [2, 3]
    rs.set_replicas((1, 3))
    assert sorted(rs.followers) == [3]


def test_a_proposed_expansion_holds_the_high_watermark_for_the_member_it_adds(tmp_path: Path) -> None:
    """Kafka's maximal ISR: while the controller has not answered an expansion, the high watermark
    already waits for the new member, so once recorded it has everything below the high watermark."""
    clock = Clock()
    p = leader(tmp_path, clock, isr=(1, 2))
    append(p, 4)
    p.record_follower_fetch(2, 4)
    p.record_follower_fetch(3, 4)
    assert p.high_watermark == 4 and p.isr_expansion() == frozenset({3})
    p.propose_isr(frozenset({1, 2, 3}))
    append(p, 3)
    p.record_follower_fetch(2, 7)
    p.record_follower_fetch(3, 5)
    assert p.high_watermark == 5  # not 7: broker 3 counts while proposed
    assert p.replica_set.isr == frozenset({1, 2})
    p.settle_isr(frozenset({1, 2, 3}))
    assert p.replica_set.isr == frozenset({1, 2, 3}) and p.replica_set.pending_isr is None
    p.record_follower_fetch(3, 7)
    assert p.high_watermark == 7


def test_a_refused_proposal_leaves_the_isr_and_frees_the_high_watermark(tmp_path: Path) -> None:
    clock = Clock()
    p = leader(tmp_path, clock, isr=(1, 2, 3))
    append(p, 6)
    p.record_follower_fetch(2, 6)
    p.record_follower_fetch(3, 2)
    assert p.high_watermark == 2
    p.propose_isr(frozenset({1, 2}))  # a shrink: broker 3 still counts until recorded
    p.record_follower_fetch(2, 6)
    assert p.high_watermark == 2
    p.settle_isr(None)
    assert p.replica_set.isr == frozenset({1, 2, 3}) and p.high_watermark == 2
    p.propose_isr(frozenset({1, 2}))
    p.settle_isr(frozenset({1, 2}))
    assert p.high_watermark == 6


def test_a_new_leadership_drops_a_proposal_in_flight(tmp_path: Path) -> None:
    clock = Clock()
    p = leader(tmp_path, clock, isr=(1, 2))
    p.propose_isr(frozenset({1, 2, 3}))
    p.make_follower(4, 2, (1, 2, 3), frozenset({1, 2}))
    assert p.replica_set.pending_isr is None
    p.propose_isr(frozenset({1}))
    p.make_leader(5, (1, 2, 3), frozenset({1, 2}))
    assert p.replica_set.pending_isr is None and p.replica_set.maximal_isr == frozenset({1, 2})
