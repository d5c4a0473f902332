"""Incremental fetch sessions (KIP-227), kept as Kafka's FetchManager keeps them.

Why: a consumer or follower reading many partitions would otherwise name all of them in every
Fetch and get all of them back, news or not. In a session the broker remembers the partitions
and each one's position, the fetcher names only what changed, and the broker answers only the
partitions with news.

Kafka's rules:
- A request's session id and epoch (versions before 7 have neither: a full fetch, no session):
  epoch 0 is a full fetch asking for a new session, epoch -1 a full fetch without one; either
  closes the session it names. Any other epoch is an incremental fetch of that session and must
  be the session's next epoch (after 2^31-1 comes 1).
- A full fetch's answer names the session created for it, or 0 when the cache had no room; its
  partitions are the answer's, in the answer's order (read partitions first, then errors).
- An incremental fetch adds or updates the partitions it names, forgets forgotten_topics_data,
  reads every partition of the session at the position the fetcher last gave, and answers only
  a partition with records, a high watermark or log start offset other than it last answered, an
  error, or a preferred read replica. A partition that returned records moves to the end of the
  session, so that the others get their turn at max_bytes. A session left empty is closed and
  the fetch answered without one.
- Errors, for the whole request: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH (also
  to a duplicate answered after the session moved on), FETCH_SESSION_TOPIC_ID_ERROR (a session
  made with topic ids, v13+, used by an older version, or the reverse).
- The cache: max.incremental.fetch.session.cache.slots split over 8 shards (integer division),
  new sessions given to the shards in turn, each shard owning a range of session ids. A full
  shard evicts a session unused for 2 minutes, else its least valuable evictable session if the
  new one is worth at least as much: followers' sessions (privileged) before consumers', then
  by partition count. A session younger than 2 minutes can be evicted only for a privileged one,
  and only if it is a consumer's.

Pure state on the event loop: no I/O, time is passed in."""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Protocol, Sequence, TypeVar

from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
CACHE_SHARDS = 8
SESSION_ID_RANGE = INT_MAX // CACHE_SHARDS
EVICTION_MS = 120_000  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS

Key = Hashable  # (topic id, partition) in a session using topic ids, else (topic name, partition)


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT_MAX else epoch + 1


@dataclass(eq=False, slots=True)
class SessionPartition:
    """A partition of a fetch: what the fetcher asked (its position, limit and epochs) and, once
    in a session, what it was last answered (high watermark, log start offset)."""

    topic: str | None  # None: a topic id this broker does not know
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # the fetcher's own log start (a follower's); -1 from consumers
    last_fetched_epoch: int = -1
    high_watermark: int = -1
    local_log_start_offset: int = -1
    # the replica it was last read from, and the leader epoch in which that read was answered
    # cleanly (-2 if not): what tells a quiet partition (quiet_partitions.py)
    replica: Any = None
    settled_epoch: int = -2
    seen_changes: int = -1  # the replica's change count when it was last found quiet (-1: since answered)
    seq: int = 0  # its place in the session's order (FetchSession.to_end moves it last)

    def key(self, uses_topic_ids: bool) -> Key:
        return (self.topic_id, self.partition) if uses_topic_ids else (self.topic, self.partition)

    def take_request(self, asked: SessionPartition) -> None:
        self.fetch_offset, self.max_bytes = asked.fetch_offset, asked.max_bytes
        self.current_leader_epoch, self.log_start_offset = asked.current_leader_epoch, asked.log_start_offset
        self.last_fetched_epoch = asked.last_fetched_epoch

    def has_news(self, answer: Answer, update: bool) -> bool:
        """Whether an incremental answer must include this partition (Kafka's
        maybeUpdateResponseData); with update, remember what it is told. An error also resets
        the remembered high watermark, so the partition is answered again once it clears."""
        news = answer.records_size > 0 or answer.preferred_read_replica >= 0 or answer.diverging_epoch is not None
        if self.high_watermark != answer.high_watermark:
            news = True
            if update:
                self.high_watermark = answer.high_watermark
        if self.local_log_start_offset != answer.log_start_offset:
            news = True
            if update:
                self.local_log_start_offset = answer.log_start_offset
        if answer.error != ErrorCode.NONE:
            news = True
            if update:
                self.high_watermark = -1
        return news


@dataclass(slots=True)
class Answer:
    """One partition's answer, as far as the session needs to know it (the Fetch handler adds
    what it shapes the response from)."""

    part: SessionPartition
    error: int
    high_watermark: int = -1
    log_start_offset: int = -1
    records_size: int = 0
    preferred_read_replica: int = -1
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset): the fetcher's log diverged


A = TypeVar("A", bound=Answer)  # what a context answers with: the Fetch handler's own answers


