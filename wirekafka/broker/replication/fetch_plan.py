"""The partitions a follower's next fetch asks one leader for, kept up to date by change.

Why: a follower on a cluster of 10,000 partitions fetches about 3,300 of them from each leader,
many times a second. Rebuilding the request's partitions for every fetch (is it still followed,
online, done truncating, not held back; what is its position) walked all of them each time,
although an incremental fetch sends only those whose position changed (KIP-227). Here a followed
partition is looked at again only when it may have changed: its replica moved (an append, a
truncation, a new high watermark or role, offline: the replica's ReadWaiters tell the plan), the
fetcher changed it (added, removed, truncated, out of range), or the follower quota is throttling
(then whether a partition is held back depends on the quota's rate, so every fetch decides anew,
as Kafka's shouldFollowerThrottle is asked per fetch).

A partition whose fetch answered an error (a leader epoch the two brokers do not agree on yet)
leaves the request until replica.fetch.backoff.ms has passed, as Kafka's fetcher delays it
(delayPartitions), while the others go on being fetched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replication.fetch_session_handler import Key, PartitionFetch

NEVER = 2**63  # Followed.wanted_since of a partition no request asks for


@dataclass(eq=False)
class Followed:
    partition: Partition
    leader_epoch: int  # the epoch it was handed to this fetcher in: a new one truncates again
    needs_truncation: bool = True
    lag: int | None = None  # the leader's high watermark past our log end at the last fetch
    # what the last request asked of it, and the partition's change count then (Partition.changes):
    # asked again as is while the count stays, without reading the partition's offsets anew
    asked: PartitionFetch | None = None
    asked_at: int = -1
    wanted_since: int = NEVER  # the first fetch round that asked for it, since it last left the plan
    delayed_until: float = 0.0  # trio time before which no fetch asks for it (an error's backoff)

    @property
    def key(self) -> Key:
        return (self.partition.topic, self.partition.index)

    @property
    def in_sync(self) -> bool:
        """Kafka's PartitionFetchState.isReplicaInSync: caught up to the leader's high watermark."""
        return self.lag is not None and self.lag <= 0


class FetchPlan:
    """What the next fetch asks for (`wanted`, in the session's order) and which of those entries
    changed since the last request (`changed`, for the session handler's diff)."""

    def __init__(self) -> None:
        self.wanted: dict[Key, PartitionFetch] = {}
        self.changed: dict[Key, None] = {}  # an ordered set
        self.round = 0  # counts fetches: an answer is taken only for partitions its request asked
        self._dirty: dict[Key, Followed] = {}
        self._delayed: dict[Key, Followed] = {}  # backing off: looked at again once the delay ends
        self._throttled_last = False

    def mark(self, f: Followed) -> None:
        """f may have changed: look at it before the next fetch."""
        self._dirty[f.key] = f

    def stirred(self, part: Followed, replica: Partition) -> None:
        """Its replica moved (partition.PartitionWatch)."""
        self._dirty[part.key] = part

    def delay(self, f: Followed, until: float) -> None:
        """Leave f out of the fetches until trio time `until` (its answer was an error)."""
        f.delayed_until = until
        self._dirty[f.key] = f

    def forget(self, f: Followed) -> None:
        """f is no longer followed here (removed or replaced)."""
        f.partition.waiters.unwatch(f)
        self._dirty[f.key] = f

    def refresh(self, followed: dict[Key, Followed], max_bytes: int, throttling: bool,
                held_back: Callable[[Followed], bool], now: float) -> None:
        """Start a fetch round at trio time now: bring the entries of what changed up to date,
        and of those whose delay has ended. While throttling (and in the round after), every
        followed partition is looked at."""
        self.round += 1
        if throttling or self._throttled_last:
            self._dirty.update(followed)
        self._throttled_last = throttling
        for key, f in list(self._delayed.items()):
            if f.delayed_until <= now:
                del self._delayed[key]
                self._dirty.setdefault(key, f)
        dirty, self._dirty = self._dirty, {}
        for key, f in dirty.items():
            current = followed.get(key)
            if current is None:
                self._leave(key, f)
                continue
            f = current
            p = f.partition
            if f.delayed_until > now:
                self._delayed[key] = f
                self._leave(key, f)
            elif f.needs_truncation or not p.online or p.is_leader or (throttling and held_back(f)):
                self._leave(key, f)
            else:
                if f.asked is None or f.asked_at != p.changes:
                    f.asked, f.asked_at = PartitionFetch(p.log_end_offset, p.log_start_offset, p.leader_epoch,
                                                         max_bytes, p.epochs.latest_epoch), p.changes
                if f.wanted_since == NEVER:  # (a replaced partition's new Followed too)
                    f.wanted_since = self.round
                if self.wanted.get(key) is not f.asked:
                    self.wanted[key] = f.asked
                    self.changed[key] = None
            p.waiters.watch(f, self)  # told when it next moves

    def take_changed(self) -> dict[Key, None]:
        """The keys changed since the last request, handed to it (and forgotten here)."""
        changed, self.changed = self.changed, {}
        return changed

    def asked_for(self, f: Followed, round_: int) -> bool:
        """Whether the request of round_ asked for f (an answer for it is f's)."""
        return f.wanted_since <= round_

    def _leave(self, key: Key, f: Followed) -> None:
        f.wanted_since = NEVER
        if self.wanted.pop(key, None) is not None:
            self.changed[key] = None
