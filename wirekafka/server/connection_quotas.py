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

from wirekafka.broker.dynamic_config import DynamicBrokerConfigs
from wirekafka.config import resolve_ip_overrides

log = logging.getLogger(__name__)


class ConnectionQuotas:
    """Open connections per peer address and in all, against the limits as they are now: they
    are dynamic broker configs, so a change applies to the next accept (connections already open
    stay, as in Kafka)."""

    def __init__(self, settings: DynamicBrokerConfigs) -> None:
        self._settings = settings
        self.open: Counter[str] = Counter()
        self.taken = 0  # connections open, and accepts under way
        self._freed = trio.Event()  # set (and replaced) when a slot may have come free
        static = settings.static
        self.send_buffer = static.int_if_set("socket.send.buffer.bytes")
        self.receive_buffer = static.int_if_set("socket.receive.buffer.bytes")
        self.reconfigure()
        settings.observe(self.reconfigure)

    def reconfigure(self) -> None:
        """Read the limits again (the dynamic broker configs changed)."""
        current = self._settings
        self.per_ip = current.current_int("max.connections.per.ip")
        self.max_total = current.current_int("max.connections")
        self.overrides, unresolved = resolve_ip_overrides(str(current.current("max.connections.per.ip.overrides")))
        for host in unresolved:
            log.warning("max.connections.per.ip.overrides: %s does not resolve; its entry is ignored", host)
        self._wake()

    def _wake(self) -> None:
        self._freed.set()
        self._freed = trio.Event()

    async def wait_for_slot(self) -> None:
        """Before accepting: wait while max.connections are open."""
        while self.taken >= self.max_total:
            await self._freed.wait()
        self.taken += 1

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
        self.taken -= 1
        if self.taken < self.max_total:
            self._wake()

    def configure(self, sock: trio.socket.SocketType) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for option, size in ((socket.SO_SNDBUF, self.send_buffer), (socket.SO_RCVBUF, self.receive_buffer)):
            if size is not None and size >= 0:  # -1: the OS's, as in Kafka
                sock.setsockopt(socket.SOL_SOCKET, option, size)
