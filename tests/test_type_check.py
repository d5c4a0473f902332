"""The product type-checks: pyright (configured in pyproject.toml) passes over wirekafka/, every
suppression of a checker error says why on its line and there are few of them, and the stubs we
generate for our own schema classes match what kafka-python's generator makes of them.

pyright rather than mypy: kafka-python ships .pyi stubs for its message classes but no py.typed
marker, so mypy reads every kafka-python class as Any, while pyright reads the stubs."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ROOT / "wirekafka"
MAX_IGNORES = 25
# "# type: ignore[code]  # why" or "# pyright: ignore[rule]  # why": the reason is a comment of its own
_SUPPRESSION = re.compile(r"#\s*(type|pyright):\s*ignore\b")
_WITH_REASON = re.compile(r"#\s*(type|pyright):\s*ignore\[[\w\-, ]+\]\s+#\s*\S.*$")


def _suppressions() -> list[tuple[str, int, str]]:
    """Every type-checker suppression comment in the product: (file, line, comment)."""
    found = []
    for path in sorted(PRODUCT.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and _SUPPRESSION.search(token.string):
                found.append((str(path.relative_to(ROOT)), token.start[0], token.string))
    return found


@pytest.mark.timeout(600)
def test_pyright_passes_over_the_product() -> None:
    run = subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable, "--outputjson"],
                         cwd=ROOT, capture_output=True, text=True, timeout=540)
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"pyright did not run (exit {run.returncode}): {run.stdout[-2000:]}{run.stderr[-2000:]}")
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    shown = "\n".join(f"{Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: {d['message']}"
                      for d in errors[:60])
    assert run.returncode == 0 and not errors, f"{len(errors)} type errors:\n{shown}"


def test_every_suppression_says_why_and_there_are_few() -> None:
    found = _suppressions()
    bare = [f"{path}:{line}: {comment}" for path, line, comment in found if not _WITH_REASON.search(comment)]
    assert not bare, "suppressions without a code and a reason on the line:\n" + "\n".join(bare)
    assert len(found) <= MAX_IGNORES, f"{len(found)} type-checker suppressions in the product (at most {MAX_IGNORES})"


def test_the_suppression_rule_reads_codes_and_reasons() -> None:
    assert _WITH_REASON.search("x = f()  # type: ignore[attr-defined]  # kafka-python's Foo has no stub for bar")
    assert not _WITH_REASON.search("x = f()  # type: ignore[attr-defined]")
    assert not _WITH_REASON.search("x = f()  # type: ignore  # no code")


def test_the_inter_broker_stubs_are_what_kafka_python_generates() -> None:
    from kafka.protocol.generate_stubs import generate_module

    from wirekafka.protocol import inter_broker

    names = list(inter_broker.__dict__.get("__all__", [])) or [
        n for n, v in vars(inter_broker).items() if isinstance(v, type) and v.__module__ == inter_broker.__name__]
    fresh = generate_module(inter_broker, [(n, getattr(inter_broker, n)) for n in names])
    stored = (PRODUCT / "protocol" / "inter_broker.pyi").read_text(encoding="utf-8")
    # the first line names the Python version that generated it
    assert fresh.splitlines()[1:] == stored.splitlines()[1:], \
        "regenerate wirekafka/protocol/inter_broker.pyi with kafka.protocol.generate_stubs.generate_module"
