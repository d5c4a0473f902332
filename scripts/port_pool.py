"""Free TCP ports for the brokers, ZooKeepers and KDCs that tests, benchmarks and launchers start.

A port is picked before the server that will use it binds it, and its settings name it (listeners,
advertised.listeners, clientPort), so it cannot move once the server starts. Asking the kernel for
one (bind to port 0) gives a port from its ephemeral range, the range every outgoing connection's
local end also comes from. On a machine busy with clients, brokers replicating and JVMs, one of
those connections can take the port before the server binds it, and the server then fails with
"Address already in use". Ports from here come from below the ephemeral range, where only explicit
binds land. A cursor kept in a locked file hands each port out once per round, so the test run and
the launchers it starts never pick the same port. Each port is also checked free by binding it.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path
from typing import Callable

#: Where the kernel's ephemeral range is set (Linux).
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Ports below this are left alone: well-known and registered services tend to sit there.
LOWEST = 10000
#: Pools smaller than this are too easy to wrap around in one run; the kernel picks ports instead.
SMALLEST_POOL = 2000
#: The shared cursor: the next port to try, one text line (one per user: a file another user
#: created could not be written).
CURSOR = Path(tempfile.gettempdir()) / f"wirekafka-port-cursor-{os.getuid()}"


def pool(ephemeral_range: Path = EPHEMERAL_RANGE) -> range | None:
    """The ports outside the kernel's ephemeral range to pick from (the larger side of it), or
    None when that range is unknown or leaves too little room."""
    try:
        low, high = (int(v) for v in ephemeral_range.read_text().split())
    except (OSError, ValueError):
        return None
    best = max(range(LOWEST, low), range(high + 1, 65536), key=len)
    return best if len(best) >= SMALLEST_POOL else None


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _from_kernel(count: int, host: str) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_ports(count: int, host: str = "127.0.0.1", cursor: Path = CURSOR, ports: range | None = None,
               bindable: Callable[[str, int], bool] = _bindable) -> list[int]:
    """``count`` distinct ports free on ``host`` now (as ``bindable`` finds), from ``ports``
    (default :func:`pool`), continuing from the shared ``cursor``; from the kernel where there
    is no pool."""
    ports = ports if ports is not None else pool()
    if ports is None:
        return _from_kernel(count, host)
    picked: list[int] = []
    fd = os.open(cursor, os.O_RDWR | os.O_CREAT, 0o666)
    with os.fdopen(fd, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        text = f.read().strip()
        index = (int(text) - ports.start) % len(ports) if text.isdigit() else 0
        for _ in range(len(ports)):
            port = ports[index]
            index = (index + 1) % len(ports)
            if bindable(host, port):
                picked.append(port)
                if len(picked) == count:
                    break
        f.seek(0)
        f.truncate()
        f.write(f"{ports[index]}\n")
    if len(picked) < count:
        raise OSError(f"fewer than {count} free ports on {host} in {ports}")
    return picked


def free_port(host: str = "127.0.0.1") -> int:
    """One port from :func:`free_ports`."""
    return free_ports(1, host)[0]
