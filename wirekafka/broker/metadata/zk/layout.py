"""Kafka 3.9's ZooKeeper layout: the znode paths and the bytes stored in them.

A wirekafka cluster keeps its metadata where a Kafka 3.9 ZooKeeper-mode cluster keeps it, in the
same encoding, so Kafka's own tools (and Kafka brokers) can read what wirekafka writes and the other
way round. Each record here encodes to what Kafka 3.9 with its default inter-broker protocol writes
(field names, versions, which fields appear, numbers written as strings where Kafka does) — down to
the key order, which Kafka takes from its hash maps (see `_jvm_order`). Decoders accept what Kafka
writes, ignore fields they do not know, and raise `ZkDataError` for data Kafka would also reject.

Pure: no ZooKeeper client and no I/O here; the ZooKeeper-backed metadata reads and writes these
paths and bytes."""

from __future__ import annotations

import urllib.parse

import enum
import functools
import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar, cast

from wirekafka.broker.quotas.entities import CLIENT_ID, IP, IP_KEYS, USER, USER_AND_CLIENT_KEYS, Entity, entity_of
from wirekafka.broker.metadata.cluster_metadata import base64_to_uuid, uuid_to_base64
from wirekafka.jvm import (
    java_properties_order,
    scala_immutable_order,
    scala_mutable_hashmap_order,
)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# ---- paths -------------------------------------------------------------------------------------
ADMIN = "/admin"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_SEQUENCE_ID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"  # created PERSISTENT_SEQUENTIAL
CONSUMERS = "/consumers"  # the old consumers' root, still created at start-up
CONTROLLER = "/controller"  # ephemeral
CONTROLLER_EPOCH = "/controller_epoch"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "/isr_change_notification/isr_change_"  # created PERSISTENT_SEQUENTIAL
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "/log_dir_event_notification/log_dir_event_"  # created PERSISTENT_SEQUENTIAL
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
FEATURE = "/feature"

# The entity types whose configs live under /config/<type> (Kafka's ConfigType.ALL).
CONFIG_ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips")
TOPIC_CONFIG_TYPE = "topics"
USER_CONFIG_TYPE = "users"  # /config/users/<user>: SCRAM credentials and the user's quotas
USERS_CONFIG = f"{CONFIG}/{USER_CONFIG_TYPE}"
USER_CLIENTS = "clients"  # /config/users/<user>/clients/<client>: a user's quotas for one client id
CLIENT_CONFIG_TYPE = "clients"  # /config/clients/<client>: a client id's quotas
IP_CONFIG_TYPE = "ips"  # /config/ips/<ip>: an address's connection-rate quota
QUOTA_ENTITY_TYPES = (CLIENT_CONFIG_TYPE, USER_CONFIG_TYPE, IP_CONFIG_TYPE)  # whose emptied znodes Kafka removes
DEFAULT_ENTITY_NAME = "<default>"  # a quota type's default entity, written as is (not sanitized)
BROKER_CONFIG_TYPE = "brokers"

# What every Kafka broker makes sure exists when it starts (ZkData.PersistentZkPaths), in Kafka's
# order; each is created with its parents and no data.
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS, BROKER_IDS, TOPICS, CONFIG_CHANGES, DELETE_TOPICS, BROKER_SEQUENCE_ID,
    ISR_CHANGE_NOTIFICATION, LATEST_PRODUCER_ID_BLOCK, LOG_DIR_EVENT_NOTIFICATION,
) + tuple(f"{CONFIG}/{entity_type}" for entity_type in CONFIG_ENTITY_TYPES)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def entity_config_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def topic_config_path(topic: str) -> str:
    return entity_config_path(TOPIC_CONFIG_TYPE, topic)


def sanitize(name: str) -> str:
    """Kafka's Sanitizer: URL-encoding as Java's URLEncoder does, '*' as %2A and space as %20."""
    return urllib.parse.quote(name, safe="-_.").replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


def _quota_name(name: str | None) -> str:
    return DEFAULT_ENTITY_NAME if name is None else sanitize(name)


