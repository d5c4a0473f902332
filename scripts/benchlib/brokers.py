"""The two brokers under test, behind one small interface.

Both run as child processes on 127.0.0.1 in a work directory the bench owns, so the bench can read
their RSS from ``/proc/<pid>/status``, attach strace to them, SIGKILL them and restart them on the
same log directory. Real Kafka is started by ``scripts/realkafka.py`` (reused, not duplicated);
wirekafka is started the way a user would: ``python -m wirekafka serve config/server.properties``
with the listener and log directory overridden.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Protocol

from scripts import realkafka

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"


class Broker(Protocol):
    """What the workloads need from a broker process."""

    name: str

    @property
    def bootstrap(self) -> str: ...

    @property
    def pid(self) -> int: ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def log_path(self) -> Path: ...

    def start(self) -> None:
        """Start on a fresh log directory; return once ApiVersions is answered."""

    def stop(self) -> None:
        """SIGTERM and wait (a clean shutdown)."""

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or checkpointed on the way out."""

    def restart(self) -> None:
        """Start again on the same port and log directory; return once ApiVersions is answered."""


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: the kernel SIGKILLs it if the bench dies, so an
    interrupted run never leaves a broker behind."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class WirekafkaBroker:
    """``python -m wirekafka serve config/server.properties`` on a free port in ``workdir``."""

    name = "wirekafka"

    def __init__(self, workdir: Path, python: str, start_timeout: float = 60.0,
                 overrides: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.python = python
        self.start_timeout = start_timeout
        self.overrides = dict(overrides or {})  # server.properties entries on top of the file's
        self.port = realkafka.free_ports(1, HOST)[0]
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("wirekafka not started")
        return self.proc.pid

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        return self.workdir / "wirekafka.log"

    def command(self) -> list[str]:
        # The shipped config advertises 127.0.0.1:9092, so the advertised listener is overridden
        # together with the listener; everything else is the file's (Kafka's defaults).
        listener = f"PLAINTEXT://{HOST}:{self.port}"
        return [self.python, "-m", "wirekafka", "serve", str(REPO / "config" / "server.properties"),
                "--override", f"listeners={listener}",
                "--override", f"advertised.listeners={listener}",
                "--override", f"log.dirs={self.data_dir}",
                *(arg for k, v in self.overrides.items() for arg in ("--override", f"{k}={v}"))]

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._launch()

    def restart(self) -> None:
        self._launch()

    def _launch(self) -> None:
        t0 = time.monotonic()
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), cwd=REPO, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        deadline = t0 + self.start_timeout
        while not realkafka.api_versions_probe(HOST, self.port, timeout=1.0):
            if self.proc.poll() is not None:
                raise RuntimeError(f"wirekafka exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"wirekafka did not answer within {self.start_timeout:g}s:\n{self.log_tail()}")
            time.sleep(0.05)
        log.info("wirekafka pid %d ready on %s after %.1fs, log %s", self.proc.pid, self.bootstrap,
                 time.monotonic() - t0, self.log_path)

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                log.warning("wirekafka pid %d ignored SIGTERM for 30s; killing", self.proc.pid)
                self.proc.kill()
                self.proc.wait()
            log.info("wirekafka pid %d stopped (exit %s)", self.proc.pid, self.proc.returncode)
        self._close_log()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


class KafkaBroker:
    """Apache Kafka (combined KRaft node) through :class:`realkafka.RealKafka`, 512 MB heap."""

    def __init__(self, workdir: Path, heap: str = "512m", start_timeout: float = 90.0,
                 overrides: dict[str, str] | None = None) -> None:
        # An explicit work dir: RealKafka then never deletes it, so a SIGKILLed node can be
        # restarted on the same data (RealKafka.start() sees meta.properties and skips formatting).
        self.kafka = realkafka.RealKafka(workdir, heap=heap, start_timeout=start_timeout,
                                         die_with_parent=True, overrides=overrides)
        self.name = f"Kafka {self.kafka.version}"

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap

    @property
    def pid(self) -> int:
        if self.kafka.proc is None:
            raise RuntimeError("Kafka not started")
        return self.kafka.proc.pid

    @property
    def data_dir(self) -> Path:
        return self.kafka.data_dir

    @property
    def log_path(self) -> Path:
        return self.kafka.log_path

    def start(self) -> None:
        self.kafka.start()

    def restart(self) -> None:
        self.kafka.start()

    def stop(self) -> None:
        self.kafka.stop()

    def kill(self) -> None:
        proc = self.kafka.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        self.kafka.stop()  # the process is gone: this only closes the log and forgets it


def proc_status_kb(pid: int, field: str) -> int | None:
    """A ``kB`` field of /proc/<pid>/status (VmRSS: resident now; VmHWM: the kernel's peak of
    VmRSS over the process's life), or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def rss_mb(pid: int) -> float | None:
    kb = proc_status_kb(pid, "VmRSS")
    return None if kb is None else kb / 1024


def peak_rss_mb(pid: int) -> float | None:
    kb = proc_status_kb(pid, "VmHWM")
    return None if kb is None else kb / 1024


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU the process has used, all its threads (the kernel sums them in
    /proc/<pid>/stat), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def stored_bytes(broker: Broker, topic: str) -> int:
    """Bytes of ``topic``'s segment files on disk (both brokers use Kafka's layout), to tell how
    much compression shrank the payload."""
    return sum(f.stat().st_size for f in broker.data_dir.glob(f"{topic}-*/*.log"))
