"""Cluster metadata: which topics exist, their ids, partitions and config overrides, and the
producer-id blocks — the one place topics are created, deleted, altered and looked up.

`ClusterMetadata` is the interface the rest of the broker uses. `LocalMetadata` is the single-node
implementation: it keeps the metadata in `wirekafka-topics.json` in the log dir (Kafka keeps it in
its KRaft metadata log, which one node without a controller quorum does not need). A ZooKeeper
implementation (Kafka 3.9's znodes) plugs in here for a cluster.

Partitions are this broker's replicas: the metadata asks the broker's `open_partition` for them
when a topic or partition appears (in a worker thread: it creates directories and files), and takes
them offline when the topic goes. Changes are applied on the event loop and persisted by a worker
that writes the newest snapshot under a lock, so saves never land out of order."""

from __future__ import annotations

import base64
import json
import logging
import re
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Protocol

import trio

from wirekafka.broker.metadata.answer_cache import AnswerCache
from wirekafka.config import topic as topic_config
from wirekafka.config.dynamic import DEFAULT_ENTITY, MIN_ISR, DynamicBrokerConfigs
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.quotas.entities import ClientQuotas, Entity
from wirekafka.security.scram_store import ScramCredentials
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.security.sasl.scram import ScramCredential
from wirekafka.security.private_file import write_private

log = logging.getLogger(__name__)

TOPICS_FILE = "wirekafka-topics.json"
MAX_TOPIC_NAME = 249
PRODUCER_ID_BLOCK = 1000
ZERO_UUID = uuid.UUID(int=0)
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def uuid_to_base64(u: uuid.UUID) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def base64_to_uuid(s: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


def topic_name_error(name: str) -> str | None:
    if not name or name in (".", ".."):
        return f"Topic name {name!r} is illegal"
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is longer than {MAX_TOPIC_NAME} characters"
    if not _TOPIC_NAME.match(name):
        return f"Topic name {name!r} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass
class Topic:
    """A topic and this broker's replicas of its partitions: partitions[i] is None when the
    partition's replicas are on other brokers (in a cluster)."""

    name: str
    topic_id: uuid.UUID
    partitions: list[Partition | None] = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def local_partitions(self) -> list[Partition]:
        return [p for p in self.partitions if p is not None]

    def leader_partition(self, index: int) -> Partition:
        """The partition for a client's request: UNKNOWN_TOPIC_OR_PARTITION past the end,
        NOT_LEADER_OR_FOLLOWER unless this broker leads it."""
        if not 0 <= index < len(self.partitions):
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        p = self.partitions[index]
        if p is not None and not p.online:  # its log dir failed (KAFKA_STORAGE_ERROR), or it is going
            raise KafkaApiError(p.offline_error)
        if p is None or not p.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return p


@dataclass(frozen=True)
class BrokerInfo:
    """A live broker: id, rack and every advertised endpoint (listener name -> host, port).
    host and port are one listener's: the one a client's request came in on when answering
    it, the inter-broker listener when a broker connects to another."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    endpoints: Mapping[str, tuple[str, int]] = field(default_factory=dict, hash=False)

    def on(self, listener: str) -> BrokerInfo | None:
        """This broker as reached on listener; None when it does not advertise that listener."""
        endpoint = self.endpoints.get(listener)
        return None if endpoint is None else replace(self, host=endpoint[0], port=endpoint[1])


class PartitionView(NamedTuple):
    """A partition as the cluster metadata records it (Metadata answers this). A named tuple:
    Metadata makes one per partition of every topic it describes (10,000 and more), and a
    frozen dataclass costs several times as much to make."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()


# open_partition(topic, index, new): this broker's replica of a partition; new=True when the
# partition is being created now (no log to recover).
OpenPartition = Callable[[Topic, int, bool], Partition]


class ClusterMetadata(Protocol):
    """What the broker asks of cluster metadata, whatever keeps it."""

    def topic(self, name: str) -> Topic | None: ...
    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None: ...
    def resolve(self, name: str | None, topic_id: uuid.UUID | None, by_id: bool) -> tuple[Topic | None, ErrorCode]: ...
    def partition(self, topic: str, index: int) -> Partition: ...
    def brokers(self, listener: str) -> list[BrokerInfo]:
        """The live brokers that advertise listener, each with its host and port on it."""
        ...
    def controller_id(self) -> int: ...
    def partition_view(self, topic: Topic, index: int) -> PartitionView: ...
    def answer_cache(self) -> AnswerCache | None:
        """A cache for answers derived only from this metadata (Metadata's), emptied whenever
        the metadata changes; None where changes are not tracked (no caching)."""
        ...
    def all_topics(self) -> list[Topic]: ...
    def being_created(self, name: str) -> bool: ...
    def iter_partitions(self) -> Iterator[Partition]: ...
    def validate_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignment: dict[int, list[int]] | None = None) -> None: ...
    async def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                           replication_factor: int = -1, assignment: dict[int, list[int]] | None = None,
                           wait: bool = True, timeout_s: float | None = None) -> Topic | None:
        """timeout_s: how long to wait for the partitions to come online (the request's timeout);
        None: the backend's own bound."""
        ...
    async def delete_topic(self, name: str) -> Topic: ...
    async def add_partitions(self, topic: Topic, total: int) -> None: ...
    async def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None: ...
    broker_configs: DynamicBrokerConfigs
    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None: ...
    scram: ScramCredentials  # the users' SCRAM credentials
    async def set_scram_credentials(self, changes: dict[str, dict[str, ScramCredential]]) -> None:
        """Each user's credentials from now on (user -> mechanism -> credential; none removes them)."""
        ...
    client_quotas: ClientQuotas  # the client quotas (KIP-546), by entity
    async def alter_client_quotas(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        """Per entity, quota keys set (a value) or removed (None); applied as one change."""
        ...
    def topic_config_value(self, topic: Topic, name: str) -> str: ...
    async def allocate_producer_id(self) -> int: ...
    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None,
                            timeout_s: float) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]: ...
    async def alter_reassignments(self, changes: list[tuple[str, int, list[int] | None]]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]: ...
    def list_reassignments(self, wanted: list[tuple[str, int]] | None
                           ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]: ...


