"""What a conformance scenario said to a broker and what it heard back, kept for comparison.

`wire.Connection` announces every request with `sent()` and fills in the answer when it arrives.
While a scenario runs, its exchanges go to the active `Transcript` (set by conftest around each
test), so that the scenario's answers from real Kafka and from wirekafka can be compared whole
afterwards. Exchanges are kept in the order their requests were sent, not the order answers came
back: a long-poll fetch woken by another connection's produce must read the same on both brokers.

Polling loops (waiting for a topic to be served, retrying while a coordinator loads) are timing,
not behaviour: each round runs inside `settle()`'s `attempt()`, and only the round the loop settles
on is recorded (`wire.poll`). Every (API key, version) sent in the session is collected in
`EXERCISED`, and, inside `collecting_pairs(sink)`, in `sink`: the coverage
plugin (conformance/harness/coverage.py) keeps one such set per scenario."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Exchange:
    api_key: int
    version: int
    request: Any
    response: Any = None  # None until answered, and for good when no answer is expected (acks=0)

    @property
    def api(self) -> str:
        """The API's name as in Kafka's message schemas (ProduceRequest -> Produce)."""
        return type(self.request).__name__.removesuffix("Request")


@dataclass
class Transcript:
    exchanges: list[Exchange] = field(default_factory=list)


class _Rounds:
    """The exchanges of a polling loop, one list per round; only the last round is kept."""

    def __init__(self) -> None:
        self.current: list[Exchange] = []

    def attempt(self) -> None:
        """Start a new round: what the previous one sent was not the final answer."""
        self.current = []


_active: Transcript | None = None
_local = threading.local()  # per thread: the stack of open settle() rounds
_pair_sink: set[tuple[int, int]] | None = None
EXERCISED: set[tuple[int, int]] = set()


def activate(transcript: Transcript | None) -> None:
    global _active
    _active = transcript


def sent(api_key: int, version: int, request: Any) -> Exchange:
    """A request has been sent; the returned Exchange receives its answer. Recorded in the
    innermost open settle() round of this thread, else in the active transcript."""
    EXERCISED.add((api_key, version))
    if _pair_sink is not None:
        _pair_sink.add((api_key, version))
    exchange = Exchange(api_key, version, request)
    rounds: list[_Rounds] = getattr(_local, "rounds", [])
    if rounds:
        rounds[-1].current.append(exchange)
    elif _active is not None:
        _active.exchanges.append(exchange)
    return exchange


@contextlib.contextmanager
def settle() -> Iterator[_Rounds]:
    """A polling loop: call `attempt()` before each round; when the loop ends, the exchanges of
    its last round are recorded as if they were the only ones (one broker may need more rounds
    than another before it is ready, which is timing, not a difference in behaviour)."""
    stack: list[_Rounds] = _local.__dict__.setdefault("rounds", [])
    rounds = _Rounds()
    stack.append(rounds)
    try:
        yield rounds
    finally:
        stack.pop()
    if stack:
        stack[-1].current.extend(rounds.current)
    elif _active is not None:
        _active.exchanges.extend(rounds.current)


@contextlib.contextmanager
def collecting_pairs(sink: set[tuple[int, int]]) -> Iterator[set[tuple[int, int]]]:
    """Also add every (API key, version) sent inside to `sink`, settled or not: what one
    scenario exercised, whatever its transcript keeps."""
    global _pair_sink
    outer, _pair_sink = _pair_sink, sink
    try:
        yield sink
    finally:
        _pair_sink = outer


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Exchanges inside count as exercised but are not compared: reads of a broker's internal
    records, whose raw form differs between brokers by design (the caller compares what it
    decodes from them instead)."""
    with settle() as rounds:
        yield
        rounds.attempt()
