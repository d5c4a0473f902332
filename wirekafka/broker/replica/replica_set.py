"""ReplicaSet: who holds a partition, who leads it, who is in sync, and how far each follower is.

A Partition holds one. On the leader it answers the questions Kafka's Partition.scala answers
from its remote-replica states: the smallest log end offset among the in-sync replicas (the high
watermark's candidate), which followers fell out of sync (no fetch reaching the leader's log end
for replica.lag.time.max.ms) and which out-of-sync follower caught up (its fetch offset reached
the high watermark and the current leader epoch's start). The in-sync set itself changes only
when the controller has recorded the change (`set_isr`). While a change is proposed and not yet
answered (`pending_isr`), the high watermark counts the old and the proposed members alike (Kafka's
"maximal ISR"): a shrink still waits for the member it drops, and an expansion already waits for
the member it adds, so a replica the controller puts in the ISR has everything below the high
watermark. Either way the high watermark can only wait, never advance wrongly.

In a cluster the leader's ISR manager watches the set (`isr_watch`): a fetch that makes an
out-of-sync follower eligible to rejoin tells it at once (Kafka checks an expansion on each follower
fetch), so no loop has to visit every partition to find expansions.

A single node is a ReplicaSet of one: its own leader and whole in-sync set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol


class FetchClock(Protocol):
    """A follower's fetch session holding this partition quiet: it fetched, at the leader's log
    end, at fetched_ms (quiet_partitions.py)."""

    fetched_ms: int


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower from its fetches."""

    log_end_offset: int = -1  # unknown until its first fetch as this leader's follower
    last_caught_up_ms: int = 0  # last time a fetch of it reached the leader's log end
    last_fetch_leader_end: int = -1  # the leader's log end at its previous fetch (Kafka's lastFetchLeaderLogEndOffset)
    last_fetch_ms: int = 0
    log_start_offset: int = -1  # as its last fetch reported it (-1: unknown)
    # while the partition is quiet in the follower's fetch session, each of its fetches counts as
    # caught up without a write here: the session's last fetch time is read instead
    quiet_in: FetchClock | None = None

    def caught_up_ms(self) -> int:
        """When a fetch of it last reached the leader's log end (or its previous one)."""
        if self.quiet_in is None:
            return self.last_caught_up_ms
        return max(self.last_caught_up_ms, self.quiet_in.fetched_ms)