def leader_of(metadata: ClusterMetadata, topic_name: str, index: int) -> int:
    """The broker leading a partition as this broker knows it; -1 for none, or no such partition
    (a coordinator's internal topic not created yet, say)."""
    topic = metadata.topic(topic_name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return -1
    return metadata.partition_view(topic, index).leader


def check_new_topic(name: str, num_partitions: int, replication_factor: int, configs: dict[str, str]) -> None:
    """Kafka's checks of a new topic's name, partition count, replication factor and configs."""
    reason = topic_name_error(name)
    if reason:
        raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    if num_partitions <= 0:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaApiError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    for k, v in configs.items():
        reason = topic_config.invalid_reason(k, v)
        if reason:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, reason)


class TopicIndex:
    """The look-ups both metadata implementations answer the same way, from their topics by name
    and by id and the names being created."""

    config: BrokerConfig
    broker_configs: DynamicBrokerConfigs
    _topics: dict[str, Topic]
    _by_id: dict[uuid.UUID, Topic]
    _creating: set[str]

    def topic(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def resolve(self, name: str | None, topic_id: uuid.UUID | None, by_id: bool) -> tuple[Topic | None, ErrorCode]:
        """The topic a request names, by id (newer request versions) or by name, with the error
        Kafka answers when it does not exist (UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION)."""
        if by_id:
            return (self._by_id.get(topic_id) if topic_id else None), ErrorCode.UNKNOWN_TOPIC_ID
        return (self._topics.get(name) if name is not None else None), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def partition(self, topic: str, index: int) -> Partition:
        """A partition for a client's request: this broker must lead it."""
        t = self._topics.get(topic)
        if t is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return t.leader_partition(index)

    def all_topics(self) -> list[Topic]:
        """A snapshot list: callers may create or delete topics while iterating it."""
        return list(self._topics.values())

    def being_created(self, name: str) -> bool:
        """True while a creation of the topic is under way (it is not visible yet)."""
        return name in self._creating

    def iter_partitions(self) -> Iterator[Partition]:
        """This broker's replicas."""
        for t in self.all_topics():
            yield from t.local_partitions()

    def topic_config_value(self, topic: Topic, name: str) -> str:
        return topic_config.effective(name, topic.configs, self.config, self.broker_configs)[0]

    def apply_topic_configs(self, topic: Topic) -> None:
        """Give the topic's replicas its effective log config, min.insync.replicas and the
        broker's producer.id.expiration.ms: after a change of its overrides or of the dynamic
        broker configs it inherits."""
        cfg = topic_config.log_config(topic.configs, self.config, self.broker_configs)
        min_isr = int(self.topic_config_value(topic, "min.insync.replicas"))
        expiration_ms = self.broker_configs.current_int("producer.id.expiration.ms")
        for p in topic.local_partitions():
            p.set_log_config(cfg)
            p.min_insync_replicas = min_isr
            p.producer_state.expiration_ms = expiration_ms

    def apply_all_configs(self) -> None:
        """The dynamic broker configs changed: every topic inherits anew."""
        for topic in self.all_topics():
            self.apply_topic_configs(topic)


class LocalMetadata(TopicIndex):
    """Single-node metadata persisted in the log dir's wirekafka-topics.json."""

    def __init__(self, log_dir: Path, config: BrokerConfig, open_partition: OpenPartition) -> None:
        self.path = log_dir / TOPICS_FILE
        self.config = config
        self._open_partition = open_partition
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._next_producer_id = 0
        self._producer_id_ceiling = 0
        self._creating: set[str] = set()  # names whose partitions are being opened right now
        self._save_lock = trio.Lock()
        self._change_lock = trio.Lock()  # changes that must not interleave (partition growth, pid blocks)
        self.broker_configs = DynamicBrokerConfigs(config.node_id, config)
        self.broker_configs.observe(self.apply_all_configs)
        self.scram = ScramCredentials()
        self.client_quotas = ClientQuotas()
        # this node with its advertised endpoints, which do not change while it runs
        self._me = BrokerInfo(config.node_id, "", -1, config.text_if_set("broker.rack"),
                              {lst.name: (lst.host, lst.port) for lst in config.advertised_listeners})

    # ---- persistence ---------------------------------------------------------------------------
    def load(self) -> None:
        """Read the topics file and open every partition (recovering logs as needed)."""
        saved: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {"topics": []}
        # Producer ids are handed out in persisted blocks, so none is reused after a crash.
        self._next_producer_id = self._producer_id_ceiling = int(saved.get("producer_id_block_end", 0))
        for entity, configs in saved.get("broker_configs", {}).items():
            self.broker_configs.replace(entity, configs)
        self.scram.load(saved.get("scram_credentials", {}))
        self.client_quotas.load(saved.get("client_quotas", []))
        defaults = self.broker_configs.defaults
        if MIN_ISR not in defaults:  # formatting a Kafka 4 cluster writes it (KIP-966)
            self.broker_configs.replace(DEFAULT_ENTITY, {**defaults, MIN_ISR: str(self.config.int(MIN_ISR))})
        for t in saved["topics"]:
            topic = Topic(t["name"], base64_to_uuid(t["id"]), configs=dict(t.get("configs", {})))
            topic.partitions = [self._open_partition(topic, p, False) for p in range(t["partitions"])]
            self._index(topic)
        self.save()

    def save(self) -> None:
        """Write the topics file now (start-up and shutdown, when nothing else runs)."""
        write_private(self.path, self._snapshot())

    async def _persist(self) -> None:
        """Write the newest state in a worker; the lock keeps an older snapshot from landing last."""
        async with self._save_lock:
            await trio.to_thread.run_sync(write_private, self.path, self._snapshot())

    def _snapshot(self) -> str:
        data = {
            "version": 1,
            "producer_id_block_end": self._producer_id_ceiling,
            "broker_configs": self.broker_configs.snapshot(),
            "scram_credentials": self.scram.snapshot(),
            "client_quotas": self.client_quotas.snapshot(),
            "topics": [
                {"name": t.name, "id": uuid_to_base64(t.topic_id), "partitions": len(t.partitions), "configs": t.configs}
                for t in self._topics.values()
            ],
        }
        return json.dumps(data, indent=1)

    def _index(self, topic: Topic) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    # ---- look-ups ------------------------------------------------------------------------------
    def brokers(self, listener: str) -> list[BrokerInfo]:
        me = self._me.on(listener)
        return [me] if me is not None else []

    def controller_id(self) -> int:
        return self.config.node_id

    def answer_cache(self) -> AnswerCache | None:
        """One node's partition views follow its replicas' state, which changes untracked."""
        return None

    def partition_view(self, topic: Topic, index: int) -> PartitionView:
        node = self._me.node_id  # config.node_id parses the config each time
        p = topic.partitions[index]
        if p is not None and not p.online:  # its log dir failed: no leader, this replica offline
            return PartitionView(-1, p.leader_epoch, (node,), (node,), (node,))
        return PartitionView(node, p.leader_epoch if p is not None else 0, (node,), (node,))

    # ---- changes -------------------------------------------------------------------------------
    def validate_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignment: dict[int, list[int]] | None = None) -> None:
        if name in self._topics or name in self._creating:
            raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        reason = topic_name_error(name)
        if reason:
            raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if num_partitions <= 0:
            raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        for replicas in (assignment or {}).values():
            if replicas != [self.config.node_id]:
                raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                    f"replica assignment {replicas} names brokers that do not exist")
        if replication_factor <= 0:
            raise KafkaApiError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if replication_factor > 1:
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor "
                f"of {replication_factor} cannot be reached because only 1 broker(s) are registered.",
            )
        for k, v in configs.items():
            reason = topic_config.invalid_reason(k, v)
            if reason:
                raise KafkaApiError(ErrorCode.INVALID_CONFIG, reason)

    async def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                           replication_factor: int = -1, assignment: dict[int, list[int]] | None = None,
                           wait: bool = True, timeout_s: float | None = None) -> Topic | None:
        """Create a validated topic (one node: the replication factor and assignment were
        validated to be this node alone; the topic exists when this returns, whatever wait says): its partitions are opened in a worker; the topic becomes
        visible once they all exist. A second creation of the name meanwhile is refused."""
        if name in self._topics or name in self._creating:
            raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        topic = Topic(name, uuid.uuid4(), configs=dict(configs or {}))
        self._creating.add(name)
        try:
            topic.partitions = await trio.to_thread.run_sync(self._open_new, topic, 0, num_partitions)
        finally:
            self._creating.discard(name)
        self._index(topic)
        await self._persist()
        log.info("created topic %s with %d partitions", name, num_partitions)
        return topic

    def _open_new(self, topic: Topic, first: int, total: int) -> list[Partition | None]:
        """New partitions first..total-1 of topic (worker thread: nobody else sees them yet)."""
        return [self._open_partition(topic, p, True) for p in range(first, total)]

    async def delete_topic(self, name: str) -> Topic:
        """Forget the topic (its partitions go offline at once) and return it; the caller deletes
        its partitions' files off the loop."""
        topic = self._topics.pop(name)
        self._by_id.pop(topic.topic_id, None)
        for p in topic.local_partitions():
            p.take_offline()
        await self._persist()
        log.info("deleted topic %s", name)
        return topic

    async def add_partitions(self, topic: Topic, total: int) -> None:
        """Grow a topic to total partitions; concurrent requests are applied one after another."""
        async with self._change_lock:
            if self._topics.get(topic.name) is not topic:
                raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic.name} does not exist.")
            first = len(topic.partitions)
            if total <= first:
                raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {first} partitions, "
                                    f"which is higher than the requested {total}.")
            topic.partitions.extend(await trio.to_thread.run_sync(self._open_new, topic, first, total))
            await self._persist()

    async def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        topic.configs = dict(configs)
        self.apply_topic_configs(topic)
        await self._persist()

    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        self.broker_configs.replace(entity, configs)
        await self._persist()

    async def set_scram_credentials(self, changes: dict[str, dict[str, ScramCredential]]) -> None:
        for user, credentials in changes.items():
            self.scram.replace(user, credentials)
        await self._persist()

    async def alter_client_quotas(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        self.client_quotas.apply(changes)
        await self._persist()

    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None,
                            timeout_s: float) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """One node already leads every partition: no election is ever needed."""
        answers: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        for topic, index in partitions or []:
            t = self._topics.get(topic)
            answers[(topic, index)] = ((ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic "
                                        "partition.") if t is not None and 0 <= index < len(t.partitions)
                                       else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."))
        return answers

    async def alter_reassignments(self, changes: list[tuple[str, int, list[int] | None]]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """One node: the only valid target is this node, already the replica; nothing is ever
        in progress to cancel."""
        answers: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        for topic, index, target in changes:
            t = self._topics.get(topic)
            if t is None or not 0 <= index < len(t.partitions):
                answers[(topic, index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            elif target is None:
                answers[(topic, index)] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
            elif not target:
                answers[(topic, index)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                           "Empty replica list specified in partition reassignment.")
            elif target != [self.config.node_id]:
                answers[(topic, index)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The proposed assignment contains "
                                           f"non-live brokers: {[b for b in target if b != self.config.node_id]}"
                                           if any(b != self.config.node_id for b in target) else
                                           f"Duplicate replica ids in partition reassignment replica list: {target}")
            else:
                answers[(topic, index)] = (ErrorCode.NONE, None)
        return answers

    def list_reassignments(self, wanted: list[tuple[str, int]] | None
                           ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        return []

    async def allocate_producer_id(self) -> int:
        """Producer ids come from blocks whose end is persisted before any id of it is used."""
        async with self._change_lock:
            if self._next_producer_id >= self._producer_id_ceiling:
                self._producer_id_ceiling = self._next_producer_id + PRODUCER_ID_BLOCK
                await self._persist()
            pid = self._next_producer_id
            self._next_producer_id += 1
            return pid
