"""Per-address connection counting (server/connection_quotas.py) and the settings behind it."""

from __future__ import annotations

import pytest
import trio

from wirekafka.config.dynamic import DEFAULT_ENTITY, DynamicBrokerConfigs
from wirekafka.startup_errors import ConfigError
from wirekafka.config.ip_overrides import parse_ip_overrides
from wirekafka.config.loader import build_config
from wirekafka.server.connection_quotas import ConnectionQuotas


def test_overrides_parse_hosts_and_addresses() -> None:
    assert parse_ip_overrides("") == {}
    assert parse_ip_overrides("127.0.0.1:5, localhost:7") == {"127.0.0.1": 7}  # localhost resolves to it
    with pytest.raises(ConfigError):
        parse_ip_overrides("127.0.0.1")
    with pytest.raises(ConfigError):
        parse_ip_overrides("127.0.0.1:many")


def test_per_address_limits_with_overrides() -> None:
    config = build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip": "2",
                           "max.connections.per.ip.overrides": "127.0.0.2:1"})
    settings = DynamicBrokerConfigs(1, config)
    quotas = ConnectionQuotas(settings)
    assert [quotas.admit("127.0.0.1") for _ in range(3)] == [True, True, False]
    assert [quotas.admit("127.0.0.2") for _ in range(2)] == [True, False]
    quotas.release("127.0.0.1")
    assert quotas.admit("127.0.0.1") and not quotas.admit("127.0.0.1")
    # the limits are dynamic broker configs: a change applies to the next connection
    settings.replace(DEFAULT_ENTITY, {"max.connections.per.ip": "3", "max.connections.per.ip.overrides": ""})
    assert quotas.admit("127.0.0.1") and quotas.admit("127.0.0.2") and not quotas.admit("127.0.0.1")


def test_max_connections_waits_for_a_slot_and_follows_changes() -> None:
    settings = DynamicBrokerConfigs(1, build_config({"log.dirs": "/tmp/unused", "max.connections": "1"}))

    async def main() -> None:
        quotas = ConnectionQuotas(settings)
        await quotas.wait_for_slot()
        with trio.move_on_after(0.05) as waited:
            await quotas.wait_for_slot()
        assert waited.cancelled_caught  # the one slot is taken
        async with trio.open_nursery() as nursery:
            nursery.start_soon(quotas.wait_for_slot)
            await trio.sleep(0.01)
            settings.replace(str(1), {"max.connections": "2"})  # a second slot: the waiter gets it
        assert quotas.taken == 2
        quotas.release(None)
        quotas.release(None)
        assert quotas.taken == 0

    trio.run(main)


def test_limit_settings_are_checked_at_start_up() -> None:
    with pytest.raises(ConfigError, match="max.connections.per.ip can be set to zero only if"):
        build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip": "0"})
    build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip": "0",
                  "max.connections.per.ip.overrides": "127.0.0.1:10"})
    with pytest.raises(ConfigError, match="Value must be at least 1024"):
        build_config({"log.dirs": "/tmp/unused", "fetch.max.bytes": "1000"})
    with pytest.raises(ConfigError, match="socket.listen.backlog.size: Value must be at least 1"):
        build_config({"log.dirs": "/tmp/unused", "socket.listen.backlog.size": "0"})