@dataclass
class ReplicaSet:
    local_id: int
    replicas: tuple[int, ...]
    isr: frozenset[int]
    leader: int
    followers: dict[int, FollowerProgress]
    pending_isr: frozenset[int] | None = None  # proposed to the controller, not yet answered
    # the ISR manager's notice that this partition's ISR may expand; kept across roles (None: unwatched)
    isr_watch: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def single(cls, node_id: int) -> "ReplicaSet":
        return cls(node_id, (node_id,), frozenset((node_id,)), node_id, {})

    @property
    def is_leader(self) -> bool:
        return self.leader == self.local_id

    def effective_min_isr(self, configured: int) -> int:
        """min.insync.replicas as Kafka 3.7+ applies it: never more than the partition's
        replicas (KAFKA-15583), so a topic with fewer replicas than its min.insync.replicas
        still takes acks=all writes and moves its high watermark."""
        return min(configured, max(len(self.replicas), 1))

    def lead(self, replicas: tuple[int, ...], isr: frozenset[int], now_ms: int) -> None:
        """Become leader: followers in the ISR count as caught up now (Kafka resets their
        timers on a leader change), their log ends unknown until they fetch."""
        self.leader = self.local_id
        self.replicas = replicas
        self.isr = isr
        self.pending_isr = None
        self.followers = {r: FollowerProgress(last_caught_up_ms=now_ms if r in isr else 0)
                          for r in replicas if r != self.local_id}

    def follow(self, leader: int, replicas: tuple[int, ...], isr: frozenset[int]) -> None:
        self.leader = leader
        self.replicas = replicas
        self.isr = isr
        self.pending_isr = None
        self.followers = {}

    def set_isr(self, isr: frozenset[int]) -> None:
        self.isr = isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The members the high watermark waits for: the ISR, and a proposed one's too."""
        return self.isr if self.pending_isr is None else self.isr | self.pending_isr

    def set_replicas(self, replicas: tuple[int, ...]) -> None:
        """The assignment changed (a reassignment): track new followers, forget departed ones."""
        self.replicas = replicas
        if self.is_leader:
            for r in replicas:
                if r != self.local_id and r not in self.followers:
                    self.followers[r] = FollowerProgress()
            for r in [r for r in self.followers if r not in replicas]:
                del self.followers[r]

    def record_fetch(self, replica_id: int, fetch_offset: int, leader_end: int, now_ms: int,
                     log_start_offset: int = -1) -> bool:
        """A follower fetched from fetch_offset: it has everything below it. Kafka's rule for
        "caught up": it reached the leader's log end now, or the log end the leader had at its
        previous fetch. False when replica_id is not a follower of this partition."""
        progress = self.followers.get(replica_id)
        if progress is None:
            return False
        if progress.quiet_in is not None:  # read in another session: the quiet one is over
            self.release_quiet(replica_id, progress.quiet_in)
        if fetch_offset >= leader_end:
            progress.last_caught_up_ms = now_ms
        elif fetch_offset >= progress.last_fetch_leader_end >= 0:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.last_fetch_ms)
        progress.log_end_offset = fetch_offset
        progress.log_start_offset = log_start_offset
        progress.last_fetch_leader_end = leader_end
        progress.last_fetch_ms = now_ms
        return True

    def hold_quiet(self, replica_id: int, fetch_offset: int, clock: FetchClock) -> None:
        """A follower fetching at the leader's log end, whose reads are skipped from now on (a
        quiet partition): what record_fetch would note, now and at each of its session's fetches
        until release_quiet."""
        progress = self.followers.get(replica_id)
        if progress is not None:
            progress.last_caught_up_ms = progress.last_fetch_ms = clock.fetched_ms
            progress.log_end_offset = progress.last_fetch_leader_end = fetch_offset
            progress.quiet_in = clock

    def release_quiet(self, replica_id: int, clock: FetchClock) -> None:
        """The partition is no longer quiet in that session (it moved, or the follower named or
        forgot it): its last fetch there is the last one counted."""
        progress = self.followers.get(replica_id)
        if progress is not None and progress.quiet_in is clock:
            progress.last_caught_up_ms = progress.last_fetch_ms = max(progress.last_caught_up_ms, clock.fetched_ms)
            progress.quiet_in = None

    def note_if_rejoining(self, replica_id: int, expansion: Callable[[], frozenset[int]]) -> None:
        """After a fetch of replica_id: notify isr_watch when replica_id is out of the ISR and now
        among the followers that may rejoin (expansion(), the caller's `caught_up`). A member's
        fetch costs one set lookup; only a follower outside the ISR pays for the check."""
        if self.isr_watch is not None and replica_id not in self.isr and replica_id in expansion():
            self.isr_watch()

    def min_in_sync_end(self, leader_end: int) -> int | None:
        """The smallest log end offset over the in-sync replicas; None while one of them has not
        fetched yet (its log end is unknown)."""
        low = leader_end
        for r in self.maximal_isr:
            if r == self.local_id:
                continue
            progress = self.followers.get(r)
            if progress is None or progress.log_end_offset < 0:
                return None
            low = min(low, progress.log_end_offset)
        return low

    def out_of_sync(self, now_ms: int, lag_ms: int, leader_end: int) -> frozenset[int]:
        """In-sync followers that have not caught up for longer than lag_ms. A follower whose log
        end is the leader's is in sync however long ago it fetched (Kafka's Replica.isCaughtUp):
        an idle partition keeps its ISR, and the controller drops a dead broker from it."""
        def lagging(progress: FollowerProgress) -> bool:
            return progress.log_end_offset != leader_end and now_ms - progress.caught_up_ms() > lag_ms

        return frozenset(r for r in self.isr if r != self.local_id and lagging(self.followers.get(r, FollowerProgress())))

    def caught_up(self, high_watermark: int, epoch_start: int) -> frozenset[int]:
        """Out-of-sync followers that may rejoin: they have everything up to the high watermark
        and at least the current leader epoch's first offset (Kafka's isFollowerInSync)."""
        return frozenset(r for r, p in self.followers.items()
                         if r not in self.isr and r in self.replicas
                         and p.log_end_offset >= high_watermark and p.log_end_offset >= epoch_start)
