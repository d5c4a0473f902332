"""Quiet partitions of a fetch session: those its fetches would read for nothing.

Why: a follower's fetch session holds every partition it follows from this leader (3,000 or
more at cluster scale), and each incremental fetch would read all of them, although the answer
names only those with news (KIP-227). Kafka's leader walks the whole session per fetch, in Java;
in Python, at 10,000 partitions on three brokers, that walk was the bound (43% of a broker's
samples). So a fetch costs in proportion to what changed: a session partition found quiet is
set aside, watched on its replica, and no fetch looks at it again until the replica moves
(`ReadWaiters.watch`: appends, watermarks, log start, role, ISR, offline) or the fetcher names or
forgets it.

A session partition is quiet when none of what a read would find differs from what it last
told the fetcher, and the fetcher changed nothing:
- the fetch does not name it (its position, limits and epochs are as the session holds them),
  and it resolves to the replica it was last read from;
- it was last answered without error, diverging epoch or preferred read replica, from the same
  replica object (not a deleted or reassigned one) still online, leading, in the same leader
  epoch (within one epoch a leader's earlier epochs do not move, so a position that did not
  diverge then does not now);
- its high watermark and log start offset are the ones last answered;
- the fetch position is where a read would find nothing: at the log end for a follower (which
  must then be in the ISR: a caught-up follower outside it is let back in by its read), at the
  high watermark (read_uncommitted) or last stable offset (read_committed) for a consumer.

What a read of a quiet partition would have decided still holds while it is set aside: the
topic and partition exist (deleting or moving a replica takes it offline, which stirs it), and
the fetch is authorized the same way (the set is made anew when the ACLs, the principal, the
isolation or the fetching replica differ: `QuietTerms`). A consumer with a rack is read in full:
a read may send it to another replica.

A quiet follower counts as caught up at each of its session's fetches, as its read would have
recorded: its progress points at the session's last fetch time (`ReplicaSet.hold_quiet`)
instead of being written per fetch.

A long poll waits on the quiet partitions too; when one of them moves, it is read
(`SessionQuiet.woken`). The split runs after the fetch's authorization and look-ups, so those
answer exactly as without it."""

from __future__ import annotations

from typing import Iterable, NamedTuple

import trio

from wirekafka.broker.replica.fetch_sessions import Key, SessionPartition
from wirekafka.broker.replica.partition import Isolation, Partition
from wirekafka.broker.replica.replica_manager import FetchTarget

#: SessionPartition.settled_epoch when its last answer does not allow skipping it.
UNSETTLED = -2


def settle(part: SessionPartition, replica: Partition | None, clean: bool) -> None:
    """Remember how `part` was just answered: from which replica, and whether cleanly (no error,
    diverging epoch nor preferred read replica) in that replica's leader epoch."""
    part.replica = replica
    part.settled_epoch = replica.leader_epoch if clean and replica is not None else UNSETTLED
    part.seen_changes = -1  # an answer may have left data behind (max_bytes): look again


Pair = tuple[SessionPartition, "Partition | None"]  # a session partition and its replica here


def target(part: SessionPartition, replica: Partition | None) -> FetchTarget:
    """The read a session partition asks of its replica (None: no replica here)."""
    return FetchTarget(replica, part.fetch_offset, part.max_bytes, part.current_leader_epoch, part.log_start_offset,
                       part.last_fetched_epoch, part)


class QuietTerms(NamedTuple):
    """What a fetch is decided under: a session's quiet partitions hold only while these do."""

    isolation: Isolation  # LOG_END for a follower
    replica_id: int
    acl_generation: int
    principal: str
    host: str


