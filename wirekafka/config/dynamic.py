"""Dynamic broker configs: broker settings an admin changes on a running cluster.

Kafka lets IncrementalAlterConfigs / AlterConfigs change some broker configs at runtime, per
broker (resource name "<id>") or as a cluster-wide default (resource name ""). wirekafka accepts:
- the three replication quotas — leader.replication.throttled.rate,
  follower.replication.throttled.rate and replica.alter.log.dirs.io.max.bytes.per.second —
  because `kafka-reassign-partitions --throttle` sets the first two on every broker a move
  touches, and `--verify` removes them;
- the log defaults (Kafka's DynamicLogConfig: each topic config's first broker synonym, such as
  log.retention.ms, log.segment.bytes, message.max.bytes, log.cleanup.policy,
  min.insync.replicas), which reach every topic that does not override them at once;
- the thread-pool sizes Kafka can resize (num.io.threads, ...), which wirekafka stores and
  reports as Kafka does; it has no such pools, so they change nothing else (as their static
  settings, broker_keys.py INERT_KEYS);
- the log cleaner's threads and buffers, the connection limits (server/connection_quotas.py),
  producer.id.expiration.ms and transaction.partition.verification.enable;
- a TLS listener's key and trust stores, per broker and with the listener prefix only
  (listener.name.<l>.ssl.keystore.location, ...: broker/listener_tls.py checks and applies
  them to new connections). As in Kafka, the same keys without the prefix are refused ("only
  per-listener"), and so is any listener key on the cluster default ("broker id must be
  specified"). In ZooKeeper mode their passwords are stored encoded with password.encoder.secret
  as Kafka 3.9 stores them (broker/replication/zk_broker_passwords.py).
Other broker keys stay static (refused with Kafka's message for a key that cannot change at
runtime); that includes keys Kafka can change but wirekafka reads only at start-up (listeners
and advertised.listeners, a listener's other ssl.* keys and its SASL settings), so a change is
never silently without effect.

Where they live is Kafka's: a single node keeps them with its topics (the KRaft metadata log's
role; a Kafka 4 cluster is formatted with min.insync.replicas in its cluster default, KIP-966), a
ZooKeeper-mode cluster in /config/brokers/<id> and /config/brokers/<default> as Kafka 3.9 does. A
broker's effective value is its own setting, else the cluster default, else the static one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from wirekafka.config.enums import (
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
)
from wirekafka.config.listener_tls import SSL_STORE_KEYS, ListenerTls, listener_store_key
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import BROKER_KEYS, LONG_MAX, as_int, at_least, between, gzip_level
from wirekafka.config import sensitive
from wirekafka.config.ip_overrides import parse_csv_map
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

DEFAULT_ENTITY = "<default>"  # the cluster-wide default's entity name, as Kafka writes it in ZooKeeper
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
THROTTLE_KEYS = (LEADER_RATE, FOLLOWER_RATE, ALTER_LOG_DIRS_RATE)
UNLIMITED = LONG_MAX
MIN_ISR = "min.insync.replicas"
_INTEGER = re.compile(r"[+-]?\d+")
_DOUBLE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(NaN|Infinity)")  # Java's Double.parseDouble
_BOUNDS = {TYPE_INT: (-2**31, 2**31 - 1), TYPE_LONG: (-2**63, LONG_MAX)}
_TYPE_NAMES = {TYPE_INT: "INT", TYPE_LONG: "LONG", TYPE_DOUBLE: "DOUBLE"}


@dataclass(frozen=True)
class BrokerKeyDef:
    """A dynamic broker key's type and Kafka's validator (None: any value of the type; else the
    reason a parsed value is refused)."""
    type: int
    check: Callable[[object], str | None] | None = None
    choices: tuple[str, ...] = ()


_THREADS = BrokerKeyDef(TYPE_INT, at_least(1))
#: Kafka's thread pools (DynamicThreadPool, and the network threads): a change may at most halve
#: or double the current size.
THREAD_POOL_KEYS = ("num.io.threads", "num.network.threads", "num.replica.fetchers",
                    "num.recovery.threads.per.data.dir", "background.threads")
CLEANER_THREADS = "log.cleaner.threads"
PER_IP, PER_IP_OVERRIDES = "max.connections.per.ip", "max.connections.per.ip.overrides"
#: The keys a broker accepts at runtime besides the throttles, with Kafka 4's types and validators.
UPDATABLE: dict[str, BrokerKeyDef] = {
    "log.segment.bytes": BrokerKeyDef(TYPE_INT, at_least(1024 * 1024)),
    "log.roll.ms": BrokerKeyDef(TYPE_LONG),
    "log.roll.jitter.ms": BrokerKeyDef(TYPE_LONG),
    "log.index.size.max.bytes": BrokerKeyDef(TYPE_INT, at_least(4)),
    "log.flush.interval.messages": BrokerKeyDef(TYPE_LONG, at_least(1)),
    "log.flush.interval.ms": BrokerKeyDef(TYPE_LONG),
    "log.retention.bytes": BrokerKeyDef(TYPE_LONG),
    "log.retention.ms": BrokerKeyDef(TYPE_LONG),
    "message.max.bytes": BrokerKeyDef(TYPE_INT, at_least(0)),
    "log.index.interval.bytes": BrokerKeyDef(TYPE_INT, at_least(0)),
    "log.cleaner.delete.retention.ms": BrokerKeyDef(TYPE_LONG, at_least(0)),
    "log.cleaner.min.compaction.lag.ms": BrokerKeyDef(TYPE_LONG, at_least(0)),
    "log.cleaner.max.compaction.lag.ms": BrokerKeyDef(TYPE_LONG, at_least(1)),
    "log.segment.delete.delay.ms": BrokerKeyDef(TYPE_LONG, at_least(0)),
    "log.cleaner.min.cleanable.ratio": BrokerKeyDef(TYPE_DOUBLE, between(0, 1)),
    "log.cleanup.policy": BrokerKeyDef(TYPE_LIST, choices=("compact", "delete")),
    "unclean.leader.election.enable": BrokerKeyDef(TYPE_BOOLEAN),
    MIN_ISR: BrokerKeyDef(TYPE_INT, at_least(1)),
    "compression.type": BrokerKeyDef(TYPE_STRING, choices=("uncompressed", "zstd", "lz4", "snappy", "gzip",
                                                           "producer")),
    "compression.gzip.level": BrokerKeyDef(TYPE_INT, gzip_level),
    "compression.lz4.level": BrokerKeyDef(TYPE_INT, between(1, 17)),
    "compression.zstd.level": BrokerKeyDef(TYPE_INT, between(-131072, 22)),
    "log.preallocate": BrokerKeyDef(TYPE_BOOLEAN),
    "log.message.timestamp.type": BrokerKeyDef(TYPE_STRING, choices=("CreateTime", "LogAppendTime")),
    "log.message.timestamp.before.max.ms": BrokerKeyDef(TYPE_LONG, at_least(0)),
    "log.message.timestamp.after.max.ms": BrokerKeyDef(TYPE_LONG, at_least(0)),
    "log.local.retention.ms": BrokerKeyDef(TYPE_LONG, at_least(-2)),
    "log.local.retention.bytes": BrokerKeyDef(TYPE_LONG, at_least(-2)),
    **{key: _THREADS for key in THREAD_POOL_KEYS},
    # the log cleaner's (Kafka restarts its cleaner threads with them)
    CLEANER_THREADS: BrokerKeyDef(TYPE_INT, at_least(0)),
    "log.cleaner.dedupe.buffer.size": BrokerKeyDef(TYPE_LONG),
    "log.cleaner.io.buffer.load.factor": BrokerKeyDef(TYPE_DOUBLE),
    "log.cleaner.io.buffer.size": BrokerKeyDef(TYPE_INT, at_least(0)),
    "log.cleaner.io.max.bytes.per.second": BrokerKeyDef(TYPE_DOUBLE),
    "log.cleaner.backoff.ms": BrokerKeyDef(TYPE_LONG, at_least(0)),
    # connection limits (server/connection_quotas.py)
    "max.connections": BrokerKeyDef(TYPE_INT, at_least(0)),
    "max.connection.creation.rate": BrokerKeyDef(TYPE_INT, at_least(0)),
    PER_IP: BrokerKeyDef(TYPE_INT, at_least(0)),
    PER_IP_OVERRIDES: BrokerKeyDef(TYPE_STRING),
    # producer state (KIP-890 verification and idle producer expiry)
    "producer.id.expiration.ms": BrokerKeyDef(TYPE_INT, at_least(1)),
    "transaction.partition.verification.enable": BrokerKeyDef(TYPE_BOOLEAN),
}
_MIB = 1024 * 1024
DYNAMIC_KEYS = frozenset(UPDATABLE) | frozenset(THROTTLE_KEYS)


def is_dynamic(key: str) -> bool:
    """A key a broker resource may set: one of DYNAMIC_KEYS or a listener's store key."""
    return key in DYNAMIC_KEYS or listener_store_key(key) is not None


