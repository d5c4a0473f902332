"""Topic-level configs: names, types, the broker key each inherits from, and validation.

DescribeConfigs reports every topic config with its value and source (a per-topic override,
a cluster-wide dynamic default, a static broker setting, or Kafka's default), so each entry names
its broker synonym. The set is Kafka 4.3.1's; those wirekafka accepts but does not act on
(tiered storage; replication throttles; and the
flush/preallocate settings it documents) are validated and reported all the same, because
clients and tools list, copy and set them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from wirekafka.config.enums import (  # noqa: F401 - DescribeConfigs' enums, re-exported
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_SHORT,
    TYPE_STRING,
)
from wirekafka.config.dynamic import DynamicBrokerConfigs
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import MIN_SEGMENT_BYTES
from wirekafka.storage.log import LogConfig


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    type: int
    broker_key: str | None
    default: Callable[[BrokerConfig], str]
    validate: Callable[[str], str | None]  # None if valid, else Kafka's reason
    # Kafka's internal configs (ConfigDef.defineInternal): settable, but listed by DescribeConfigs
    # and CreateTopics only when the topic sets them; they have no default.
    internal: bool = False


def _int_between(lo: int, hi: int, *also: int) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        try:
            n = int(v)
        except ValueError:
            return "Not a number of type INT"
        if lo <= n <= hi or n in also:
            return None
        return f"Value must be between {lo} and {hi}" + "".join(f" or {a}" for a in also)

    return check


def _throttled_replicas(v: str) -> str | None:
    """Kafka's ThrottledReplicaListValidator: empty, "*", or partition:broker pairs."""
    entries = [e.strip() for e in v.split(",") if e.strip()]
    if entries == ["*"] or all(p.isdigit() and b.isdigit() for p, _, b in (e.partition(":") for e in entries)):
        return None
    return ("must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _remote_storage(v: str) -> str | None:
    problem = _bool(v)
    if problem is None and v.lower() == "true":
        return ("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with "
                "remote log storage.")
    return problem


def _int32(v: str) -> str | None:
    """Any INT, as Kafka parses one (no range of its own)."""
    try:
        n = int(v)
    except ValueError:
        return "Not a number of type INT"
    return None if -(2**31) <= n < 2**31 else "Not a number of type INT"


def _int_at_least(lo: int) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        try:
            n = int(v)
        except ValueError:
            return "Not a number of type LONG"
        return None if n >= lo else f"Value must be at least {lo}"

    return check


def _one_of(*choices: str) -> Callable[[str], str | None]:
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


def _policy(v: str) -> str | None:
    parts = [p.strip() for p in v.split(",") if p.strip()]
    if parts and all(p in ("delete", "compact") for p in parts):
        return None
    return "String must be one of: compact, delete"


def _float_01(v: str) -> str | None:
    try:
        return None if 0.0 <= float(v) <= 1.0 else "Value must be between 0 and 1"
    except ValueError:
        return "Not a number of type DOUBLE"


def _bool(v: str) -> str | None:
    return None if v.lower() in ("true", "false") else "Expected value to be either true or false"


def _broker(key: str) -> Callable[[BrokerConfig], str]:
    def get(cfg: BrokerConfig) -> str:
        value = cfg[key]
        if isinstance(value, tuple):
            return ",".join(value)
        if isinstance(value, bool):
            return str(value).lower()
        return str(value)

    return get


def _fixed(value: str) -> Callable[[BrokerConfig], str]:
    return lambda _cfg: value


# Topic configs wirekafka does not act on default to Kafka's value whatever server.properties
# says (wirekafka does not read their broker keys), so `_fixed`.


_DEFS = [
    TopicConfigDef("cleanup.policy", TYPE_LIST, "log.cleanup.policy", _broker("log.cleanup.policy"), _policy),
    TopicConfigDef("compression.gzip.level", TYPE_INT, "compression.gzip.level", _broker("compression.gzip.level"),
                   _int_between(1, 9, -1)),
    TopicConfigDef("compression.lz4.level", TYPE_INT, "compression.lz4.level", _broker("compression.lz4.level"),
                   _int_between(1, 17)),
    TopicConfigDef("compression.type", TYPE_STRING, "compression.type", _broker("compression.type"),
                   _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")),
    TopicConfigDef("compression.zstd.level", TYPE_INT, "compression.zstd.level", _broker("compression.zstd.level"),
                   _int_between(-131072, 22)),
    TopicConfigDef("delete.retention.ms", TYPE_LONG, "log.cleaner.delete.retention.ms",
                   _broker("log.cleaner.delete.retention.ms"), _int_at_least(0)),
    TopicConfigDef("file.delete.delay.ms", TYPE_LONG, "log.segment.delete.delay.ms",
                   _broker("log.segment.delete.delay.ms"), _int_at_least(0)),
    TopicConfigDef("flush.messages", TYPE_LONG, "log.flush.interval.messages",
                   _broker("log.flush.interval.messages"), _int_at_least(1)),
    TopicConfigDef("flush.ms", TYPE_LONG, "log.flush.interval.ms",
                   lambda c: str(c.flush_interval_ms), _int_at_least(0)),
    TopicConfigDef("follower.replication.throttled.replicas", TYPE_LIST, None, _fixed(""), _throttled_replicas),
    TopicConfigDef("index.interval.bytes", TYPE_INT, "log.index.interval.bytes",
                   _broker("log.index.interval.bytes"), _int_at_least(0)),
    TopicConfigDef("leader.replication.throttled.replicas", TYPE_LIST, None, _fixed(""), _throttled_replicas),
    TopicConfigDef("local.retention.bytes", TYPE_LONG, "log.local.retention.bytes", _fixed("-2"), _int_at_least(-2)),
    TopicConfigDef("local.retention.ms", TYPE_LONG, "log.local.retention.ms", _fixed("-2"), _int_at_least(-2)),
    TopicConfigDef("max.compaction.lag.ms", TYPE_LONG, "log.cleaner.max.compaction.lag.ms",
                   _broker("log.cleaner.max.compaction.lag.ms"), _int_at_least(1)),
    TopicConfigDef("max.message.bytes", TYPE_INT, "message.max.bytes", _broker("message.max.bytes"), _int_at_least(0)),
    TopicConfigDef("message.timestamp.after.max.ms", TYPE_LONG, "log.message.timestamp.after.max.ms",
                   _broker("log.message.timestamp.after.max.ms"), _int_at_least(0)),
    TopicConfigDef("message.timestamp.before.max.ms", TYPE_LONG, "log.message.timestamp.before.max.ms",
                   _broker("log.message.timestamp.before.max.ms"), _int_at_least(0)),
    TopicConfigDef("message.timestamp.type", TYPE_STRING, "log.message.timestamp.type",
                   _broker("log.message.timestamp.type"), _one_of("CreateTime", "LogAppendTime")),
    TopicConfigDef("min.cleanable.dirty.ratio", TYPE_DOUBLE, "log.cleaner.min.cleanable.ratio",
                   _broker("log.cleaner.min.cleanable.ratio"), _float_01),
    TopicConfigDef("min.compaction.lag.ms", TYPE_LONG, "log.cleaner.min.compaction.lag.ms",
                   _broker("log.cleaner.min.compaction.lag.ms"), _int_at_least(0)),
    TopicConfigDef("min.insync.replicas", TYPE_INT, "min.insync.replicas", _broker("min.insync.replicas"),
                   _int_at_least(1)),
    TopicConfigDef("preallocate", TYPE_BOOLEAN, "log.preallocate", _fixed("false"), _bool),
    TopicConfigDef("remote.log.copy.disable", TYPE_BOOLEAN, None, _fixed("false"), _bool),
    TopicConfigDef("remote.log.delete.on.disable", TYPE_BOOLEAN, None, _fixed("false"), _bool),
    TopicConfigDef("remote.storage.enable", TYPE_BOOLEAN, None, _fixed("false"), _remote_storage),
    TopicConfigDef("retention.bytes", TYPE_LONG, "log.retention.bytes", _broker("log.retention.bytes"),
                   _int_at_least(-1)),
    TopicConfigDef("retention.ms", TYPE_LONG, "log.retention.ms", lambda c: str(c.retention_ms), _int_at_least(-1)),
    # Kafka 4 refuses segments under 1 MiB, topic- and broker-level (KIP-1030); its internal
    # topic config internal.segment.bytes, when set, replaces segment.bytes with any size (for tests).
    TopicConfigDef("segment.bytes", TYPE_INT, "log.segment.bytes", _broker("log.segment.bytes"),
                   _int_at_least(MIN_SEGMENT_BYTES)),
    TopicConfigDef("internal.segment.bytes", TYPE_INT, None, _fixed(""), _int32, internal=True),
    TopicConfigDef("segment.index.bytes", TYPE_INT, "log.index.size.max.bytes", _broker("log.index.size.max.bytes"),
                   _int_at_least(4)),
    TopicConfigDef("segment.jitter.ms", TYPE_LONG, "log.roll.jitter.ms", lambda c: str(c.roll_jitter_ms),
                   _int_at_least(0)),
    TopicConfigDef("segment.ms", TYPE_LONG, "log.roll.ms", lambda c: str(c.roll_ms), _int_at_least(1)),
    TopicConfigDef("unclean.leader.election.enable", TYPE_BOOLEAN, "unclean.leader.election.enable",
                   _fixed("false"), _bool),
]

TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in _DEFS}


def listed_configs(overrides: Mapping[str, str]) -> list[str]:
    """The topic config names DescribeConfigs and CreateTopics list, sorted: all but the internal
    ones the topic does not set."""
    return sorted(name for name, d in TOPIC_CONFIGS.items() if not d.internal or name in overrides)


def invalid_reason(name: str, value: str | None) -> str | None:
    """None if (name, value) is an acceptable topic override, else the error message."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        return f"Unknown topic config name: {name}"
    problem = "Value must not be null" if value is None else d.validate(value)
    return None if problem is None else f"Invalid value {value} for configuration {name}: {problem}"


# Broker keys whose values stand in for one another, in Kafka's precedence order
# (DynamicBrokerConfig.brokerConfigSynonyms).
_SYNONYM_CHAINS = [
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
]


def synonym_chain(key: str) -> tuple[str, ...]:
    """The broker key and the keys standing in for it (log.roll.ms, then log.roll.hours)."""
    return next((c for c in _SYNONYM_CHAINS if key in c), (key,))


def effective(name: str, overrides: Mapping[str, str], broker: BrokerConfig,
              dynamic: DynamicBrokerConfigs) -> tuple[str, int]:
    """(value, source) of a topic config, as CreateTopics reports it: the topic's override, else
    its broker key set dynamically (this broker's, else the cluster default's), else the static
    broker value — static when any key of its synonym chain is set (log.roll.jitter.hours for
    segment.jitter.ms), as Kafka's CreateTopics says (its DescribeConfigs names the first key's
    source only: describe_types.broker_synonyms). Only a broker key's first synonym is dynamic,
    so a dynamic value beats every static one."""
    if name in overrides:
        return overrides[name], SOURCE_DYNAMIC_TOPIC
    d = TOPIC_CONFIGS[name]
    found = dynamic.lookup(d.broker_key) if d.broker_key else None
    if found is not None:
        return found
    static = d.broker_key is not None and any(k in broker.overridden for k in synonym_chain(d.broker_key))
    return d.default(broker), SOURCE_STATIC_BROKER if static else SOURCE_DEFAULT


def log_config(overrides: Mapping[str, str], broker: BrokerConfig, dynamic: DynamicBrokerConfigs) -> LogConfig:
    def value(name: str) -> str:
        return effective(name, overrides, broker, dynamic)[0]

    def get(name: str) -> int:
        return int(value(name))

    internal_segment_bytes = overrides.get("internal.segment.bytes")
    return LogConfig(
        segment_bytes=get("segment.bytes") if internal_segment_bytes is None else int(internal_segment_bytes),
        segment_ms=get("segment.ms"),
        segment_jitter_ms=get("segment.jitter.ms"),
        index_interval_bytes=get("index.interval.bytes"),
        retention_ms=get("retention.ms"),
        retention_bytes=get("retention.bytes"),
        flush_messages=get("flush.messages"),
        flush_ms=get("flush.ms"),
        compact="compact" in [p.strip() for p in value("cleanup.policy").split(",")],
        min_cleanable_ratio=float(value("min.cleanable.dirty.ratio")),
        min_compaction_lag_ms=get("min.compaction.lag.ms"),
        max_compaction_lag_ms=get("max.compaction.lag.ms"),
        delete_retention_ms=get("delete.retention.ms"),
        max_index_bytes=get("segment.index.bytes"),
        file_delete_delay_ms=get("file.delete.delay.ms"),
    )
