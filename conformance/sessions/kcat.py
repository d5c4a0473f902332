"""kcat (librdkafka's command-line client) session: list metadata, produce keyed lines, consume
them to the end, and look an offset up by timestamp."""

from __future__ import annotations

import shutil
import subprocess

from conformance.sessions import Session, expect

TOPIC = "kcat-lines"
LINES = ["a:alpha", "b:bravo", "c:charlie", "d:delta"]


def _kcat(*args: str, input: str | None = None) -> str:
    path = shutil.which("kcat")
    expect(path is not None, "kcat is not installed (scripts/install_system_deps.sh)")
    proc = subprocess.run([path, *args], input=None if input is None else input.encode(), capture_output=True,
                          timeout=60)
    expect(proc.returncode == 0, f"kcat {' '.join(args)} exited {proc.returncode}:\n{proc.stderr.decode()[-2000:]}")
    return proc.stdout.decode()


def produce_consume(bootstrap: str, _kafka: str) -> None:
    """kcat -L on an empty cluster, kcat -P of keyed lines to an auto-created topic, kcat -C of
    the partition to its end, and kcat -Q for the first offset at or after timestamp 0."""
    _kcat("-b", bootstrap, "-L")
    _kcat("-b", bootstrap, "-P", "-t", TOPIC, "-p", "0", "-K", ":", input="\n".join(LINES) + "\n")
    out = _kcat("-b", bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k:%s\\n")
    expect(out.split() == LINES, f"consumed {out!r}")
    expect(f"{TOPIC} [0] offset 0" in _kcat("-b", bootstrap, "-Q", "-t", f"{TOPIC}:0:0"), "offset query failed")


SESSIONS = [Session("kcat_produce_consume", "kcat", produce_consume.__doc__ or "", produce_consume)]
