"""Raw connections for the connection-limit tests: a broker of each kind with the same settings,
many sockets opened at once, each sending an ApiVersions v0 request, and what became of each
(answered, closed by the broker, or hung)."""

from __future__ import annotations

import selectors
import socket
import struct
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from testsupport.broker_process import BrokerProcess
from scripts import realkafka


def wirekafka_and_kafka(settings: dict[str, str]) -> Callable:
    """A `bootstrap` fixture parametrized over a wirekafka process and a real Kafka 4.3.1, both
    started with settings for the test."""
    @pytest.fixture(params=["wirekafka", pytest.param("kafka", marks=pytest.mark.realkafka)])
    def bootstrap(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
        if request.param == "wirekafka":
            proc = BrokerProcess(tmp_path / "data", settings).start()
            try:
                yield proc.bootstrap
            finally:
                proc.stop()
        else:
            kafka = realkafka.RealKafka(overrides=settings).start()
            try:
                yield kafka.bootstrap
            finally:
                kafka.stop()
    return bootstrap


def api_versions_frame(correlation_id: int) -> bytes:
    client = b"rate-test"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client)) + client
    return struct.pack(">i", len(body)) + body


def connect_with_api_versions(port: int, count: int) -> list[tuple[socket.socket, float]]:
    """count connections, each with an ApiVersions v0 request sent; with the time it connected."""
    out = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        out.append((sock, time.monotonic()))
        sock.sendall(api_versions_frame(i + 1))
    return out


def outcomes(conns: list[tuple[socket.socket, float]], timeout: float = 5.0) -> list[tuple[str, float]]:
    """Per connection: ("answered" | "closed" | "hung", seconds from its connect to that outcome)."""
    results: list[tuple[str, float] | None] = [None] * len(conns)
    with selectors.DefaultSelector() as selector:
        for i, (sock, _) in enumerate(conns):
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, i)
        deadline = time.monotonic() + timeout
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(deadline - time.monotonic()):
                i = key.data
                try:
                    outcome = "answered" if key.fileobj.recv(65536) else "closed"  # type: ignore[union-attr]
                except ConnectionResetError:  # closed with our request unread
                    outcome = "closed"
                except BlockingIOError:
                    continue
                results[i] = (outcome, time.monotonic() - conns[i][1])
                selector.unregister(key.fileobj)
    for sock, _ in conns:
        sock.close()
    return [r or ("hung", timeout) for r in results]
