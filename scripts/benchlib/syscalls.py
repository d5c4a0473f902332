"""Count the I/O syscalls a broker makes while a consumer reads data back, with strace.

What is measured, and how: ``strace -f -y`` is attached to every thread of the broker for the
duration of one consume, tracing only read, pread64, readv, preadv, preadv2, recvfrom, recvmsg,
write, writev, pwrite64, sendto, sendmsg and sendfile. Each completed call is classified by its file
descriptor (``-y`` prints the path): a path under ``/`` is a file, ``socket:[...]`` a socket.
Bytes are the calls' return values. So "file bytes read" is data copied from the page cache into
the broker's memory (the copy ``sendfile`` avoids), and "sendfile bytes" went from file to socket
in the kernel. strace slows the broker down a lot: these runs give counts, never speed.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)

TRACED = ("read", "pread64", "readv", "preadv", "preadv2", "recvfrom", "recvmsg",
          "write", "writev", "pwrite64", "sendto", "sendmsg", "sendfile")
_READS = {"read", "pread64", "readv", "preadv", "preadv2", "recvfrom", "recvmsg"}

# "1234  read(7</tmp/x/0.log>, ""..., 65536) = 65536"; "<unfinished ...>" / "<... read resumed>".
_CALL = re.compile(r"^(\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
_RESULT = re.compile(r"\)\s+=\s+(-?\d+)")


def strace_path() -> str | None:
    return shutil.which("strace")


@dataclass
class SyscallCounts:
    """Calls and bytes per class: file_read, file_write, socket_read, socket_write, sendfile, other."""

    calls: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)

    def add(self, name: str, fd_desc: str, result: int) -> None:
        if name == "sendfile":
            cls = "sendfile"
        elif fd_desc.startswith("/"):
            cls = "file_read" if name in _READS else "file_write"
        elif fd_desc.startswith(("socket:", "TCP", "UNIX", "UDP")):
            cls = "socket_read" if name in _READS else "socket_write"
        else:
            cls = "other"
        self.calls[cls] += 1
        if result > 0:
            self.bytes[cls] += result

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def parse(lines: Iterator[str]) -> SyscallCounts:
    """Sum an ``strace -f -y`` output; a call split by another thread's is joined by pid."""
    counts = SyscallCounts()
    pending: dict[str, tuple[str, str]] = {}
    for line in lines:
        if m := _CALL.match(line):
            pid, name, _fd, desc, rest = m.groups()
            if rest.rstrip().endswith("<unfinished ...>"):
                pending[pid] = (name, desc)
                continue
        elif m := _RESUMED.match(line):
            pid, name, rest = m.groups()
            started = pending.pop(pid, None)
            if started is None or started[0] != name:
                continue
            desc = started[1]
        else:
            continue
        if r := _RESULT.search(rest):
            counts.add(name, desc, int(r.group(1)))
    return counts


def _all_threads_traced(pid: int, tracer: int) -> bool:
    tasks = list(Path(f"/proc/{pid}/task").glob("*/status"))
    if not tasks:
        return False
    for status in tasks:
        with contextlib.suppress(OSError):
            for line in status.read_text().splitlines():
                if line.startswith("TracerPid:") and int(line.split()[1]) != tracer:
                    return False
    return True


@contextlib.contextmanager
def traced(pid: int, out: Path, attach_timeout: float = 20.0) -> Iterator[None]:
    """strace every thread of ``pid`` (and threads it starts) while the block runs; the calls are
    written to ``out``. Raises RuntimeError if strace cannot attach (e.g. no ptrace permission)."""
    exe = strace_path()
    if exe is None:
        raise RuntimeError("strace is not installed (scripts/install_system_deps.sh installs it)")
    errors = out.with_suffix(".stderr")
    cmd = [exe, "-f", "-qq", "-y", "-s", "0", "-e", "signal=none", "-e", "trace=" + ",".join(TRACED),
           "-o", str(out), "-p", str(pid)]
    with open(errors, "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + attach_timeout
        while not _all_threads_traced(pid, proc.pid):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"strace did not attach to pid {pid}: {errors.read_text(errors='replace')}")
            time.sleep(0.05)
        yield
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # detach; the traced process carries on
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def count_file(out: Path) -> SyscallCounts:
    with open(out, errors="replace") as fh:
        return parse(fh)
