"""ZkBackend: the cluster metadata of a broker in a ZooKeeper-coordinated cluster (Kafka 3.9's
layout), behind the same `ClusterMetadata` interface as the single node's LocalMetadata, and the
broker's `ClusterMembership`. It owns no rule of its own: it wires the roles over one session.

- `cluster_view.py` (ClusterView): the metadata cache and the applier of each snapshot to this
  broker's replicas and their roles;
- `active_controller.py` (ActiveController): what the controller does and answers, with its
  fenced writes; `reassignments.py` the reassignments' writes; `controller.py` the decisions;
- `isr_manager.py` (IsrManager): a leader's ISR proposals to the controller;
- `admin_writer.py` (AdminWriter): the admin requests' writes (topics, configs, SCRAM, quotas,
  producer-id blocks);
- `registration.py` (Registrar): this broker's ephemeral registration and its broker epoch;
- `znode_io.py`: the reads and writes of the znodes, the one place these roles call kazoo.

How a broker learns of changes: ZooKeeper watches. Every read sets a watch; any notification
(or a session change) makes the reconcile loop read the whole cluster state — brokers,
controller, topics, assignments, configs, partition states — in a worker thread, and apply it
on the event loop. The reads go through a per-path cache (cache.py): only znodes whose watch
fired are asked of ZooKeeper again, so one ISR change costs one read, not one per partition; a
session change or a re-read asked for without a path reads everything. What did not change is
not decoded again (a topic whose cached answers are the same keeps its view, TopicMemo) nor
applied again (apply passes over the topics whose view it applied, unless the brokers or the
broker configs changed or the 5 s safety re-read runs). The controller's partition states
(new partitions online, elections) are decided on reads of its own, beside the reconcile loop
(`ActiveController.run_states`, woken by the same watches): they never wait for this broker
to open its own replicas of new topics. Other state kept in
ZooKeeper beside the metadata (the ACLs, acl_znodes.py) is a `ZkFollower`: loaded by `start`
before the broker serves, then run beside the reconcile loop, on watches of its own.

Who writes what:
- every broker: its ephemeral /brokers/ids/N registration (again after a session expiry; the
  znode's czxid is the broker epoch);
- the controller (whoever holds the ephemeral /controller, /controller_epoch bumped atomically
  with taking it): new partitions' states, leader elections, dead replicas out of the ISR, topic
  deletion, preferred leader election, the moves a broker's ControlledShutdown asks for, and the
  ISR changes leaders propose with AlterPartition, each checked against the state znode's
  version (the partition epoch) and the leader epoch, so a leader that was replaced cannot
  overwrite its successor's state;
- any broker serving an admin request: new topics' /config/topics and /brokers/topics znodes
  (the controller then brings their partitions online), /admin/delete_topics markers, config
  changes, producer id blocks in /latest_producer_id_block.

A broker whose session expired stops leading: the reconcile after the new session sees the
partition states the controller wrote meanwhile, and a write made on the old view fails its
version check."""

from __future__ import annotations

import logging
import uuid
from typing import Callable, Iterator, Protocol, TypeVar

import trio

from wirekafka.broker.metadata.answer_cache import AnswerCache
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, OpenPartition, PartitionView, Topic
from wirekafka.broker.metadata.cluster_role import RoleChange
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.acl_znodes import ZkAclStore
from wirekafka.broker.metadata.zk.active_controller import ActiveController
from wirekafka.broker.metadata.zk.admin_writer import AdminWriter
from wirekafka.broker.metadata.zk.broker_passwords import BrokerPasswords
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot
from wirekafka.broker.metadata.zk.isr_manager import IsrManager
from wirekafka.broker.metadata.zk.offline_replicas import OfflineReplicas
from wirekafka.broker.metadata.zk.reassignments import Reassignments
from wirekafka.broker.metadata.zk.registration import Registrar
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.quotas.entities import ClientQuotas, Entity
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replication.alter_partition_client import IsrProposer
from wirekafka.broker.replication.peer_client import PeerPool, PeerSecurity
from wirekafka.broker.replication.shutdown_client import ask_controller
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.dynamic import DynamicBrokerConfigs
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.acl.authorizer import Authorizer
from wirekafka.security.sasl.scram import ScramCredential
from wirekafka.security.scram_store import ScramCredentials
from wirekafka.startup_errors import StartupError

