"""Listener settings: Kafka's keys and rules, and a refusal to start where wirekafka cannot do
what a setting asks (a SASL mechanism other than PLAIN, TLS to ZooKeeper)."""

from __future__ import annotations

import pytest

from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config


def _refused(**props: str) -> str:
    with pytest.raises(ConfigError) as err:
        build_config({"log.dirs": "/tmp/unused", **props})
    return str(err.value)


def test_plaintext_listeners_under_any_mapped_name_are_served() -> None:
    cfg = build_config({"log.dirs": "/tmp/unused", "listeners": "CLIENT://127.0.0.1:9192",
                        "listener.security.protocol.map": "CLIENT:PLAINTEXT",
                        "inter.broker.listener.name": "CLIENT"})
    assert [(lst.name, lst.port) for lst in cfg.listeners] == [("CLIENT", 9192)]
    assert cfg.inter_broker_listener == "CLIENT"
    build_config({"log.dirs": "/tmp/unused", "security.inter.broker.protocol": "PLAINTEXT"})


def test_several_listeners_each_advertised_unless_advertised_listeners_says_otherwise() -> None:
    base = {"log.dirs": "/tmp/unused", "listeners": "CLIENT://127.0.0.1:9192,REPLICATION://:9193",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT"}
    cfg = build_config({**base, "inter.broker.listener.name": "replication"})
    assert [(lst.name, lst.host, lst.port) for lst in cfg.listeners] == [("CLIENT", "127.0.0.1", 9192),
                                                                          ("REPLICATION", "", 9193)]
    # a listener on all interfaces is advertised on loopback, where wirekafka is reached
    assert [(lst.name, lst.host, lst.port) for lst in cfg.advertised_listeners] == [
        ("CLIENT", "127.0.0.1", 9192), ("REPLICATION", "127.0.0.1", 9193)]
    assert cfg.inter_broker_listener == "REPLICATION"
    assert cfg.security_protocol("REPLICATION") == "PLAINTEXT"
    # advertised.listeners names the advertised ones: a listener left out is bound, not advertised
    cfg = build_config({**base, "inter.broker.listener.name": "CLIENT",
                        "advertised.listeners": "CLIENT://localhost:29192"})
    assert [(lst.name, lst.host, lst.port) for lst in cfg.advertised_listeners] == [("CLIENT", "localhost", 29192)]
    assert len(cfg.listeners) == 2
    # without inter.broker.listener.name: the first listener on security.inter.broker.protocol
    assert build_config(base).inter_broker_listener == "CLIENT"


def test_unknown_security_protocols_stop_start_up() -> None:
    assert _refused(**{"listeners": "EXTERNAL://127.0.0.1:9093", "listener.security.protocol.map": "EXTERNAL:TLS"}) == (
        "Invalid value TLS for listener EXTERNAL's security protocol: one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
    # an SSL listener without a key store (tests/test_tls_settings.py has the TLS settings)
    assert _refused(listeners="SSL://127.0.0.1:9093").startswith("listener SSL: an SSL listener needs a key store")


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SASL = {"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}


def test_sasl_plaintext_listeners_serve_plain_with_the_listeners_jaas_config() -> None:
    cfg = build_config({"log.dirs": "/tmp/unused", **SASL})
    assert cfg.sasl_mechanisms("SASL_PLAINTEXT") == ("PLAIN",)
    assert cfg.jaas_options("SASL_PLAINTEXT", "PLAIN") == {"username": "admin", "password": "admin-secret",
                                                          "user_admin": "admin-secret", "user_alice": "alice-secret"}
    # a listener's own mechanisms win over sasl.enabled.mechanisms; prefixes are case-insensitive
    cfg = build_config({"log.dirs": "/tmp/unused", **SASL, "sasl.enabled.mechanisms": "GSSAPI",
                        "listener.name.SASL_PLAINTEXT.sasl.enabled.mechanisms": "PLAIN"})
    assert cfg.sasl_mechanisms("SASL_PLAINTEXT") == ("PLAIN",)


JAAS_FILE = """
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
    org.apache.kafka.common.security.scram.ScramLoginModule required username="scram-admin" password="s";
};
internal.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required
    username="broker" password="broker-secret" user_broker="broker-secret"; };
Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="kafka" password="z"; };
"""


def test_sasl_listeners_read_kafkas_static_jaas_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without listener.name.<l>.<mechanism>.sasl.jaas.config a listener reads the JAAS file
    KAFKA_OPTS names, as Kafka's brokers do: the `<listener>.KafkaServer` section, else
    `KafkaServer`, and in it the module of the mechanism's class."""
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(JAAS_FILE)
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config={path}")
    props = {"log.dirs": "/tmp/unused", "listeners": "SASL_PLAINTEXT://127.0.0.1:9093,INTERNAL://127.0.0.1:9094",
             "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
             "inter.broker.listener.name": "INTERNAL", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
             "sasl.mechanism.inter.broker.protocol": "PLAIN"}
    cfg = build_config(props)
    assert cfg.jaas_options("SASL_PLAINTEXT", "PLAIN")["user_alice"] == "alice-secret"
    assert cfg.jaas_options("SASL_PLAINTEXT", "SCRAM-SHA-256") == {"username": "scram-admin", "password": "s"}
    assert cfg.inter_broker_sasl() == ("PLAIN", {"username": "broker", "password": "broker-secret",
                                                 "user_broker": "broker-secret"})  # internal.KafkaServer wins
    # a listener's own sasl.jaas.config wins over the file
    cfg = build_config({**props, "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
    assert "username" in cfg.jaas_options("SASL_PLAINTEXT", "PLAIN")
    path.write_text(JAAS_FILE.split("internal.KafkaServer")[0].replace("KafkaServer", "Other"))
    assert _refused(**{k: v for k, v in props.items() if k != "log.dirs"}) == (
        "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration. "
        f"System property 'java.security.auth.login.config' is {path}")


def test_sasl_listener_rules() -> None:
    # Kafka's default mechanism, GSSAPI (Kerberos), needs its JAAS login module (a keytab's)
    assert _refused(**{**SASL, "sasl.enabled.mechanisms": "GSSAPI"}).startswith(
        "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry")
    # OAUTHBEARER needs its JAAS login module too
    assert _refused(**{**SASL, "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"}).startswith(
        "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry")
    # each mechanism needs its own JAAS login module
    assert _refused(**{**SASL, "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}).startswith(
        "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry")
    build_config({"log.dirs": "/tmp/unused", **SASL, "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                  "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                      "org.apache.kafka.common.security.scram.ScramLoginModule required;"})
    no_jaas = {k: v for k, v in SASL.items() if "jaas" not in k}
    assert _refused(**no_jaas) == (
        "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration. "
        "System property 'java.security.auth.login.config' is not set")
    assert _refused(**{**SASL, "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS + JAAS}) == (
        "JAAS config property contains 2 login modules, should be 1 module")
    # re-authentication: the broker's setting, or the listener's own for a mechanism
    cfg = build_config({"log.dirs": "/tmp/unused", **SASL, "connections.max.reauth.ms": "60000"})
    assert cfg.reauth_ms("SASL_PLAINTEXT", "PLAIN") == 60000
    cfg = build_config({"log.dirs": "/tmp/unused", **SASL, "connections.max.reauth.ms": "60000",
                        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "5000"})
    assert cfg.reauth_ms("SASL_PLAINTEXT", "PLAIN") == 5000
    # SASL between brokers: the inter-broker mechanism must be enabled on that listener
    assert _refused(**{**SASL, "inter.broker.listener.name": "SASL_PLAINTEXT"}) == (
        "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for "
        "inter-broker communication")
    build_config({"log.dirs": "/tmp/unused", **SASL, "inter.broker.listener.name": "SASL_PLAINTEXT",
                  "sasl.mechanism.inter.broker.protocol": "PLAIN"})


def test_listener_rules_are_kafkas() -> None:
    assert _refused(listeners="CLIENT://127.0.0.1:9093") == "No security protocol defined for listener CLIENT"
    assert _refused(**{"advertised.listeners": "PLAINTEXT://h:1,OTHER://h:2"}).startswith(
        "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. "
        "Found PLAINTEXT,OTHER.")
    assert _refused(**{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}) == (
        "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    assert _refused(**{"inter.broker.listener.name": "INTERNAL"}).startswith(
        "inter.broker.listener.name must be a listener name defined in advertised.listeners.")
    assert _refused(**{"security.inter.broker.protocol": "SSL"}).startswith(
        "inter.broker.listener.name must be a listener name defined in advertised.listeners.")
    assert "improperly formatted" in _refused(**{"listener.security.protocol.map": "PLAINTEXT"})
    # the inter-broker listener must be advertised, and is checked first
    assert _refused(listeners="PLAINTEXT://127.0.0.1:9093,INTERNAL://127.0.0.1:9094",
                    **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
                       "advertised.listeners": "INTERNAL://127.0.0.1:9094"}) == (
        "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
        "The valid options based on currently configured listeners are INTERNAL")
    assert _refused(**{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}) == (
        "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.")
    assert _refused(listeners="PLAINTEXT://0.0.0.0:9092") == (
        "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.")


PAIR = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"}


@pytest.mark.parametrize("listeners, message", [
    ("PLAINTEXT://127.0.0.1:9093,plaintext://127.0.0.1:9094",
     "Each listener must have a different name, listeners: PLAINTEXT://127.0.0.1:9093,plaintext://127.0.0.1:9094"),
    ("PLAINTEXT://:9093,INTERNAL://localhost:9093",
     "Each listener must have a different port, listeners: PLAINTEXT://:9093,INTERNAL://localhost:9093"),
    ("PLAINTEXT://127.0.0.1:9093,INTERNAL://127.0.0.2:9093",
     "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: "
     "PLAINTEXT://127.0.0.1:9093,INTERNAL://127.0.0.2:9093, port: 9093"),
    ("PLAINTEXT://127.0.0.1:9093,INTERNAL://localhost:9093",
     "Each listener must have a different port unless exactly one listener has an IPv4 address and the other "
     "IPv6 address, listeners: PLAINTEXT://127.0.0.1:9093,INTERNAL://localhost:9093, port: 9093"),
])
def test_listener_names_and_ports_are_distinct_as_in_kafka(listeners: str, message: str) -> None:
    assert _refused(listeners=listeners, **PAIR) == message


def test_ipv4_and_ipv6_listeners_may_share_a_port_and_port_0_may_repeat() -> None:
    build_config({"log.dirs": "/tmp/unused", "listeners": "PLAINTEXT://127.0.0.1:9093,INTERNAL://[::1]:9093", **PAIR})
    build_config({"log.dirs": "/tmp/unused", "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0", **PAIR})


def test_zookeeper_tls_keys_are_kept_for_the_zookeeper_client(caplog: pytest.LogCaptureFixture) -> None:
    """zk_security.py reads them (tests/test_zk_security.py); without zookeeper.connect they do nothing."""
    tls = {"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.keystore.location": "/etc/zk.p12"}
    cfg = build_config({"log.dirs": "/tmp/unused", "zookeeper.connect": "127.0.0.1:2181", "broker.id": "1", **tls})
    assert cfg.bool("zookeeper.ssl.client.enable") and cfg["zookeeper.ssl.keystore.location"] == "/etc/zk.p12"
    assert "has no effect" not in caplog.text
    build_config({"log.dirs": "/tmp/unused", **tls})
    assert "zookeeper.ssl.keystore.location=/etc/zk.p12 has no effect in wirekafka: there is no ZooKeeper without " \
           "zookeeper.connect" in caplog.text
    assert _refused(**{"zookeeper.ssl.crl.enable": "maybe"}).startswith(
        "Invalid value maybe for configuration zookeeper.ssl.crl.enable")


def test_a_listener_on_port_0_is_listed_and_advertised_on_its_bound_port() -> None:
    cfg = build_config({"log.dirs": "/tmp/unused", "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:9094",
                        "advertised.listeners": "PLAINTEXT://localhost:0,INTERNAL://127.0.0.1:9094", **PAIR})
    bound = cfg.with_bound_ports({"PLAINTEXT": 40123, "INTERNAL": 9094})
    assert [(lst.name, lst.port) for lst in bound.listeners] == [("PLAINTEXT", 40123), ("INTERNAL", 9094)]
    assert [(lst.host, lst.port) for lst in bound.advertised_listeners] == [("localhost", 40123), ("127.0.0.1", 9094)]
    assert bound["listeners"] == cfg["listeners"]  # the value as given, for DescribeConfigs
