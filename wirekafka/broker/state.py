"""BrokerState: the one owner of topics and partitions, and of what is persisted about them.

Topic ids, partition counts and per-topic config overrides live in `wirekafka-topics.json` in
the log dir (Kafka keeps these in its KRaft metadata log, which a single node without a
controller quorum does not need). Each partition directory also carries Kafka's
`partition.metadata` and `leader-epoch-checkpoint` files."""

from __future__ import annotations

import base64
import json
import logging
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from wirekafka.broker import topic_config
from wirekafka.broker.groups import GroupCoordinator
from wirekafka.broker.partition import Partition
from wirekafka.config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage import checkpoint
from wirekafka.storage.log import PartitionLog

log = logging.getLogger(__name__)

TOPICS_FILE = "wirekafka-topics.json"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
MAX_TOPIC_NAME = 249
PRODUCER_ID_BLOCK = 1000
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def uuid_to_base64(u: uuid.UUID) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def base64_to_uuid(s: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


def new_cluster_id() -> str:
    return uuid_to_base64(uuid.uuid4())


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
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition] = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class BrokerState:
    def __init__(self, config: BrokerConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.node_id = config.node_id
        self.log_dir = config.log_dir
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.cluster_id = ""
        self.next_producer_id = 0
        self.producer_id_ceiling = 0
        self.groups = GroupCoordinator(self)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # ---- startup / shutdown ------------------------------------------------------------------
    def load(self) -> None:
        """Open the log dir: meta.properties, topics, every partition log (recovering those not
        cleanly shut down) and producer state."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        fresh = not (self.log_dir / "meta.properties").exists()
        self._load_meta()
        clean_marker = self.log_dir / CLEAN_SHUTDOWN_FILE
        clean = clean_marker.exists()
        recovery = checkpoint.read_offsets(self.log_dir / RECOVERY_CHECKPOINT)
        starts = checkpoint.read_offsets(self.log_dir / LOG_START_CHECKPOINT)
        topics_path = self.log_dir / TOPICS_FILE
        saved = json.loads(topics_path.read_text()) if topics_path.exists() else {"topics": []}
        # Producer ids are handed out in persisted blocks, so none is reused after a crash.
        self.next_producer_id = self.producer_id_ceiling = saved.get("producer_id_block_end", 0)
        for t in saved["topics"]:
            topic = Topic(t["name"], base64_to_uuid(t["id"]), configs=dict(t.get("configs", {})))
            for p in range(t["partitions"]):
                key = (topic.name, p)
                topic.partitions.append(
                    self._open_partition(topic, p, starts.get(key, 0), recovery.get(key, 0), clean)
                )
            self._index(topic)
        if not clean and not fresh:
            log.info("log dir %s was not shut down cleanly; recovered past recovery points", self.log_dir)
        clean_marker.unlink(missing_ok=True)
        self._save_topics()

    def _load_meta(self) -> None:
        meta_path = self.log_dir / "meta.properties"
        if meta_path.exists():
            meta = checkpoint.read_properties(meta_path)
            if int(meta.get("node.id", self.node_id)) != self.node_id:
                raise RuntimeError(
                    f"node.id {self.node_id} does not match {meta['node.id']} in {meta_path}"
                )
            self.cluster_id = meta["cluster.id"]
            return
        self.cluster_id = new_cluster_id()
        checkpoint.write_properties(
            meta_path,
            {
                "cluster.id": self.cluster_id,
                "directory.id": new_cluster_id(),
                "node.id": str(self.node_id),
                "version": "1",
            },
        )
        log.info("formatted %s with cluster id %s", self.log_dir, self.cluster_id)

    def _open_partition(self, topic: Topic, index: int, start: int, recovery: int, clean: bool) -> Partition:
        directory = self.log_dir / f"{topic.name}-{index}"
        plog = PartitionLog(
            directory,
            topic_config.log_config(topic.configs, self.config),
            log_start_offset=start,
            recovery_point=recovery,
            clean_shutdown=clean,
            clock=self.clock,
        )
        meta = directory / "partition.metadata"
        if not meta.exists():
            checkpoint.atomic_write(meta, f"version: 0\ntopic_id: {uuid_to_base64(topic.topic_id)}\n")
            checkpoint.write_leader_epochs(directory / "leader-epoch-checkpoint", [(0, 0)])
        partition = Partition(topic.name, index, plog)
        partition.rebuild_producer_state()
        return partition

    def _index(self, topic: Topic) -> None:
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def _save_topics(self) -> None:
        data = {
            "version": 1,
            "producer_id_block_end": self.producer_id_ceiling,
            "topics": [
                {"name": t.name, "id": uuid_to_base64(t.topic_id), "partitions": len(t.partitions), "configs": t.configs}
                for t in self.topics.values()
            ],
        }
        checkpoint.atomic_write(self.log_dir / TOPICS_FILE, json.dumps(data, indent=1))

    def write_checkpoints(self) -> None:
        recovery = {}
        starts = {}
        for t in self.topics.values():
            for p in t.partitions:
                recovery[(t.name, p.index)] = p.log.recovery_point
                starts[(t.name, p.index)] = p.log.log_start_offset
        checkpoint.write_offsets(self.log_dir / RECOVERY_CHECKPOINT, recovery)
        checkpoint.write_offsets(self.log_dir / LOG_START_CHECKPOINT, starts)

    def flush_all(self) -> None:
        for t in self.topics.values():
            for p in t.partitions:
                p.log.flush()

    def shutdown(self) -> None:
        """Flush and close every log, checkpoint, and leave the clean-shutdown marker."""
        self.flush_all()
        self.write_checkpoints()
        self._save_topics()
        for t in self.topics.values():
            for p in t.partitions:
                p.log.close()
        checkpoint.atomic_write(self.log_dir / CLEAN_SHUTDOWN_FILE, '{"version":0,"brokerEpoch":0}')

    # ---- topics --------------------------------------------------------------------------------
    def get_partition(self, topic: str, index: int) -> Partition:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return t.partitions[index]

    def validate_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str]) -> None:
        if self.topics.get(name) is not None:
            raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        reason = topic_name_error(name)
        if reason:
            raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if num_partitions <= 0:
            raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
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

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None) -> Topic:
        topic = Topic(name, uuid.uuid4(), configs=dict(configs or {}))
        for p in range(num_partitions):
            topic.partitions.append(self._open_partition(topic, p, 0, 0, True))
        self._index(topic)
        self._save_topics()
        log.info("created topic %s with %d partitions", name, num_partitions)
        return topic

    def delete_topic(self, name: str) -> None:
        topic = self.topics.pop(name)
        self.topics_by_id.pop(topic.topic_id, None)
        self._save_topics()
        for p in topic.partitions:
            p.log.close()
            p.log.delete()
            p.notify()
        log.info("deleted topic %s", name)

    def add_partitions(self, topic: Topic, total: int) -> None:
        for p in range(len(topic.partitions), total):
            topic.partitions.append(self._open_partition(topic, p, 0, 0, True))
        self._save_topics()

    def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        topic.configs = dict(configs)
        cfg = topic_config.log_config(topic.configs, self.config)
        for p in topic.partitions:
            p.log.config = cfg
        self._save_topics()

    def topic_config_value(self, topic: Topic, name: str) -> str:
        return topic_config.effective(name, topic.configs, self.config)[0]

    def allocate_producer_id(self) -> int:
        if self.next_producer_id >= self.producer_id_ceiling:
            self.producer_id_ceiling = self.next_producer_id + PRODUCER_ID_BLOCK
            self._save_topics()
        pid = self.next_producer_id
        self.next_producer_id += 1
        return pid