class SessionQuiet:
    """A fetch session's partitions, told apart: the quiet ones, each watched on its replica,
    and the others (`active`), which every fetch looks at. Lives as long as the session or its
    terms; on the event loop only."""

    def __init__(self, terms: QuietTerms, partitions: Iterable[SessionPartition]) -> None:
        self.terms = terms
        self.isolation = terms.isolation
        self.replica_id = terms.replica_id
        self.fetched_ms = 0  # the session's last fetch: when its quiet followers were last caught up
        self.active: dict[SessionPartition, None] = dict.fromkeys(partitions)
        self.quiet: dict[SessionPartition, Partition] = {}
        self._stirred: list[tuple[SessionPartition, Partition]] = []  # moved while a fetch may wait on them
        self._waiters: set[trio.Event] = set()

    # ---- the session's changes (fetch_sessions.SessionWatch) --------------------------------------
    def candidates(self) -> list[SessionPartition]:
        return sorted(self.active, key=_seq)

    def activate(self, part: SessionPartition) -> None:
        if part in self.quiet:
            self._release(part)
        self.active[part] = None

    def drop(self, part: SessionPartition) -> None:
        if part in self.quiet:
            self._release(part)
        self.active.pop(part, None)

    def close(self) -> None:
        for part in list(self.quiet):
            self._release(part)
        self.active.clear()
        for event in self._waiters:
            event.set()

    # ---- one fetch -----------------------------------------------------------------------------
    def split(self, readable: list[Pair], named: set[Key], uses_topic_ids: bool, now_ms: int) -> list[Pair]:
        """Set aside the quiet ones among the partitions this fetch looks at (of those it did not
        name); return the others, in order."""
        self.fetched_ms = now_ms
        self._stirred = []  # this fetch looks at every active partition, those among them too
        active = []
        for pair in readable:
            part, replica = pair
            if replica is not None and (not named or part.key(uses_topic_ids) not in named) \
                    and self._quiet(part, replica):
                self._hold(part, replica)
            else:
                active.append(pair)
        return active

    def waits(self) -> bool:
        """Whether a long poll has quiet partitions to wait on."""
        return bool(self.quiet)

    def add_waiter(self, event: trio.Event) -> None:
        self._waiters.add(event)

    def remove_waiter(self, event: trio.Event) -> None:
        self._waiters.discard(event)

    def woken(self) -> list[FetchTarget]:
        """After a wait: the partitions that moved and now have something to read, as targets
        (the replica manager's IdleTargets); those that moved to no effect are set aside again."""
        stirred, self._stirred = self._stirred, []
        moved = []
        seen = set()
        for part, replica in stirred:
            if part not in self.active or part in seen:
                continue  # named, dropped or set aside again meanwhile, or moved twice
            seen.add(part)
            if self._quiet(part, replica):
                self._hold(part, replica)
            else:
                moved.append(target(part, replica))
        return moved

    # ---- replicas' news (partition.PartitionWatch) ------------------------------------------------
    def stirred(self, part: SessionPartition, replica: Partition) -> None:
        """part's replica moved: look at it again (its watch is already gone)."""
        if self.quiet.pop(part, None) is None:
            return
        if self.isolation is Isolation.LOG_END:
            replica.replica_set.release_quiet(self.replica_id, self)
        self.active[part] = None
        self._stirred.append((part, replica))
        for event in self._waiters:
            event.set()

    def _hold(self, part: SessionPartition, replica: Partition) -> None:
        del self.active[part]
        self.quiet[part] = replica
        replica.waiters.watch(part, self)
        if self.isolation is Isolation.LOG_END:
            replica.replica_set.hold_quiet(self.replica_id, part.fetch_offset, self)

    def _release(self, part: SessionPartition) -> None:
        replica = self.quiet.pop(part)
        replica.waiters.unwatch(part)
        if self.isolation is Isolation.LOG_END:
            replica.replica_set.release_quiet(self.replica_id, self)

    def _quiet(self, part: SessionPartition, p: Partition) -> bool:
        if part.replica is not p or part.settled_epoch == UNSETTLED:
            return False
        if p.changes != part.seen_changes:  # the replica moved since it was last found quiet
            if not self._nothing_to_read(part, p):
                return False
            part.seen_changes = p.changes
        if part.local_log_start_offset != p.log_start_offset:
            return False
        return self.isolation is not Isolation.LOG_END or self.replica_id in p.replica_set.isr

    def _nothing_to_read(self, part: SessionPartition, p: Partition) -> bool:
        """The full test: whether a read would find nothing new (what part.seen_changes caches)."""
        if part.settled_epoch != p.leader_epoch or not p.online or not p.is_leader:
            return False
        if part.current_leader_epoch not in (-1, p.leader_epoch):
            return False
        if part.high_watermark != p.high_watermark or part.local_log_start_offset != p.log_start_offset:
            return False
        offset = part.fetch_offset
        if self.isolation is Isolation.LOG_END:
            return offset == p.log_end_offset
        limit = p.last_stable_offset if self.isolation is Isolation.READ_COMMITTED else p.high_watermark
        return limit <= offset <= p.log_end_offset


def _seq(part: SessionPartition) -> int:
    return part.seq
