"""The slow-disk preload (faults/slow_io.c through faults/slow_disk.py): with the control file
holding a delay, a process's writes and flushes to regular files take at least that long each,
its socket writes do not, and without the file nothing is delayed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from faults.slow_disk import SlowDisk

DELAY_MS = 200
CALLS = 5  # file writes and as many fsyncs: at least 2 x 5 x 200 ms when slow

_PROBE = """
import json, os, socket, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
started = time.monotonic()
for _ in range({calls}):
    os.write(fd, b"x" * 100)
    os.fsync(fd)
file_s = time.monotonic() - started
a, b = socket.socketpair()
started = time.monotonic()
for _ in range({calls} * 2):
    a.send(b"y")
socket_s = time.monotonic() - started
print(json.dumps({{"file": file_s, "socket": socket_s}}))
""".format(calls=CALLS)


def _probe(disk: SlowDisk, tmp_path: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "data")], env=disk.env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)


def test_a_slow_disk_delays_file_writes_and_flushes_not_sockets(tmp_path: Path) -> None:
    disk = SlowDisk(tmp_path / "slow-io")
    healthy = _probe(disk, tmp_path)
    disk.slow(DELAY_MS)
    slow = _probe(disk, tmp_path)
    disk.heal()
    healed = _probe(disk, tmp_path)
    floor = 2 * CALLS * DELAY_MS / 1000
    assert slow["file"] >= floor, slow
    assert slow["socket"] < floor / 2, slow  # ten socket writes, each delayed, would take 2 s
    assert healthy["file"] < slow["file"] - floor / 2 and healed["file"] < slow["file"] - floor / 2, (healthy, healed)
