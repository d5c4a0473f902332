"""Quiet partitions of an incremental fetch: those a session fetch would read for nothing.

Why: a follower's fetch session holds every partition it follows from this leader (a thousand
or more at cluster scale), and each incremental fetch would read all of them, although the
answer names only those with news (KIP-227). Reading one costs tens of microseconds of
Python; a cluster failing over, where every produce wakes every fetch, spent most of its CPU
there. Kafka's leader also walks the whole session per fetch, but in Java; here a partition
that cannot have news is told apart by a few comparisons and skipped, so a fetch costs in
proportion to the partitions that changed.

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
A quiet follower still counts as caught up now, as its read would have recorded.

The test is itself cheap: a partition counts its changes (`Partition.changes`: appends,
watermarks, log start, roles), and a session partition found quiet remembers the count, so
while it does not move only the log start, the ISR membership and the request's own fields are
looked at. An answer forgets the count (it may have left data behind at max_bytes).

The long poll waits on the quiet partitions too; when one of them moves, it is read
(`QuietPartitions.woken`). The split runs after the fetch's authorization and look-ups, so
those answer exactly as without it."""

from __future__ import annotations

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


class QuietPartitions:
    """The quiet partitions of one fetch, each with its replica here."""

    def __init__(self, isolation: Isolation, replica_id: int, now_ms: int) -> None:
        self.isolation = isolation
        self.replica_id = replica_id
        self.now_ms = now_ms
        self.pairs: list[Pair] = []

    def split(self, readable: list[Pair], named: set[Key], uses_topic_ids: bool) -> list[Pair]:
        """Keep the quiet ones (of those the fetch did not name); return the others, in order."""
        active = []
        for pair in readable:
            part, replica = pair
            if replica is not None and (not named or part.key(uses_topic_ids) not in named) \
                    and self._quiet(part, replica):
                self.pairs.append(pair)
            else:
                active.append(pair)
        return active

    def woken(self) -> list[FetchTarget]:
        """After a wait: the partitions no longer quiet, taken out of the set, as targets to read
        (the replica manager's IdleTargets). Only those whose replica moved are looked at again."""
        moved = []
        for part, p in self.pairs:
            if p is None or p.changes == part.seen_changes:
                continue
            if self._nothing_to_read(part, p):
                part.seen_changes = p.changes
            else:
                moved.append((part, p))
        if moved:
            gone = {id(part) for part, _ in moved}
            self.pairs = [pair for pair in self.pairs if id(pair[0]) not in gone]
        return [target(part, replica) for part, replica in moved]

    def replicas(self) -> list[Partition]:
        return [replica for _, replica in self.pairs if replica is not None]

    def _quiet(self, part: SessionPartition, p: Partition | None) -> bool:
        if p is None or part.replica is not p or part.settled_epoch == UNSETTLED:
            return False
        if p.changes != part.seen_changes:  # the replica moved since it was last found quiet
            if not self._nothing_to_read(part, p):
                return False
            part.seen_changes = p.changes
        if part.local_log_start_offset != p.log_start_offset:
            return False
        if self.isolation is Isolation.LOG_END:
            rs = p.replica_set
            if self.replica_id not in rs.isr:
                return False
            rs.note_caught_up(self.replica_id, part.fetch_offset, self.now_ms)
        return True

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
