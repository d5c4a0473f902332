"""Per-address connection counting (server/connection_quotas.py) and the settings behind it."""

from __future__ import annotations

import pytest

from wirekafka.config import ConfigError, build_config, parse_ip_overrides
from wirekafka.server.connection_quotas import ConnectionQuotas


def test_overrides_parse_hosts_and_addresses() -> None:
    assert parse_ip_overrides("") == {}
    assert parse_ip_overrides("127.0.0.1:5, localhost:7") == {"127.0.0.1": 7}  # localhost resolves to it
    with pytest.raises(ConfigError):
        parse_ip_overrides("127.0.0.1")
    with pytest.raises(ConfigError):
        parse_ip_overrides("127.0.0.1:many")


def test_per_address_limits_with_overrides() -> None:
    quotas = ConnectionQuotas(build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip": "2",
                                            "max.connections.per.ip.overrides": "127.0.0.2:1"}))
    assert [quotas.admit("127.0.0.1") for _ in range(3)] == [True, True, False]
    assert [quotas.admit("127.0.0.2") for _ in range(2)] == [True, False]
    quotas.release("127.0.0.1")
    assert quotas.admit("127.0.0.1") and not quotas.admit("127.0.0.1")
    assert quotas.slots is None  # max.connections unset: accepting never waits


def test_limit_settings_are_checked_at_start_up() -> None:
    with pytest.raises(ConfigError, match="max.connections.per.ip can be set to zero only if"):
        build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip": "0"})
    build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip": "0",
                  "max.connections.per.ip.overrides": "127.0.0.1:10"})
    with pytest.raises(ConfigError, match="Value must be at least 1024"):
        build_config({"log.dirs": "/tmp/unused", "fetch.max.bytes": "1000"})
    with pytest.raises(ConfigError, match="socket.listen.backlog.size: Value must be at least 1"):
        build_config({"log.dirs": "/tmp/unused", "socket.listen.backlog.size": "0"})
