"""The layering rule of ARCHITECTURE.md: protocol <- storage <- security <- config <- broker <- server,
imports one way, for every package. protocol is pure (no I/O, no trio); storage is synchronous (no
trio). The root's modules either sit below every layer (jvm, startup_errors: they import nothing of
wirekafka) or above them all (cli, __main__, and the embedding API: embedded, pytest_plugin)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "wirekafka"
ORDER = ["protocol", "storage", "security", "config", "broker", "server"]
BASE_MODULES = {"jvm", "startup_errors"}
TOP_MODULES = {"cli", "__main__", "__init__", "embedded", "pytest_plugin"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in PKG.glob("*.py")}
    assert packages == set(ORDER)
    assert modules <= BASE_MODULES | TOP_MODULES, modules - BASE_MODULES - TOP_MODULES


@pytest.mark.parametrize("module", sorted(BASE_MODULES))
def test_base_modules_import_nothing_of_wirekafka(module: str) -> None:
    names = _imports(PKG / f"{module}.py")
    assert not any(n == "wirekafka" or n.startswith("wirekafka.") for n in names), names


def test_no_two_modules_share_a_file_name() -> None:
    seen: dict[str, Path] = {}
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        assert path.name not in seen, f"{path} and {seen[path.name]}"
        seen[path.name] = path


@pytest.mark.parametrize("layer", ORDER)
def test_imports_point_one_way(layer: str) -> None:
    forbidden = {f"wirekafka.{higher}" for higher in ORDER[ORDER.index(layer) + 1:]}
    for path in (PKG / layer).rglob("*.py"):
        for name in _imports(path):
            assert not any(name == f or name.startswith(f + ".") for f in forbidden), f"{path}: imports {name}"
            if layer in ("protocol", "storage"):
                assert name != "trio" and not name.startswith("trio."), f"{path}: {layer} must not use trio"


def test_handlers_do_not_touch_storage() -> None:
    """Handlers decode, call the broker (partitions, replica manager, metadata) and shape the
    answer; files are the partitions' business."""
    for path in (PKG / "broker" / "handlers").glob("*.py"):
        for name in _imports(path):
            assert not name.startswith("wirekafka.storage"), f"{path}: imports {name}"
        assert not _reaches_into_a_log(path) or path.name == "__init__.py", f"{path}: reaches into a log"


def _reaches_into_a_log(path: Path) -> bool:
    """Whether the code uses an attribute of something's `log` (`partition.log.append`, say);
    a config key such as "transaction.state.log.replication.factor" in a string does not count."""
    return any(isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "log"
               for node in ast.walk(ast.parse(path.read_text())))


@pytest.mark.parametrize("module", ["coordinator/groups", "coordinator/runtime", "replica/replica_manager",
                                    "replica/partition", "metadata/cluster_metadata"])
def test_broker_parts_do_not_import_the_broker_state(module: str) -> None:
    """BrokerState wires the parts together; none of them imports it back (no cycles)."""
    names = _imports(PKG / "broker" / f"{module}.py")
    source = (PKG / "broker" / f"{module}.py").read_text()
    assert "wirekafka.broker.state" not in names and "wirekafka.broker.state" not in source


def test_modules_and_classes_stay_small() -> None:
    """One job a module and a class (issue 33's bounds): no module over 700 lines, no class over
    400; a larger one is a sign that two concerns share it."""
    for path in PKG.rglob("*.py"):
        source = path.read_text()
        assert source.count("\n") <= 700, f"{path}: {source.count(chr(10))} lines"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                assert size <= 400, f"{path}: class {node.name} has {size} lines"
