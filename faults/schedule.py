"""A seeded fault schedule: the same seed gives the same faults on every kind of cluster, so a
finding on one is compared with the other's answer to the very same schedule."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

KILL = "kill"  # kill -9, restarted after hold_s
PAUSE = "pause"  # SIGSTOP for hold_s (past the ZooKeeper session: the cluster fails it over), SIGCONT
ZK_CUT = "zk-cut"  # the node's link to ZooKeeper cut for hold_s (past the session): it keeps running
# the node's inter-broker listener cut for hold_s (past replica.lag.time.max.ms): its peers (the
# controller's requests, followers' fetches) cannot reach it, clients and ZooKeeper still can
PEER_CUT = "peer-cut"
# the node's log dir (its own size-limited tmpfs, faults/disks.py) filled to ENOSPC for hold_s,
# then freed; a broker whose only log dir failed stops (Kafka's LogDirFailureChannel), and is
# started again once the space is back
DISK_FULL = "disk-full"
# two faults at once on two different nodes (`parts`), the second starting `delay_s` into the
# first: with replication factor 3 and min.insync.replicas=2 a partition may have no leader or
# too small an ISR for a while, which must cost availability only, never an acknowledged record
COMBINED = "combined"
# the node's writes and flushes to its log files delayed (faults/slow_disk.py) for hold_s: its
# network, timers and ZooKeeper session go on, only its disk lags
SLOW_DISK = "slow-disk"
# kill -9, then the tail of the active segment of each of the workload's partitions on that node
# cut short mid-batch (what a power loss leaves of unflushed writes), then a restart after hold_s:
# the broker must recover to its last whole batch and fetch the rest from the leader
TORN_TAIL = "torn-tail"
KINDS = (KILL, PAUSE, ZK_CUT, PEER_CUT)  # the default mix: what earlier seeds were run with
# what a combined fault is made of unless told otherwise
COMBINABLE = (KILL, PAUSE, ZK_CUT, PEER_CUT)


@dataclass(frozen=True)
class Fault:
    kind: str
    node: int
    hold_s: float  # how long the node stays down or paused (a combined fault: until both parts can end)
    settle_s: float  # how long the healed cluster runs before the next fault
    parts: tuple["Fault", ...] = ()  # COMBINED: the two faults, on two different nodes
    delay_s: float = 0.0  # COMBINED: when the second part starts, after the first

    def kinds(self) -> tuple[str, ...]:
        """The simple kinds this fault injects (its parts' for a combined one)."""
        return tuple(p.kind for p in self.parts) if self.parts else (self.kind,)


def _hold(rng: random.Random, kind: str, session_timeout_s: float, replica_lag_s: float) -> float:
    """How long a fault of this kind lasts: a pause or a cut from ZooKeeper outlasts the session,
    a cut from the peers outlasts replica.lag.time.max.ms, a kill is sometimes healed before the
    session expires (a quick restart), a full disk lasts a few seconds of writes."""
    if kind in (KILL, TORN_TAIL):
        return rng.uniform(0.2, 2 * session_timeout_s)
    if kind == PEER_CUT:
        return replica_lag_s + rng.uniform(0.5, 4.0)
    if kind == DISK_FULL:
        return rng.uniform(1.0, 4.0)
    if kind == SLOW_DISK:  # long enough for a slow follower to lag past replica.lag.time.max.ms
        return replica_lag_s + rng.uniform(0.5, 4.0)
    return session_timeout_s + rng.uniform(0.5, 2.0)


def make_schedule(seed: int, nodes: Sequence[int], count: int, session_timeout_s: float,
                  kinds: Sequence[str] = KINDS, replica_lag_s: float = 4.0,
                  combinable: Sequence[str] = COMBINABLE) -> list[Fault]:
    """count faults, one at a time (a cluster of three with min.insync.replicas=2 keeps taking
    acks=all writes through any one of them), except a COMBINED one: two faults of `combinable`
    kinds on two different nodes, overlapping. The random draws for the simple kinds are those
    of earlier versions, so an old seed with the old kinds gives the same schedule."""
    rng = random.Random(seed)
    faults = []
    for _ in range(count):
        kind = rng.choice(list(kinds))
        if kind == COMBINED:
            first_node, second_node = rng.sample(sorted(nodes), 2)
            first_kind, second_kind = rng.choice(list(combinable)), rng.choice(list(combinable))
            first = Fault(first_kind, first_node, round(_hold(rng, first_kind, session_timeout_s, replica_lag_s), 2), 0.0)
            second = Fault(second_kind, second_node,
                           round(_hold(rng, second_kind, session_timeout_s, replica_lag_s), 2), 0.0)
            # the second starts while the first holds (a kill's restart takes longer than its hold)
            delay = round(rng.uniform(0.0, min(1.0, first.hold_s / 2)), 2)
            faults.append(Fault(COMBINED, first_node, max(first.hold_s, delay + second.hold_s),
                                round(rng.uniform(2.0, 4.0), 2), (first, second), delay))
            continue
        hold = _hold(rng, kind, session_timeout_s, replica_lag_s)
        faults.append(Fault(kind, rng.choice(list(nodes)), round(hold, 2), round(rng.uniform(2.0, 4.0), 2)))
    return faults