def _entity_name(stored: str) -> str | None:
    return None if stored == DEFAULT_ENTITY_NAME else desanitize(stored)


def quota_entity_path(entity: Entity) -> tuple[str, str]:
    """Where Kafka 3.9 keeps a quota entity's config: (entity type, name under /config/<type>)."""
    names = dict(entity)
    if IP in names:
        return IP_CONFIG_TYPE, _quota_name(names[IP])
    if USER in names and CLIENT_ID in names:
        return USER_CONFIG_TYPE, f"{_quota_name(names[USER])}/{USER_CLIENTS}/{_quota_name(names[CLIENT_ID])}"
    if USER in names:
        return USER_CONFIG_TYPE, _quota_name(names[USER])
    return CLIENT_CONFIG_TYPE, _quota_name(names[CLIENT_ID])


def quota_entities(configs: Mapping[str, Mapping[str, str]]) -> dict[Entity, dict[str, float]]:
    """The quotas in config znodes read by their path under /config (see quota_entity_path); other
    keys (a user's SCRAM credentials) and values that are not numbers are left out."""
    out: dict[Entity, dict[str, float]] = {}
    for path, config in configs.items():
        parts = path.split("/")
        if parts[0] == IP_CONFIG_TYPE and len(parts) == 2:
            entity, keys = entity_of([(IP, _entity_name(parts[1]))]), IP_KEYS
        elif parts[0] == CLIENT_CONFIG_TYPE and len(parts) == 2:
            entity, keys = entity_of([(CLIENT_ID, _entity_name(parts[1]))]), USER_AND_CLIENT_KEYS
        elif parts[0] == USER_CONFIG_TYPE and len(parts) == 2:
            entity, keys = entity_of([(USER, _entity_name(parts[1]))]), USER_AND_CLIENT_KEYS
        elif parts[0] == USER_CONFIG_TYPE and len(parts) == 4 and parts[2] == USER_CLIENTS:
            entity = entity_of([(USER, _entity_name(parts[1])), (CLIENT_ID, _entity_name(parts[3]))])
            keys = USER_AND_CLIENT_KEYS
        else:
            continue
        quotas = {}
        for key, text in config.items():
            if key in keys:
                try:
                    quotas[key] = float(text)
                except ValueError:
                    log.warning("ignoring quota %s=%r of /config/%s: not a number", key, text, path)
        if quotas:
            out[entity] = quotas
    return out


def broker_config_path(entity: str) -> str:
    """/config/brokers/<id>, or /config/brokers/<default> for the cluster-wide default."""
    return entity_config_path(BROKER_CONFIG_TYPE, entity)


def delete_topic_path(topic: str) -> str:
    """Marks a topic for deletion; the node has no data."""
    return f"{DELETE_TOPICS}/{topic}"


# ---- JSON helpers ------------------------------------------------------------------------------
class ZkDataError(ValueError):
    """A znode's data is not what Kafka 3.9 writes there."""


_Decode = TypeVar("_Decode", bound=Callable[..., Any])


def _decoder(decode: _Decode) -> _Decode:
    """Report a field of the wrong type (a string where a number belongs, ...) as ZkDataError."""

    @functools.wraps(decode)
    def checked(*args: Any) -> Any:
        try:
            return decode(*args)
        except ZkDataError:
            raise
        except (ValueError, TypeError, AttributeError) as exc:
            raise ZkDataError(f"{decode.__qualname__}: malformed data: {exc}") from exc

    return cast(_Decode, checked)  # functools.wraps keeps decode's signature; the checker cannot see it


def dump_json(obj: Any) -> bytes:
    """Jackson's default output: compact, non-ASCII as UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def load_json(data: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise ZkDataError(f"Failed to parse {what}: {data!r}") from exc
    if not isinstance(obj, dict):
        raise ZkDataError(f"{what} is not a JSON object: {data!r}")
    return obj


def _get(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in obj:
        raise ZkDataError(f"{what} has no {key!r}: {obj}")
    return obj[key]


def _partitions_json(by_partition: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    """A partition -> replicas map as Kafka's topic znode holds it (a Scala mutable.HashMap)."""
    keyed = {str(p): list(replicas) for p, replicas in by_partition.items()}
    return {k: keyed[k] for k in scala_mutable_hashmap_order(keyed)}


