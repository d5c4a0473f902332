"""The fetch session cache (KIP-227): contexts per session id and epoch, what an incremental
answer keeps, the order of a session's partitions, shards, capacity and eviction. The
conformance scenarios (conformance/test_fetch_sessions.py) compare the wire answers with Kafka's;
these cover what one broker's configuration and clock decide."""

from __future__ import annotations

import functools
import random
import uuid

import pytest

from wirekafka.broker.replica.fetch_sessions import (
    Answer, CACHE_SHARDS, EVICTION_MS, FINAL_EPOCH, INT_MAX, SESSION_ID_RANGE, FetchContext, FetchSessionCache,
    FullFetchContext, IncrementalFetchContext, NoSuchShard, SessionErrorContext, SessionPartition, next_epoch)
from wirekafka.protocol.errors import ErrorCode

TOPIC_ID = uuid.UUID(int=7)


# an answer with nothing to report but watermarks at 0
Ans = functools.partial(Answer, error=0, high_watermark=0, log_start_offset=0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _wanted(*partitions: int, offset: int = 0, by_id: bool = False) -> dict:
    parts = [SessionPartition("t", TOPIC_ID if by_id else uuid.UUID(int=0), p, offset, 1000) for p in partitions]
    return {p.key(by_id): p for p in parts}


def _cache(slots: int = 1000, clock: Clock | None = None) -> FetchSessionCache:
    return FetchSessionCache(slots, clock or Clock(), random.Random(1))


def _open(cache: FetchSessionCache, *partitions: int, privileged: bool = False, by_id: bool = False) -> int:
    """A full fetch asking for a session, answered with every partition at high watermark 0."""
    ctx = cache.new_context(by_id, 0, 0, privileged, _wanted(*partitions, by_id=by_id), [])
    assert isinstance(ctx, FullFetchContext)
    _, sid, _ = ctx.answer([Ans(p) for p in ctx.partitions(lambda _: None)], commit=True)
    return sid


def test_next_epoch_wraps_to_one_and_final_stays_final() -> None:
    assert [next_epoch(e) for e in (0, 1, INT_MAX, -1, -5)] == [1, 2, 1, FINAL_EPOCH, FINAL_EPOCH]


def test_contexts_by_session_id_and_epoch() -> None:
    cache = _cache()
    assert type(cache.new_context(False, 0, FINAL_EPOCH, False, _wanted(0), [])) is FetchContext
    sid = _open(cache, 0, 1)
    assert sid != 0 and cache.session_count() == 1
    assert isinstance(cache.new_context(False, sid, 1, False, {}, []), IncrementalFetchContext)
    for epoch, error in ((1, ErrorCode.INVALID_FETCH_SESSION_EPOCH), (3, ErrorCode.INVALID_FETCH_SESSION_EPOCH)):
        ctx = cache.new_context(False, sid, epoch, False, {}, [])
        assert isinstance(ctx, SessionErrorContext) and ctx.answer([], True) == (error, 0, [])
    mixed = cache.new_context(True, sid, 2, False, {}, [])
    assert mixed.answer([], True)[0] == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # a full fetch naming the session closes it, epoch -1 without opening another
    assert type(cache.new_context(False, sid, FINAL_EPOCH, False, _wanted(0), [])) is FetchContext
    assert cache.session_count() == 0
    assert cache.new_context(False, sid, 2, False, {}, []).answer([], True)[0] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_incremental_answers_keep_only_news_and_records_move_to_the_end() -> None:
    cache = _cache()
    sid = _open(cache, 0, 1, 2)
    ctx = cache.new_context(False, sid, 1, False, {}, [])
    parts = {p.partition: p for p in ctx.partitions(lambda _: None)}
    answers = [Ans(parts[0], records_size=10, high_watermark=5), Ans(parts[1]),
               Ans(parts[2], error=ErrorCode.NOT_LEADER_OR_FOLLOWER, high_watermark=-1, log_start_offset=-1)]
    preview = ctx.answer(answers, commit=False)
    assert [a.part.partition for a in preview[2]] == [0, 2]
    assert parts[0].high_watermark == 0  # a preview remembers nothing
    error, got_sid, kept = ctx.answer(answers, commit=True)
    assert (error, got_sid, [a.part.partition for a in kept]) == (ErrorCode.NONE, sid, [0, 2])
    assert parts[0].high_watermark == 5 and parts[2].high_watermark == -1
    nxt = cache.new_context(False, sid, 2, False, {}, [])
    assert [p.partition for p in nxt.partitions(lambda _: None)] == [1, 2, 0]
    # the same answers again: partition 0's watermark is known now, partition 2's error is news again
    again = [Ans(parts[0], high_watermark=5), Ans(parts[1]), Ans(parts[2], error=6, high_watermark=-1,
                                                                    log_start_offset=-1)]
    assert [a.part.partition for a in nxt.answer(again, commit=True)[2]] == [2]
    # the error cleared: its real watermark differs from the -1 remembered, so it is answered once
    last = cache.new_context(False, sid, 3, False, {}, [])
    cleared = [Ans(parts[1]), Ans(parts[2]), Ans(parts[0], high_watermark=5)]
    assert [a.part.partition for a in last.answer(cleared, commit=True)[2]] == [2]


def test_update_adds_changes_and_forgets_and_an_emptied_session_closes() -> None:
    cache = _cache()
    sid = _open(cache, 0, 1)
    ctx = cache.new_context(False, sid, 1, False, {**_wanted(1, offset=9), **_wanted(2)}, [("t", 0)])
    parts = ctx.partitions(lambda _: None)
    assert [(p.partition, p.fetch_offset) for p in parts] == [(1, 9), (2, 0)]
    emptied = cache.new_context(False, sid, 2, False, {}, [("t", 1), ("t", 2)])
    assert type(emptied) is FetchContext and cache.session_count() == 0


def test_a_duplicate_answered_after_the_session_moved_on() -> None:
    cache = _cache()
    sid = _open(cache, 0)
    first = cache.new_context(False, sid, 1, False, {}, [])
    second = cache.new_context(False, sid, 2, False, {}, [])  # sent before the first was answered
    assert first.answer([], True) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, sid, [])
    assert first.throttled() == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, sid)
    assert second.answer([], True)[:2] == (ErrorCode.NONE, sid)


