"""Every (API, version) wirekafka advertises is exercised by some scenario or recorded session.

The conformance plugin (conformance/harness/coverage.py) runs this check after every other scenario, and
only when the session runs the whole conformance suite: after `-k`, `-m`, a single file or a
single test it is deselected, as its answer would mean nothing."""

from __future__ import annotations

import pytest

from conformance.harness import coverage
from wirekafka.protocol import served_versions as api_versions


def test_every_advertised_version_is_exercised(request: pytest.FixtureRequest) -> None:
    # The conformance scenarios of this session (the test command also runs tests/ and compat-tests/).
    scenarios = [item.nodeid for item in request.session.items
                 if item is not request.node and coverage.in_suite(item.path)]
    unrecorded = [s for s in scenarios if s not in coverage.EXERCISED_BY_TEST]
    assert scenarios and not unrecorded, (
        f"{len(unrecorded)} of {len(scenarios)} scenarios have no record of what they sent "
        f"(is conformance.harness.coverage registered as a plugin?), e.g. {unrecorded[:3]}")
    rows = coverage.coverage_rows(api_versions.SUPPORTED, coverage.EXERCISED_BY_TEST, coverage.recorded_pairs())
    assert not coverage.gaps(rows), f"advertised but exercised by no scenario: {coverage.describe_gaps(rows)}"
