"""Which conformance scenarios (and recorded client sessions) exercise each (API, version) that
wirekafka advertises — so an advertised version nobody checks cannot hide.

Three parts:
- a pytest plugin (`pytest_plugins = ["conformance.harness.coverage"]` in conformance/conftest.py) that
  notes, around each scenario, the (API key, version) pairs it sent (transcript.collecting_pairs),
  orders the check `test_version_coverage.py` last, and deselects that check unless the session
  runs the whole conformance suite (a partial run would make it fail, or pass, for nothing);
  `--coverage-out PATH` writes the per-scenario pairs as JSON for a driver in another process;
- pure functions over those pairs: the table, the gaps, COVERAGE.md (`write_coverage`, which
  `conformance/harness/matrix.py` can call too);
- `python -m conformance.harness.coverage`: runs the suite against wirekafka and writes COVERAGE.md.

Recorded client sessions count as exercising their pairs too: they come in as a plain set
(`recorded_pairs()`), kept apart from the scenarios in the table."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generator

import pytest

from conformance.harness import transcript
from wirekafka.protocol import served_versions as api_versions

SUITE = Path(__file__).resolve().parents[1]  # conformance/, the suite (this module is in its harness/)
REPO = SUITE.parent
COVERAGE_MD = SUITE / "COVERAGE.md"
CHECK_FILE = "test_version_coverage.py"
TARGETS = ("wirekafka", "kafka")  # conftest's target ids, one parameter of a scenario's id
NAMES_SHOWN = 3  # scenario names listed per row of COVERAGE.md; the count says the rest

log = logging.getLogger("conformance.harness.coverage")

Pair = tuple[int, int]

# Filled by the plugin during a session: scenario node id -> pairs it sent.
EXERCISED_BY_TEST: dict[str, set[Pair]] = {}


def recorded_pairs() -> set[Pair]:
    """(API key, version) pairs exercised by the recorded client sessions (conformance/recordings)."""
    from conformance import recordings

    return recordings.exercised()


# ---- pure logic -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    api_key: int
    api_name: str
    version: int
    scenarios: tuple[str, ...]  # scenario names (target collapsed), sorted
    recorded: bool

    @property
    def gap(self) -> bool:
        return not self.scenarios and not self.recorded


def advertised_pairs(supported: Mapping[int, tuple[int, int]]) -> list[Pair]:
    """Every (API key, version) in an api_versions.SUPPORTED-shaped table, in order."""
    return [(key, v) for key, (lo, hi) in sorted(supported.items()) for v in range(lo, hi + 1)]


def scenario_name(node_id: str) -> str:
    """A scenario's id without its directory and target, so that the runs of one scenario against
    Kafka and against wirekafka count once: "conformance/test_x.py::test_y[wirekafka-3]" ->
    "test_x.py::test_y[3]"."""
    path, _, rest = node_id.partition("::")
    m = re.fullmatch(r"([^\[]*)(?:\[(.*)\])?", rest)
    assert m, node_id
    func, params = m.group(1), m.group(2)
    kept = "-".join(p for p in (params or "").split("-") if p not in TARGETS)
    suffix = f"[{kept}]" if kept else ""
    return f"{Path(path).name}::{func}{suffix}"


def api_name(api_key: int) -> str:
    cls = api_versions.REQUEST_CLASSES.get(api_key)
    return cls.__name__.removesuffix("Request") if cls else f"api {api_key}"


def coverage_rows(supported: Mapping[int, tuple[int, int]], exercised_by_scenario: Mapping[str, Iterable[Pair]],
                  recording_pairs: Iterable[Pair]) -> list[Row]:
    """One row per advertised pair: the scenarios that send it and whether a recording does."""
    by_pair: dict[Pair, set[str]] = {}
    for node_id, pairs in exercised_by_scenario.items():
        name = scenario_name(node_id)
        for pair in pairs:
            by_pair.setdefault(tuple(pair), set()).add(name)  # type: ignore[arg-type]
    recorded = {tuple(p) for p in recording_pairs}
    return [Row(key, api_name(key), v, tuple(sorted(by_pair.get((key, v), ()))), (key, v) in recorded)
            for key, v in advertised_pairs(supported)]


def gaps(rows: Iterable[Row]) -> list[Pair]:
    return [(r.api_key, r.version) for r in rows if r.gap]


def describe_gaps(rows: Iterable[Row]) -> str:
    """"Produce v0, v1; JoinGroup v3" for the rows nothing exercises ("" when none)."""
    by_api: dict[str, list[str]] = {}
    for r in rows:
        if r.gap:
            by_api.setdefault(f"{r.api_name} ({r.api_key})", []).append(f"v{r.version}")
    return "; ".join(f"{api} {', '.join(versions)}" for api, versions in by_api.items())


def render_markdown(rows: list[Row]) -> str:
    lines = [
        "# Coverage of the advertised API versions", "",
        "Generated by `python -m conformance.harness.coverage` (the conformance suite against wirekafka): every",
        "(API, version) wirekafka advertises in ApiVersions (`wirekafka/protocol/served_versions.py`, `SUPPORTED`),",
        "the conformance scenarios that send it (each scenario counted once, whichever broker it ran",
        "against) and whether a recorded client session does. A version neither exercises is a gap;",
        "`conformance/test_version_coverage.py` fails a whole-suite run that leaves one.", "",
        "| API | key | version | scenarios | scenario names | recordings | gap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        names = ", ".join(f"`{n}`" for n in r.scenarios[:NAMES_SHOWN])
        if len(r.scenarios) > NAMES_SHOWN:
            names += f" and {len(r.scenarios) - NAMES_SHOWN} more"
        lines.append(f"| {r.api_name} | {r.api_key} | {r.version} | {len(r.scenarios)} | {names or '-'} | "
                     f"{'yes' if r.recorded else '-'} | {'**GAP**' if r.gap else ''} |")
    missing = describe_gaps(rows)
    lines += ["", f"Totals: {len(rows)} advertised (API, version) pairs; "
                  f"{sum(1 for r in rows if r.scenarios)} exercised by scenarios, "
                  f"{sum(1 for r in rows if r.recorded)} by recordings; "
                  f"{len(gaps(rows))} gaps{': ' + missing if missing else ''}.", ""]
    return "\n".join(lines)


def write_coverage(exercised_by_scenario: Mapping[str, Iterable[Pair]], recording_pairs: Iterable[Pair],
                   path: Path = COVERAGE_MD) -> list[Pair]:
    """Write COVERAGE.md for wirekafka's advertised table; returns the gaps."""
    rows = coverage_rows(api_versions.SUPPORTED, exercised_by_scenario, recording_pairs)
    path.write_text(render_markdown(rows))
    log.info("wrote %s (%d gaps)", path, len(gaps(rows)))
    return gaps(rows)


