"""What DescribeConfigs reports of a broker key besides its value: Kafka's ConfigDef type, Kafka's
default (where wirekafka's differs or it has none), the value as Kafka prints it, and the synonym
chain (a key's stand-ins, source by source). The config resource types are here too, since
DescribeConfigs, AlterConfigs and IncrementalAlterConfigs all name them."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Callable

from kafka.protocol.admin.configs import DescribeConfigsResponse

from wirekafka.config import dynamic as dynamic_config
from wirekafka.config import kafka_only_keys
from wirekafka.config import topic as tc
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import BROKER_KEYS, parse_bool, parse_int, parse_list
from wirekafka.config.dynamic import DynamicBrokerConfigs
from wirekafka.config.enums import TYPE_CLASS, TYPE_PASSWORD, TYPE_UNKNOWN

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 2, 4, 8
RESOURCE_CLIENT_METRICS, RESOURCE_GROUP = 16, 32

_Synonym = DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult.DescribeConfigsSynonym

# Kafka's defaults of broker keys that topic configs inherit from but that wirekafka does not read.
_UNREAD_DEFAULTS = {"log.preallocate": "false", "unclean.leader.election.enable": "false",
                    "compression.gzip.level": "-1", "compression.lz4.level": "9", "compression.zstd.level": "3",
                    "log.local.retention.ms": "-2", "log.local.retention.bytes": "-2"}
# Keys Kafka requires (it reports no default for them) but wirekafka defaults for a one-node setup.
_NO_KAFKA_DEFAULT = frozenset({"node.id", "process.roles"})
# Kafka's ConfigDef types where the Python default does not tell them apart (int vs LONG/SHORT).
_LONG_KEYS = frozenset({
    "log.roll.ms", "log.roll.jitter.ms", "log.retention.ms", "log.retention.bytes", "log.retention.check.interval.ms",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.flush.scheduler.interval.ms",
    "log.segment.delete.delay.ms", "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms", "log.cleaner.backoff.ms", "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms", "offsets.retention.check.interval.ms", "queued.max.request.bytes",
    "metrics.sample.window.ms", "connections.max.idle.ms", "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "connections.max.reauth.ms", "leader.imbalance.check.interval.seconds",
    "replica.high.watermark.checkpoint.interval.ms", "replica.lag.time.max.ms",
})
_SHORT_KEYS = frozenset({"offsets.topic.replication.factor", "offsets.commit.required.acks",
                         "transaction.state.log.replication.factor"})
_LIST_KEYS = frozenset({"log.dir"})
_CLASS_KEYS = frozenset({"client.quota.callback.class", "principal.builder.class"})
_STRING_KEYS = frozenset({"listener.security.protocol.map"})  # a map, but a STRING in Kafka's ConfigDef
# Keys without a default: their type follows the parser server.properties values go through.
_TYPE_OF_PARSER: dict[Callable[[str], object], int] = {parse_int: tc.TYPE_INT, parse_list: tc.TYPE_LIST, parse_bool: tc.TYPE_BOOLEAN}
# LIST keys whose Kafka default is the empty list, shown as "" (wirekafka's empty tuple means unset)
EMPTY_LIST_DEFAULTS = frozenset({"ssl.cipher.suites"})
# kafka_only_keys' type names as DescribeConfigs codes them
_KAFKA_ONLY_TYPES = {"BOOLEAN": tc.TYPE_BOOLEAN, "STRING": tc.TYPE_STRING, "INT": tc.TYPE_INT,
                     "SHORT": tc.TYPE_SHORT, "LONG": tc.TYPE_LONG, "DOUBLE": tc.TYPE_DOUBLE,
                     "LIST": tc.TYPE_LIST, "CLASS": TYPE_CLASS, "PASSWORD": TYPE_PASSWORD}
# A listener's override: listener.name.<listener>.<key> (Kafka's DynamicBrokerConfig regex)
_LISTENER_OVERRIDE = re.compile(r"listener\.name\.[^.]*\.(.*)")
# Keys a listener sets per SASL mechanism (listener.name.<l>.<mechanism>.<key>)
_MECHANISM_KEYS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                   "sasl.server.callback.handler.class", "connections.max.reauth.ms")


def render(value: object) -> str | None:
    """A config value as Kafka prints it: lists comma-joined, booleans lowercase, unset (or an
    empty list, which wirekafka uses for "not set") as null."""
    if value is None or value == ():
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def java_double(value: float) -> str:
    """A double as Java's Double.toString writes it (Kafka's ConfigDef prints DOUBLE values so):
    plain decimals from 10^-3 to 10^7, else d.dddE<n> ("1.7976931348623157E308")."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    shortest = Decimal(repr(value))  # Python's repr is the shortest that reads back, as Java's digits
    _, digits, _ = shortest.as_tuple()
    significant = "".join(map(str, digits)).rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{significant[0]}.{significant[1:] or '0'}E{shortest.adjusted()}"


