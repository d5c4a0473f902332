"""Keys wirekafka accepts with Kafka's names and defaults but does not act on: a value other than
the default is reported at start-up, never dropped silently."""

from __future__ import annotations

import logging

import pytest

from wirekafka.config.broker_keys import BROKER_KEYS, INERT_KEYS
from wirekafka.config.loader import build_config


def _build(caplog: pytest.LogCaptureFixture, **props: str) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="wirekafka.config.loader"):
        build_config({"log.dirs": "/tmp/unused", **props})
    return [r.getMessage() for r in caplog.records]


def test_inert_keys_are_broker_keys_with_a_reason() -> None:
    assert set(INERT_KEYS) <= set(BROKER_KEYS)
    assert all(reason.strip() for reason in INERT_KEYS.values())


def test_a_value_other_than_the_default_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    (message,) = _build(caplog, **{"num.io.threads": "16"})
    assert message.startswith("num.io.threads=16 has no effect in wirekafka: ")


def test_the_default_value_or_an_active_key_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    assert _build(caplog, **{"socket.send.buffer.bytes": "102400", "num.partitions": "3"}) == []
