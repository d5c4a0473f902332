"""Kafka's socket options for the listener and each accepted connection.

Apache Kafka's acceptor sets SO_RCVBUF on the listening socket from ``socket.receive.buffer.bytes``
(so the receive window is scaled for it before any connection's handshake; accepted sockets
inherit it) and, on each accepted connection, TCP_NODELAY, SO_KEEPALIVE and SO_SNDBUF from
``socket.send.buffer.bytes``. -1 leaves the operating system's default (and Linux's buffer
autotuning) in place. Both default to 102400, as in Kafka's server.properties reference.
"""

from __future__ import annotations

import socket
from typing import Protocol

from wirekafka.config import BrokerConfig

OS_DEFAULT = -1  # Kafka's Selectable.USE_DEFAULT_BUFFER_SIZE


class SettableSocket(Protocol):
    """A socket, a trio socket or a trio.SocketStream: all that is used of them."""

    def setsockopt(self, level: int, option: int, value: int, /) -> None: ...


def tune_listener(sock: SettableSocket, config: BrokerConfig) -> None:
    """SO_RCVBUF on a listening socket, before any connection arrives."""
    size = config.int("socket.receive.buffer.bytes")
    if size != OS_DEFAULT:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


def tune_connection(sock: SettableSocket, config: BrokerConfig) -> None:
    """Kafka's options on an accepted connection."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    size = config.int("socket.send.buffer.bytes")
    if size != OS_DEFAULT:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
