"""The follower's side of a fetch session: what each request sends and forgets, and how answers
and failures move the session; and a follower and a leader cache talking to each other."""

from __future__ import annotations

import functools
import random

from wirekafka.broker.replica.fetch_sessions import Answer, FetchSessionCache, SessionPartition
from wirekafka.broker.replication.fetch_session_handler import FetchSessionHandler, PartitionFetch
from wirekafka.protocol.errors import ErrorCode


# an answer with no news
_Quiet = functools.partial(Answer, error=0, high_watermark=0, log_start_offset=0)


def _at(offset: int, epoch: int = 0) -> PartitionFetch:
    return PartitionFetch(offset, 0, epoch, 1 << 20)


def test_full_then_incremental_sends_only_changes() -> None:
    h = FetchSessionHandler()
    first = h.build({("t", 0): _at(0), ("t", 1): _at(0)})
    assert (first.session_id, first.epoch, list(first.to_send), first.forgotten) == (0, 0, [("t", 0), ("t", 1)], [])
    h.handle_response(ErrorCode.NONE, 42)
    second = h.build({("t", 0): _at(5), ("t", 1): _at(0), ("u", 0): _at(0)})
    assert (second.session_id, second.epoch, list(second.to_send)) == (42, 1, [("t", 0), ("u", 0)])
    h.handle_response(ErrorCode.NONE, 42)
    third = h.build({("t", 0): _at(5), ("u", 0): _at(0, epoch=3)})
    assert (third.epoch, list(third.to_send), third.forgotten) == (2, [("u", 0)], [("t", 1)])


def test_no_session_given_keeps_asking_in_full() -> None:
    h = FetchSessionHandler()
    h.build({("t", 0): _at(0)})
    h.handle_response(ErrorCode.NONE, 0)
    nxt = h.build({("t", 0): _at(0)})
    assert (nxt.session_id, nxt.epoch, list(nxt.to_send)) == (0, 0, [("t", 0)])


def test_errors_and_failures_start_over() -> None:
    h = FetchSessionHandler()
    h.build({("t", 0): _at(0)})
    h.handle_response(ErrorCode.NONE, 42)
    h.build({("t", 0): _at(1)})
    h.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    again = h.build({("t", 0): _at(1)})
    assert (again.session_id, again.epoch, list(again.to_send)) == (42, 0, [("t", 0)])  # closes 42, asks anew
    h.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    assert h.build({("t", 0): _at(1)}).session_id == 0
    h.handle_response(ErrorCode.NONE, 7)
    h.build({("t", 0): _at(2)})
    h.restart()  # a replica replaced while the request was in flight: its answer does not count
    h.handle_response(ErrorCode.NONE, 7)
    assert (h.build({("t", 0): _at(2)}).epoch, h.session_id) == (0, 7)


def test_a_follower_and_a_leader_stay_in_step() -> None:
    """The handler's requests applied to the leader's cache: the leader's session holds exactly
    the follower's partitions at the follower's positions, epoch after epoch."""
    cache = FetchSessionCache(1000, lambda: 0, random.Random(3))
    h = FetchSessionHandler()
    rng = random.Random(5)
    positions = {("t", p): 0 for p in range(4)}
    for _ in range(30):
        if rng.random() < 0.2:
            positions.pop(rng.choice(sorted(positions)), None) if len(positions) > 1 else None
        if rng.random() < 0.2:
            positions.setdefault(("t", rng.randrange(8)), 0)
        for k in positions:
            positions[k] += rng.randrange(3)
        nxt = h.build({k: _at(v) for k, v in positions.items()})
        wanted = {k: SessionPartition(k[0], None, k[1], f.fetch_offset, f.max_bytes)  # type: ignore[arg-type]
                  for k, f in nxt.to_send.items()}
        ctx = cache.new_context(False, nxt.session_id, nxt.epoch, True, wanted, nxt.forgotten)
        parts = ctx.partitions(lambda _: None)
        assert {(p.topic, p.partition): p.fetch_offset for p in parts} == positions
        error, sid, _ = ctx.answer([_Quiet(p) for p in parts], commit=True)
        h.handle_response(error, sid)
    assert cache.session_count() == 1