def _topic_partition_list(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p} for t, p in partitions]


def _read_topic_partitions(obj: Mapping[str, Any], what: str) -> set[TopicPartition]:
    return {(str(_get(e, "topic", what)), int(_get(e, "partition", what))) for e in _get(obj, "partitions", what)}


# ---- /brokers/ids/<id> -------------------------------------------------------------------------
BROKER_REGISTRATION_VERSION = 5  # what an inter-broker protocol of 2.7 or later writes
_DEFAULT_LISTENERS = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


@dataclass(frozen=True)
class Endpoint:
    """One advertised listener. A None host is Kafka's "all interfaces"."""

    listener: str
    host: str | None
    port: int
    security_protocol: str

    def connection_string(self) -> str:
        if self.host is None:
            return f"{self.listener}://:{self.port}"
        if ":" in self.host:
            return f"{self.listener}://[{self.host}]:{self.port}"
        return f"{self.listener}://{self.host}:{self.port}"


@dataclass(frozen=True)
class BrokerRegistration:
    """A live broker's ephemeral registration.

    `host`/`port` at the top level are for clients that predate listeners: Kafka fills them from
    the first PLAINTEXT endpoint, or writes null/-1 when there is none. A ZooKeeper-mode Kafka 3.9
    broker registers no features (`{}`); jmx_port is -1 unless JMX is enabled."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    timestamp_ms: int = 0
    jmx_port: int = -1
    features: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    version: int = BROKER_REGISTRATION_VERSION

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        """Listener name -> security protocol, in the order Kafka's JSON lists them."""
        mapping = {e.listener: e.security_protocol for e in self.endpoints}
        return {name: mapping[name] for name in scala_immutable_order(mapping)}

    def encode(self) -> bytes:
        plaintext = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        obj: dict[str, Any] = {}
        if self.version >= 5:
            obj["features"] = {name: dict(versions) for name, versions in self.features.items()}
        if self.version >= 4:
            obj["listener_security_protocol_map"] = self.listener_security_protocol_map
        obj["endpoints"] = [e.connection_string() for e in self.endpoints]
        if self.rack is not None and self.version >= 3:
            obj["rack"] = self.rack
        obj["jmx_port"] = self.jmx_port
        obj["port"] = plaintext.port if plaintext else -1
        obj["host"] = plaintext.host if plaintext else None
        obj["version"] = self.version
        obj["timestamp"] = str(self.timestamp_ms)
        return dump_json(obj)

    @classmethod
    @_decoder
    def decode(cls, broker_id: int, data: bytes) -> BrokerRegistration:
        what = f"ZooKeeper registration for broker {broker_id}"
        obj = load_json(data, what)
        version = int(_get(obj, "version", what))
        jmx_port = int(_get(obj, "jmx_port", what))
        if version < 1:
            raise ZkDataError(f"Unsupported version of broker registration: {data!r}")
        if version == 1:
            endpoints = (Endpoint("PLAINTEXT", _get(obj, "host", what), int(_get(obj, "port", what)), "PLAINTEXT"),)
        else:
            protocols = obj.get("listener_security_protocol_map") or _DEFAULT_LISTENERS
            endpoints = tuple(_parse_endpoint(s, protocols) for s in _get(obj, "endpoints", what))
        return cls(broker_id, endpoints, rack=obj.get("rack"), timestamp_ms=int(obj.get("timestamp", 0)),
                   jmx_port=jmx_port, features=obj.get("features") or {}, version=version)


def _parse_endpoint(text: str, protocols: Mapping[str, str]) -> Endpoint:
    match = _ENDPOINT.fullmatch(text)
    if not match:
        raise ZkDataError(f"Unable to parse {text} to a broker endpoint")
    listener = match.group(1).upper()
    if listener not in protocols:
        raise ZkDataError(f"No security protocol defined for listener {listener}")
    return Endpoint(listener, match.group(2) or None, int(match.group(3)), protocols[listener])


