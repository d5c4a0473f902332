"""What a conformance scenario said to a broker and what it heard back, kept for comparison.

`wire.Connection` hands every exchange to `record()`. While a scenario runs, its exchanges go to
the active `Transcript` (set by conftest around each test), so that the scenario's answers from
real Kafka and from wirekafka can be compared whole afterwards. Polling loops (waiting for a topic
to be served, retrying while a coordinator loads) are timing, not behaviour: they run inside
`quiet()` and only the answer the loop settles on is recorded. Every (API key, version) sent in
the session is also collected in `EXERCISED`, and, inside `collecting_pairs(sink)`, in `sink`:
the coverage plugin (conformance/coverage.py) keeps one such set per scenario."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Exchange:
    api_key: int
    version: int
    request: Any
    response: Any  # None when no answer is expected (acks=0) or the broker closed the connection


@dataclass
class Transcript:
    exchanges: list[Exchange] = field(default_factory=list)


_active: Transcript | None = None
_quiet_depth = 0
_pair_sink: set[tuple[int, int]] | None = None
EXERCISED: set[tuple[int, int]] = set()


def activate(transcript: Transcript | None) -> None:
    global _active
    _active = transcript


def record(api_key: int, version: int, request: Any, response: Any) -> None:
    EXERCISED.add((api_key, version))
    if _pair_sink is not None:
        _pair_sink.add((api_key, version))
    if _active is not None and _quiet_depth == 0:
        _active.exchanges.append(Exchange(api_key, version, request, response))


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Exchanges inside are not part of the transcript (they still count as exercised)."""
    global _quiet_depth
    _quiet_depth += 1
    try:
        yield
    finally:
        _quiet_depth -= 1


@contextlib.contextmanager
def collecting_pairs(sink: set[tuple[int, int]]) -> Iterator[set[tuple[int, int]]]:
    """Also add every (API key, version) sent inside to `sink`, quiet or not: what one scenario
    exercised, whatever its transcript keeps."""
    global _pair_sink
    outer, _pair_sink = _pair_sink, sink
    try:
        yield sink
    finally:
        _pair_sink = outer
