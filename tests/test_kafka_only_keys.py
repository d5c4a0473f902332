"""Kafka 3.9 keys wirekafka accepts without acting on them: each has Kafka's type and default and
a stated treatment; a value of the wrong type, or one wirekafka cannot honour, stops start-up;
another value is logged as having no effect."""

from __future__ import annotations

import logging
import re

import pytest

from wirekafka.config import kafka_only_keys
from wirekafka.config.broker_keys import BROKER_KEYS
from wirekafka.config.loader import build_config
from wirekafka.startup_errors import ConfigError


def test_every_key_has_a_treatment_and_none_is_also_acted_on() -> None:
    assert not set(kafka_only_keys.KEYS) & set(BROKER_KEYS)
    for key, (_kind, default) in kafka_only_keys.KEYS.items():
        kafka_only_keys.treatment(key)
        if default is not None:
            assert kafka_only_keys.is_default(key, kafka_only_keys.parse(key, default))


@pytest.mark.parametrize("key,value", [
    ("create.topic.policy.class.name", "com.example.Policy"),
    ("remote.log.storage.system.enable", "true"),
    ("delegation.token.secret.key", "[hidden]"),  # a secret: its value is never shown (Kafka's Password)
    ("inter.broker.protocol.version", "3.8"),
    ("group.coordinator.rebalance.protocols", "classic,consumer"),
])
def test_values_wirekafka_cannot_honour_stop_startup(key: str, value: str) -> None:
    given = "s3cret" if value == "[hidden]" else value
    with pytest.raises(ConfigError, match=f"{re.escape(key)}={re.escape(value)} is not available in wirekafka"):
        build_config({key: given})


@pytest.mark.parametrize("key,value", [("log.preallocate", "maybe"), ("metadata.log.segment.bytes", "abc"),
                                       ("group.share.max.size", "70000")])
def test_values_of_the_wrong_type_stop_startup(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"Invalid value {value} for configuration {key}"):
        build_config({key: value})


def test_other_values_are_logged_as_having_no_effect(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="wirekafka.config.loader"):
        build_config({"sasl.kerberos.kinit.cmd": "/opt/kinit", "inter.broker.protocol.version": "3.9",
                      "log.message.format.version": "3.0-IV1", "controller.quorum.voters": ""})
    assert [r.getMessage() for r in caplog.records] == [
        "sasl.kerberos.kinit.cmd=/opt/kinit has no effect in wirekafka: GSSAPI listeners accept tickets with the "
        "keys of their keytab, and a broker logging in to another gets its tickets with those keys through MIT's "
        "library, which gets a new one when the last expires: there is no kinit to run and no ticket to renew"]


@pytest.mark.parametrize("key,value,message", [
    ("compression.lz4.level", "18", "Value must be no more than 17"),
    ("compression.zstd.level", "-200000", "Value must be at least -131072"),
    ("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
])
def test_broker_compression_levels_are_checked_as_kafka_checks_them(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"Invalid value {value} for configuration {key}: {message}"):
        build_config({key: value})
    assert build_config({key: {"compression.gzip.level": "9"}.get(key, "5")}).int(key) in (9, 5)


def test_a_listeners_own_max_receive_size_is_a_number() -> None:
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    with pytest.raises(ConfigError, match="listener.name.plaintext.sasl.server.max.receive.size"):
        build_config({**settings, "listener.name.plaintext.sasl.server.max.receive.size": "big"})
    config = build_config({**settings, "listener.name.plaintext.sasl.server.max.receive.size": "4096"})
    assert config.listener_value("PLAINTEXT", "sasl.server.max.receive.size") == "4096"
    assert build_config(settings).listener_value("PLAINTEXT", "sasl.server.max.receive.size") == 524288