# ---- /brokers/topics/<t> -----------------------------------------------------------------------
TOPIC_ASSIGNMENT_VERSION = 3


@dataclass(frozen=True)
class TopicAssignment:
    """A topic's replica assignment, its id and any reassignment in flight.

    adding/removing hold only the partitions being reassigned (Kafka writes `{}` when none are)."""

    partitions: Mapping[int, Sequence[int]]
    topic_id: uuid.UUID | None = None
    adding_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)
    removing_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        obj: dict[str, Any] = {"partitions": _partitions_json(self.partitions)}
        if self.topic_id is not None:
            obj["topic_id"] = uuid_to_base64(self.topic_id)
        obj["adding_replicas"] = _partitions_json({p: r for p, r in self.adding_replicas.items() if r})
        obj["removing_replicas"] = _partitions_json({p: r for p, r in self.removing_replicas.items() if r})
        obj["version"] = TOPIC_ASSIGNMENT_VERSION
        return dump_json(obj)

    @classmethod
    @_decoder
    def decode(cls, data: bytes) -> TopicAssignment:
        obj = load_json(data, "topic assignment")
        partitions = {int(p): tuple(int(b) for b in replicas) for p, replicas in (obj.get("partitions") or {}).items()}

        def in_flight(key: str) -> dict[int, tuple[int, ...]]:
            """Kafka reads these only for the partitions the assignment lists."""
            listed = {int(p): tuple(int(b) for b in replicas) for p, replicas in (obj.get(key) or {}).items()}
            return {p: r for p, r in listed.items() if p in partitions and r}

        topic_id = obj.get("topic_id")
        return cls(partitions, base64_to_uuid(topic_id) if topic_id is not None else None,
                   in_flight("adding_replicas"), in_flight("removing_replicas"))


# ---- /brokers/topics/<t>/partitions/<p>/state --------------------------------------------------
PARTITION_STATE_VERSION = 1  # Kafka 3.9 writes 1 whether or not leader_recovery_state is present


class LeaderRecoveryState(enum.IntEnum):
    RECOVERED = 0
    RECOVERING = 1  # after an unclean election, until the new leader has recovered


