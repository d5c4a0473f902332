"""ZkMetadata: the cluster metadata of a broker in a ZooKeeper-coordinated cluster (Kafka 3.9's
layout), behind the same `ClusterMetadata` interface as the single node's LocalMetadata.

How a broker learns of changes: ZooKeeper watches. Every read sets a watch; any notification
(or a session change) makes the reconcile loop read the whole cluster state — brokers,
controller, topics, assignments, configs, partition states — in a worker thread, and apply it
on the event loop: topics appear (this broker's replicas are opened) or go (their files are
deleted), and each local partition becomes leader or follower as its state znode says, its
fetcher following the leader. The reads go through a per-path cache (zk_cache.py): only znodes
whose watch fired are asked of ZooKeeper again, so one ISR change costs one read, not one per
partition; a session change or a re-read asked for without a path reads everything. Other state kept in ZooKeeper
beside the metadata (the ACLs, zk_acls.py) is a `ZkFollower`: loaded by `start` before the broker
serves, then run beside the reconcile loop, on watches of its own.

Who writes what:
- every broker: its ephemeral /brokers/ids/N registration (again after a session expiry; the
  znode's czxid is the broker epoch);
- the controller (whoever holds the ephemeral /controller, /controller_epoch bumped atomically
  with taking it): new partitions' states, leader elections, dead replicas out of the ISR, topic
  deletion, preferred leader election, the moves a broker's ControlledShutdown asks for — see
  controller.py for the decisions — and the ISR
  changes leaders propose with AlterPartition (a shrink when a follower lags past
  replica.lag.time.max.ms, an expansion when it caught up; alter_partition_client.py), each
  checked against the state znode's version (the partition epoch) and the leader epoch, so a
  leader that was replaced cannot overwrite its successor's state;
- any broker serving an admin request: new topics' /config/topics and /brokers/topics znodes
  (the controller then brings their partitions online), /admin/delete_topics markers, config
  changes, producer id blocks in /latest_producer_id_block.

A broker whose session expired stops leading: the reconcile after the new session sees the
partition states the controller wrote meanwhile, and a write made on the old view fails its
version check."""

from __future__ import annotations

import logging
import random
import time
import uuid
import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Protocol, TypeVar

import trio
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from wirekafka.config import topic as topic_config
from wirekafka.config.dynamic import DEFAULT_ENTITY, DynamicBrokerConfigs
from wirekafka.broker.metadata.cluster_metadata import (BrokerInfo, OpenPartition, PartitionView, Topic, TopicIndex,
                                       check_new_topic, uuid_to_base64)
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.metadata import assignment as assigner
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.replication.alter_partition_client import IsrChange, IsrOutcome, IsrProposer
from wirekafka.broker.replication.peer_client import PeerPool, PeerSecurity
from wirekafka.jvm import TopicPartitionKey, scala_mutable_hashmap_order
from wirekafka.broker.metadata.zk.controller import (PREFERRED, RECOVERING, AlterTopic, ClusterSnapshot, Election,
                                                     IsrAnswer, LeaderAndIsr, ReassignmentDone, StateWrite, TopicView,
                                                     completed_reassignments, elect, imbalanced_leaders,
                                                     judge_isr_proposal, led_partitions, plan_controlled_shutdown,
                                                     plan_legacy_reassignments, plan_state_changes,
                                                     start_reassignment)
from wirekafka.broker.replication.shutdown_client import ask_controller
from wirekafka.security.password_encoder import PasswordConfigError
from wirekafka.broker.metadata.zk.broker_passwords import BrokerPasswords
from wirekafka.broker.metadata.zk.security import client_security
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.quotas.entities import ClientQuotas, Entity, stored_text
from wirekafka.security.scram_store import ScramCredentials
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.startup_errors import StartupError
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.security.sasl.scram import MECHANISMS, ScramCredential

log = logging.getLogger(__name__)

# AlterPartition answers that mean this broker's view of the partition is out of date
_STALE_VIEW = (ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
               ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.NEW_LEADER_ELECTED, ErrorCode.STALE_BROKER_EPOCH)

PRODUCER_ID_BLOCK = 1000
_SHUTDOWN_WRITE_ROUNDS = 3  # a controlled shutdown's writes, re-planned after a lost race
SAFETY_RECONCILE_S = 5.0  # re-read even without a watch firing (a watch lost with a session)


class ZkFollower(Protocol):
    """Other state a broker keeps from ZooKeeper beside the cluster metadata (the ACLs): read
    once the session is up, before the broker serves, then followed from its own watches."""

    async def load(self) -> None: ...

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None: ...


F = TypeVar("F", bound=ZkFollower)


@dataclass
class RoleChange:
    """What the broker must do after a reconcile: partitions to follow (with their leader) or
    not to fetch any more, and leaderships gained and lost (coordinators load and unload)."""

    follow: list[tuple[Partition, BrokerInfo]] = field(default_factory=list)
    stop_fetching: list[Partition] = field(default_factory=list)
    became_leader: list[Partition] = field(default_factory=list)
    resigned: list[Partition] = field(default_factory=list)


