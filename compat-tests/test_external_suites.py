"""Regression gate over the independent client suites (scripts/external_suites.py): every test in
a suite's allowlist — the tests that passed on wirekafka when it was last updated — must still pass
against a fresh wirekafka."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import external_suites as es

pytestmark = [pytest.mark.external, pytest.mark.slow]
REPO = Path(__file__).resolve().parent.parent
EXTERNAL = REPO / "compat-tests" / "external"


@pytest.mark.parametrize("suite", ["kgo", "kafka-python", "java"])
def test_allowlisted_tests_still_pass(suite: str, tmp_path: Path) -> None:
    allowlist = [t for t in (EXTERNAL / f"{suite}.allowlist").read_text().splitlines() if t]
    assert allowlist, f"{suite}: empty allowlist"
    with es.target_broker("wirekafka") as bootstrap:
        results = es.SUITES[suite](bootstrap)
    regressions = [t for t in allowlist if results.get(t) != "pass"]
    assert not regressions, f"{suite}: {len(regressions)} allowlisted tests no longer pass: {regressions[:20]}"