def is_sensitive(key: str) -> bool:
    """Kafka's PASSWORD keys, with or without a listener prefix: never shown."""
    return sensitive.is_password(key)


def check_listener_prefix(set_keys: list[str]) -> None:
    """Kafka sets store keys only with a listener prefix (set_keys: the keys a request sets)."""
    bare = [k for k in set_keys if k in SSL_STORE_KEYS]
    if bare:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "These security configs can be dynamically updated only "
                                                       f"per-listener using the listener prefix: [{', '.join(bare)}]")


def check_per_broker(entity: str, configs: Mapping[str, str]) -> None:
    """Kafka keeps listener keys off the cluster default (configs: the entity's settings after
    the change)."""
    prefixed = [k for k in configs if listener_store_key(k) is not None]
    if entity == DEFAULT_ENTITY and prefixed:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Cannot update these configs at default cluster level, "
                                                       f"broker id must be specified: [{', '.join(prefixed)}]")


def java_double(value: float) -> str:
    """A double as Java prints it (Kafka's messages quote the parsed value): 2.0, 0.5."""
    text = repr(value)
    return text if ("." in text or "e" in text or "n" in text) else text + ".0"


def entity_of(resource_name: str) -> str:
    """The stored entity a BROKER resource names: "" is the cluster default."""
    return resource_name if resource_name else DEFAULT_ENTITY


