"""Listener settings: Kafka's keys and rules, and a refusal to start where wirekafka cannot do
what a setting asks (a TLS or SASL listener, a second listener, TLS to ZooKeeper)."""

from __future__ import annotations

import pytest

from wirekafka.config import ConfigError, build_config


def _refused(**props: str) -> str:
    with pytest.raises(ConfigError) as err:
        build_config({"log.dirs": "/tmp/unused", **props})
    return str(err.value)


def test_plaintext_listeners_under_any_mapped_name_are_served() -> None:
    cfg = build_config({"log.dirs": "/tmp/unused", "listeners": "CLIENT://127.0.0.1:9192",
                        "listener.security.protocol.map": "CLIENT:PLAINTEXT",
                        "inter.broker.listener.name": "CLIENT"})
    assert (cfg.listener.name, cfg.listener.port) == ("CLIENT", 9192)
    build_config({"log.dirs": "/tmp/unused", "security.inter.broker.protocol": "PLAINTEXT"})


@pytest.mark.parametrize("listener, protocol", [("SSL", "SSL"), ("SASL_PLAINTEXT", "SASL_PLAINTEXT"),
                                                ("SASL_SSL", "SASL_SSL")])
def test_tls_and_sasl_listeners_stop_start_up(listener: str, protocol: str) -> None:
    assert _refused(listeners=f"{listener}://127.0.0.1:9093") == (
        f"listener {listener} uses {protocol}: wirekafka serves PLAINTEXT listeners only (no TLS, no SASL)")
    assert "uses SSL" in _refused(**{"listeners": "EXTERNAL://127.0.0.1:9093",
                                     "listener.security.protocol.map": "EXTERNAL:SSL"})


def test_listener_rules_are_kafkas() -> None:
    assert _refused(listeners="CLIENT://127.0.0.1:9093") == "No security protocol defined for listener CLIENT"
    assert _refused(listeners="PLAINTEXT://127.0.0.1:9093,INTERNAL://127.0.0.1:9094",
                    **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"}) == (
        "wirekafka serves one listener, and listeners names 2: PLAINTEXT, INTERNAL")
    assert _refused(**{"advertised.listeners": "OTHER://h:1"}).startswith(
        "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. "
        "Found OTHER.")
    assert _refused(**{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}) == (
        "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    assert _refused(**{"inter.broker.listener.name": "INTERNAL"}).startswith(
        "inter.broker.listener.name must be a listener name defined in advertised.listeners.")
    assert _refused(**{"security.inter.broker.protocol": "SSL"}).startswith(
        "inter.broker.listener.name must be a listener name defined in advertised.listeners.")
    assert "improperly formatted" in _refused(**{"listener.security.protocol.map": "PLAINTEXT"})


def test_tls_to_zookeeper_stops_start_up() -> None:
    assert _refused(**{"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1",
                       "zookeeper.ssl.client.enable": "true"}).startswith(
        "zookeeper.ssl.client.enable is true, but wirekafka's ZooKeeper client has no TLS")
    build_config({"log.dirs": "/tmp/unused", "zookeeper.ssl.client.enable": "true"})  # no ZooKeeper: no effect