log = logging.getLogger(__name__)

SAFETY_RECONCILE_S = 5.0  # re-read even without a watch firing (a watch lost with a session)


class ZkFollower(Protocol):
    """Other state a broker keeps from ZooKeeper beside the cluster metadata (the ACLs): read
    once the session is up, before the broker serves, then followed from its own watches."""

    async def load(self) -> None: ...

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None: ...


F = TypeVar("F", bound=ZkFollower)


class ZkBackend:
    def __init__(self, config: BrokerConfig, open_partition: OpenPartition, session: ZkSession,
                 peer_security: PeerSecurity, on_roles: Callable[[RoleChange], None] = lambda change: None) -> None:
        """on_roles: what the broker does about a reconcile's role changes (its replica fetchers,
        its coordinators)."""
        self.config = config
        self.node_id = config.node_id
        self.zk = session
        self.view = ClusterView(config, open_partition, session.mark_changed)
        # the view's, which it keeps current from /config (ClusterMetadata's attributes)
        self.broker_configs: DynamicBrokerConfigs = self.view.broker_configs
        self.scram: ScramCredentials = self.view.scram
        self.client_quotas: ClientQuotas = self.view.client_quotas
        self.registrar = Registrar(config, session)
        # requests to the controller: AlterPartition (leaders) and ControlledShutdown, bounded as
        # Kafka 3.9's alter-partition channel bounds them
        self._controller_peers = PeerPool(lambda node: self.view.peer(self.view.snapshot, node), config, "controller",
                                          peer_security, request_timeout_key="controller.socket.timeout.ms")
        self.isr = IsrManager(config, session, self.view,
                              IsrProposer(self._controller_peers, lambda: self.view.snapshot.controller),
                              lambda: self.registrar.broker_epoch)

        def roles(change: RoleChange) -> None:  # the ISR manager watches the partitions this broker leads
            self.isr.on_roles(change)
            on_roles(change)
        self.view.on_roles = roles
        self.reassignments = Reassignments(session, self.view)
        # the controller's requests to the other brokers (LeaderAndIsr after a log dir event)
        broker_peers = PeerPool(lambda node: self.view.peer(self.view.snapshot, node), config, "controller-to-broker",
                                peer_security, request_timeout_key="controller.socket.timeout.ms")
        self.offline = OfflineReplicas(self.node_id, session, lambda: self.view.snapshot, broker_peers)
        self.controller = ActiveController(config, session, self.view, self.reassignments, self.offline)
        self._log_dir_failed = trio.Event()
        self.admin = AdminWriter(config, session, self.view)
        self._followers: list[ZkFollower] = []
        # the snapshot (and its amendments) the answer cache holds answers of
        self._answers_of: tuple[ClusterSnapshot | None, int] = (None, 0)
        self._answers = AnswerCache(self.view.topic_answer_key)
        self._topic_memo = io.TopicMemo()  # the reconciles' decoded topics, reused while unchanged

    # ---- membership (ClusterMembership) -----------------------------------------------------------
    async def connect(self) -> str:
        """Connect, create Kafka's top-level znodes, and return the cluster id in /cluster/id
        (created, random in Kafka's base64 form, by the first broker)."""
        unsupported = BrokerPasswords.unsupported(self.config)
        if unsupported is not None:
            raise StartupError(unsupported)
        await self.zk.start()
        await self.zk.call(io.create_top_level_paths, self.zk.client)
        return await self.zk.call(io.get_or_create_cluster_id, self.zk.client)

    def follow(self, follower: F) -> F:
        """Have `follower` loaded by start() and run beside the reconcile loop; returns it."""
        self._followers.append(follower)
        return follower

    def acl_store(self, authorizer: Authorizer) -> ZkAclStore:
        """Kafka 3.9's /kafka-acl tree, loaded and followed over this session."""
        return self.follow(ZkAclStore(authorizer, self.zk))

    async def start(self) -> None:
        """Load the followers, register this broker and apply the cluster state once, before serving."""
        for follower in self._followers:
            await follower.load()
        await self.admin.reencode_passwords()
        await self.registrar.register()
        await self._reconcile()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The reconcile loop, the followers, the leader's ISR maintenance and the controller's
        leader rebalance."""
        task_status.started()
        async with trio.open_nursery() as nursery:
            for follower in self._followers:
                await nursery.start(follower.run)
            nursery.start_soon(self.isr.run)
            nursery.start_soon(self.offline.run)
            nursery.start_soon(self._propagate_log_dir_failures)
            nursery.start_soon(self.controller.run_states, self.zk.metadata_feed(), SAFETY_RECONCILE_S)
            if self.config.bool("auto.leader.rebalance.enable"):
                nursery.start_soon(self.controller.run_rebalance)
            while True:
                changed = await self.zk.wait_changed(SAFETY_RECONCILE_S)
                if None in changed:  # a re-read asked for without naming what changed: read it all
                    self.zk.cache.clear()
                try:
                    if self.zk.connected and not self.registrar.current:
                        await self.registrar.register()
                    if self.zk.connected:
                        await self._reconcile(full=not changed or None in changed)
                except Exception:  # ZooKeeper unreachable or a race: the next round retries
                    log.warning("reconciling with ZooKeeper failed; retrying", exc_info=True)
                    await trio.sleep(0.2)
                    self.zk.mark_changed()

    def report_log_dir_failure(self) -> None:
        """A log dir of this broker went offline (on the loop): tell the controller."""
        self._log_dir_failed.set()

    async def _propagate_log_dir_failures(self) -> None:
        """Kafka's LogDirFailureHandler in ZooKeeper mode: a log dir event notification for each
        failure reported, retried until ZooKeeper takes it."""
        while True:
            await self._log_dir_failed.wait()
            self._log_dir_failed = trio.Event()
            while True:
                try:
                    await self.zk.call(io.propagate_log_dir_event, self.zk.client, self.node_id)
                    log.info("told the controller a log dir failed (%s)", zl.LOG_DIR_EVENT_NOTIFICATION)
                    break
                except Exception:  # ZooKeeper unreachable: the notification must still reach the controller
                    log.warning("writing a log dir event notification failed; retrying", exc_info=True)
                    await trio.sleep(1.0)

    def check_controller_request(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """A controller's request to this broker (LeaderAndIsr), as Kafka 3.9's broker checks it: a
        broker epoch below this registration's is STALE_BROKER_EPOCH (a request meant for this
        broker before it restarted), a controller epoch below the one read is STALE_CONTROLLER_EPOCH."""
        if broker_epoch != -1 and broker_epoch < self.registrar.broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        if controller_epoch < self.view.snapshot.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        return ErrorCode.NONE

    async def _reconcile(self, full: bool = True) -> None:
        """Read the cluster; with no controller, try to become it at once (as Kafka's brokers do
        on the /controller watch: the election must not wait for this broker to apply a read
        that names a dead broker, a pass over every partition); apply the read here (all of it
        when full: at the safety re-read, or when what changed is unknown; else the topics that
        changed), then act on it as the controller."""
        snapshot = self.controller.as_controller(await self.zk.call(io.read_snapshot, self.zk.cache,
                                                                    self.zk.cache.watch, self.view.config_entities,
                                                                    self._topic_memo))
        if snapshot.controller == -1:
            await self.controller.try_claim()
        if snapshot == self.view.snapshot:
            snapshot = self.view.snapshot  # the same object: what was derived from it stays valid
        await self.view.apply(snapshot, full)
        if snapshot is not self.view.snapshot:
            self.view.snapshot = snapshot  # Metadata answers only what this broker has applied
            self._answers.applied()
        if snapshot.controller == self.node_id:
            await self.controller.act(snapshot)
        self.view.reconciled()

    async def controlled_shutdown(self, retries: int, backoff_s: float) -> bool:
        """Kafka's controlled shutdown, before this broker stops: it stops fetching (a caught-up
        follower would otherwise rejoin ISRs) and asks the controller with ControlledShutdown to
        move its leaderships away, up to `retries` times with `backoff_s` between, until the
        controller answers that it leads nothing more. True when it did."""
        self.view.stop_following()
        for attempt in range(retries):
            answer = await ask_controller(self._controller_peers, lambda: self.view.snapshot.controller,
                                          self.registrar.broker_epoch)
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

    async def leave(self) -> None:
        """Close the ZooKeeper session at the end of a shutdown: the registration goes at once."""
        if self.zk.connected:
            await self.zk.close()

    # ---- ClusterMetadata: the log dir holds none of it ----------------------------------------------
    def load(self) -> None:
        """Nothing to read from the log dir: the topics are in ZooKeeper (see start)."""

    def save(self) -> None:
        """Nothing to write: ZooKeeper holds the metadata."""

    # ---- ClusterMetadata: look-ups, from the view ------------------------------------------------------
    def topic(self, name: str) -> Topic | None:
        return self.view.topic(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self.view.topic_by_id(topic_id)

    def resolve(self, name: str | None, topic_id: uuid.UUID | None, by_id: bool) -> tuple[Topic | None, ErrorCode]:
        return self.view.resolve(name, topic_id, by_id)

    def partition(self, topic: str, index: int) -> Partition:
        return self.view.partition(topic, index)

    def all_topics(self) -> list[Topic]:
        return self.view.all_topics()

    def being_created(self, name: str) -> bool:
        return self.view.being_created(name)

    def iter_partitions(self) -> Iterator[Partition]:
        return self.view.iter_partitions()

    def topic_config_value(self, topic: Topic, name: str) -> str:
        return self.view.topic_config_value(topic, name)

    def brokers(self, listener: str) -> list[BrokerInfo]:
        return self.view.brokers(listener)

    def controller_id(self) -> int:
        return self.view.controller_id()

    def answer_cache(self) -> AnswerCache:
        """Every answer the view gives comes from the snapshot it applied last: a new snapshot
        (one that differs: _reconcile keeps an equal one) or one amended in place empties the
        cache of whole answers."""
        applied = (self.view.snapshot, self.view.amendments)
        if self._answers_of[0] is not applied[0] or self._answers_of[1] != applied[1]:
            self._answers_of = applied
            self._answers.changed(self.view.by_name)
        return self._answers

    def partition_view(self, topic: Topic, index: int) -> PartitionView:
        return self.view.partition_view(topic, index)

    # ---- ClusterMetadata: changes, by the admin writer and the controller's side ----------------------
    def validate_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignment: dict[int, list[int]] | None = None) -> None:
        self.admin.validate_new_topic(name, num_partitions, replication_factor, configs, assignment)

    async def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None,
                           replication_factor: int = -1, assignment: dict[int, list[int]] | None = None,
                           wait: bool = True, timeout_s: float | None = None) -> Topic | None:
        return await self.admin.create_topic(name, num_partitions, configs, replication_factor, assignment, wait,
                                             timeout_s)

    async def delete_topic(self, name: str) -> Topic:
        return await self.admin.delete_topic(name)

    async def add_partitions(self, topic: Topic, total: int) -> None:
        await self.admin.add_partitions(topic, total)

    async def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        await self.admin.set_topic_configs(topic, configs)

    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        await self.admin.set_broker_configs(entity, configs)

    async def set_scram_credentials(self, changes: dict[str, dict[str, ScramCredential]]) -> None:
        await self.admin.set_scram_credentials(changes)

    async def alter_client_quotas(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        await self.admin.alter_client_quotas(changes)

    async def allocate_producer_id(self) -> int:
        return await self.admin.allocate_producer_id()

    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None,
                            timeout_s: float) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        return await self.controller.elect_leaders(election_type, partitions, timeout_s)

    async def alter_reassignments(self, changes: list[tuple[str, int, list[int] | None]]
                                  ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        return await self.reassignments.alter(changes)

    def list_reassignments(self, wanted: list[tuple[str, int]] | None
                           ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        return self.reassignments.in_progress(wanted)