@dataclass(frozen=True)
class PartitionState:
    """Leader, epoch and ISR as the controller last wrote them (the znode's version is the
    partition epoch; that comes from the stat, not from here)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED

    def encode(self) -> bytes:
        # Kafka adds leader_recovery_state only when it is not RECOVERED; the order of the keys
        # is that of Scala's immutable HashMap for these names.
        obj: dict[str, Any] = {"controller_epoch": self.controller_epoch, "leader": self.leader,
                               "version": PARTITION_STATE_VERSION}
        if self.leader_recovery_state != LeaderRecoveryState.RECOVERED:
            obj["leader_recovery_state"] = int(self.leader_recovery_state)
        obj["leader_epoch"] = self.leader_epoch
        obj["isr"] = list(self.isr)
        return dump_json(obj)

    @classmethod
    @_decoder
    def decode(cls, data: bytes) -> PartitionState:
        what = "partition state"
        obj = load_json(data, what)
        recovery = int(obj.get("leader_recovery_state", LeaderRecoveryState.RECOVERED))
        if recovery not in LeaderRecoveryState._value2member_map_:
            raise ZkDataError(f"Value {recovery} is not a valid leader recovery state")
        return cls(int(_get(obj, "leader", what)), int(_get(obj, "leader_epoch", what)),
                   tuple(int(b) for b in _get(obj, "isr", what)), int(_get(obj, "controller_epoch", what)),
                   LeaderRecoveryState(recovery))


# ---- /controller, /controller_epoch ------------------------------------------------------------
CONTROLLER_VERSION = 2
NO_KRAFT_CONTROLLER_EPOCH = -1  # what a ZooKeeper-mode controller writes
INITIAL_CONTROLLER_EPOCH = 0  # /controller_epoch when the first controller creates it


@dataclass(frozen=True)
class ControllerRegistration:
    """The ephemeral /controller node of the broker that won the election."""

    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int = NO_KRAFT_CONTROLLER_EPOCH

    def encode(self) -> bytes:
        return dump_json({"version": CONTROLLER_VERSION, "brokerid": self.broker_id,
                      "timestamp": str(self.timestamp_ms), "kraftControllerEpoch": self.kraft_controller_epoch})

    @classmethod
    @_decoder
    def decode(cls, data: bytes) -> ControllerRegistration:
        """Version 1 (before Kafka 3.4) has no kraftControllerEpoch; it reads as -1."""
        what = "ZooKeeper registration for controller"
        obj = load_json(data, what)
        return cls(int(_get(obj, "brokerid", what)), int(obj.get("timestamp", 0)),
                   int(obj.get("kraftControllerEpoch", NO_KRAFT_CONTROLLER_EPOCH)))


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


@_decoder
def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode())


# ---- /cluster/id -------------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    """Kafka writes the version as a string here, unlike everywhere else."""
    return dump_json({"version": "1", "id": cluster_id})


@_decoder
def decode_cluster_id(data: bytes) -> str:
    return str(_get(load_json(data, "cluster id"), "id", "cluster id"))


# ---- /config/<type>/<name>, /config/changes/config_change_<n> -----------------------------------
ENTITY_CONFIG_VERSION = 1
CONFIG_CHANGE_VERSION = 2


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """A topic's (or other entity's) config overrides, values as strings. Kafka serialises a
    java.util.Properties filled in `config`'s order, so the keys come out in its hash order."""
    return dump_json({"version": ENTITY_CONFIG_VERSION,
                  "config": {k: config[k] for k in java_properties_order(config)}})


@_decoder
def decode_entity_config(data: bytes | None) -> dict[str, str]:
    """No data (a bare node) means no overrides, as Kafka reads it."""
    if not data:
        return {}
    config = load_json(data, "entity config").get("config") or {}
    if not all(isinstance(v, str) for v in config.values()):
        raise ZkDataError(f"Config values must be strings: {config}")
    return dict(config)


def encode_config_change(entity_type: str, entity_name: str) -> bytes:
    """The notification brokers watch for to reload an entity's config (topic: "topics", name)."""
    return dump_json({"version": CONFIG_CHANGE_VERSION, "entity_path": f"{entity_type}/{entity_name}"})


@_decoder
def decode_config_change(data: bytes) -> tuple[str, str]:
    """(entity type, entity name) from a version 2 notification, or from a version 1 one (which
    older brokers wrote for topics and clients)."""
    what = "config change notification"
    obj = load_json(data, what)
    version = _get(obj, "version", what)
    if version == 1:
        return str(_get(obj, "entity_type", what)), str(_get(obj, "entity_name", what))
    if version == 2:
        entity_path = str(_get(obj, "entity_path", what))
        entity_type, slash, entity_name = entity_path.partition("/")
        if not slash:
            raise ZkDataError(f"Config change entity_path has no entity type: {entity_path!r}")
        return entity_type, entity_name
    raise ZkDataError(f"Config change notification has unsupported version '{version}', "
                      "supported versions are 1 and 2.")


# ---- /admin/reassign_partitions, /admin/preferred_replica_election -------------------------------
def encode_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    """The legacy (pre-2.4) way to ask the controller to move replicas; it still reads it."""
    return dump_json({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(replicas)} for (t, p), replicas in reassignment.items()]})


@_decoder
def decode_reassignment(data: bytes) -> dict[TopicPartition, tuple[int, ...]]:
    what = "partition reassignment"
    obj = load_json(data, what)
    return {(str(_get(e, "topic", what)), int(_get(e, "partition", what))):
            tuple(int(b) for b in _get(e, "replicas", what)) for e in _get(obj, "partitions", what)}


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    return dump_json({"version": 1, "partitions": _topic_partition_list(partitions)})


