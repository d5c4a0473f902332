"""The pure part of conformance/harness/coverage.py: scenario names, the coverage table and its gaps,
COVERAGE.md, the JSON hand-over between processes, and when a session counts as the whole suite."""

from __future__ import annotations

from pathlib import Path

from conformance.harness import coverage
from wirekafka.protocol import served_versions as api_versions

SUPPORTED = {0: (0, 2), 11: (0, 1)}


def test_scenario_name_drops_directory_and_target() -> None:
    assert coverage.scenario_name("conformance/test_x.py::test_y[wirekafka-3]") == "test_x.py::test_y[3]"
    assert coverage.scenario_name("conformance/test_x.py::test_y[kafka-3-magic2]") == "test_x.py::test_y[3-magic2]"
    assert coverage.scenario_name("conformance/test_x.py::test_y[3-wirekafka]") == "test_x.py::test_y[3]"
    assert coverage.scenario_name("conformance/test_x.py::test_y[wirekafka]") == "test_x.py::test_y"
    assert coverage.scenario_name("conformance/test_x.py::test_y") == "test_x.py::test_y"


def test_advertised_pairs_expand_every_range() -> None:
    assert coverage.advertised_pairs(SUPPORTED) == [(0, 0), (0, 1), (0, 2), (11, 0), (11, 1)]


def test_rows_count_a_scenario_once_whatever_its_target_and_show_gaps() -> None:
    exercised = {
        "conformance/test_p.py::test_produce[wirekafka-0]": {(0, 0), (3, 12)},
        "conformance/test_p.py::test_produce[kafka-0]": {(0, 0), (3, 12)},
        "conformance/test_j.py::test_join[wirekafka]": {(0, 1), (11, 0)},
    }
    rows = coverage.coverage_rows(SUPPORTED, exercised, {(11, 0), (11, 1), (99, 9)})
    table = {(r.api_key, r.version): (r.scenarios, r.recorded, r.gap) for r in rows}
    assert table == {
        (0, 0): (("test_p.py::test_produce[0]",), False, False),
        (0, 1): (("test_j.py::test_join",), False, False),
        (0, 2): ((), False, True),
        (11, 0): (("test_j.py::test_join",), True, False),
        (11, 1): ((), True, False),  # a recording alone covers a version
    }
    assert coverage.gaps(rows) == [(0, 2)]
    assert coverage.describe_gaps(rows) == "Produce (0) v2"
    assert coverage.describe_gaps(rows[:2]) == ""


def test_markdown_lists_names_counts_and_gaps() -> None:
    many = {f"conformance/test_m.py::test_{i}[wirekafka]": {(0, 0)} for i in range(5)}
    text = coverage.render_markdown(coverage.coverage_rows({0: (0, 1)}, many, set()))
    assert ("| Produce | 0 | 0 | 5 | `test_m.py::test_0`, `test_m.py::test_1`, `test_m.py::test_2` and 2 more "
            "| - |  |") in text
    assert "| Produce | 0 | 1 | 0 | - | - | **GAP** |" in text
    assert "Totals: 2 advertised (API, version) pairs; 1 exercised by scenarios, 0 by recordings; " \
           "1 gaps: Produce (0) v1." in text


def test_write_coverage_uses_the_advertised_table(tmp_path: Path) -> None:
    everything = set(coverage.advertised_pairs(api_versions.SUPPORTED))
    path = tmp_path / "COVERAGE.md"
    assert coverage.write_coverage({}, everything - {(0, 1)}, path) == [(0, 1)]
    assert "| Produce | 0 | 1 | 0 | - | - | **GAP** |" in path.read_text()


def test_exercised_pairs_survive_the_json_hand_over(tmp_path: Path) -> None:
    exercised = {"conformance/test_a.py::test_b[wirekafka]": {(0, 9), (3, 12)}, "c::d": set()}
    coverage.dump_exercised(exercised, tmp_path / "x.json")
    assert coverage.load_exercised(tmp_path / "x.json") == exercised


def test_whole_suite_needs_every_file_no_deselection_and_no_node_ids() -> None:
    files = {"/s/test_a.py", "/s/test_b.py"}
    assert coverage.whole_suite(files, files | {"/t/test_other.py"}, [], deselected=False)
    assert coverage.whole_suite(files, files, ["conformance/test_a.py", "conformance/test_b.py"], deselected=False)
    assert not coverage.whole_suite(files, {"/s/test_a.py"}, [], deselected=False)  # a file left out
    assert not coverage.whole_suite(files, files, [], deselected=True)  # -k, -m, --deselect
    assert not coverage.whole_suite(files, files, ["conformance/test_a.py::test_one"], deselected=False)
