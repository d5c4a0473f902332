"""Connections between requests, on a live wirekafka process: connections.max.idle.ms closes a
quiet connection on a plaintext and on a TLS listener while one that keeps talking stays open,
and a clean shutdown (SIGTERM) closes idle connections at once instead of waiting for them.

Kafka's side of the idle close is compared in conformance/test_broker_limits.py; these cases
cover what that module cannot: TLS connections, many connections at once, and shutdown."""

from __future__ import annotations

import select
import socket
import ssl
import struct
import time
from pathlib import Path
from typing import Iterator

import pytest

from client_support import recv_exact
from raw_connections import api_versions_frame
from testsupport.broker_process import BrokerProcess, free_port
from testsupport.tls_material import TlsMaterial, make

IDLE_MS = 3000  # long enough that a busy connection stays busy on a loaded machine


def _api_versions(sock: socket.socket, correlation_id: int) -> None:
    """One ApiVersions v0 exchange; raises if the broker does not answer it."""
    sock.sendall(api_versions_frame(correlation_id))
    answer = recv_exact(sock, struct.unpack(">i", recv_exact(sock, 4))[0])
    assert struct.unpack(">ih", answer[:6]) == (correlation_id, 0)


def _readable(sock: socket.socket) -> bool:
    """Whether a read would not block (poll, not select: a whole test session's descriptors can
    number past select's 1,024)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _seconds_until_closed(sock: socket.socket, within: float) -> float | None:
    """Seconds until the broker closed the connection (EOF, reset, or TLS torn down), None if it
    stayed open for `within` seconds."""
    start = time.monotonic()
    sock.settimeout(within)
    try:
        data = sock.recv(1)
    except (socket.timeout, TimeoutError):
        return None
    except (ConnectionResetError, ssl.SSLError):
        data = b""
    assert data == b"", data
    return time.monotonic() - start


class IdleBroker:
    def __init__(self, proc: BrokerProcess, tls_port: int, material: TlsMaterial) -> None:
        self.proc = proc
        self.tls_port = tls_port
        self.context = ssl.create_default_context(cafile=str(material.broker_pem))

    def plain(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.proc.port), timeout=10)

    def tls(self) -> socket.socket:
        raw = socket.create_connection(("127.0.0.1", self.tls_port), timeout=10)
        return self.context.wrap_socket(raw, server_hostname="localhost")


def _start(tmp_path: Path, overrides: dict[str, str]) -> IdleBroker:
    material = make(tmp_path / "tls")
    plain_port, tls_port = free_port(), free_port()
    proc = BrokerProcess(tmp_path / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{tls_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
        "inter.broker.listener.name": "PLAINTEXT", **material.broker_settings(), **overrides},
        port=plain_port).start()
    return IdleBroker(proc, tls_port, material)


@pytest.fixture
def idle_broker(tmp_path: Path) -> Iterator[IdleBroker]:
    broker = _start(tmp_path, {"connections.max.idle.ms": str(IDLE_MS)})
    yield broker
    broker.proc.stop()


@pytest.mark.parametrize("kind", ["plain", "tls"])
def test_a_quiet_connection_is_closed_and_a_busy_one_is_not(idle_broker: IdleBroker, kind: str) -> None:
    quiet, busy = getattr(idle_broker, kind)(), getattr(idle_broker, kind)()
    with quiet, busy:
        _api_versions(quiet, 1)
        _api_versions(busy, 1)
        start = time.monotonic()
        quiet_closed_after = None
        # the busy one talks every eighth of the timeout for two timeouts; the quiet one's end is
        # looked for in between
        for i in range(2, 18):
            time.sleep(IDLE_MS / 8000)
            _api_versions(busy, i)
            if quiet_closed_after is None and _readable(quiet):
                assert _seconds_until_closed(quiet, within=1) is not None
                quiet_closed_after = time.monotonic() - start
        assert quiet_closed_after is not None, "still open long after connections.max.idle.ms"
        assert quiet_closed_after >= IDLE_MS / 1000 * 0.9, quiet_closed_after
        # and the busy one, once quiet, is closed in its turn
        assert _seconds_until_closed(busy, within=IDLE_MS / 1000 * 10) is not None


def test_shutdown_closes_idle_connections_at_once(tmp_path: Path) -> None:
    """With the default connections.max.idle.ms (10 minutes), SIGTERM must not wait for idle
    connections: the broker exits cleanly and every connection sees its end."""
    broker = _start(tmp_path, {})
    conns = [broker.plain() for _ in range(20)] + [broker.tls() for _ in range(5)]
    try:
        for i, conn in enumerate(conns):
            _api_versions(conn, i + 1)
        start = time.monotonic()
        assert broker.proc.stop(timeout=60) == 0, broker.proc.log_tail()
        assert time.monotonic() - start < 15, broker.proc.log_tail()  # not shutdown.timeout.ms (30 s)
        for conn in conns:
            assert _seconds_until_closed(conn, within=5) is not None
    finally:
        for conn in conns:
            conn.close()