@_decoder
def decode_preferred_replica_election(data: bytes) -> set[TopicPartition]:
    return _read_topic_partitions(load_json(data, "preferred replica election"), "preferred replica election")


# ---- notifications from brokers to the controller ----------------------------------------------
def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    """Brokers with an inter-broker protocol before 2.7 announce ISR changes this way; later ones
    send AlterPartition to the controller instead."""
    return dump_json({"version": 1, "partitions": _topic_partition_list(partitions)})


@_decoder
def decode_isr_change(data: bytes) -> set[TopicPartition]:
    return _read_topic_partitions(load_json(data, "ISR change notification"), "ISR change notification")


_LOG_DIR_FAILURE_EVENT = 1


def log_dir_event_path(name: str) -> str:
    """A log dir event notification's znode, by its name under /log_dir_event_notification."""
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{name}"


def encode_log_dir_event(broker_id: int) -> bytes:
    """A broker lost a log directory; the controller re-checks that broker's replicas."""
    return dump_json({"version": 1, "broker": broker_id, "event": _LOG_DIR_FAILURE_EVENT})


@_decoder
def decode_log_dir_event(data: bytes) -> int:
    return int(_get(load_json(data, "log dir event notification"), "broker", "log dir event notification"))


# ---- /latest_producer_id_block -----------------------------------------------------------------
PRODUCER_ID_BLOCK_VERSION = 1


@dataclass(frozen=True)
class ProducerIdBlock:
    """The last block of producer ids handed out, both ends inclusive (Kafka writes them as
    strings); the next block starts at block_end + 1."""

    broker_id: int
    block_start: int
    block_end: int

    def encode(self) -> bytes:
        return dump_json({"version": PRODUCER_ID_BLOCK_VERSION, "broker": self.broker_id,
                      "block_start": str(self.block_start), "block_end": str(self.block_end)})

    @classmethod
    @_decoder
    def decode(cls, data: bytes) -> ProducerIdBlock:
        what = "producer id block"
        obj = load_json(data, what)
        return cls(int(_get(obj, "broker", what)), int(_get(obj, "block_start", what)),
                   int(_get(obj, "block_end", what)))


# ---- /feature ----------------------------------------------------------------------------------
class FeatureStatus(enum.IntEnum):
    DISABLED = 0
    ENABLED = 1  # inter-broker protocol 2.7 or later


@dataclass(frozen=True)
class FeatureState:
    """Cluster-wide finalized feature levels. A ZooKeeper-mode Kafka 3.9 controller writes
    version 2, ENABLED, and no features (its brokers support none)."""

    status: FeatureStatus = FeatureStatus.ENABLED
    features: Mapping[str, int] = field(default_factory=dict)
    version: int = 2  # 1 before inter-broker protocol 3.3, which also wrote min_version_level

    def encode(self) -> bytes:
        def levels(level: int) -> dict[str, int]:
            if self.version == 1:
                return {"max_version_level": level, "min_version_level": level}
            return {"max_version_level": level}

        return dump_json({"features": {name: levels(level) for name, level in self.features.items()},
                      "version": self.version, "status": int(self.status)})

    @classmethod
    @_decoder
    def decode(cls, data: bytes) -> FeatureState:
        what = "feature information"
        obj = load_json(data, what)
        version = int(_get(obj, "version", what))
        if version not in (1, 2):
            raise ZkDataError(f"Unsupported version: {version} of feature information: {data!r}")
        status = obj.get("status")
        if status not in FeatureStatus._value2member_map_:
            raise ZkDataError(f"Malformed status: {status} found in feature information: {data!r}")
        features = obj.get("features")
        if not isinstance(features, dict):
            raise ZkDataError(f"Features map can not be absent in: {data!r}")
        levels: dict[str, int] = {}
        for name, versions in features.items():
            if "max_version_level" not in versions:
                raise ZkDataError(f"max_version_level absent in [{versions}]")
            levels[name] = int(versions["max_version_level"])
        return cls(FeatureStatus(status), levels, version)
