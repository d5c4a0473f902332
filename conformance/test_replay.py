"""Recorded client sessions against real Kafka 4.3.1, replayed against a fresh wirekafka.

Each file in conformance/recordings/ (refreshed by `python -m conformance.harness.record`) is the
reference: its requests are replayed with their causality kept and the broker's allocated ids
carried over (conformance/harness/replay.py), and every answer must equal Kafka's recorded one field by
field, unless deviations.toml or a timing rule of conformance/harness/session_rules.py explains the
difference. Real Kafka is not needed here; a failure lists each difference with its exchange,
field path and both values."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.recordings import load, paths
from conformance.harness.replay_session import replay_fresh
from conformance.harness.replay_verdict import report, summary


@pytest.mark.parametrize("path", paths(), ids=lambda p: p.stem)
def test_replay(path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--target") == "kafka":
        pytest.skip("a replay holds wirekafka to the recording; there is nothing to run against Kafka")
    recording = load(path)
    outcomes = replay_fresh(recording, tmp_path)
    differences = report(recording.name, outcomes)
    assert not differences, f"wirekafka answered otherwise than Kafka did:\n{differences}"
    assert summary(outcomes)["compared"] > 0, "no answer was compared"


def test_every_session_is_recorded() -> None:
    from conformance.sessions import all_sessions

    assert {p.stem for p in paths()} == {s.name for s in all_sessions()}
