"""Secrets in configuration never reach a log line or a start-up error: Kafka's PASSWORD keys
(bare, behind a listener's or a mechanism's prefix, or another client's), JAAS configs and inline
PEM keys are shown as "[hidden]", as Kafka's Password prints them. Each configuration here is
read by build_config with every record of every logger captured; the broker-level scan (a real
process, DescribeConfigs, dynamic configs) is compat-tests/test_secrets_broker.py."""

from __future__ import annotations

import logging
import re
import zlib

import pytest

from wirekafka.config import dynamic, sensitive
from wirekafka.config.loader import build_config
from wirekafka.startup_errors import ConfigError

JAAS_SECRET = "jaas-pw-7f3a"
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
              f"password=\"{JAAS_SECRET}\" user_admin=\"{JAAS_SECRET}\";")
SASL_LISTENER = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
                 "security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN"}


def _secret(name: str) -> str:
    return f"s3cret{zlib.crc32(name.encode()):08x}"  # one distinct, recognisable string per name


# Configurations a broker starts with, each logging something about the secret keys it holds.
STARTING = {
    "a ZooKeeper TLS password without ZooKeeper": {
        "zookeeper.ssl.keystore.password": _secret("zk-ks"), "zookeeper.ssl.truststore.password": _secret("zk-ts")},
    "a JAAS config for the broker as a whole (Kafka-only key)": {"sasl.jaas.config": PLAIN_JAAS},
    "a listener's JAAS config": SASL_LISTENER,
    "the password encoder's secrets": {"password.encoder.secret": _secret("pe"),
                                       "password.encoder.old.secret": _secret("pe-old")},
    "AclAuthorizer's own ZooKeeper TLS password": {
        "zookeeper.connect": "127.0.0.1:1", "broker.id": "1",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "authorizer.zookeeper.ssl.keystore.password": _secret("acl-zk")},
}
LOGGED = {"a ZooKeeper TLS password without ZooKeeper", "a JAAS config for the broker as a whole (Kafka-only key)",
          "AclAuthorizer's own ZooKeeper TLS password"}
# Configurations Kafka refuses: the error names the key, never the secret.
REFUSED = {
    "delegation tokens": {"delegation.token.secret.key": _secret("dt")},
    "the old delegation token key": {"delegation.token.master.key": _secret("dt-master")},
    "a key store that cannot be read": {
        "listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": "/nonexistent/ks.p12",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.password": _secret("ks"), "ssl.key.password": _secret("key")},
    "an inline PEM key that is not one": {
        "listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\n" + _secret("pem-key") + "\n-----END PRIVATE KEY-----",
        "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----\n" + _secret("pem-chain")
                                          + "\n-----END CERTIFICATE-----"},
    "inline trusted certificates that are not": {
        "listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": "/nonexistent/ks.p12",
        "ssl.truststore.type": "PEM", "ssl.truststore.certificates": _secret("pem-trust")},
    "a listener JVM plug-in beside a JAAS config": {
        **SASL_LISTENER, "listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class": "com.example.X"},
}


def _secrets_of(props: dict[str, str]) -> list[str]:
    """The secret strings in props: each s3cret... one (whole, or inside a PEM text) and the JAAS password."""
    return sorted({m for v in props.values() for m in re.findall(r"s3cret[0-9a-f]{8}", v)}
                  | ({JAAS_SECRET} if any(JAAS_SECRET in v for v in props.values()) else set()))


def _leaks(secrets: list[str], texts: list[str]) -> list[str]:
    """The texts that hold one of the secrets."""
    return [t for t in texts for s in secrets if s in t]


@pytest.mark.parametrize("case", sorted(STARTING))
def test_starting_with_secrets_logs_none_of_them(case: str, caplog: pytest.LogCaptureFixture) -> None:
    props = STARTING[case]
    caplog.set_level(logging.DEBUG)
    build_config(props)
    if case in LOGGED:  # these keys are named in a warning, their values hidden
        assert "=[hidden] has no effect" in caplog.text
    secrets = _secrets_of(props)
    assert secrets and not _leaks(secrets, [r.getMessage() for r in caplog.records])


def test_a_key_without_effect_is_logged_hidden(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    build_config({"zookeeper.ssl.keystore.password": "pw-1"})
    assert "zookeeper.ssl.keystore.password=[hidden] has no effect in wirekafka" in caplog.text


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_configuration_names_no_secret(case: str, caplog: pytest.LogCaptureFixture) -> None:
    props = REFUSED[case]
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConfigError) as refused:
        build_config(props)
    texts = [str(refused.value), repr(refused.value), str(refused.value.__cause__ or ""),
             *(r.getMessage() for r in caplog.records)]
    secrets = _secrets_of(props)
    assert secrets and not _leaks(secrets, texts), texts


def test_delegation_token_refusal_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"delegation\.token\.secret\.key=\[hidden\] is not available"):
        build_config({"delegation.token.secret.key": "abc"})


@pytest.mark.parametrize("key", [
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "sasl.jaas.config",
    "listener.name.sasl_ssl.ssl.key.password", "listener.name.sasl_plaintext.plain.sasl.jaas.config",
    "listener.name.SASL_PLAINTEXT.SCRAM-SHA-256.sasl.jaas.config", "zookeeper.ssl.keystore.password",
    "authorizer.zookeeper.ssl.truststore.password", "password.encoder.secret", "delegation.token.secret.key",
])
def test_kafkas_password_keys_are_sensitive_with_any_prefix(key: str) -> None:
    assert sensitive.is_password(key) and dynamic.is_sensitive(key)
    assert sensitive.shown(key, "x") == "[hidden]"


@pytest.mark.parametrize("key", ["ssl.keystore.location", "ssl.keystore.type", "sasl.enabled.mechanisms",
                                 "listener.name.sasl_plaintext.sasl.enabled.mechanisms", "log.dirs",
                                 "password.encoder.iterations"])
def test_other_keys_are_shown(key: str) -> None:
    assert not sensitive.is_password(key) and sensitive.shown(key, "v") == "v"


def test_a_printed_config_hides_its_secrets() -> None:
    cfg = build_config(SASL_LISTENER | {"ssl.keystore.password": "ks-pw-31"})
    text = repr(cfg)
    assert JAAS_SECRET not in text and "ks-pw-31" not in text
    assert "'ssl.keystore.password': '[hidden]'" in text and "'listeners': ('SASL_PLAINTEXT://127.0.0.1:0',)" in text