def test_unknown_topic_ids_are_resolved_when_the_topic_appears() -> None:
    cache = _cache()
    part = SessionPartition(None, TOPIC_ID, 0, 0, 100)
    ctx = cache.new_context(True, 0, 0, False, {part.key(True): part}, [])
    _, sid, _ = ctx.answer([Ans(part, error=ErrorCode.UNKNOWN_TOPIC_ID)], commit=True)
    nxt = cache.new_context(True, sid, 1, False, {}, [])
    assert [p.topic for p in nxt.partitions(lambda tid: "born" if tid == TOPIC_ID else None)] == ["born"]


def test_shards_own_id_ranges_and_share_the_slots() -> None:
    cache = _cache(slots=16)  # 2 per shard
    ids = [_open(cache, 0) for _ in range(CACHE_SHARDS * 2)]
    assert [cache.shard_of(sid).number for sid in ids] == list(range(CACHE_SHARDS)) * 2
    assert all(max(1, n * SESSION_ID_RANGE) <= sid < (n + 1) * SESSION_ID_RANGE
               for sid, n in zip(ids, list(range(CACHE_SHARDS)) * 2))
    assert _open(cache, 0) == 0  # every shard full, no session old enough to evict
    assert cache.shard_of(-5).number == 0  # Java's division truncates toward zero
    for bad in (INT_MAX, -SESSION_ID_RANGE):
        with pytest.raises(NoSuchShard):
            cache.shard_of(bad)
    assert _open(_cache(slots=7), 0) == 0  # 7 // 8 = no slot in any shard


def test_eviction_stale_first_then_by_value() -> None:
    clock = Clock()
    cache = _cache(slots=CACHE_SHARDS, clock=clock)  # one session per shard; shards take turns
    small = [_open(cache, 0) for _ in range(CACHE_SHARDS)]
    # young consumer sessions: another consumer cannot evict one (shard 0's turn)...
    assert _open(cache, 0, 1, 2) == 0 and small[0] in cache.shards[0].sessions
    # ...a follower can (shard 1's turn)
    follower = _open(cache, 0, privileged=True)
    assert follower in cache.shards[1].sessions and small[1] not in cache.shards[1].sessions
    # unused for longer than the eviction time: evicted for anyone (shard 2)
    clock.now += EVICTION_MS + 1
    assert _open(cache, 0) != 0 and small[2] not in cache.shards[2].sessions
    for shard in cache.shards:
        for session in list(shard.sessions.values()):
            shard.touch(session, clock.now)  # used again: old, but not stale
    # old sessions go to a consumer's session with more partitions (shard 3), never to one as small (shard 4)
    assert _open(cache, 0, 1) != 0 and small[3] not in cache.shards[3].sessions
    assert _open(cache, 0) == 0 and small[4] in cache.shards[4].sessions
    # a follower's session, old, goes to another follower's session only (shard 1's turn, turn 17)
    for _ in range(4):  # turns 13-16: shards 5, 6, 7, 0
        _open(cache, 0, 1, 2, 3)
    assert _open(cache, 0, 1, 2, 3) == 0 and follower in cache.shards[1].sessions
    assert cache.shards[1].maybe_create(clock.now, True, _wanted(0), False) == 0  # as small: no
    assert cache.shards[1].maybe_create(clock.now, True, _wanted(0, 1), False) != 0
    assert follower not in cache.shards[1].sessions
