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
KINDS = (KILL, PAUSE, ZK_CUT, PEER_CUT)


@dataclass(frozen=True)
class Fault:
    kind: str
    node: int
    hold_s: float  # how long the node stays down or paused
    settle_s: float  # how long the healed cluster runs before the next fault


def make_schedule(seed: int, nodes: Sequence[int], count: int, session_timeout_s: float,
                  kinds: Sequence[str] = KINDS, replica_lag_s: float = 4.0) -> list[Fault]:
    """count faults, one at a time (a cluster of three with min.insync.replicas=2 keeps taking
    acks=all writes through any one of them); a pause or a cut from ZooKeeper outlasts the
    ZooKeeper session so that it forces a failover, a cut from the peers outlasts
    replica.lag.time.max.ms so that ISRs shrink, and a kill is sometimes healed before the
    session expires (a quick restart)."""
    rng = random.Random(seed)
    faults = []
    for _ in range(count):
        kind = rng.choice(list(kinds))
        if kind == KILL:
            hold = rng.uniform(0.2, 2 * session_timeout_s)
        elif kind == PEER_CUT:
            hold = replica_lag_s + rng.uniform(0.5, 4.0)
        else:
            hold = session_timeout_s + rng.uniform(0.5, 2.0)
        faults.append(Fault(kind, rng.choice(list(nodes)), round(hold, 2), round(rng.uniform(2.0, 4.0), 2)))
    return faults