class SessionWatch(Protocol):
    """What the Fetch handler keeps of a session between its fetches: which partitions a fetch
    must look at (quiet_partitions.py). The session tells it what its fetcher changed."""

    def candidates(self) -> list[SessionPartition]:
        """The partitions the next fetch must look at, in the session's order."""
        ...

    def activate(self, part: SessionPartition) -> None:
        """part joined the session or was named by a fetch: look at it."""
        ...

    def drop(self, part: SessionPartition) -> None:
        """part left the session."""
        ...

    def close(self) -> None:
        """The session is gone or the watch replaced: let go of every replica watched."""
        ...


@dataclass(eq=False)
class FetchSession:
    id: int
    privileged: bool  # a follower's
    partitions: dict[Key, SessionPartition]  # in the session's order
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    # the partition count and eviction classes as of the last touch (Kafka's keys are taken then)
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False
    watch: SessionWatch | None = None
    _seq: int = 0

    def __post_init__(self) -> None:
        for part in self.partitions.values():
            part.seq = self._next_seq()

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def update(self, wanted: dict[Key, SessionPartition], forgotten: Sequence[Key]) -> None:
        """The fetcher's changes: new partitions join at the end, known ones take the new
        position and limits, forgotten ones leave."""
        for key, asked in wanted.items():
            known = self.partitions.get(key)
            if known is None:
                self.partitions[key] = known = asked
                asked.seq = self._next_seq()
            else:
                known.take_request(asked)
            if self.watch is not None:
                self.watch.activate(known)
        for key in forgotten:
            gone = self.partitions.pop(key, None)
            if gone is not None and self.watch is not None:
                self.watch.drop(gone)

    def to_end(self, key: Key) -> None:
        """Move a partition last in the session's order."""
        part = self.partitions.pop(key, None)
        if part is not None:  # None: forgotten by a later request while this one waited
            self.partitions[key] = part
            part.seq = self._next_seq()

    def set_watch(self, watch: SessionWatch | None) -> None:
        if self.watch is not None:
            self.watch.close()
        self.watch = watch


