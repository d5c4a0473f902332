"""The per-IP connection creation rate (server/connection_quotas.py, Kafka's ConnectionQuotas with
connection_creation_rate quotas of ip entities), on an injected clock."""

from __future__ import annotations

import ipaddress

import socket

import trio
import trio.testing

from wirekafka.broker.quotas.entities import CONNECTION_CREATION_RATE, IP, ClientQuotas, entity_of
from wirekafka.config.dynamic import DynamicBrokerConfigs
from wirekafka.config.loader import build_config
from wirekafka.server.connection_quotas import ConnectionQuotas, hold_then_close

A, B, C = "127.0.0.1", "127.0.0.2", "127.0.0.3"


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> float:
        return self.ms / 1000


def _setup(**overrides: str) -> tuple[ConnectionQuotas, ClientQuotas, Clock]:
    config = build_config({"log.dirs": "/tmp/unused", **overrides})
    client_quotas, clock = ClientQuotas(), Clock()
    return ConnectionQuotas(DynamicBrokerConfigs(1, config), client_quotas, clock), client_quotas, clock


def _set(client_quotas: ClientQuotas, ip: str | None, rate: float | None) -> None:
    client_quotas.apply({entity_of([(IP, ip)]): {CONNECTION_CREATION_RATE: rate}})


def _accepts(quotas: ConnectionQuotas, address: str, count: int) -> list[int]:
    """The throttle times of `count` connections from address accepted now."""
    async def main() -> list[int]:
        out = []
        for _ in range(count):
            await quotas.wait_for_slot()
            out.append(await quotas.throttle_ms(address))
        return out
    return trio.run(main)


def test_a_fresh_address_may_open_ten_times_its_quota_before_it_is_throttled() -> None:
    quotas, client_quotas, clock = _setup()
    _set(client_quotas, A, 2)
    # measured over the padded window of (11 - 1) x 1 s: 20 connections are 2.0/s, within 2
    assert _accepts(quotas, A, 20) == [0] * 20
    # the 21st is 2.1/s: held (2.1 - 2) / 2 x 10000 ms, and taken back off the rate, so the
    # next one is measured the same
    assert _accepts(quotas, A, 3) == [500, 500, 500]
    clock.ms += 200  # the window is 10.2 s now: 21 / 10.2 = 2.06/s
    assert _accepts(quotas, A, 1) == [300]
    clock.ms += 300  # 21 / 10.5 = 2.0/s: within the quota again, and the 21st stays recorded
    assert _accepts(quotas, A, 2) == [0, 500]
    clock.ms += 11_000  # every sample is older than 11 windows: a fresh start
    assert _accepts(quotas, A, 21)[-2:] == [0, 500]


def test_throttled_connections_are_not_counted_as_open() -> None:
    quotas, client_quotas, _ = _setup(**{"max.connections.per.ip": "25"})
    _set(client_quotas, A, 1)
    for throttle in _accepts(quotas, A, 12):
        if throttle == 0:
            assert quotas.admit(A)
    assert quotas.taken == 10 and quotas.open[A] == 10  # two held connections gave their slot back


def test_throttle_time_is_capped_at_one_window_and_a_change_applies_at_once() -> None:
    quotas, client_quotas, _ = _setup()
    _set(client_quotas, A, 2)
    assert _accepts(quotas, A, 20) == [0] * 20
    _set(client_quotas, A, 1)  # the new bound over the rate measured so far: 2.1/s against 1
    assert _accepts(quotas, A, 1) == [1000]  # (2.1 - 1) / 1 x 10000 ms, capped at 1000
    _set(client_quotas, A, 5)
    assert _accepts(quotas, A, 30) == [0] * 30


def test_the_cap_is_the_quota_window() -> None:
    quotas, client_quotas, _ = _setup(**{"quota.window.size.seconds": "2", "quota.window.num": "3"})
    _set(client_quotas, A, 3)
    # padded window (3 - 1) x 2 s: 12 connections within 3/s, the 13th held (3.25 - 3) / 3 x 4000 ms
    assert _accepts(quotas, A, 13) == [0] * 12 + [333]
    _set(client_quotas, A, 1)
    assert _accepts(quotas, A, 1) == [2000]


def test_the_default_ip_entity_bounds_each_address_on_its_own_and_an_own_quota_wins() -> None:
    quotas, client_quotas, _ = _setup()
    _set(client_quotas, None, 1)
    _set(client_quotas, A, 3)
    assert _accepts(quotas, A, 31) == [0] * 30 + [333]
    assert _accepts(quotas, B, 11) == [0] * 10 + [1000]
    assert _accepts(quotas, C, 11) == [0] * 10 + [1000]  # B's connections are not C's
    assert quotas.ip_rates.quota("::ffff:127.0.0.1") == 3  # an IPv4-mapped peer is its IPv4 address
    assert quotas.ip_rates.quota("?") is None