def dump_exercised(exercised_by_scenario: Mapping[str, Iterable[Pair]], path: Path) -> None:
    path.write_text(json.dumps({k: sorted(v) for k, v in sorted(exercised_by_scenario.items())}, indent=0))


def load_exercised(path: Path) -> dict[str, set[Pair]]:
    return {k: {(int(a), int(v)) for a, v in pairs} for k, pairs in json.loads(path.read_text()).items()}


def whole_suite(suite_files: Iterable[str], collected_files: Iterable[str], selectors: Iterable[str],
                deselected: bool) -> bool:
    """Whether a session runs the whole suite: every test file of the suite contributed items,
    nothing was deselected (-k, -m, --deselect, --lf) and no argument picked tests inside a file
    (path::name). `selectors` are the session's arguments that point into the suite."""
    return not deselected and set(suite_files) <= set(collected_files) and not any("::" in s for s in selectors)


# ---- pytest plugin ------------------------------------------------------------------------------

_deselected_in_suite = False


def in_suite(path: Path) -> bool:
    return SUITE in Path(path).resolve().parents


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--coverage-out", default=None, metavar="PATH",
                     help="write the (API key, version) pairs each conformance scenario sent, as JSON")


def pytest_deselected(items: list[pytest.Item]) -> None:
    global _deselected_in_suite
    if any(in_suite(item.path) for item in items):
        _deselected_in_suite = True


@pytest.hookimpl(trylast=True)  # after -k/-m deselection and every other reordering
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    checks = [item for item in items if item.path.name == CHECK_FILE and in_suite(item.path)]
    if not checks:
        return
    suite_files = {str(p) for p in SUITE.glob("test_*.py")}
    collected = {str(item.path) for item in items}
    selectors = [str(a) for a in config.args if in_suite(Path(str(a).split("::")[0]))]
    for check in checks:
        items.remove(check)
    if whole_suite(suite_files, collected, selectors, _deselected_in_suite):
        items.extend(checks)
    else:
        config.hook.pytest_deselected(items=checks)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    if not in_suite(item.path) or item.path.name == CHECK_FILE:
        return (yield)
    with transcript.collecting_pairs(EXERCISED_BY_TEST.setdefault(item.nodeid, set())):
        return (yield)


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = session.config.getoption("--coverage-out", default=None)
    if out:
        dump_exercised(EXERCISED_BY_TEST, Path(out))


# ---- command line ---------------------------------------------------------------------------------

def main() -> int:
    """Run the conformance suite against wirekafka and write COVERAGE.md; 1 if there are gaps."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "exercised.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SUITE), "--target", "wirekafka",
               f"--coverage-out={out}"]
        log.info("running %s", " ".join(cmd))
        subprocess.run(cmd, cwd=REPO, check=False)
        if not out.exists():
            log.error("the suite wrote no per-scenario pairs (%s)", out)
            return 2
        exercised = load_exercised(out)
    missing = write_coverage(exercised, recorded_pairs())
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
