"""The test tree's layout, as ARCHITECTURE.md gives it: no two modules share a name (a failure or a
grep then names one file), the launchers in scripts/ are a package imported as such (never loaded
by file path, which makes a second copy of a module beside the imported one), and conformance/
keeps its harness and its cluster scenarios in subfolders, so its top level lists its tests."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("tests", "compat-tests", "conformance", "faults", "testsupport", "scripts")
SHARED_NAMES = {"__init__.py", "conftest.py"}
SCRIPTS = REPO / "scripts"


def _modules() -> list[Path]:
    """Every .py file of the test tree; compat-tests/external/ holds other projects' suites' shims."""
    external = REPO / "compat-tests" / "external"
    return [p for folder in FOLDERS for p in sorted((REPO / folder).rglob("*.py"))
            if external not in p.parents and "__pycache__" not in p.parts]


def test_no_two_modules_share_a_name() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        if path.name not in SHARED_NAMES:
            by_name[path.name].append(str(path.relative_to(REPO)))
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}


def test_nothing_is_loaded_by_file_path() -> None:
    this = Path(__file__).resolve()
    words = ("spec_from_file_location", "load_script")
    found = [f"{path.relative_to(REPO)}: {word}" for path in _modules() if path.resolve() != this
             for word in words if word in path.read_text()]
    assert found == []


def test_scripts_import_each_other_through_the_package() -> None:
    """A launcher run as a file has scripts/ on sys.path: a sibling imported as a top-level module
    there would be a second copy of the one tests import as scripts.<name>."""
    siblings = {p.stem for p in SCRIPTS.glob("*.py")}
    siblings |= {p.name for p in SCRIPTS.iterdir() if (p / "__init__.py").is_file()}
    found = []
    for path in sorted(SCRIPTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in siblings]
    assert (SCRIPTS / "__init__.py").is_file()
    assert found == []


def test_conformance_top_level_holds_only_its_tests() -> None:
    suite = REPO / "conformance"
    others = [p.name for p in suite.glob("*.py")
              if not p.name.startswith("test_") and p.name not in SHARED_NAMES]
    assert others == []
    for package in ("harness", "cluster"):
        assert (suite / package / "__init__.py").is_file(), package