class ZkMetadata(TopicIndex):
    def __init__(self, config: BrokerConfig, open_partition: OpenPartition, session: ZkSession,
                 peer_security: PeerSecurity) -> None:
        self.config = config
        self.node_id = config.node_id
        self.zk = session
        self._broker_epoch = -1  # the czxid of this broker's registration
        # requests to the controller: AlterPartition (leaders) and ControlledShutdown, bounded as
        # Kafka 3.9's alter-partition channel bounds them
        self._controller_peers = PeerPool(lambda node: self._peer(self._snapshot, node), config, "controller",
                                          peer_security, request_timeout_key="controller.socket.timeout.ms")
        self._isr_proposer = IsrProposer(self._controller_peers, lambda: self._snapshot.controller)
        self._open_partition = open_partition
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._snapshot = ClusterSnapshot({}, -1, 0, -1, {})
        self._creating: set[str] = set()
        self._registered_session: int | None = None
        self._change_lock = trio.Lock()
        self._reconciled = trio.Event()
        self._next_producer_id = 0
        self._producer_id_ceiling = 0
        self._shutting_down = False  # this broker is stopping
        # as the controller: the brokers in controlled shutdown, with the broker epoch they asked in
        self._brokers_shutting_down: dict[int, int] = {}
        self._shutdown_lock = trio.Lock()
        self.broker_configs = DynamicBrokerConfigs(self.node_id, self.config)
        self.broker_configs.observe(self.apply_all_configs)
        self.passwords = BrokerPasswords(config)  # the password configs in /config/brokers, as Kafka encodes them
        self.scram = ScramCredentials()
        self.client_quotas = ClientQuotas()
        # set by the broker: start/stop following a leader (the replica fetchers)
        self.on_roles: Callable[[RoleChange], None] = lambda change: None
        self._followers: list[ZkFollower] = []

    @property
    def _config_entities(self) -> tuple[str, ...]:
        """The /config/brokers entities whose dynamic configs apply here."""
        return DEFAULT_ENTITY, str(self.node_id)

    # ---- start-up --------------------------------------------------------------------------------
    @staticmethod
    def session_for(config: BrokerConfig) -> ZkSession:
        connection_timeout = config["zookeeper.connection.timeout.ms"]
        return ZkSession(str(config["zookeeper.connect"]), config.int("zookeeper.session.timeout.ms"),
                         int(connection_timeout) if connection_timeout is not None  # type: ignore[call-overload]
                         else config.int("zookeeper.session.timeout.ms"), client_security(config))

    async def connect(self) -> str:
        """Connect, create Kafka's top-level znodes, and return the cluster id in /cluster/id
        (created, random in Kafka's base64 form, by the first broker)."""
        unsupported = BrokerPasswords.unsupported(self.config)
        if unsupported is not None:
            raise StartupError(unsupported)
        await self.zk.start()
        await self.zk.call(_create_top_level_paths, self.zk.client)
        return await self.zk.call(_get_or_create_cluster_id, self.zk.client)

    def load(self) -> None:
        """Nothing to read from the log dir: the topics are in ZooKeeper (see start)."""

    def save(self) -> None:
        """Nothing to write: ZooKeeper holds the metadata."""

    def follow(self, follower: F) -> F:
        """Have `follower` loaded by start() and run beside the reconcile loop; returns it."""
        self._followers.append(follower)
        return follower

    async def start(self) -> None:
        """Load the followers, register this broker and apply the cluster state once, before serving."""
        for follower in self._followers:
            await follower.load()
        await self._reencode_passwords()
        await self._register()
        await self._reconcile()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The reconcile loop, the followers, the leader's ISR maintenance and the controller's
        leader rebalance."""
        task_status.started()
        async with trio.open_nursery() as nursery:
            for follower in self._followers:
                await nursery.start(follower.run)
            nursery.start_soon(self._isr_loop)
            if self.config.bool("auto.leader.rebalance.enable"):
                nursery.start_soon(self._rebalance_loop)
            while True:
                changed = await self.zk.wait_changed(SAFETY_RECONCILE_S)
                if None in changed:  # a re-read asked for without naming what changed: read it all
                    self.zk.cache.clear()
                try:
                    if self.zk.connected and self.zk.session_id() != self._registered_session:
                        await self._register()
                    if self.zk.connected and zl.BROKER_IDS in changed and self._snapshot.controller == self.node_id:
                        await self._elect_for_broker_change()
                    if self.zk.connected:
                        await self._reconcile()
                except Exception:  # ZooKeeper unreachable or a race: the next round retries
                    log.warning("reconciling with ZooKeeper failed; retrying", exc_info=True)
                    await trio.sleep(0.2)
                    self.zk.mark_changed()

    async def _register(self) -> None:
        """Create /brokers/ids/N (ephemeral). After a kill -9 the previous session's node may
        still be there until ZooKeeper expires it: wait for that, up to the session timeout."""
        data = zl.BrokerRegistration(
            broker_id=self.node_id,
            endpoints=tuple(zl.Endpoint(adv.name, adv.host, adv.port, self.config.security_protocol(adv.name))
                            for adv in self.config.advertised_listeners),
            rack=self.config["broker.rack"] or None,  # type: ignore[arg-type]
            timestamp_ms=int(time.time() * 1000),
        ).encode()
        deadline = trio.current_time() + self.config.int("zookeeper.session.timeout.ms") / 1000 + 5
        path = zl.broker_path(self.node_id)
        while True:
            try:
                await self.zk.call(self.zk.client.create, path, data, ephemeral=True, makepath=True)
            except NodeExistsError:
                pass
            stat = await self.zk.call(self.zk.client.exists, path)
            if stat is not None and stat.ephemeralOwner == self.zk.session_id():
                break
            if trio.current_time() > deadline:
                raise StartupError(f"broker id {self.node_id} is registered by another live broker") from None
            await trio.sleep(0.25)
        self._broker_epoch = stat.czxid  # Kafka's broker epoch, named in AlterPartition
        self._registered_session = self.zk.session_id()
        log.info("registered broker %d at %s", self.node_id, path)

    async def _reencode_passwords(self) -> None:
        """Kafka's start-up step for a changed secret: this broker's stored passwords that
        password.encoder.old.secret decodes are encoded anew with password.encoder.secret."""
        own = str(self.node_id)
        try:
            data, _ = await self.zk.call(self.zk.client.get, zl.broker_config_path(own))
        except NoNodeError:
            return
        try:
            rewritten = self.passwords.reencoded(_entity_config(zl.broker_config_path(own), data))
        except PasswordConfigError as exc:  # an old secret without a new one: Kafka's start-up fails too
            raise StartupError(f"re-encoding {zl.broker_config_path(own)} with password.encoder.secret: {exc}") from None
        if rewritten is not None:
            await self.zk.call(_set_entity_config, self.zk.client, zl.BROKER_CONFIG_TYPE, own, rewritten)
            log.info("re-encoded the dynamic passwords of %s with password.encoder.secret", zl.broker_config_path(own))

    async def _elect_for_broker_change(self) -> None:
        """The controller's fast path when the set of live brokers changed (a broker died or came
        back): elect from the last snapshot with the brokers read anew, before the full re-read
        (which takes ~0.1 s with a few hundred partitions), as Kafka's controller acts on its
        cached state. Every write is conditional on the state versions of that snapshot, so a
        state that moved meanwhile (a leader's ISR change, say) is left to the full reconcile
        that follows."""
        brokers, epochs = await self.zk.call(_read_brokers, self.zk.client, None)
        if brokers.keys() == self._snapshot.brokers.keys():
            return
        snapshot = self._as_controller(dataclasses.replace(self._snapshot, brokers=brokers, broker_epochs=epochs))
        log.info("controller: live brokers now %s", sorted(brokers))
        await self._write_states(plan_state_changes(snapshot, snapshot.controller_epoch,
                                                    self._unclean_allowed(snapshot)), snapshot)

    # ---- reading the cluster -----------------------------------------------------------------
    async def _reconcile(self) -> None:
        snapshot = self._as_controller(await self.zk.call(_read_snapshot, self.zk.cache, self.zk.cache.watch,
                                                          self._config_entities))
        await self._apply(snapshot)
        self._snapshot = snapshot  # Metadata answers only what this broker has applied
        if snapshot.controller == -1:
            await self._try_become_controller()
        elif snapshot.controller == self.node_id:
            await self._act_as_controller(snapshot)
        self._reconciled.set()
        self._reconciled = trio.Event()

    async def _apply(self, snapshot: ClusterSnapshot) -> None:
        """Make the local topics, dynamic broker configs and partition roles match the snapshot."""
        for entity in self._config_entities:
            self.broker_configs.replace(entity, self.passwords.decoded(entity, snapshot.broker_configs.get(entity, {})))
        await self.broker_configs.listener_tls.apply_stored()
        self.scram.load(snapshot.users)
        self.client_quotas.replace_all(zl.quota_entities(snapshot.quota_configs))
        for name in [n for n in self._topics if n not in snapshot.topics]:
            await self._drop_topic(name)
        change = RoleChange()
        for name, view in snapshot.topics.items():
            topic = self._topics.get(name)
            reconfigure = topic is None or topic.configs != view.configs
            if topic is None or topic.topic_id != view.topic_id:
                if topic is not None:
                    await self._drop_topic(name)
                topic = Topic(name, view.topic_id, configs=dict(view.configs))
                topic.partitions = await self._open_replicas(topic, view, 0)
                self._topics[name] = topic
                self._by_id[topic.topic_id] = topic
                reconfigure = True
            else:
                if len(topic.partitions) < len(view.assignment):
                    topic.partitions.extend(await self._open_replicas(topic, view, len(topic.partitions)))
                    reconfigure = True
                await self._follow_reassignments(topic, view, change)
            if reconfigure:
                topic.configs = dict(view.configs)
                self.apply_topic_configs(topic)
            min_isr = int(self.topic_config_value(topic, "min.insync.replicas"))
            for p in topic.local_partitions():
                p.min_insync_replicas = min_isr  # replicas a reassignment opened here too
                current = view.states.get(p.index)
                if current is not None:
                    self._apply_role(p, view.assignment.get(p.index, ()), current[0], snapshot, change)
        self.on_roles(change)

    def _apply_role(self, p: Partition, replicas: tuple[int, ...], state: LeaderAndIsr, snapshot: ClusterSnapshot,
                    change: RoleChange) -> None:
        isr = frozenset(state.isr)
        rs = p.replica_set
        if state.leader == self.node_id:
            if not p.is_leader or p.leader_epoch != state.leader_epoch:
                log.info("%s-%d: leader in epoch %d, ISR %s", p.topic, p.index, state.leader_epoch, sorted(isr))
                change.stop_fetching.append(p)
                if not p.is_leader:
                    change.became_leader.append(p)
                p.make_leader(state.leader_epoch, replicas, isr)
            elif rs.isr != isr or rs.replicas != replicas:
                rs.set_replicas(replicas)
                p.set_isr(isr)
            return
        if p.is_leader or p.leader_epoch != state.leader_epoch or rs.leader != state.leader:
            log.info("%s-%d: follower of %d in epoch %d", p.topic, p.index, state.leader, state.leader_epoch)
            if p.is_leader:
                change.resigned.append(p)
            p.make_follower(state.leader_epoch, state.leader, replicas, isr)
            change.stop_fetching.append(p)
            leader = self._peer(snapshot, state.leader)
            if leader is not None and not self._shutting_down:
                change.follow.append((p, leader))
        else:
            rs.isr = isr
            rs.replicas = replicas
            leader = self._peer(snapshot, state.leader)
            if leader is not None and not self._shutting_down:
                change.follow.append((p, leader))  # a no-op if already following it

    def _peer(self, snapshot: ClusterSnapshot, broker_id: int) -> BrokerInfo | None:
        """A live broker as this one reaches it: on the inter-broker listener."""
        info = snapshot.brokers.get(broker_id)
        return info.on(self.config.inter_broker_listener) if info is not None else None

    async def _follow_reassignments(self, topic: Topic, view: TopicView, change: RoleChange) -> None:
        """A reassignment added this broker to a partition (open a replica: it fetches from the
        leader) or removed it (stop, delete the replica's files)."""
        for index, replicas in view.assignment.items():
            if index >= len(topic.partitions):
                continue
            local = topic.partitions[index]
            if local is None and self.node_id in replicas:
                topic.partitions[index] = await trio.to_thread.run_sync(self._open_partition, topic, index, False)
                log.info("%s-%d: new replica here (reassignment)", topic.name, index)
            elif local is not None and self.node_id not in replicas:
                topic.partitions[index] = None
                local.take_offline()
                change.stop_fetching.append(local)
                if local.is_leader:
                    change.resigned.append(local)
                await local.delete_files()
                log.info("%s-%d: replica moved away (reassignment): deleted here", topic.name, index)

    async def _open_replicas(self, topic: Topic, view: TopicView, first: int) -> list[Partition | None]:
        wanted = [i for i in range(first, len(view.assignment)) if self.node_id in view.assignment.get(i, ())]

        def open_all() -> dict[int, Partition]:
            return {i: self._open_partition(topic, i, False) for i in wanted}

        opened = await trio.to_thread.run_sync(open_all)
        return [opened.get(i) for i in range(first, len(view.assignment))]

    async def _drop_topic(self, name: str) -> None:
        topic = self._topics.pop(name)
        self._by_id.pop(topic.topic_id, None)
        local = topic.local_partitions()
        for p in local:
            p.take_offline()
        self.on_roles(RoleChange(stop_fetching=local, resigned=[p for p in local if p.is_leader]))
        for p in local:
            await p.delete_files()
        log.info("topic %s is gone: deleted its local replicas", name)

    # ---- controller ------------------------------------------------------------------------------
    async def _try_become_controller(self) -> None:
        try:
            epoch = await self.zk.call(_claim_controller, self.zk.client, self.node_id)
        except NodeExistsError:
            return
        log.info("broker %d is the controller (epoch %d)", self.node_id, epoch)
        self.zk.mark_changed()

    async def _act_as_controller(self, snapshot: ClusterSnapshot) -> None:
        epoch = snapshot.controller_epoch
        for name in snapshot.deleting:
            await self.zk.call(_delete_topic_znodes, self.zk.client, name)
            log.info("controller: deleted topic %s", name)
        writes = plan_state_changes(snapshot, epoch, self._unclean_allowed(snapshot))
        await self._write_states(writes, snapshot)
        for done in completed_reassignments(snapshot, epoch):
            if (done.state.topic, done.state.partition) in await self._write_states([done.state], snapshot):
                continue
            await self._finish_reassignment(snapshot, done)
        await self._follow_legacy_reassignments(snapshot)
        await self._run_legacy_elections(snapshot)

    async def _follow_legacy_reassignments(self, snapshot: ClusterSnapshot) -> None:
        """/admin/reassign_partitions: start its moves on the topic znodes (KIP-455's fields,
        completed like the API's) and take finished or impossible entries out of it."""
        plan = plan_legacy_reassignments(snapshot)
        by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
        for (topic, index), target in plan.start.items():
            by_topic.setdefault(topic, []).append((index, list(target)))
        for topic, items in by_topic.items():
            view = snapshot.topics[topic]
            _checked, assignment, adding, removing = _plan_reassignments(view, items, set(snapshot.brokers),
                                                                         require_live=False)
            if assignment is None:
                continue
            try:
                await self.zk.call(_set_assignment, self.zk.client, topic, view.topic_id, assignment, adding,
                                   removing, view.version)
            except (BadVersionError, NoNodeError):
                self.zk.mark_changed()
                continue
            log.info("controller: reassignment of %s partitions %s started from %s", topic,
                     sorted(i for i, _ in items), zl.REASSIGN_PARTITIONS)
        for (topic, index), why in plan.drop.items():
            log.info("controller: %s-%d leaves %s: %s", topic, index, zl.REASSIGN_PARTITIONS, why)
        if plan.drop:
            await self._drop_legacy_reassignments(set(plan.drop), snapshot.controller_epoch_version)

    async def _yield_legacy_entries(self, snapshot: ClusterSnapshot, partitions: set[tuple[str, int]]) -> None:
        """The latest request wins, as in Kafka: partitions the API reassigns leave
        /admin/reassign_partitions, before the API's write, so that the controller cannot start
        the znode's older target over it."""
        if snapshot.legacy_reassignments is None or not partitions & set(snapshot.legacy_reassignments[0]):
            return
        for _attempt in range(5):
            try:
                await self.zk.call(_drop_legacy_reassignments, self.zk.client, partitions, None)
                return
            except BadVersionError:  # the controller changed it meanwhile: read it again
                continue

    async def _drop_legacy_reassignments(self, partitions: set[tuple[str, int]], epoch_version: int | None) -> None:
        try:
            await self.zk.call(_drop_legacy_reassignments, self.zk.client, partitions, epoch_version)
        except (BadVersionError, NoNodeError):
            self.zk.mark_changed()

    async def _run_legacy_elections(self, snapshot: ClusterSnapshot) -> None:
        """/admin/preferred_replica_election: Kafka's controller runs a preferred-leader election
        for the partitions it lists that exist, then deletes the znode whatever the outcome
        (elected, not needed, preferred replica not in sync). A write that lost a race to another
        state change is retried on the next read before the znode goes."""
        if snapshot.legacy_elections is None:
            return
        epoch = snapshot.controller_epoch
        results = {tp: elect(snapshot, epoch, tp[0], tp[1], PREFERRED) for tp in sorted(snapshot.legacy_elections)
                   if tp[0] not in snapshot.deleting}
        if await self._write_states([e.write for e in results.values() if e.write is not None], snapshot):
            return  # a state changed since the read: elect again on the next one
        for (topic, index), e in results.items():
            if e.write is None:
                log.info("controller: no preferred leader election for %s-%d from %s: %s", topic, index,
                         zl.PREFERRED_REPLICA_ELECTION, e.error)
        try:
            await self.zk.call(_delete_fenced, self.zk.client, zl.PREFERRED_REPLICA_ELECTION,
                               snapshot.controller_epoch_version)
        except (BadVersionError, NoNodeError):
            self.zk.mark_changed()

    async def _finish_reassignment(self, snapshot: ClusterSnapshot, done: ReassignmentDone) -> None:
        view = snapshot.topics[done.state.topic]
        index = done.state.partition
        assignment = {p: list(done.replicas if p == index else r) for p, r in view.assignment.items()}
        adding = {p: list(r) for p, r in view.adding.items() if p != index}
        removing = {p: list(r) for p, r in view.removing.items() if p != index}
        try:
            await self.zk.call(_set_assignment, self.zk.client, done.state.topic, view.topic_id, assignment,
                               adding, removing, view.version)
            log.info("controller: reassignment of %s-%d done: replicas %s", done.state.topic, index,
                     list(done.replicas))
        except (BadVersionError, NoNodeError):
            self.zk.mark_changed()

    # ---- reassignments (AlterPartitionReassignments, ListPartitionReassignments) ------------------
    async def alter_reassignments(self, changes: list[tuple[str, int, list[int] | None]]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """Start (target replicas) or cancel (None) reassignments, as the topic znode's
        adding_replicas / removing_replicas (KIP-455): the controller completes them once the new
        replicas are in sync. Conditional on the topic znode's version; retried on a race."""
        answers: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
        for topic, index, target in changes:
            by_topic.setdefault(topic, []).append((index, target))
        for topic, items in by_topic.items():
            for _attempt in range(5):
                snapshot = await self.zk.call(_read_snapshot, self.zk.client, None)
                view = snapshot.topics.get(topic)
                result, assignment, adding, removing = _plan_reassignments(view, items, set(snapshot.brokers))
                if assignment is None:
                    break
                await self._yield_legacy_entries(snapshot, {(topic, i) for i, (e, _) in result.items()
                                                            if e == ErrorCode.NONE})
                try:
                    await self.zk.call(_set_assignment, self.zk.client, topic, view.topic_id,  # type: ignore[union-attr]
                                       assignment, adding, removing, view.version)  # type: ignore[union-attr]
                    break
                except BadVersionError:
                    continue
            for index, answer in result.items():
                answers[(topic, index)] = answer
        self.zk.mark_changed()
        return answers

    def list_reassignments(self, wanted: list[tuple[str, int]] | None
                           ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """(topic, partition, replicas, adding, removing) of the reassignments in progress."""
        out = []
        for name, view in sorted(self._snapshot.topics.items()):
            for index in sorted(set(view.adding) | set(view.removing)):
                if wanted is None or (name, index) in wanted:
                    out.append((name, index, view.assignment[index], view.adding.get(index, ()),
                                view.removing.get(index, ())))
        return out

    def _unclean_allowed(self, snapshot: ClusterSnapshot) -> Callable[[str], bool]:
        def allowed(name: str) -> bool:
            view = snapshot.topics.get(name)
            value = topic_config.effective("unclean.leader.election.enable", view.configs if view else {},
                                           self.config, self.broker_configs)[0]
            return str(value).lower() == "true"
        return allowed

    async def _write_states(self, writes: list[StateWrite], snapshot: ClusterSnapshot) -> set[tuple[str, int]]:
        """Write the states conditionally, all in one pipelined round (a dead broker's
        partitions all move at once, as Kafka's controller batches its ZooKeeper writes);
        returns the partitions whose write lost a race."""
        if not writes:
            return set()
        writes = sorted(writes, key=lambda w: not _moves_leader(w, snapshot))  # what clients wait for first
        results = await self.zk.call(_write_states, self.zk.client, writes, snapshot.controller_epoch_version)
        failed = set()
        for w, error in zip(writes, results):
            if not isinstance(error, Exception):
                log.info("controller: %s-%d leader %d epoch %d ISR %s", w.topic, w.partition, w.state.leader,
                         w.state.leader_epoch, list(w.state.isr))
            elif isinstance(error, (BadVersionError, NodeExistsError, NoNodeError)):
                log.info("controller: %s-%d changed meanwhile; re-reading", w.topic, w.partition)
                failed.add((w.topic, w.partition))
            else:
                raise error
        if failed:
            self.zk.mark_changed()
        return failed

    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None,
                            timeout_s: float) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """ElectLeaders: decided on a fresh read by whichever broker is asked, written with the
        controller's conditional writes (fenced by the controller epoch and each state's version),
        then waited for until this broker has applied them. All partitions (None) answers only
        those where an election was needed, as Kafka does."""
        snapshot = self._as_controller(await self.zk.call(_read_snapshot, self.zk.client, None))
        wanted = partitions if partitions is not None else [
            (t, p) for t, view in snapshot.topics.items() for p in sorted(view.assignment)]
        results: dict[tuple[str, int], Election] = {
            tp: elect(snapshot, snapshot.controller_epoch, tp[0], tp[1], election_type) for tp in wanted}
        failed = await self._write_states([e.write for e in results.values() if e.write is not None], snapshot)
        answer = {}
        for tp, e in results.items():
            if partitions is None and e.error == "ELECTION_NOT_NEEDED":
                continue
            if e.write is not None and tp in failed:
                answer[tp] = (ErrorCode.NOT_CONTROLLER, "The partition changed during the election; retry.")
            else:
                answer[tp] = (ErrorCode[e.error], e.message)
        if any(e.write is not None for e in results.values()):
            with trio.move_on_after(timeout_s):
                self.zk.mark_changed()
                await self._reconciled.wait()
        return answer

    async def _rebalance_loop(self) -> None:
        """Kafka's periodic leader-imbalance check, run by the controller every
        leader.imbalance.check.interval.seconds."""
        interval = self.config.int("leader.imbalance.check.interval.seconds")
        while True:
            await trio.sleep(interval)
            snapshot = self._snapshot
            if snapshot.controller != self.node_id or not self.zk.connected:
                continue
            writes = imbalanced_leaders(snapshot, snapshot.controller_epoch,
                                        self.config.int("leader.imbalance.per.broker.percentage"))
            if writes:
                log.info("controller: moving %d leaderships back to their preferred replicas", len(writes))
                await self._write_states(writes, snapshot)

    # ---- controlled shutdown ----------------------------------------------------------------------
    async def controlled_shutdown(self, retries: int, backoff_s: float) -> bool:
        """Kafka's controlled shutdown, before this broker stops: it stops fetching (a caught-up
        follower would otherwise rejoin ISRs) and asks the controller with ControlledShutdown to
        move its leaderships away, up to `retries` times with `backoff_s` between, until the
        controller answers that it leads nothing more. True when it did."""
        self._shutting_down = True
        self.on_roles(RoleChange(stop_fetching=list(self.iter_partitions())))
        for attempt in range(retries):
            answer = await ask_controller(self._controller_peers, lambda: self._snapshot.controller,
                                          self._broker_epoch)
            if answer is not None and answer.done:
                return True
            if answer is not None:
                log.info("controlled shutdown: the controller answered %s with %d partitions still led here",
                         answer.error.name, len(answer.remaining))
            if attempt + 1 < retries:
                await trio.sleep(backoff_s)
                log.info("retrying controlled shutdown (%d retries left)", retries - attempt - 1)
        log.warning("controlled shutdown failed: stopping with leaderships still here")
        return False

    def _as_controller(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """The snapshot with the brokers this controller is shutting down laid over it. A broker
        leaves that set when its registration goes or changes (it stopped, or restarted), and the
        whole set is forgotten when this broker is not the controller (Kafka's controller keeps
        it in memory and a new controller starts without it)."""
        if snapshot.controller != self.node_id:
            self._brokers_shutting_down.clear()
        for broker, epoch in list(self._brokers_shutting_down.items()):
            if snapshot.broker_epochs.get(broker) != epoch:
                del self._brokers_shutting_down[broker]
        return dataclasses.replace(snapshot, shutting_down=frozenset(self._brokers_shutting_down))

    async def shut_down_broker(self, broker_id: int, broker_epoch: int) -> tuple[ErrorCode, list[tuple[str, int]]]:
        """Kafka 3.9's ZooKeeper controller answering ControlledShutdown: STALE_CONTROLLER_EPOCH on
        any other broker (Kafka's ControllerMovedException); with a broker epoch, UNKNOWN_SERVER_ERROR for a broker that is not
        registered (Kafka's lookup fails) and STALE_BROKER_EPOCH for an epoch below the
        registration's; BROKER_NOT_AVAILABLE for an unregistered broker otherwise. Then the broker
        is shutting down until its registration goes: it is not elected anywhere nor let into an
        ISR, its leaderships move (plan_controlled_shutdown) and it leaves the ISRs it follows,
        in the controller's fenced writes, retried on a lost race. The answer lists what it still
        leads, in the order of Kafka's hash map of partition leaderships."""
        if self._snapshot.controller != self.node_id or not self.zk.connected:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        async with self._shutdown_lock:
            snapshot = await self.zk.call(_read_snapshot, self.zk.client, None)
            if snapshot.controller != self.node_id:
                return ErrorCode.STALE_CONTROLLER_EPOCH, []
            registered = snapshot.broker_epochs.get(broker_id)
            if broker_epoch != -1 and registered is None:
                return ErrorCode.UNKNOWN_SERVER_ERROR, []
            if broker_epoch != -1 and broker_epoch < registered:  # type: ignore[operator]
                log.info("controller: ignoring ControlledShutdown of broker %d with stale broker epoch %d "
                         "(registered: %d)", broker_id, broker_epoch, registered)
                return ErrorCode.STALE_BROKER_EPOCH, []
            if registered is None:
                return ErrorCode.BROKER_NOT_AVAILABLE, []
            log.info("controller: shutting down broker %d", broker_id)
            self._brokers_shutting_down[broker_id] = registered
            for _ in range(_SHUTDOWN_WRITE_ROUNDS):
                view = self._as_controller(snapshot)
                failed = await self._write_states(plan_controlled_shutdown(view, view.controller_epoch, broker_id),
                                                  view)
                snapshot = await self.zk.call(_read_snapshot, self.zk.client, None)
                if not failed:
                    break
            self.zk.mark_changed()  # the next reconcile lays the new shutting-down set over its read
            led = led_partitions(self._as_controller(snapshot), broker_id)
            return ErrorCode.NONE, scala_mutable_hashmap_order(TopicPartitionKey(t, p) for t, p in led)

    # ---- AlterPartition (controller) ------------------------------------------------------------
    async def alter_partitions(self, broker_id: int, broker_epoch: int, topics: list[AlterTopic],
                               request_version: int) -> tuple[ErrorCode, list[AlterTopic]]:
        """Kafka 3.9's ZooKeeper controller answering AlterPartition: the leader `broker_id` asks to
        record new ISRs. Refused as a whole with NOT_CONTROLLER on any other broker and with
        STALE_BROKER_EPOCH unless broker_epoch is the czxid of the requester's live registration.
        Each partition is judged against its state znode as read now (judge_isr_proposal); the
        accepted ones are written in one round of the controller's fenced conditional writes, with
        this controller's epoch, and answered with the state written and its new znode version
        (the partition epoch), or INVALID_UPDATE_VERSION when the znode moved meanwhile. The
        answer keeps the request's topics (`name_or_id` as given) and partitions in order; a topic
        id no topic has gets UNKNOWN_TOPIC_ID on each partition, a partition without a state
        UNKNOWN_TOPIC_OR_PARTITION. Every broker learns the new states from its watches."""
        snapshot = self._snapshot
        if snapshot.controller != self.node_id or not self.zk.connected:
            return ErrorCode.NOT_CONTROLLER, []
        by_id = {view.topic_id: name for name, view in snapshot.topics.items()}
        names = [t.name_or_id if isinstance(t.name_or_id, str) else by_id.get(t.name_or_id) for t in topics]
        paths = [zl.partition_state_path(name, a.index) for name, t in zip(names, topics) if name is not None
                 for a in t.partitions]
        registered, live, states = await self.zk.call(_read_for_alter_partition, self.zk.client, broker_id, paths)
        live -= self._brokers_shutting_down.keys()  # no ISR may take a broker that is shutting down
        if registered is None or registered != broker_epoch:
            log.info("controller: ignoring AlterPartition from broker %d with stale broker epoch %d (registered: %s)",
                     broker_id, broker_epoch, registered)
            return ErrorCode.STALE_BROKER_EPOCH, []
        current = iter(states)
        writes: list[tuple[IsrAnswer, StateWrite]] = []
        for name, t in zip(names, topics):
            for a in t.partitions:
                if name is None:
                    a.error = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                read = next(current)
                if read is None:
                    a.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                state, version = read
                verdict = judge_isr_proposal(state, version, a.proposal, live, request_version)
                if verdict == ErrorCode.NONE:
                    a.state, a.partition_epoch = state, version
                elif verdict is not None:
                    a.error = verdict
                else:
                    p = a.proposal
                    new = LeaderAndIsr(p.leader, p.leader_epoch, p.isr, snapshot.controller_epoch,
                                       p.leader_recovery_state)
                    writes.append((a, StateWrite(name, a.index, new, version)))
        results = await self.zk.call(_write_states, self.zk.client, [w for _, w in writes],
                                     snapshot.controller_epoch_version) if writes else []
        for (a, w), result in zip(writes, results):
            if isinstance(result, int):
                a.state, a.partition_epoch = w.state, result
                log.info("controller: %s-%d ISR %s (from broker %d, partition epoch %d)", w.topic, w.partition,
                         list(w.state.isr), broker_id, result)
            elif isinstance(result, ControllerMovedError):
                return ErrorCode.UNKNOWN_SERVER_ERROR, []  # Kafka's answer when its controller moved meanwhile
            elif isinstance(result, BadVersionError):
                a.error = ErrorCode.INVALID_UPDATE_VERSION
            else:
                log.warning("controller: %s-%d ISR update failed: %r", w.topic, w.partition, result)
                a.error = ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.NONE, topics

    # ---- ISR maintenance (leader) -------------------------------------------------------------
    async def _isr_loop(self) -> None:
        """Every 100 ms, each led partition whose ISR should shrink (a follower lagging past
        replica.lag.time.max.ms) or expand (a follower caught up), or that leads after an
        unclean election, is proposed to the controller; a partition with a proposal in flight
        waits for its answer (Kafka's one in-flight AlterPartition per partition)."""
        lag_ms = self.config.int("replica.lag.time.max.ms")
        while True:
            await trio.sleep(0.1)
            if not self.zk.connected:
                continue
            changes = []
            for topic in list(self._topics.values()):
                for p in topic.local_partitions():
                    if not p.is_leader or p.replica_set.pending_isr is not None:
                        continue
                    isr = p.replica_set.isr
                    new = (isr - p.isr_shrink(lag_ms)) | p.isr_expansion()
                    if new != isr or self._recovering(p):
                        change = self._isr_change(p, new)
                        if change is not None:
                            changes.append(change)
            if changes:
                await self._propose_isrs(changes)

    def _recovering(self, p: Partition) -> bool:
        """Led after an unclean election (leader_recovery_state RECOVERING): the leader proposes
        RECOVERED with its next ISR, as Kafka's leader does once it leads."""
        view = self._snapshot.topics.get(p.topic)
        current = view.states.get(p.index) if view is not None else None
        return current is not None and current[0].leader_recovery_state == RECOVERING

    def _isr_change(self, p: Partition, isr: frozenset[int]) -> IsrChange | None:
        """The proposal for p (ISR in assignment order), against the state this broker last read;
        None while that state does not name this broker as leader in p's epoch."""
        view = self._snapshot.topics.get(p.topic)
        current = view.states.get(p.index) if view is not None else None
        if current is None or current[0].leader != self.node_id or current[0].leader_epoch != p.leader_epoch:
            return None
        ordered = tuple(r for r in p.replica_set.replicas if r in isr) + tuple(sorted(isr - set(p.replica_set.replicas)))
        return IsrChange(p, view.topic_id, p.leader_epoch, ordered, current[1])

    async def _propose_isrs(self, changes: list[IsrChange]) -> None:
        """Send the proposals and apply the answers: a recorded ISR becomes the partition's (with
        the state and partition epoch the controller answered); any refusal leaves the ISR as it
        was, and one that says this broker's view is stale re-reads the cluster first."""
        for c in changes:
            c.partition.propose_isr(frozenset(c.isr))
        outcomes: dict | ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
        try:
            outcomes = await self._isr_proposer.propose(self._broker_epoch, changes)
        finally:
            for c in changes:
                outcome = outcomes.get((c.topic_id, c.partition.index)) if isinstance(outcomes, dict) else None
                self._settle_isr(c, outcome if outcome is not None else IsrOutcome(outcomes))  # type: ignore[arg-type]

    def _settle_isr(self, c: IsrChange, outcome: IsrOutcome) -> None:
        p = c.partition
        if outcome.error != ErrorCode.NONE:
            p.settle_isr(None)
            level = logging.DEBUG if outcome.error in (ErrorCode.NOT_CONTROLLER, ErrorCode.INELIGIBLE_REPLICA) else logging.INFO
            log.log(level, "%s-%d: ISR %s not recorded: %s", p.topic, p.index, list(c.isr), outcome.error.name)
            if outcome.error in _STALE_VIEW:
                self.zk.mark_changed()
            return
        if not p.is_leader or p.leader_epoch != outcome.leader_epoch or outcome.leader != self.node_id:
            p.settle_isr(None)  # leadership moved while the proposal was out: the new state rules
            return
        view = self._snapshot.topics.get(p.topic)
        previous = view.states.get(p.index) if view is not None else None
        if view is not None and (previous is None or previous[1] < outcome.partition_epoch):
            view.states[p.index] = (LeaderAndIsr(outcome.leader, outcome.leader_epoch, outcome.isr,
                                                 self._snapshot.controller_epoch, outcome.leader_recovery_state),
                                    outcome.partition_epoch)
        if previous is not None and tuple(previous[0].isr) != outcome.isr:
            log.info("%s-%d: ISR %s -> %s", p.topic, p.index, list(previous[0].isr), list(outcome.isr))
        p.settle_isr(frozenset(outcome.isr))

    # ---- look-ups (ClusterMetadata) ---------------------------------------------------------------
    def brokers(self, listener: str) -> list[BrokerInfo]:
        live = self._snapshot.brokers
        return [b for b in (live[n].on(listener) for n in sorted(live)) if b is not None]

    def controller_id(self) -> int:
        return self._snapshot.controller

    def partition_view(self, topic: Topic, index: int) -> PartitionView:
        view = self._snapshot.topics.get(topic.name)
        replicas = view.assignment.get(index, ()) if view is not None else ()
        current = view.states.get(index) if view is not None else None
        if current is None:
            return PartitionView(-1, -1, replicas, (), replicas)
        state = current[0]
        live = self._snapshot.brokers
        return PartitionView(state.leader if state.leader in live else -1, state.leader_epoch, replicas, state.isr,
                             tuple(r for r in replicas if r not in live))

    # ---- changes ---------------------------------------------------------------------------------
    def validate_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignment: dict[int, list[int]] | None = None) -> None:
        if name in self._topics or name in self._creating:
            raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        check_new_topic(name, num_partitions, replication_factor, configs)
        if assignment is not None:
            assigner.validate_topic_assignment(assignment)
        else:
            assigner.assign_replicas_to_brokers(self._broker_metadata(), num_partitions, replication_factor)

    def _broker_metadata(self) -> list[assigner.BrokerMetadata]:
        live = self._snapshot.brokers
        return [assigner.BrokerMetadata(n, live[n].rack) for n in sorted(live)]

    async def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                           replication_factor: int = -1, assignment: dict[int, list[int]] | None = None,
                           wait: bool = True) -> Topic | None:
        """Write the topic's config and assignment znodes (Kafka's order: config first), then
        (wait) until this broker has applied the partition states the controller writes for it.
        Without wait (auto-creation by Metadata, which answers at once) it returns None."""
        if replication_factor == -1:
            replication_factor = self.config.int("default.replication.factor")
        if assignment is None:
            assignment = assigner.assign_replicas_to_brokers(self._broker_metadata(), num_partitions,
                                                             replication_factor, rng=random.Random())
        topic_id = uuid.uuid4()
        self._creating.add(name)
        try:
            try:
                await self.zk.call(_create_topic_znodes, self.zk.client, name, topic_id, assignment, configs or {})
            except NodeExistsError:
                raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
            log.info("created topic %s with %d partitions, assignment %s", name, len(assignment), assignment)
            if not wait:
                self.zk.mark_changed()
                return None
            topic = await self._wait_for(lambda: self._online(name), 30)
        finally:
            self._creating.discard(name)
        if topic is None:
            raise KafkaApiError(ErrorCode.REQUEST_TIMED_OUT, f"Topic {name} was created but its partitions "
                                "did not come online in time")
        return topic

    def _online(self, name: str) -> Topic | None:
        topic = self._topics.get(name)
        view = self._snapshot.topics.get(name)
        if topic is None or view is None or len(view.states) < len(view.assignment):
            return None
        return topic

    async def _wait_for(self, probe: Callable[[], Topic | None], timeout_s: float) -> Topic | None:
        with trio.move_on_after(timeout_s):
            while (found := probe()) is None:
                self.zk.mark_changed()
                await self._reconciled.wait()
            return found
        return None

    async def delete_topic(self, name: str) -> Topic:
        """Mark the topic for deletion; the controller removes its znodes, and every broker its
        replicas. Returns the topic with its partitions already deleted here."""
        topic = self._topics[name]
        try:
            await self.zk.call(self.zk.client.create, zl.delete_topic_path(name), b"", makepath=True)
        except NodeExistsError:
            pass
        with trio.move_on_after(30):
            while name in self._topics and self._topics[name] is topic:
                self.zk.mark_changed()
                await self._reconciled.wait()
        return Topic(topic.name, topic.topic_id, [], topic.configs)

    async def add_partitions(self, topic: Topic, total: int) -> None:
        async with self._change_lock:
            view = self._snapshot.topics.get(topic.name)
            if self._topics.get(topic.name) is not topic or view is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic.name} does not exist.")
            first = len(view.assignment)
            if total <= first:
                raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {first} partitions, "
                                    f"which is higher than the requested {total}.")
            added = assigner.assign_new_partitions(topic.name, view.assignment, self._broker_metadata(), total)
            assignment = {**{p: list(r) for p, r in view.assignment.items()}, **added}
            await self.zk.call(_set_assignment, self.zk.client, topic.name, topic.topic_id, assignment)
            await self._wait_for(lambda: topic if len(topic.partitions) >= total else None, 30)

    async def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        await self.zk.call(_set_entity_config, self.zk.client, zl.TOPIC_CONFIG_TYPE, topic.name, configs)
        topic.configs = dict(configs)
        self.apply_topic_configs(topic)

    async def set_scram_credentials(self, changes: dict[str, dict[str, ScramCredential]]) -> None:
        """/config/users/<user> and its notification per user, as Kafka 3.9's AlterUserScramCredentials
        writes them (the user's other keys, its quotas, kept); every broker reloads them from its watch."""
        for user, credentials in changes.items():
            updates: dict[str, str | None] = {mech: None for mech in MECHANISMS}
            updates.update({mech: cred.encode() for mech, cred in credentials.items()})
            await self.zk.call(_update_entity_config, self.zk.client, zl.USER_CONFIG_TYPE, zl.sanitize(user), updates)
            self.scram.replace(user, credentials)

    async def alter_client_quotas(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        """Each entity's config znode and its notification, as Kafka 3.9's AlterClientQuotas writes
        them (a user's SCRAM credentials kept); every broker reloads them from its watch."""
        for entity, change in changes.items():
            entity_type, name = zl.quota_entity_path(entity)
            updates = {k: None if v is None else stored_text(k, v) for k, v in change.items()}
            await self.zk.call(_update_entity_config, self.zk.client, entity_type, name, updates)
        self.client_quotas.apply(changes)

    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """/config/brokers/<entity> (its passwords encoded as Kafka 3.9 encodes them: raises
        PasswordConfigError without password.encoder.secret) and its notification; every broker
        reloads it from its watch."""
        stored = self.passwords.persistent(entity, configs)
        await self.zk.call(_set_entity_config, self.zk.client, zl.BROKER_CONFIG_TYPE, entity, stored)
        self.broker_configs.replace(entity, configs)

    async def allocate_producer_id(self) -> int:
        """Producer ids from blocks claimed in /latest_producer_id_block with a conditional write."""
        async with self._change_lock:
            if self._next_producer_id >= self._producer_id_ceiling:
                start = await self.zk.call(_claim_producer_id_block, self.zk.client, self.node_id)
                self._next_producer_id, self._producer_id_ceiling = start, start + PRODUCER_ID_BLOCK
            pid = self._next_producer_id
            self._next_producer_id += 1
            return pid


# ---- ZooKeeper reads and writes (worker threads) ------------------------------------------------
def _create_top_level_paths(client) -> None:
    for path in zl.PERSISTENT_PATHS:
        client.ensure_path(path)


def _get_or_create_cluster_id(client) -> str:
    try:
        data, _ = client.get(zl.CLUSTER_ID)
        return zl.decode_cluster_id(data)
    except NoNodeError:
        pass
    new = uuid_to_base64(uuid.uuid4())
    try:
        client.create(zl.CLUSTER_ID, zl.encode_cluster_id(new), makepath=True)
        return new
    except NodeExistsError:
        data, _ = client.get(zl.CLUSTER_ID)
        return zl.decode_cluster_id(data)


def _encode_state(state: LeaderAndIsr) -> bytes:
    return zl.PartitionState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                             controller_epoch=state.controller_epoch,
                             leader_recovery_state=zl.LeaderRecoveryState(state.leader_recovery_state)).encode()