def test_removing_the_quota_stops_throttling() -> None:
    quotas, client_quotas, _ = _setup()
    _set(client_quotas, None, 1)
    assert _accepts(quotas, B, 11)[-1] == 1000
    _set(client_quotas, None, None)
    assert _accepts(quotas, B, 50) == [0] * 50
    _set(client_quotas, B, 4)  # its sensor kept the 10 connections recorded before; those 50 were not
    assert _accepts(quotas, B, 31) == [0] * 30 + [250]


def test_without_a_quota_nothing_is_recorded() -> None:
    quotas, client_quotas, _ = _setup()
    _set(client_quotas, B, 1)  # a quota for another address only
    assert _accepts(quotas, A, 100) == [0] * 100
    assert ipaddress.ip_address(A) not in quotas.ip_rates._sensors
    _set(client_quotas, A, 1)  # a fresh rate: the 100 before were never counted
    assert _accepts(quotas, A, 11) == [0] * 10 + [1000]


def test_a_quota_of_zero_holds_every_connection_for_a_window() -> None:
    quotas, client_quotas, _ = _setup()
    _set(client_quotas, A, 0)  # only a ZooKeeper cluster stores it
    assert _accepts(quotas, A, 3) == [1000] * 3


def test_a_host_name_entity_applies_to_the_address_it_resolves_to() -> None:
    quotas, client_quotas, _ = _setup()
    localhost = socket.gethostbyname("localhost")
    _set(client_quotas, "localhost", 1)
    assert _accepts(quotas, localhost, 11) == [0] * 10 + [1000]
    _set(client_quotas, "no-such-host.invalid", 1)  # does not resolve: ignored
    assert _accepts(quotas, localhost, 1) == [1000]


def test_a_held_connection_stays_open_unread_then_closes() -> None:
    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        client = await trio.open_tcp_stream("127.0.0.1", port)
        server = await listeners[0].accept()
        await client.send_all(b"hello")
        async with trio.open_nursery() as nursery:
            start = trio.current_time()
            nursery.start_soon(hold_then_close, server, 300)
            try:
                assert await client.receive_some(10) == b""
            except trio.BrokenResourceError:  # reset: the request was never read
                pass
            assert trio.current_time() - start >= 0.29
        await client.aclose()
        await listeners[0].aclose()

    trio.run(main)


def _creation_delays(quotas: ConnectionQuotas, clock: Clock, listener: str, count: int) -> list[int]:
    """How long accepting on listener pauses after each of `count` connections (ms, on the clock)."""
    async def main() -> list[int]:
        out = []
        for _ in range(count):
            began = trio.current_time()
            await quotas.wait_for_creation_rate(listener)
            out.append(round((trio.current_time() - began) * 1000))
            clock.ms += out[-1]
        return out
    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_broker_connection_creation_rate_delays_accepting() -> None:
    quotas, _, clock = _setup(**{"max.connection.creation.rate": "5"})
    # 50 connections in the padded 10 s window are 5/s; the 51st is 5.1/s: (5.1 - 5) / 5 x 10 s
    assert _creation_delays(quotas, clock, "PLAINTEXT", 51) == [0] * 50 + [200]
    # then 52 over 10.2 s: (52 / 10.2 - 5) / 5 x 10.2 s, 200 ms again: one connection per pause
    assert _creation_delays(quotas, clock, "PLAINTEXT", 2) == [200, 200]


def test_a_listeners_own_rate_and_the_inter_broker_listeners_exemption() -> None:
    two = {"listeners": "CLIENT://127.0.0.1:0,REPLICATION://127.0.0.1:0",
           "listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
           "inter.broker.listener.name": "REPLICATION", "max.connection.creation.rate": "1"}
    quotas, _, clock = _setup(**two)
    assert _creation_delays(quotas, clock, "REPLICATION", 30) == [0] * 30  # not counted on the broker's rate
    quotas, _, clock = _setup(**{**two, "max.connection.creation.rate": "100",
                                 "listener.name.client.max.connection.creation.rate": "2"})
    assert _creation_delays(quotas, clock, "CLIENT", 21) == [0] * 20 + [500]
    assert _creation_delays(quotas, clock, "REPLICATION", 5) == [0] * 5  # its own listener has no limit