def check_value(key: str, value: str) -> None:
    """Kafka's checks of a dynamic broker value (its broker ConfigDef's type and validator):
    INVALID_REQUEST with its text (Kafka 4.3.1 and 3.9.1 answer both with that code). A store
    key is a STRING or PASSWORD, which takes any value (its stores are checked on loading)."""
    if listener_store_key(key) is not None:
        return
    d = UPDATABLE.get(key, BrokerKeyDef(TYPE_LONG, at_least(0)))  # else a throttle: a LONG, at least 0

    def refuse(shown: object, reason: str) -> KafkaApiError:
        return KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid value {shown} for configuration {key}: {reason}")

    text = value.strip()
    parsed: object = text
    if d.type in _BOUNDS:
        lo, hi = _BOUNDS[d.type]
        if not _INTEGER.fullmatch(text) or not lo <= int(text) <= hi:
            raise refuse(value, f"Not a number of type {_TYPE_NAMES[d.type]}")
        parsed = int(text)
    elif d.type == TYPE_DOUBLE:
        if not _DOUBLE.fullmatch(text):
            raise refuse(value, "Not a number of type DOUBLE")
        parsed = float(text)
    elif d.type == TYPE_BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise refuse(value, "Expected value to be either true or false")
    elif d.choices:
        items = [x.strip() for x in text.split(",")] if d.type == TYPE_LIST else [text]
        wrong = next((x for x in items if x not in d.choices), None)
        if wrong is not None:
            raise refuse(wrong, f"String must be one of: {', '.join(d.choices)}")
    problem = d.check(parsed) if d.check is not None else None
    if problem is not None:
        raise refuse(java_double(parsed) if isinstance(parsed, float) else parsed, problem)
    if key == PER_IP_OVERRIDES:
        try:
            parse_csv_map(value)
        except ValueError as exc:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, str(exc)) from None


def _dynamic_refusal(reason: str) -> KafkaApiError:
    """A reconfiguration Kafka's broker refuses: the ConfigException it wraps, as it answers it."""
    return KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid value org.apache.kafka.common.config.ConfigException: "
                                                    f"{reason} for configuration Invalid dynamic configuration")


def _requirement(reason: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_REQUEST, f"requirement failed: {reason}")