def _decode_state(data: bytes) -> LeaderAndIsr:
    s = zl.PartitionState.decode(data)
    return LeaderAndIsr(s.leader, s.leader_epoch, tuple(s.isr), s.controller_epoch, int(s.leader_recovery_state))


def _read_snapshot(client, watch: Callable | None, config_entities: tuple[str, ...] = ()) -> ClusterSnapshot:
    """The whole cluster state, every read setting the watch, with the dynamic configs of
    config_entities (/config/brokers/<name>). The reads of one level go out together (kazoo's
    async calls) and are then collected: one round trip per level, not per znode, so a
    controller reacts to a dead broker in milliseconds, not a read per partition."""
    registrations = _request_brokers(client, watch)
    controller_read = client.get_async(zl.CONTROLLER, watch=watch)
    epoch_read = client.get_async(zl.CONTROLLER_EPOCH)
    names = client.get_children(zl.TOPICS, watch=watch)
    assignments = {n: client.get_async(zl.topic_path(n), watch=watch) for n in names}
    config_reads = {n: client.get_async(zl.topic_config_path(n), watch=watch) for n in names}
    deleting = tuple(client.get_children(zl.DELETE_TOPICS, watch=watch))
    legacy_reads = {path: client.get_async(path, watch=watch)
                    for path in (zl.REASSIGN_PARTITIONS, zl.PREFERRED_REPLICA_ELECTION)}
    broker_config_reads = {e: client.get_async(zl.broker_config_path(e), watch=watch) for e in config_entities}
    users = client.get_children(zl.USERS_CONFIG, watch=watch)  # created with the other persistent paths
    user_reads = {u: client.get_async(f"{zl.USERS_CONFIG}/{u}", watch=watch) for u in users}
    quota_reads = _read_quota_configs(client, watch, user_reads)

    brokers, broker_epochs = _collect_brokers(registrations)
    controller_data = _value(controller_read)
    if controller_data is None:
        watch_creation(client, [zl.CONTROLLER], watch)  # told when a controller is elected
    controller = zl.ControllerRegistration.decode(controller_data[0]).broker_id if controller_data else -1
    epoch_data = _value(epoch_read)
    controller_epoch, epoch_version = ((zl.decode_controller_epoch(epoch_data[0]), epoch_data[1].version)
                                       if epoch_data else (0, -1))
    topics: dict[str, TopicView] = {}
    state_reads = {}
    for name, read in assignments.items():
        data = _value(read)
        if data is None:
            continue
        ta = zl.TopicAssignment.decode(data[0])
        config_data = _value(config_reads[name])
        view = TopicView(ta.topic_id or uuid.UUID(int=0), {p: tuple(r) for p, r in ta.partitions.items()},
                         zl.decode_entity_config(config_data[0]) if config_data else {},
                         adding={p: tuple(r) for p, r in ta.adding_replicas.items()},
                         removing={p: tuple(r) for p, r in ta.removing_replicas.items()}, version=data[1].version)
        topics[name] = view
        for index in view.assignment:
            state_reads[(name, index)] = client.get_async(zl.partition_state_path(name, index), watch=watch)
    stateless = []
    for (name, index), read in state_reads.items():
        data = _value(read)
        if data is None:
            stateless.append(zl.partition_state_path(name, index))  # the controller has yet to elect
            continue
        topics[name].states[index] = (_decode_state(data[0]), data[1].version)
    watch_creation(client, stateless, watch)
    legacy = {path: _value(read) for path, read in legacy_reads.items()}
    broker_configs = {e: _value(read) for e, read in broker_config_reads.items()}
    absent = [path for path, data in legacy.items() if data is None]
    absent += [zl.broker_config_path(e) for e, data in broker_configs.items() if data is None]
    watch_creation(client, absent, watch)
    reassign, elections = legacy[zl.REASSIGN_PARTITIONS], legacy[zl.PREFERRED_REPLICA_ELECTION]
    return ClusterSnapshot(
        brokers, controller, controller_epoch, epoch_version, topics, deleting,
        legacy_reassignments=(_decode_legacy(zl.decode_reassignment, reassign, {}), reassign[1].version)
        if reassign is not None else None,
        legacy_elections=_decode_legacy(zl.decode_preferred_replica_election, elections, set())
        if elections is not None else None,
        broker_configs={e: _entity_config(zl.broker_config_path(e), data[0])
                        for e, data in broker_configs.items() if data is not None},
        users={zl.desanitize(u): _entity_config(f"{zl.USERS_CONFIG}/{u}", data[0]) for u, read in user_reads.items()
               if (data := _value(read)) is not None},
        quota_configs={path: _entity_config(f"{zl.CONFIG}/{path}", data[0]) for path, read in quota_reads.items()
                       if (data := _value(read)) is not None},
        broker_epochs=broker_epochs)