def broker_config_type(key: str) -> int:
    """Kafka's ConfigDef type of a broker key, as DescribeConfigs reports it."""
    if key in _LONG_KEYS:
        return tc.TYPE_LONG
    if key in _SHORT_KEYS:
        return tc.TYPE_SHORT
    if key in _CLASS_KEYS:
        return TYPE_CLASS
    if key in _STRING_KEYS:
        return tc.TYPE_STRING
    parser, default = BROKER_KEYS[key]
    if default is None:
        return _TYPE_OF_PARSER.get(parser, tc.TYPE_STRING)
    if isinstance(default, tuple) or key in _LIST_KEYS:
        return tc.TYPE_LIST
    if isinstance(default, bool):
        return tc.TYPE_BOOLEAN
    if isinstance(default, float):
        return tc.TYPE_DOUBLE
    if isinstance(default, str):
        return tc.TYPE_STRING
    return tc.TYPE_INT


def kafka_default(key: str) -> str | None:
    """Kafka's default of a broker key as a string (None where Kafka has none)."""
    if key in _NO_KAFKA_DEFAULT:
        return None
    if key in EMPTY_LIST_DEFAULTS:
        return ""
    if key in BROKER_KEYS:
        return render(BROKER_KEYS[key][1])
    return _UNREAD_DEFAULTS.get(key)


def listener_base_key(key: str) -> str | None:
    """The broker key a listener's override stands in for (Kafka's brokerConfigSynonyms):
    listener.name.<l>.<key> is <key>, a mechanism's listener.name.<l>.<mechanism>.<key> is <key>;
    None for a key without a listener prefix."""
    match = _LISTENER_OVERRIDE.fullmatch(key)
    if match is None:
        return None
    base = match.group(1)
    return next((k for k in _MECHANISM_KEYS if base.endswith(k)), base)


def _synonym_chain(key: str) -> tuple[str, ...]:
    """A key and the keys standing in for it: a listener's key falls back to its base key."""
    base = listener_base_key(key)
    return (key, base) if base is not None else tc.synonym_chain(key)


def broker_synonyms(config: BrokerConfig, dynamic: DynamicBrokerConfigs, key: str) -> list[_Synonym]:
    """Kafka's synonym chain of a broker key, source by source: this broker's dynamic settings
    of the key and its stand-ins, the cluster default's, the static ones, then their non-null
    defaults, starting at the key itself."""
    chain = _synonym_chain(key)
    found = [_Synonym(name=k, value=dynamic.own[k], source=tc.SOURCE_DYNAMIC_BROKER) for k in chain if k in dynamic.own]
    found += [_Synonym(name=k, value=dynamic.defaults[k], source=tc.SOURCE_DYNAMIC_DEFAULT_BROKER)
              for k in chain if k in dynamic.defaults]
    found += [_Synonym(name=k, value=render(config[k]), source=tc.SOURCE_STATIC_BROKER)
              for k in chain if k in config.overridden]
    found += [_Synonym(name=k, value=d, source=tc.SOURCE_DEFAULT)
              for k in chain if (d := kafka_default(k)) is not None]
    while found and found[0].name != key:
        found.pop(0)
    return found


def broker_type(key: str) -> int:
    """Kafka's type of a broker key: its ConfigDef's, a listener override's base key's, or
    UNKNOWN for a key it does not know (the authorizer's)."""
    if key in dynamic_config.THROTTLE_KEYS:
        return tc.TYPE_LONG
    base = listener_base_key(key)
    if base is not None:  # Kafka types a listener's key as its base key
        return broker_type(base)
    d = dynamic_config.UPDATABLE.get(key)
    if d is not None:
        return d.type
    if key in BROKER_KEYS:
        return broker_config_type(key)
    if key in kafka_only_keys.KEYS:
        return _KAFKA_ONLY_TYPES[kafka_only_keys.KEYS[key][0]]
    return TYPE_UNKNOWN