class DynamicBrokerConfigs:
    """The dynamic configs this broker sees: its own entity's and the cluster default's."""

    def __init__(self, node_id: int, static: BrokerConfig) -> None:
        self.node_id = node_id
        self.static = static
        self._entities: dict[str, dict[str, str]] = {}
        self.version = 0  # bumped on every change: caches of effective topic configs compare it
        self._observers: list[Callable[[], None]] = []
        # the TLS listeners' contexts, which this broker's own store settings reconfigure
        self.listener_tls = ListenerTls(static, lambda: self.own)

    def observe(self, changed: Callable[[], None]) -> None:
        """Call changed() after every change (the parts that apply broker keys at runtime)."""
        self._observers.append(changed)

    def current(self, key: str) -> object:
        """A broker key's value as this broker applies it now: set dynamically (parsed as
        server.properties values are), else the static one."""
        found = self.lookup(key)
        return self.static[key] if found is None else BROKER_KEYS[key][0](found[0])

    def current_int(self, key: str) -> int:
        return as_int(self.current(key))

    def check_change(self, entity: str, configs: Mapping[str, str]) -> None:
        """Kafka's checks of the whole broker config a change of entity would give this broker
        (its KafkaConfig requirements, then its reconfigurable parts' limits against the values
        they run with now), after each value passed check_value."""
        after = DynamicBrokerConfigs(self.node_id, self.static)
        after._entities = {**self._entities, entity: dict(configs)}
        retention = after.lookup("log.retention.ms")
        retention_ms = int(retention[0]) if retention is not None else self.static.retention_ms
        roll = after.lookup("log.roll.ms")
        jitter = after.lookup("log.roll.jitter.ms")
        if (int(roll[0]) if roll is not None else self.static.roll_ms) < 1:
            raise _requirement("log.roll.ms must be greater than or equal to 1")
        if jitter is not None and int(jitter[0]) < 0:
            raise _requirement("log.roll.jitter.ms must be greater than or equal to 0")
        if retention_ms == 0:  # a negative retention is unlimited (-1)
            raise _requirement("log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
        threads = after.current_int(CLEANER_THREADS)
        if threads == 0:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "/ by zero")  # Kafka divides by it first
        if after.current_int("log.cleaner.dedupe.buffer.size") // threads <= _MIB:
            raise _requirement("log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
        if after.current_int(PER_IP) == 0 and not after.current(PER_IP_OVERRIDES):
            raise _requirement(f"{PER_IP} can be set to zero only if {PER_IP_OVERRIDES} property is set.")
        for key in THREAD_POOL_KEYS:
            old, new = self.current_int(key), after.current_int(key)
            if new != old and (new < old // 2 or new > old * 2):
                limit = (f"should be at least half the current value {old}" if new < old // 2
                         else f"should not be greater than double the current value {old}")
                raise _dynamic_refusal(f"Dynamic thread count update validation failed for {key}={new}, value {limit}")
        old = self.current_int(CLEANER_THREADS)
        if threads < old // 2:
            raise _dynamic_refusal(f"Log cleaner threads cannot be reduced to less than half the current value {old}")
        if threads > old * 2:
            raise _dynamic_refusal(f"Log cleaner threads cannot be increased to more than double the current value {old}")

    def of(self, entity: str) -> dict[str, str]:
        """A copy of one entity's settings ({} when it has none)."""
        return dict(self._entities.get(entity, {}))

    def replace(self, entity: str, configs: Mapping[str, str]) -> None:
        if configs == self._entities.get(entity, {}):
            return
        if configs:
            self._entities[entity] = dict(configs)
        else:
            self._entities.pop(entity, None)
        self.version += 1
        for changed in self._observers:
            changed()

    def snapshot(self) -> dict[str, dict[str, str]]:
        """Every entity's settings, for persisting them."""
        return {e: dict(c) for e, c in self._entities.items()}

    @property
    def own(self) -> dict[str, str]:
        return self._entities.get(str(self.node_id), {})

    @property
    def defaults(self) -> dict[str, str]:
        return self._entities.get(DEFAULT_ENTITY, {})

    def lookup(self, key: str) -> tuple[str, int] | None:
        """(value, DescribeConfigs source) of a key set dynamically for this broker, its own
        setting before the cluster default's; None when neither sets it."""
        if key in self.own:
            return self.own[key], SOURCE_DYNAMIC_BROKER
        if key in self.defaults:
            return self.defaults[key], SOURCE_DYNAMIC_DEFAULT_BROKER
        return None

    def rate(self, key: str) -> int:
        """A throttle's effective bound in bytes/s: this broker's, else the default, else unlimited."""
        value = self.own.get(key, self.defaults.get(key))
        return UNLIMITED if value is None else int(value.strip())
