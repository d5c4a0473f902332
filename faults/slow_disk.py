"""The nemesis suite's slow disk: faults/slow_io.c, built once with the machine's C compiler
(cached by its source's hash under the project's cache root), preloaded into a broker process
(its environment, `SlowDisk.env`) and switched on and off through a control file, so the
broker's writes and flushes to its log files take `delay_ms` each while the fault holds.

A slow disk differs from a paused process: the broker's network, timers and ZooKeeper session
go on, only its disk work lags, so a leader answers fetches late, acks=all waits, and a follower
whose writes lag falls out of the ISR. Nothing acknowledged may be lost."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

from scripts.jvm_process import cache_dir

log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parent / "slow_io.c"
CONTROL_ENV = "WIREKAFKA_SLOW_IO_FILE"


def shim() -> Path:
    """The preload library, compiled on first use; a changed source builds a new one."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    built = cache_dir() / "slow-io" / f"slow_io-{digest}.so"
    if not built.exists():
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            raise RuntimeError("the slow-disk fault needs a C compiler (cc or gcc) to build faults/slow_io.c")
        built.parent.mkdir(parents=True, exist_ok=True)
        partial = built.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(partial), str(SOURCE), "-ldl"],
                       check=True, capture_output=True, timeout=120)
        partial.replace(built)  # atomic: a concurrent build leaves one whole library
        log.info("built the slow-disk preload %s", built)
    return built


class SlowDisk:
    """One broker's disk: `env` goes into its environment at every start; `slow` and `heal`
    switch the delay (taking effect within 50 ms)."""

    def __init__(self, control: Path) -> None:
        self.control = control
        self.heal()

    @property
    def env(self) -> dict[str, str]:
        preload = " ".join(filter(None, [str(shim()), os.environ.get("LD_PRELOAD", "")]))
        return {"LD_PRELOAD": preload, CONTROL_ENV: str(self.control)}

    def slow(self, delay_ms: float) -> None:
        partial = self.control.with_suffix(".tmp")
        partial.write_text(str(int(delay_ms * 1000)))
        partial.replace(self.control)

    def heal(self) -> None:
        self.control.unlink(missing_ok=True)
