"""Run a real `wirekafka serve` process on a free 127.0.0.1 port for integration tests.

Tests talk to it over TCP exactly as users do; it can be stopped with SIGTERM (clean), killed
with SIGKILL (crash) and restarted on the same data directory and port.

A free port is only free until someone else binds it: between free_port() and the broker's bind,
another process on the machine (other tests, other workers) may take it. A first start on a port
picked here therefore retries on a new port when the broker reports the address in use, and a
start counts as done only once this broker's own log says it is listening, so an answer from
whoever else holds the port is never taken for ours."""

from __future__ import annotations

import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from scripts import port_pool

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A port for a broker on 127.0.0.1 (scripts/port_pool.py: below the kernel's ephemeral range)."""
    return port_pool.free_port()


def api_versions_ok(host: str, port: int, timeout: float = 1.0) -> bool:
    """True once the broker answers an ApiVersions v0 request."""
    req = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(req)) + req)
            head = s.recv(4)
            return len(head) == 4
    except OSError:
        return False


class BrokerProcess:
    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None, port: int | None = None,
                 log_path: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self._port_picked = port is None  # ours to change if it turns out to be taken
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.log_path = log_path or self.data_dir.parent / f"wirekafka-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._started = False
        self._serving = False  # the last start succeeded: an exit after it is the broker's own doing
        self.env = dict(env or {})  # added to the broker's environment (KAFKA_OPTS, say)
        # the largest file the broker may write (RLIMIT_FSIZE), None for no limit: a disk that
        # fills up, for the process alone (Python ignores SIGXFSZ, so writes fail with EFBIG)
        self.file_size_limit: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0, attempts: int = 3) -> "BrokerProcess":
        """Start the broker and wait (bounded by ``timeout`` per attempt) until it serves. A start
        takes about a second; 60 s because a restart in the nemesis long run, beside eight busy
        processes on this 2-core machine, once took over 30.

        On its first start, a broker whose port was picked here moves to a new free port if the
        old one was taken meanwhile (up to ``attempts`` tries); overrides naming the old port
        (such as advertised.listeners) follow it. A restart keeps its port: clients know it."""
        self._serving = False
        attempt = 1
        while not self._start_once(timeout):  # False only for a first start on a port picked here
            if attempt == attempts:
                raise RuntimeError(f"wirekafka found its port taken {attempts} times:\n{self.log_tail()}")
            attempt += 1
            old, self.port = self.port, free_port()
            self.overrides = {k: v.replace(f"127.0.0.1:{old}", f"127.0.0.1:{self.port}")
                              for k, v in self.overrides.items()}
        self._started = self._serving = True
        return self

    def _start_once(self, timeout: float) -> bool:
        """One start on self.port: True once serving, False if the port was taken (and we may
        pick another); raises if the broker fails otherwise or does not come up in time."""
        args = [sys.executable, "-m", "wirekafka", "serve",
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "--override", f"log.dirs={self.data_dir}"]
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        self._log = open(self.log_path, "ab")
        log_start = self._log.tell()  # the log is appended to across restarts: read only this run's part
        env = dict(os.environ, **self.env, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO, env=env,
                                     preexec_fn=self._limit_file_size if self.file_size_limit else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.close()
                if self._port_picked and not self._started and b"Address already in use" in self._log_since(log_start):
                    return False
                raise RuntimeError(f"wirekafka exited with {self.proc.returncode}:\n{self.log_tail()}")
            if (f"listening on 127.0.0.1:{self.port} ".encode() in self._log_since(log_start)
                    and api_versions_ok("127.0.0.1", self.port)):
                return True
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"wirekafka did not start within {timeout}s:\n{self.log_tail()}")

    def _limit_file_size(self) -> None:
        assert self.file_size_limit is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size_limit, self.file_size_limit))

    def _log_since(self, offset: int) -> bytes:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return b""

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: a clean shutdown. Returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: a crash at whatever moment the broker is in."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def crashed(self) -> bool:
        """Whether the broker, once serving, exited by itself with an error: an exception that
        escaped it. A SIGTERM'd broker exits 0 and a killed one by its signal, so neither counts."""
        return self._serving and self.proc is not None and (self.proc.poll() or 0) > 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> "BrokerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.alive():
            self.stop()
