"""AdminWriter: the admin requests' writes to ZooKeeper, as Kafka 3.9's AdminZkClient makes them:
new topics' /config/topics and /brokers/topics znodes (the controller then brings their
partitions online), /admin/delete_topics markers, added partitions, topic and broker configs
(with their change notifications), SCRAM credentials and client quotas under /config/users,
/config/clients and /config/ips, and producer-id blocks claimed in /latest_producer_id_block.

Any broker may write these. Every broker learns the result from its watches, as the cluster view
applies it; a caller that must answer with the new state (a created topic, say) waits for the
view to catch up (`ClusterView.wait_until`). The broker's own copy of a config, credential or
quota is updated at once, so that it answers its client's next request with it."""

from __future__ import annotations

import logging
import random
import uuid

import trio
from kazoo.exceptions import NodeExistsError

from wirekafka.broker.metadata import assignment as assigner
from wirekafka.broker.metadata.cluster_metadata import Topic, check_new_topic
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.quotas.entities import Entity, stored_text
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.security.password_encoder import PasswordConfigError
from wirekafka.security.sasl.scram import MECHANISMS, ScramCredential
from wirekafka.startup_errors import StartupError

log = logging.getLogger(__name__)

_CATCH_UP_S = 30  # how long a topic change waits for this broker to apply it