def _read_for_alter_partition(client, broker_id: int, paths: list[str]
                              ) -> tuple[int | None, set[int], list[tuple[LeaderAndIsr, int] | None]]:
    """What the controller checks an AlterPartition against, read together: the requester's
    broker epoch (its registration's czxid, None when not registered), the live broker ids, and
    each state znode (state and version, None when absent)."""
    registration = client.exists_async(zl.broker_path(broker_id))
    children = client.get_children_async(zl.BROKER_IDS)
    reads = [client.get_async(path) for path in paths]
    stat = registration.get()
    states = [(_decode_state(data[0]), data[1].version) if (data := _value(read)) is not None else None
              for read in reads]
    return (stat.czxid if stat is not None else None), {int(c) for c in children.get()}, states


def _request_brokers(client, watch: Callable | None) -> dict[int, object]:
    """The live brokers' registrations, requested together (async reads, by broker id)."""
    children = client.get_children(zl.BROKER_IDS, watch=watch)
    return {int(c): client.get_async(zl.broker_path(int(c)), watch=watch) for c in children}


def _collect_brokers(registrations: dict[int, object]) -> tuple[dict[int, BrokerInfo], dict[int, int]]:
    """The live brokers and their broker epochs (their registrations' czxids), by id."""
    brokers: dict[int, BrokerInfo] = {}
    epochs: dict[int, int] = {}
    for broker_id, read in registrations.items():
        data = _value(read)
        if data is not None:
            reg = zl.BrokerRegistration.decode(broker_id, data[0])
            endpoints = {e.listener: (e.host or "127.0.0.1", e.port) for e in reg.endpoints}
            first = reg.endpoints[0]
            brokers[broker_id] = BrokerInfo(broker_id, first.host or "127.0.0.1", first.port, reg.rack, endpoints)
            epochs[broker_id] = data[1].czxid
    return brokers, epochs


