"""Connection limits and socket options: Kafka's ConnectionQuotas and its listener socket settings.

Checked in Kafka's order on every accept:
- max.connections: the broker stops accepting while that many connections are open, so further
  clients wait in the listen backlog (socket.listen.backlog.size when set, server/tcp.py) as they
  do on Kafka.
- max.connection.creation.rate (dynamic) and listener.name.<l>.max.connection.creation.rate: each
  accepted connection counts on the broker's Rate (except on the inter-broker listener when there
  are others) and its listener's; over either bound, accepting on that listener pauses for the
  throttle time (at most one window) and the connection is then served, not closed.
- connection_creation_rate (a client quota of an ip entity, or of the default ip entity for an
  address without its own, KIP-612): each accepted connection records 1 on its address's own
  Rate (quota.window.num samples of quota.window.size.seconds; addresses never share one). A
  connection that takes the rate over the quota is taken back off it, left open and unread for
  the throttle time (Kafka's QuotaUtils.throttleTime, at most one window, 1000 ms by default),
  then closed; it is not counted as open. A quota change applies to the next accept, over the
  rate measured so far; without a quota for an address nothing is recorded for it.
- max.connections.per.ip (and per-address overrides, max.connections.per.ip.overrides
  "host:count,..."): a connection from an address already at its limit is closed as soon as it is
  accepted, as Kafka's acceptor closes it (TooManyConnectionsException).
- socket.send.buffer.bytes / socket.receive.buffer.bytes: SO_SNDBUF / SO_RCVBUF of accepted
  sockets when set (-1: the OS's). Unset, wirekafka leaves Linux's autotuning alone instead of
  Kafka's 100 KB send buffer, which slowed large fetch answers several times over.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import time
from collections import Counter
from typing import Callable, Iterable

import trio

from wirekafka.broker.quotas.entities import CONNECTION_CREATION_RATE, IP, ClientQuotas
from wirekafka.config.dynamic import DynamicBrokerConfigs
from wirekafka.broker.quotas.stats import INT_MAX, RateSensors, violation_ms
from wirekafka.config.ip_overrides import resolve_ip_overrides

log = logging.getLogger(__name__)
CREATION_RATE = "max.connection.creation.rate"


class ConnectionQuotas:
    """Open connections per peer address and in all, against the limits as they are now: they
    are dynamic broker configs, so a change applies to the next accept (connections already open
    stay, as in Kafka)."""

    def __init__(self, settings: DynamicBrokerConfigs, client_quotas: ClientQuotas | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self.open: Counter[str] = Counter()
        self.taken = 0  # connections open, and accepts under way
        self._freed = trio.Event()  # set (and replaced) when a slot may have come free
        static = settings.static
        self.send_buffer = static.int_if_set("socket.send.buffer.bytes")
        self.receive_buffer = static.int_if_set("socket.receive.buffer.bytes")
        # quota.window.* are read-only broker configs in Kafka too
        samples, window_s = static.int("quota.window.num"), static.int("quota.window.size.seconds")
        self.ip_rates = IpConnectionRates(client_quotas, samples, window_s, clock)
        self._clock = clock
        self._creation: RateSensors[str | None] = RateSensors(samples, window_s * 1000)  # None: the broker's
        self._max_creation_throttle_ms = window_s * 1000
        listeners = [lst.name for lst in static.listeners]
        self._listener_rates = {name: static.listener_own_int(name, CREATION_RATE) for name in listeners}
        # with several listeners, the inter-broker one is left out of the broker-wide rate
        self._exempt = static.inter_broker_listener if len(listeners) > 1 else None
        self.reconfigure()
        settings.observe(self.reconfigure)

    def reconfigure(self) -> None:
        """Read the limits again (the dynamic broker configs changed)."""
        current = self._settings
        self.per_ip = current.current_int("max.connections.per.ip")
        self.max_total = current.current_int("max.connections")
        self.creation_rate = current.current_int(CREATION_RATE)
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

    async def wait_for_creation_rate(self, listener: str) -> None:
        """After an accept, before the per-address checks: count the connection on the broker's
        and the listener's connection creation rates (max.connection.creation.rate and its
        listener.name.<l>. setting); over either, accepting on this listener waits the throttle
        time (at most one quota window), and the accepted connection is served after it, as
        Kafka's acceptor blocks."""
        now = int(self._clock() * 1000)
        delay = self._record_creation(listener, self._listener_rates.get(listener), now)
        if listener != self._exempt:
            delay = max(delay, self._record_creation(None, self.creation_rate, now))
        if delay > 0:
            log.debug("delaying accepts on %s for %d ms: connection creation rate", listener, delay)
            await trio.sleep(delay / 1000)

    def _record_creation(self, key: str | None, bound: int | None, now: int) -> int:
        rate = self._creation.get(key, now)
        rate.record(1.0, now)
        if bound is None or bound >= INT_MAX:
            return 0
        return violation_ms(rate, bound, now, self._max_creation_throttle_ms)

    async def throttle_ms(self, address: str) -> int:
        """After wait_for_slot and the accept, before admit: record the connection on its
        address's connection rate. Over the quota (> 0): the connection is not counted (its slot
        comes back here); the caller keeps it open and unread that many ms, then closes it
        (hold_then_close)."""
        throttle = await self.ip_rates.throttle_ms(address)
        if throttle > 0:
            self.release(None)
        return throttle

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


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class IpConnectionRates:
    """Kafka's per-IP connection creation rate (ConnectionQuotas.recordIpConnectionMaybeThrottle):
    the connection_creation_rate quotas of ip entities, an address's own or else the default ip
    entity's, each address measured on its own Rate. An ip entity named by a host name applies to
    the address it resolves to when the quota is read (as Kafka resolves it when the quota is
    set); the lookup runs in a worker thread."""

    def __init__(self, quotas: ClientQuotas | None, samples: int, window_s: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._quotas = quotas
        self.max_throttle_ms = window_s * 1000  # QuotaUtils.boundedThrottleTime's cap
        self._clock = clock
        self._version = -1
        self._own: dict[Address, int] = {}
        self._default = INT_MAX  # Integer.MAX_VALUE: no quota
        self._resolved: dict[str, Address | None] = {}  # host name -> its address (None: unresolvable)
        self._sensors: RateSensors[Address] = RateSensors(samples, window_s * 1000)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def refresh(self) -> None:
        """Read the ip quotas again if they changed since the last read. Returns without a
        checkpoint unless a host name must be looked up."""
        while self._quotas is not None and self._version != self._quotas.version:
            pending = [name for name in self._ip_quotas() if name is not None
                       and _literal(name) is None and name not in self._resolved]
            if pending:
                self._resolved.update(await trio.to_thread.run_sync(_resolve_all, pending))
                continue  # the quotas may have changed meanwhile
            self._load()

    def _ip_quotas(self) -> dict[str | None, float]:
        assert self._quotas is not None
        return {dict(entity)[IP]: quotas[CONNECTION_CREATION_RATE]
                for entity, quotas in self._quotas.entities().items()
                if len(entity) == 1 and entity[0][0] == IP and CONNECTION_CREATION_RATE in quotas}

    def _load(self) -> None:
        assert self._quotas is not None
        version = self._quotas.version
        ip_quotas = self._ip_quotas()
        self._resolved = {name: address for name, address in self._resolved.items() if name in ip_quotas}
        self._default = INT_MAX
        self._own = {}
        for name, value in ip_quotas.items():
            if name is None:
                self._default = _java_int(value)
                continue
            address = _literal(name) or self._resolved.get(name)
            if address is None:
                log.warning("connection_creation_rate of ip %s: %s does not resolve; the quota is ignored", name, name)
                continue
            self._own[address] = _java_int(value)
        self._version = version

    def quota(self, address: str) -> int | None:
        """The connection rate bounding address, None for none (Kafka's Integer.MAX_VALUE)."""
        ip = _literal(address)
        if ip is None:
            return None
        quota = self._own.get(ip, self._default)
        return None if quota == INT_MAX else quota

    async def throttle_ms(self, address: str) -> int:
        """Record a connection accepted from address; how long to hold it before closing it
        (0: within its quota, or no quota; it then stays recorded)."""
        await self.refresh()
        return self.record(address)

    def record(self, address: str) -> int:
        """As throttle_ms, with the quotas as last read (refresh)."""
        bound = self.quota(address)
        if bound is None:
            return 0
        ip = _literal(address)
        assert ip is not None
        now = self.now_ms()
        rate = self._sensors.get(ip, now)
        rate.record(1.0, now)
        throttle = violation_ms(rate, bound, now, self.max_throttle_ms)  # a bound of 0 (ZooKeeper mode) gives the cap
        if throttle > 0:
            rate.record(-1.0, now)  # the connection is refused: it does not count
        return throttle


async def hold_then_close(stream: trio.SocketStream, hold_ms: int) -> None:
    """A connection over its address's connection rate: open and unread for hold_ms, then
    closed, as Kafka's acceptor keeps it (closed at once when accepting stops)."""
    try:
        await trio.sleep(hold_ms / 1000)
    finally:
        await trio.aclose_forcefully(stream)


def _literal(address: str) -> Address | None:
    """An address in text as the one Java's InetAddress would make (an IPv4-mapped IPv6 address
    is the IPv4 one; a zone id is left out, as InetAddress.equals leaves it), None if not one."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _resolve_all(names: Iterable[str]) -> dict[str, Address | None]:
    """Host names as InetAddress.getByName resolves them: the first IPv4 address, else the first
    (Java prefers IPv4 by default). Runs in a worker thread."""
    out: dict[str, Address | None] = {}
    for name in names:
        try:
            infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            out[name] = None
            continue
        ordered = [info for info in infos if info[0] == socket.AF_INET] + infos
        out[name] = _literal(str(ordered[0][4][0])) if ordered else None
    return out


def _java_int(value: float) -> int:
    """Scala's Double.toInt, as Kafka reads a connection_creation_rate: truncated, saturating."""
    if math.isnan(value):
        return 0
    return int(max(min(value, INT_MAX), -(2**31)))
