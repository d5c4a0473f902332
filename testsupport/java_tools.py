"""Access from tests to scripts/realkafka.py (the real-Kafka launcher and Kafka's Java CLI tools)
and the other helper scripts, which live in scripts/ rather than in a package."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def load_script(name: str) -> ModuleType:
    """Import scripts/<name>.py as module <name> (once)."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def realkafka() -> ModuleType:
    return load_script("realkafka")


def tool(name: str, *args: str, timeout: float = 120, input: bytes | None = None) -> subprocess.CompletedProcess:
    """Run one of Kafka's CLI tools (a realkafka.TOOLS short name); stdout/stderr as text."""
    proc = realkafka().run_tool(name, list(args), timeout=timeout, input=input)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
                                       proc.stderr.decode(errors="replace"))
