"""Raw-socket connection probes: no client library, so only the broker's accept and request path
is timed. Each connection sends one ApiVersions v0 request (a fixed 27-byte frame that every
Kafka version answers) and reads the whole response."""

from __future__ import annotations

import logging
import resource
import socket
import statistics
import struct
import time
from contextlib import ExitStack
from dataclasses import dataclass

from scripts.benchlib.brokers import rss_mb

log = logging.getLogger(__name__)

_CLIENT_ID = b"wirekafka-bench"


def api_versions_frame(correlation_id: int) -> bytes:
    """Size-prefixed ApiVersions v0 request (header v1: key, version, correlation id, client id)."""
    body = struct.pack(">hhih", 18, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    return struct.pack(">i", len(body)) + body


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def read_api_versions_response(sock: socket.socket, correlation_id: int) -> None:
    """Read one response frame and check its correlation id and error code."""
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    payload = _recv_exact(sock, size)
    got, error = struct.unpack_from(">ih", payload)
    if got != correlation_id or error != 0:
        raise ConnectionError(f"bad ApiVersions response: correlation id {got}, error {error}")


def open_exchanged(host: str, port: int, count: int, stack: ExitStack, timeout: float = 30.0) -> list[socket.socket]:
    """Open ``count`` connections, each with one completed ApiVersions exchange; the sockets stay
    open (closed by ``stack``). Requests are pipelined across connections: all connect and send
    first, then all responses are read, as a burst of new clients would."""
    socks = []
    for i in range(count):
        sock = stack.enter_context(socket.create_connection((host, port), timeout=timeout))
        sock.sendall(api_versions_frame(i))
        socks.append(sock)
    for i, sock in enumerate(socks):
        read_api_versions_response(sock, i)
    return socks


def listen_overflows() -> int | None:
    """The kernel's TcpExt ListenOverflows counter (SYNs dropped because a listener's accept queue
    was full), for this network namespace; None where /proc/net/netstat lacks it."""
    try:
        with open("/proc/net/netstat") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for names, values in zip(lines, lines[1:]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:]))
            return int(table["ListenOverflows"]) if "ListenOverflows" in table else None
    return None


@dataclass(frozen=True)
class ConnectTimes:
    burst_seconds: float       # median over rounds: all connect and send, then all read
    sequential_seconds: float  # median over rounds: connect, exchange, next (all kept open)
    overflows: int | None      # ListenOverflows counted during the bursts (whole namespace)


def connect_times(host: str, port: int, count: int = 100, rounds: int = 3) -> ConnectTimes:
    """Wall time to open ``count`` connections with one ApiVersions exchange on each, two ways.

    A burst is what a fleet of clients starting at once does; it overflows a small listen backlog
    (Kafka's socket.listen.backlog.size is 50), and each SYN the kernel drops costs the client a
    1 s retransmit. One-at-a-time shows the per-connection cost without that effect."""
    with ExitStack() as warm:
        open_exchanged(host, port, 1, warm)  # first-connection costs (lazy init) out of the figure
    bursts, sequential = [], []
    before = listen_overflows()
    for _ in range(rounds):
        with ExitStack() as stack:
            t0 = time.perf_counter()
            open_exchanged(host, port, count, stack)
            bursts.append(time.perf_counter() - t0)
        time.sleep(0.2)  # let the broker reap the closed connections
    after = listen_overflows()
    for _ in range(rounds):
        with ExitStack() as stack:
            t0 = time.perf_counter()
            for _ in range(count):
                open_exchanged(host, port, 1, stack)
            sequential.append(time.perf_counter() - t0)
        time.sleep(0.2)
    log.info("connect bursts %s ms; one at a time %s ms",
             ", ".join(f"{t * 1000:.1f}" for t in bursts), ", ".join(f"{t * 1000:.1f}" for t in sequential))
    overflows = after - before if before is not None and after is not None else None
    return ConnectTimes(statistics.median(bursts), statistics.median(sequential), overflows)


def idle_connections_rss_delta_mb(host: str, port: int, pid: int, count: int = 1000,
                                  settle: float = 2.0) -> float | None:
    """RSS growth of broker ``pid`` while ``count`` idle connections (each after one ApiVersions
    exchange) are open. RSS is read after ``settle`` seconds both before and after, so buffers
    the broker frees once a request is done are not counted. None if the broker is gone."""
    time.sleep(settle)
    before = rss_mb(pid)
    with ExitStack() as stack:
        for start in range(0, count, 100):  # bursts of 100 keep within any listen backlog
            open_exchanged(host, port, min(100, count - start), stack)
        time.sleep(settle)
        after = rss_mb(pid)
    if before is None or after is None:
        return None
    log.info("pid %d RSS %.1f MB -> %.1f MB with %d idle connections", pid, before, after, count)
    return after - before


def ensure_nofile(needed: int) -> None:
    """Raise this process's soft RLIMIT_NOFILE (children such as the brokers inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        log.info("RLIMIT_NOFILE raised from %d to %d", soft, target)
        if target < needed:
            log.warning("RLIMIT_NOFILE hard limit %d is below the %d needed", hard, needed)