class AdminWriter:
    def __init__(self, config: BrokerConfig, zk: ZkSession, view: ClusterView) -> None:
        self.config = config
        self.node_id = config.node_id
        self.zk = zk
        self.view = view
        self._change_lock = trio.Lock()  # changes that must not interleave (partition growth, pid blocks)
        self._next_producer_id = 0
        self._producer_id_ceiling = 0

    # ---- topics ------------------------------------------------------------------------------------
    def validate_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignment: dict[int, list[int]] | None = None) -> None:
        if self.view.topic(name) is not None or self.view.being_created(name):
            raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        check_new_topic(name, num_partitions, replication_factor, configs)
        if assignment is not None:
            assigner.validate_topic_assignment(assignment)
        else:
            assigner.assign_replicas_to_brokers(self.view.broker_metadata(), num_partitions, replication_factor)

    async def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                           replication_factor: int = -1, assignment: dict[int, list[int]] | None = None,
                           wait: bool = True, timeout_s: float | None = None) -> Topic | None:
        """Write the topic's config and assignment znodes (Kafka's order: config first), then
        (wait) until this broker has applied the partition states the controller writes for it,
        up to timeout_s (CreateTopics' timeout; else _CATCH_UP_S), REQUEST_TIMED_OUT after it
        with the topic created, as Kafka answers.
        Without wait (auto-creation by Metadata, which answers at once) it returns None."""
        if replication_factor == -1:
            replication_factor = self.config.int("default.replication.factor")
        if assignment is None:
            assignment = assigner.assign_replicas_to_brokers(self.view.broker_metadata(), num_partitions,
                                                             replication_factor, rng=random.Random())
        topic_id = uuid.uuid4()
        with self.view.creating(name):
            try:
                await self.zk.call(io.create_topic_znodes, self.zk.client, name, topic_id, assignment, configs or {})
            except NodeExistsError:
                raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
            log.info("created topic %s with %d partitions, assignment %s", name, len(assignment), assignment)
            if not wait:
                self.zk.mark_changed()
                return None
            topic = await self.view.wait_until(lambda: self.view.online(name),
                                               _CATCH_UP_S if timeout_s is None else timeout_s)
        if topic is None:
            raise KafkaApiError(ErrorCode.REQUEST_TIMED_OUT, f"Topic {name} was created but its partitions "
                                "did not come online in time")
        return topic

    async def delete_topic(self, name: str) -> Topic:
        """Mark the topic for deletion; the controller removes its znodes, and every broker its
        replicas. Returns the topic with its partitions already deleted here."""
        topic = self.view.by_name[name]
        await self.zk.call(io.mark_topic_for_deletion, self.zk.client, name)
        await self.view.wait_until(lambda: None if self.view.topic(name) is topic else True, _CATCH_UP_S)
        return Topic(topic.name, topic.topic_id, [], topic.configs)

    async def add_partitions(self, topic: Topic, total: int) -> None:
        async with self._change_lock:
            view = self.view.snapshot.topics.get(topic.name)
            if self.view.topic(topic.name) is not topic or view is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic.name} does not exist.")
            first = len(view.assignment)
            if total <= first:
                raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {first} partitions, "
                                    f"which is higher than the requested {total}.")
            added = assigner.assign_new_partitions(topic.name, view.assignment, self.view.broker_metadata(), total)
            assignment = {**{p: list(r) for p, r in view.assignment.items()}, **added}
            await self.zk.call(io.set_assignment, self.zk.client, topic.name, topic.topic_id, assignment)
            await self.view.wait_until(lambda: topic if len(topic.partitions) >= total else None, _CATCH_UP_S)

    # ---- configs, credentials, quotas ----------------------------------------------------------------
    async def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        await self.zk.call(io.set_entity_config, self.zk.client, zl.TOPIC_CONFIG_TYPE, topic.name, configs)
        topic.configs = dict(configs)
        self.view.apply_topic_configs(topic)

    async def set_scram_credentials(self, changes: dict[str, dict[str, ScramCredential]]) -> None:
        """/config/users/<user> and its notification per user, as Kafka 3.9's AlterUserScramCredentials
        writes them (the user's other keys, its quotas, kept); every broker reloads them from its watch."""
        for user, credentials in changes.items():
            updates: dict[str, str | None] = {mech: None for mech in MECHANISMS}
            updates.update({mech: cred.encode() for mech, cred in credentials.items()})
            await self.zk.call(io.update_entity_config, self.zk.client, zl.USER_CONFIG_TYPE, zl.sanitize(user),
                               updates)
            self.view.scram.replace(user, credentials)

    async def alter_client_quotas(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        """Each entity's config znode and its notification, as Kafka 3.9's AlterClientQuotas writes
        them (a user's SCRAM credentials kept); every broker reloads them from its watch."""
        for entity, change in changes.items():
            entity_type, name = zl.quota_entity_path(entity)
            updates = {k: None if v is None else stored_text(k, v) for k, v in change.items()}
            await self.zk.call(io.update_entity_config, self.zk.client, entity_type, name, updates)
        self.view.client_quotas.apply(changes)

    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """/config/brokers/<entity> (its passwords encoded as Kafka 3.9 encodes them: raises
        PasswordConfigError without password.encoder.secret) and its notification; every broker
        reloads it from its watch."""
        stored = self.view.passwords.persistent(entity, configs)
        await self.zk.call(io.set_entity_config, self.zk.client, zl.BROKER_CONFIG_TYPE, entity, stored)
        self.view.broker_configs.replace(entity, configs)

    async def reencode_passwords(self) -> None:
        """Kafka's start-up step for a changed secret: this broker's stored passwords that
        password.encoder.old.secret decodes are encoded anew with password.encoder.secret."""
        own = str(self.node_id)
        data = await self.zk.call(io.read_znode, self.zk.client, zl.broker_config_path(own))
        if data is None:
            return
        try:
            rewritten = self.view.passwords.reencoded(io.entity_config(zl.broker_config_path(own), data))
        except PasswordConfigError as exc:  # an old secret without a new one: Kafka's start-up fails too
            raise StartupError(f"re-encoding {zl.broker_config_path(own)} with password.encoder.secret: {exc}") from None
        if rewritten is not None:
            await self.zk.call(io.set_entity_config, self.zk.client, zl.BROKER_CONFIG_TYPE, own, rewritten)
            log.info("re-encoded the dynamic passwords of %s with password.encoder.secret", zl.broker_config_path(own))

    # ---- producer ids ------------------------------------------------------------------------------
    async def allocate_producer_id(self) -> int:
        """Producer ids from blocks claimed in /latest_producer_id_block with a conditional write."""
        async with self._change_lock:
            if self._next_producer_id >= self._producer_id_ceiling:
                start = await self.zk.call(io.claim_producer_id_block, self.zk.client, self.node_id)
                self._next_producer_id, self._producer_id_ceiling = start, start + io.PRODUCER_ID_BLOCK
            pid = self._next_producer_id
            self._next_producer_id += 1
            return pid
