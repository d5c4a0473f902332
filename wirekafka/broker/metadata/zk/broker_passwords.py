"""The dynamic passwords of /config/brokers/<entity>, stored as Kafka 3.9 stores them.

Kafka 3.9's ZooKeeper-mode broker (DynamicBrokerConfig) encodes every password config of an
entity (a listener's ssl.keystore.password, ...: password_encoder.is_password_config) with
password.encoder.secret before it writes the znode, and decodes them after reading it:
- writing one without a secret is Kafka's ConfigException "Password encoder secret not
  configured" (the request's INVALID_CONFIG; nothing is written);
- a stored password that does not decode (another secret, no secret) is logged and left out, the
  entity's other settings applied;
- at start-up, with password.encoder.old.secret set, the broker's own entity's passwords that
  the old secret decodes are encoded again with the new one and the znode rewritten (those it
  does not decode are kept as they are), so that the old secret can then be dropped.
Each write encodes with a fresh salt and IV, as Kafka does, so the same password is stored as a
different text every time; decoded texts are remembered so that re-reading an unchanged znode
costs no key derivation."""

from __future__ import annotations

import logging
from typing import Mapping

from wirekafka.security.password_encoder import (
    SECRET_NOT_CONFIGURED,
    PasswordConfigError,
    PasswordDecodeError,
    PasswordEncoder,
    cipher_supported,
    is_password_config,
    key_factory_supported,
)
from wirekafka.config.broker_config import BrokerConfig

log = logging.getLogger(__name__)

class BrokerPasswords:
    """Encodes and decodes the password configs of broker config entities with this broker's
    password.encoder.* settings."""

    def __init__(self, config: BrokerConfig) -> None:
        self._encoder = _encoder(config, "password.encoder.secret")
        self._old = _encoder(config, "password.encoder.old.secret")
        # per entity: encoded text -> password, for the texts its znode holds now
        self._decoded: dict[str, dict[str, str]] = {}

    @staticmethod
    def unsupported(config: BrokerConfig) -> str | None:
        """Why this broker's password.encoder.* settings cannot be honoured (None: they can)."""
        cipher, factory = str(config["password.encoder.cipher.algorithm"]), config["password.encoder.keyfactory.algorithm"]
        if not cipher_supported(cipher):
            return f"password.encoder.cipher.algorithm={cipher} is not available in wirekafka"
        if factory and not key_factory_supported(str(factory)):
            return f"password.encoder.keyfactory.algorithm={factory} is not available in wirekafka"
        return None

    def persistent(self, entity: str, configs: Mapping[str, str]) -> dict[str, str]:
        """An entity's settings as its znode holds them: each password encoded (raises
        PasswordConfigError without a secret, as Kafka's toPersistentProps)."""
        out = dict(configs)
        known = {}
        for name, value in configs.items():
            if is_password_config(name):
                if self._encoder is None:
                    raise PasswordConfigError(SECRET_NOT_CONFIGURED)
                out[name] = self._encoder.encode(value)
                known[out[name]] = value
        self._decoded[entity] = known
        return out

    def decoded(self, entity: str, stored: Mapping[str, str]) -> dict[str, str]:
        """An entity's settings as read from its znode: each password decoded, or left out and
        logged when it cannot be."""
        out = dict(stored)
        cache, known = self._decoded.get(entity, {}), {}
        for name, value in stored.items():
            if not is_password_config(name):
                continue
            password = cache.get(value)
            if password is None:
                password = self._decode(self._encoder, value)
            if password is None:
                log.error("/config/brokers/%s: dynamic password config %s could not be decoded, ignoring",
                          entity, name)
                del out[name]
                continue
            out[name] = known[value] = password
        self._decoded[entity] = known
        return out

    def reencoded(self, stored: Mapping[str, str]) -> dict[str, str] | None:
        """The broker's own stored settings with every password the old secret decodes encoded
        with the new one, for Kafka's start-up rewrite; None when there is nothing to rewrite
        (no old secret, or no password stored). Raises PasswordConfigError with an old secret
        and no new one, as Kafka's start-up fails."""
        if self._old is None or not any(is_password_config(name) for name in stored):
            return None
        out = dict(stored)
        for name, value in stored.items():
            if is_password_config(name):
                password = self._decode(self._old, value)
                if password is None:
                    log.debug("dynamic password config %s could not be decoded using the old secret, "
                              "the new secret will be used", name)
                    continue
                if self._encoder is None:
                    raise PasswordConfigError(SECRET_NOT_CONFIGURED)
                out[name] = self._encoder.encode(password)
        return out

    @staticmethod
    def _decode(encoder: PasswordEncoder | None, value: str) -> str | None:
        if encoder is None:
            return None
        try:
            return encoder.decode(value)
        except PasswordDecodeError:
            return None


def _encoder(config: BrokerConfig, secret_key: str) -> PasswordEncoder | None:
    secret = config[secret_key]
    if secret is None:
        return None
    factory = config["password.encoder.keyfactory.algorithm"]
    return PasswordEncoder(str(secret), str(factory) if factory else None,
                           str(config["password.encoder.cipher.algorithm"]), config.int("password.encoder.key.length"),
                           config.int("password.encoder.iterations"))
