"""The start-up line: the version and every configuration value that differs from its default,
secrets "[hidden]" (config/sensitive.py), so a log alone tells what ran and how. Kafka prints its
whole KafkaConfig; the values an operator changed are the ones worth reading, and the defaults
are documented."""

from __future__ import annotations

import logging

from wirekafka import __version__
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import AUTHORIZER_KEYS, BROKER_KEYS, WIREKAFKA_KEYS
from wirekafka.config.sensitive import shown

log = logging.getLogger(__name__)

_DEFAULTS: dict[str, object] = {k: d for table in (BROKER_KEYS, AUTHORIZER_KEYS, WIREKAFKA_KEYS)
                                for k, (_, d) in table.items()}


def non_defaults(config: BrokerConfig) -> list[tuple[str, str]]:
    """(key, value as a log may show it) for each key set to other than its default, sorted;
    a key without a default (a listener's own setting, say) is there whenever set."""
    out = []
    for key, value in sorted(config.values.items()):
        if key in _DEFAULTS and (key not in config.overridden or value == _DEFAULTS[key]):
            continue
        rendered = ",".join(value) if isinstance(value, tuple) else "" if value is None else value
        out.append((key, shown(key, rendered)))
    return out


def log_startup(config: BrokerConfig) -> None:
    settings = ", ".join(f"{k}={v}" for k, v in non_defaults(config))
    log.info("starting wirekafka %s with non-default configuration: %s", __version__, settings or "(none)")
