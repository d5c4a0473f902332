"""Which config values are secrets, and how a secret is shown: never. Kafka types them PASSWORD
(its `Password` class prints "[hidden]", DescribeConfigs answers them as null and sensitive); the
same keys behind a listener's or a mechanism's prefix (listener.name.<l>.ssl.key.password,
listener.name.<l>.plain.sasl.jaas.config) or another client's (authorizer.zookeeper.ssl.*) are
secrets too. One table, so a log line, a start-up error and a DescribeConfigs answer agree."""

from __future__ import annotations

HIDDEN = "[hidden]"  # Kafka's Password.toString

# Kafka's PASSWORD-typed keys (its broker ConfigDef, SslConfigs, SaslConfigs, ZkConfigs,
# DelegationTokenManagerConfigs, PasswordEncoderConfigs). The inline PEM keys hold a private
# key or the certificates it is trusted with; a JAAS config holds passwords and client secrets.
PASSWORD_KEYS = frozenset({
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
    "sasl.jaas.config",
    "password.encoder.secret", "password.encoder.old.secret",
    "delegation.token.secret.key", "delegation.token.master.key",
    "zookeeper.ssl.keystore.password", "zookeeper.ssl.truststore.password",
})


def is_password(key: str) -> bool:
    """Whether a key's value is a secret: a PASSWORD key, bare or behind any prefix."""
    key = key.strip().lower()
    return any(key == k or key.endswith("." + k) for k in PASSWORD_KEYS)


def shown(key: str, value: object) -> str:
    """A value as a log line or an error may show it: a secret as "[hidden]"."""
    return HIDDEN if is_password(key) else str(value)
