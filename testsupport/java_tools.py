"""Kafka's Java CLI tools run from tests, through scripts/realkafka.py (its jars and tool table)."""

from __future__ import annotations

import subprocess

from scripts import realkafka


def tool(name: str, *args: str, timeout: float = 120, input: bytes | None = None) -> subprocess.CompletedProcess:
    """Run one of Kafka's CLI tools (a realkafka.TOOLS short name); stdout/stderr as text."""
    proc = realkafka.run_tool(name, list(args), timeout=timeout, input=input)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
                                       proc.stderr.decode(errors="replace"))
