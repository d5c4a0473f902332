"""Connection limits and socket options: Kafka's ConnectionQuotas and its listener socket settings.

- max.connections.per.ip (and per-address overrides, max.connections.per.ip.overrides
  "host:count,..."): a connection from an address already at its limit is closed as soon as it is
  accepted, as Kafka's acceptor closes it (TooManyConnectionsException).
- max.connections: the broker stops accepting while that many connections are open, so further
  clients wait in the listen backlog (socket.listen.backlog.size when set, server/tcp.py) as they
  do on Kafka.
- socket.send.buffer.bytes / socket.receive.buffer.bytes: SO_SNDBUF / SO_RCVBUF of accepted
  sockets when set (-1: the OS's). Unset, wirekafka leaves Linux's autotuning alone instead of
  Kafka's 100 KB send buffer, which slowed large fetch answers several times over."""

from __future__ import annotations

import logging
import socket
from collections import Counter

import trio

from wirekafka.config import INT_MAX, BrokerConfig, parse_ip_overrides

log = logging.getLogger(__name__)


class ConnectionQuotas:
    """Open connections per peer address and in all, against the configured limits."""

    def __init__(self, config: BrokerConfig) -> None:
        self.per_ip = config.int("max.connections.per.ip")
        self.overrides = parse_ip_overrides(str(config["max.connections.per.ip.overrides"] or ""))
        total = config.int("max.connections")
        self.slots = trio.Semaphore(total) if total < INT_MAX else None
        self.open: Counter[str] = Counter()
        self.send_buffer = config.int_if_set("socket.send.buffer.bytes")
        self.receive_buffer = config.int_if_set("socket.receive.buffer.bytes")

    async def wait_for_slot(self) -> None:
        """Before accepting: block while max.connections are open."""
        if self.slots is not None:
            await self.slots.acquire()

    def admit(self, address: str) -> bool:
        """Count a connection from address; False (not counted) if that address is at its limit."""
        if self.open[address] >= self.overrides.get(address, self.per_ip):
            return False
        self.open[address] += 1
        return True

    def release(self, address: str | None) -> None:
        """A connection closed (address None: it was refused, only its slot comes back)."""
        if address is not None:
            self.open[address] -= 1
            if not self.open[address]:
                del self.open[address]
        if self.slots is not None:
            self.slots.release()

    def configure(self, sock: trio.socket.SocketType) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for option, size in ((socket.SO_SNDBUF, self.send_buffer), (socket.SO_RCVBUF, self.receive_buffer)):
            if size is not None and size >= 0:  # -1: the OS's, as in Kafka
                sock.setsockopt(socket.SOL_SOCKET, option, size)