def _read_brokers(client, watch: Callable | None) -> tuple[dict[int, BrokerInfo], dict[int, int]]:
    """The live brokers and their broker epochs, by id."""
    return _collect_brokers(_request_brokers(client, watch))


def watch_creation(client, paths: list[str], watch: Callable | None) -> None:
    """Watch znodes a read found missing, to be told when they are created. A read of a missing
    znode leaves no watch, so one created between that read and this exists() would never be
    told: such a node, found here, asks the caller for another reconcile at once (through the
    watch) instead of leaving it to the safety re-read seconds later."""
    created = [path for path, request in [(path, client.exists_async(path, watch=watch)) for path in paths]
               if request.get() is not None]
    if created and watch is not None:
        log.debug("created while being read: %s; reading again", created)
        watch(None)


def _read_quota_configs(client, watch: Callable | None, user_reads: dict[str, object]) -> dict[str, object]:
    """Async reads of every quota entity's config znode, by path under /config: the users' (the
    caller's reads, by sanitized name, which also hold their SCRAM credentials), their per-client
    children, the client ids and the ips. A user's children are watched so that a first
    per-client quota is noticed."""
    reads = {f"{zl.USER_CONFIG_TYPE}/{u}": read for u, read in user_reads.items()}
    listings = {u: client.get_children_async(f"{zl.USERS_CONFIG}/{u}", watch=watch) for u in user_reads}
    client_listings = {}
    for user, listing in listings.items():
        if zl.USER_CLIENTS in (_value(listing) or ()):
            client_listings[user] = client.get_children_async(f"{zl.USERS_CONFIG}/{user}/{zl.USER_CLIENTS}",
                                                              watch=watch)
    for user, listing in client_listings.items():
        for name in _value(listing) or ():
            path = f"{zl.USER_CONFIG_TYPE}/{user}/{zl.USER_CLIENTS}/{name}"
            reads[path] = client.get_async(f"{zl.CONFIG}/{path}", watch=watch)
    for entity_type in (zl.CLIENT_CONFIG_TYPE, zl.IP_CONFIG_TYPE):
        for name in client.get_children(f"{zl.CONFIG}/{entity_type}", watch=watch):
            reads[f"{entity_type}/{name}"] = client.get_async(f"{zl.CONFIG}/{entity_type}/{name}", watch=watch)
    return reads


