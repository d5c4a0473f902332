"""The layering rule of ARCHITECTURE.md: protocol <- storage <- broker <- server, imports one way.
protocol is pure (no I/O, no trio); storage is synchronous (no trio)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "wirekafka"
ORDER = ["protocol", "storage", "broker", "server"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", ORDER)
def test_imports_point_one_way(layer: str) -> None:
    forbidden = {f"wirekafka.{higher}" for higher in ORDER[ORDER.index(layer) + 1:]}
    for path in (PKG / layer).rglob("*.py"):
        for name in _imports(path):
            assert not any(name == f or name.startswith(f + ".") for f in forbidden), f"{path}: imports {name}"
            if layer in ("protocol", "storage"):
                assert name != "trio" and not name.startswith("trio."), f"{path}: {layer} must not use trio"