class CacheShard:
    """One shard of the cache: at most max_entries sessions, ids in its own range."""

    def __init__(self, max_entries: int, number: int, rng: random.Random) -> None:
        self.max_entries = max_entries
        self.number = number
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng

    def _new_session_id(self) -> int:
        low, high = max(1, self.number * SESSION_ID_RANGE), (self.number + 1) * SESSION_ID_RANGE
        while True:
            sid = self._rng.randrange(low, high)
            if sid not in self.sessions:
                return sid

    def maybe_create(self, now: int, privileged: bool, partitions: dict[Key, SessionPartition],
                     uses_topic_ids: bool) -> int:
        """A new session's id, or 0 when the shard is full and nothing may be evicted for it."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, len(partitions), now):
            log.debug("no fetch session created (privileged=%s, %d partitions)", privileged, len(partitions))
            return INVALID_SESSION_ID
        session = FetchSession(self._new_session_id(), privileged, partitions, uses_topic_ids, now, now,
                               next_epoch(INITIAL_EPOCH))
        self.sessions[session.id] = session
        self.touch(session, now)
        return session.id

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stalest.last_used_ms > EVICTION_MS:
            self.remove(stalest)
            return True
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        least = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (least.privileged, least.cached_size, least.id):
            return False
        log.debug("evicting fetch session %d for a new one of %d partitions", least.id, size)
        self.remove(least)
        return True

    def remove(self, session: FetchSession) -> None:
        self.sessions.pop(session.id, None)
        session.set_watch(None)

    def touch(self, session: FetchSession, now: int) -> None:
        session.last_used_ms = now
        session.cached_size = len(session.partitions)
        old = now - session.creation_ms > EVICTION_MS
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old


class FetchContext:
    """How one Fetch request reads and answers. This base is a full fetch without a session."""

    def __init__(self, wanted: dict[Key, SessionPartition]) -> None:
        self.wanted = wanted

    def partitions(self, name_of: Callable[[uuid.UUID], str | None]) -> list[SessionPartition]:
        """The partitions to answer, in order."""
        return list(self.wanted.values())

    def answer(self, answers: list[A], commit: bool) -> tuple[ErrorCode, int, list[A]]:
        """The answer's error, session id and partitions; with commit, the session takes them
        (without, nothing changes: a response's size is known before it is charged to a quota)."""
        return ErrorCode.NONE, INVALID_SESSION_ID, answers

    def throttled(self) -> tuple[ErrorCode, int]:
        """The error and session id of an answer throttled by a quota (no partitions)."""
        return ErrorCode.NONE, INVALID_SESSION_ID


class SessionErrorContext(FetchContext):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__({})
        self.error = error

    def answer(self, answers: list[A], commit: bool) -> tuple[ErrorCode, int, list[A]]:
        return self.error, INVALID_SESSION_ID, []


class FullFetchContext(FetchContext):
    """A full fetch asking for a session: created when the answer is sent."""

    def __init__(self, cache: FetchSessionCache, wanted: dict[Key, SessionPartition], uses_topic_ids: bool,
                 privileged: bool) -> None:
        super().__init__(wanted)
        self.cache, self.uses_topic_ids, self.privileged = cache, uses_topic_ids, privileged

    def answer(self, answers: list[A], commit: bool) -> tuple[ErrorCode, int, list[A]]:
        if not commit:
            return ErrorCode.NONE, INVALID_SESSION_ID, answers
        partitions: dict[Key, SessionPartition] = {}
        for a in answers:
            a.part.high_watermark, a.part.local_log_start_offset = a.high_watermark, a.log_start_offset
            partitions[a.part.key(self.uses_topic_ids)] = a.part
        sid = self.cache.next_shard().maybe_create(self.cache.now_ms(), self.privileged, partitions,
                                                   self.uses_topic_ids)
        return ErrorCode.NONE, sid, answers


class IncrementalFetchContext(FetchContext):
    def __init__(self, session: FetchSession, request_epoch: int, named: set[Key]) -> None:
        super().__init__({})
        self.session, self.request_epoch = session, request_epoch
        self.named = named  # the partitions this request named (added or updated)

    def partitions(self, name_of: Callable[[uuid.UUID], str | None]) -> list[SessionPartition]:
        """The session's partitions, or, when the handler watches it, those it must look at."""
        watch = self.session.watch
        parts = list(self.session.partitions.values()) if watch is None else watch.candidates()
        if self.session.uses_topic_ids:
            for p in parts:
                if p.topic is None:  # a topic id unknown when it joined may be known now
                    p.topic = name_of(p.topic_id)
        return parts

    def _current(self) -> bool:
        """False when another request of this session was answered meanwhile (a duplicate)."""
        return self.session.epoch == next_epoch(self.request_epoch)

    def answer(self, answers: list[A], commit: bool) -> tuple[ErrorCode, int, list[A]]:
        if not self._current():
            log.info("fetch session %d expected epoch %d, got %d: a duplicate request?", self.session.id,
                     next_epoch(self.request_epoch), self.session.epoch)
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, self.session.id, []
        selected = [a for a in answers if a.part.has_news(a, commit)]
        if commit:
            for a in selected:
                if a.records_size > 0:  # to the end, so that the others get their turn
                    self.session.to_end(a.part.key(self.session.uses_topic_ids))
        return ErrorCode.NONE, self.session.id, selected

    def throttled(self) -> tuple[ErrorCode, int]:
        if not self._current():
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, self.session.id
        return ErrorCode.NONE, self.session.id


class NoSuchShard(Exception):
    """A session id outside every shard's range: Kafka fails the whole request (its shard lookup
    throws), answering UNKNOWN_SERVER_ERROR."""


@dataclass
class FetchSessionCache:
    slots: int  # max.incremental.fetch.session.cache.slots
    now_ms: Callable[[], int]
    rng: random.Random = field(default_factory=random.Random)
    shards: list[CacheShard] = field(init=False)
    _turn: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.shards = [CacheShard(self.slots // CACHE_SHARDS, n, self.rng) for n in range(CACHE_SHARDS)]

    def shard_of(self, session_id: int) -> CacheShard:
        index = abs(session_id) // SESSION_ID_RANGE * (-1 if session_id < 0 else 1)  # Java's division
        if not 0 <= index < len(self.shards):
            raise NoSuchShard(session_id)
        return self.shards[index]

    def next_shard(self) -> CacheShard:
        shard = self.shards[self._turn % len(self.shards)]
        self._turn += 1
        return shard

    def session_count(self) -> int:
        return sum(len(s.sessions) for s in self.shards)

    def new_context(self, uses_topic_ids: bool, session_id: int, epoch: int, privileged: bool,
                    wanted: dict[Key, SessionPartition], forgotten: Sequence[Key]) -> FetchContext:
        """The context of a request with this session id and epoch (Kafka's FetchManager.newContext)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                shard = self.shard_of(session_id)
                closed = shard.sessions.get(session_id)
                if closed is not None:
                    shard.remove(closed)
            if epoch == FINAL_EPOCH:
                return FetchContext(wanted)
            return FullFetchContext(self, wanted, uses_topic_ids, privileged)
        shard = self.shard_of(session_id)
        session = shard.sessions.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(wanted, forgotten)
        if not session.partitions:
            shard.remove(session)
            return FetchContext(wanted)
        shard.touch(session, self.now_ms())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session, epoch, set(wanted))