def _entity_config(path: str, data: bytes) -> dict[str, str]:
    """An entity config znode's settings; one that cannot be read counts as none, logged."""
    try:
        return zl.decode_entity_config(data)
    except zl.ZkDataError as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}


_warned_invalid: set[int] = set()  # mzxids of the invalid legacy admin znodes already reported


def _decode_legacy(decode: Callable, data, empty):
    """A legacy admin znode's request, or `empty` if it is not valid JSON of its shape: Kafka
    ignores such a reassignment request and deletes such an election request unread."""
    try:
        return decode(data[0])
    except zl.ZkDataError as e:
        if data[1].mzxid not in _warned_invalid:
            _warned_invalid.add(data[1].mzxid)
            log.warning("ignoring an invalid legacy admin request: %s", e)
        return empty


def _value(read):
    """(data, stat) of an async read, None if the znode does not exist."""
    try:
        return read.get()
    except NoNodeError:
        return None


def _claim_controller(client, broker_id: int) -> int:
    """Create /controller and bump /controller_epoch in one transaction (Kafka's
    registerControllerAndIncrementControllerEpoch); raises NodeExistsError if another won."""
    while True:
        try:
            data, stat = client.get(zl.CONTROLLER_EPOCH)
            epoch, version = zl.decode_controller_epoch(data), stat.version
        except NoNodeError:
            try:
                client.create(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(zl.INITIAL_CONTROLLER_EPOCH))
            except NodeExistsError:
                pass
            continue
        tx = client.transaction()
        tx.create(zl.CONTROLLER, zl.ControllerRegistration(broker_id=broker_id,
                                                                timestamp_ms=int(time.time() * 1000)).encode(),
                  ephemeral=True)
        tx.set_data(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(epoch + 1), version=version)
        results = tx.commit()
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            return epoch + 1
        if any(isinstance(r, NodeExistsError) for r in failures):
            raise NodeExistsError()
        # the epoch moved under us without a controller: read again


class ControllerMovedError(BadVersionError):
    """A controller write's check of /controller_epoch failed: another broker is the controller."""


def _write_states(client, writes: list[StateWrite], controller_epoch_version: int) -> list[Exception | int]:
    """Controller partition state writes, each fenced by the controller epoch's znode version
    (a controller that was replaced fails the check instead of overwriting its successor) and
    by the state znode's version. Every transaction is sent before any answer is awaited, the
    writes in the order given (ZooKeeper applies one session's requests in order); one result per
    write, in order: the state znode's new version (its partition epoch), or the error that rolled
    it back (ControllerMovedError when it was the controller epoch's check)."""
    _ensure_parents([zl.partition_state_path(w.topic, w.partition) for w in writes if w.version is None], client)
    pending = []
    for w in writes:
        path = zl.partition_state_path(w.topic, w.partition)
        tx = client.transaction()
        tx.check(zl.CONTROLLER_EPOCH, controller_epoch_version)
        if w.version is None:
            tx.create(path, _encode_state(w.state))
        else:
            tx.set_data(path, _encode_state(w.state), version=w.version)
        pending.append(tx.commit_async())
    results: list[Exception | int] = []
    for w, request in zip(writes, pending):
        try:
            outcome = request.get()
        except Exception as e:  # the connection failed under the request  # noqa: BLE001
            results.append(e)
            continue
        error = _first_error(outcome)
        if isinstance(outcome[0], BadVersionError):
            results.append(ControllerMovedError())
        elif error is not None:
            results.append(error)
        else:  # a created znode is at version 0; set_data answers the new stat
            results.append(0 if w.version is None else outcome[1].version)
    return results


def _ensure_parents(paths: list[str], client) -> None:
    """Create the missing …/partitions and …/partitions/N parents of new state znodes: one
    pipelined round for each of the two levels."""
    parents = {path.rsplit("/", 1)[0] for path in paths}
    for level in ({p.rsplit("/", 1)[0] for p in parents}, parents):
        for request in [client.create_async(p) for p in sorted(level)]:
            try:
                request.get()
            except NodeExistsError:
                pass


def _moves_leader(w: StateWrite, snapshot: ClusterSnapshot) -> bool:
    """A write that creates a partition's state or changes its leader."""
    view = snapshot.topics.get(w.topic)
    current = view.states.get(w.partition) if view is not None else None
    return current is None or current[0].leader != w.state.leader


def _create_topic_znodes(client, name: str, topic_id: uuid.UUID, assignment: dict[int, list[int]],
                         configs: dict[str, str]) -> None:
    if client.exists(zl.topic_path(name)) is not None:
        raise NodeExistsError()
    data = zl.encode_entity_config(configs)
    try:
        client.create(zl.topic_config_path(name), data, makepath=True)
    except NodeExistsError:
        client.set(zl.topic_config_path(name), data)
    client.create(zl.topic_path(name), zl.TopicAssignment(topic_id=topic_id, partitions={
        p: list(r) for p, r in assignment.items()}).encode(), makepath=True)


def _set_assignment(client, name: str, topic_id: uuid.UUID, assignment: dict[int, list[int]],
                    adding: dict[int, list[int]] | None = None, removing: dict[int, list[int]] | None = None,
                    version: int = -1) -> None:
    client.set(zl.topic_path(name), zl.TopicAssignment(topic_id=topic_id, partitions=assignment,
                                                       adding_replicas=adding or {},
                                                       removing_replicas=removing or {}).encode(), version=version)


def _plan_reassignments(view: TopicView | None, items: list[tuple[int, list[int] | None]], live: set[int],
                        require_live: bool = True):
    """Kafka's checks of AlterPartitionReassignments for one topic, and the topic znode's new
    assignment, adding and removing maps (None when nothing is to be written). The legacy znode's
    moves skip the live-broker check (require_live False): Kafka starts them and they wait."""
    result: dict[int, tuple[ErrorCode, str | None]] = {}
    if view is None:
        return {i: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.") for i, _ in items}, \
            None, None, None
    assignment = {p: list(r) for p, r in view.assignment.items()}
    adding = {p: list(r) for p, r in view.adding.items()}
    removing = {p: list(r) for p, r in view.removing.items()}
    changed = False
    for index, target in items:
        if index not in view.assignment:
            result[index] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            continue
        ongoing = index in adding or index in removing
        original = tuple(r for r in view.assignment[index] if r not in view.adding.get(index, ()))
        if target is None:
            if not ongoing:
                result[index] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
                continue
            assignment[index] = list(original)
            adding.pop(index, None)
            removing.pop(index, None)
        else:
            if not target:
                result[index] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition "
                                 "reassignment.")
                continue
            if len(set(target)) != len(target):
                result[index] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Duplicate replica ids in partition "
                                 f"reassignment replica list: {target}")
                continue
            unknown = [b for b in target if b not in live]
            if unknown and require_live:
                result[index] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The proposed assignment contains "
                                 f"non-live brokers: {unknown}")
                continue
            replicas, add, remove = start_reassignment(original, tuple(target))
            assignment[index] = list(replicas)
            if add or remove:
                adding[index], removing[index] = list(add), list(remove)
            else:
                adding.pop(index, None)
                removing.pop(index, None)
        changed = True
        result[index] = (ErrorCode.NONE, None)
    return result, (assignment if changed else None), adding, removing


def _drop_legacy_reassignments(client, partitions: set[tuple[str, int]], epoch_version: int | None) -> None:
    """Take partitions out of /admin/reassign_partitions, deleting it once empty; conditional on
    its version and, for the controller, on the controller epoch's."""
    try:
        data, stat = client.get(zl.REASSIGN_PARTITIONS)
    except NoNodeError:
        return
    try:
        entries = zl.decode_reassignment(data)
    except zl.ZkDataError:
        return
    left = {tp: r for tp, r in entries.items() if tp not in partitions}
    if len(left) == len(entries):
        return
    tx = client.transaction()
    if epoch_version is not None:
        tx.check(zl.CONTROLLER_EPOCH, epoch_version)
    if left:
        tx.set_data(zl.REASSIGN_PARTITIONS, zl.encode_reassignment(left), version=stat.version)
    else:
        tx.delete(zl.REASSIGN_PARTITIONS, version=stat.version)
    _raise_first(tx.commit())


def _delete_fenced(client, path: str, epoch_version: int) -> None:
    """Delete a znode as the controller: only while the controller epoch is still ours."""
    tx = client.transaction()
    tx.check(zl.CONTROLLER_EPOCH, epoch_version)
    tx.delete(path)
    _raise_first(tx.commit())


def _first_error(results: list) -> Exception | None:
    """The error that rolled a transaction back (its other operations report RolledBackError)."""
    return next((r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)), None)


def _raise_first(results: list) -> None:
    error = _first_error(results)
    if error is not None:
        raise error


def _update_entity_config(client, entity_type: str, name: str, updates: dict[str, str | None]) -> None:
    """Change some keys of an entity's config znode (None removes one), keeping the others, as
    Kafka's AdminZkClient fetches an entity's config, edits it and writes it back."""
    try:
        data, _ = client.get(zl.entity_config_path(entity_type, name))
        configs = _entity_config(zl.entity_config_path(entity_type, name), data)
    except NoNodeError:
        configs = {}
    for key, value in updates.items():
        if value is None:
            configs.pop(key, None)
        else:
            configs[key] = value
    _set_entity_config(client, entity_type, name, configs)


def _set_entity_config(client, entity_type: str, name: str, configs: dict[str, str]) -> None:
    """Write an entity's config znode, then the change notification Kafka's brokers watch for.
    A quota entity's znode (client, user, ip) left with no config and no children is removed
    instead, as Kafka's AdminZkClient cleans them up."""
    path = zl.entity_config_path(entity_type, name)
    children = client.get_children(path) if client.exists(path) else []
    if not configs and entity_type in zl.QUOTA_ENTITY_TYPES and not children:
        if client.exists(path):
            client.delete(path)
    else:
        data = zl.encode_entity_config(configs)
        try:
            client.set(path, data)
        except NoNodeError:
            client.create(path, data, makepath=True)
    client.create(zl.CONFIG_CHANGE_PREFIX, zl.encode_config_change(entity_type, name), sequence=True,
                  makepath=True)


def _delete_topic_znodes(client, name: str) -> None:
    client.delete(zl.topic_path(name), recursive=True) if client.exists(zl.topic_path(name)) else None
    if client.exists(zl.topic_config_path(name)):
        client.delete(zl.topic_config_path(name))
    if client.exists(zl.delete_topic_path(name)):
        client.delete(zl.delete_topic_path(name))


def _claim_producer_id_block(client, broker_id: int) -> int:
    """Kafka's ZkProducerIdManager: read the latest block, write the next one conditionally."""
    while True:
        try:
            data, stat = client.get(zl.LATEST_PRODUCER_ID_BLOCK)
        except NoNodeError:
            client.ensure_path(zl.LATEST_PRODUCER_ID_BLOCK)
            continue
        start = zl.ProducerIdBlock.decode(data).block_end + 1 if data else 0
        block = zl.ProducerIdBlock(broker_id=broker_id, block_start=start, block_end=start + PRODUCER_ID_BLOCK - 1)
        try:
            client.set(zl.LATEST_PRODUCER_ID_BLOCK, block.encode(), version=stat.version)
            return start
        except BadVersionError:
            continue

