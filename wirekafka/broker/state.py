"""BrokerState: the broker's parts wired together, and the owner of its log dir.

It formats and checks `meta.properties`, opens partitions (recovering logs that were not shut
down cleanly, reading the checkpoints and each partition's `leader-epoch-checkpoint`), writes the
checkpoints, and shuts down cleanly. Topics live behind the cluster-metadata seam
(`self.metadata`), appends and fetches go through the replica manager (`self.replicas`), and the
group coordinator reaches both through the coordinator runtime; none of them imports this module.

Threading: `load`, `shutdown`, `write_checkpoints` run in worker threads while the event loop is
not changing topics (start-up, shutdown) or from a snapshot taken on the loop
(`checkpoint_snapshot`), so no worker iterates a structure the loop mutates."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import trio

from wirekafka.config import topic as topic_config
from wirekafka.security.acl.store import AclStore, LocalAclStore
from wirekafka.security.acl.authorizer import Authorizer, parse_super_users
from wirekafka.broker.coordinator.runtime import CoordinatorRuntime
from wirekafka.broker.replica.delayed_deletes import DelayedDeletes, delete_directory_name
from wirekafka.broker.replica.fetch_sessions import FetchSessionCache
from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC, GroupCoordinator
from wirekafka.broker.metadata.cluster_metadata import LocalMetadata, Topic, base64_to_uuid, leader_of, uuid_to_base64
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replica.log_dir_failure import LogDirFailureChannel
from wirekafka.broker.replica.log_dirs import LogDirPlacement
from wirekafka.broker.replica.replica_manager import ReplicaManager
from wirekafka.broker.metadata import log_dir_meta
from wirekafka.broker.metrics.broker_metrics import BrokerMetrics
from wirekafka.broker.replication.fetcher import ReplicaFetchers
from wirekafka.broker.quotas.client_quota_manager import ClientQuotaManagers
from wirekafka.broker.quotas.replication_quota import ReplicationQuotas
from wirekafka.broker.replication.txn_peers import TransactionPeers
from wirekafka.broker.replication.peer_client import PeerSecurity
from wirekafka.broker.metadata.cluster_role import ClusterMembership, ControllerRequests, RoleChange
from wirekafka.broker.metadata.zk.backend import ZkBackend
from wirekafka.broker.metadata.zk.session import session_for
from wirekafka.broker.coordinator.transactions import TXN_TOPIC, TransactionCoordinator
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import METRICS_LISTENER
from wirekafka.broker.replica.cleaner_scheduler import LogCleaner
from wirekafka.storage import checkpoint, partition_metadata
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.partition_metadata import PartitionMetadataFile
from wirekafka.storage.log import PartitionLog, recovered_epoch_starts

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"  # Kafka's name for the high watermarks
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


def new_cluster_id() -> str:
    return uuid_to_base64(uuid.uuid4())


@dataclass(frozen=True)
class CheckpointSnapshot:
    """Offsets to checkpoint, copied on the event loop; a worker writes them, each log dir's
    files with the partitions it holds."""

    recovery: dict[tuple[str, int], int]
    starts: dict[tuple[str, int], int]
    high_watermarks: dict[tuple[str, int], int]
    log_dirs: dict[Path, set[tuple[str, int]]]  # the online log dirs and their partitions


class BrokerState:
    def __init__(self, config: BrokerConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.node_id = config.node_id
        self.log_dirs = config.log_dirs
        self.log_dir = config.log_dir  # the first: it holds the metadata files too
        self.cluster_id = ""
        self.metadata: LocalMetadata | ZkBackend
        # in a cluster (ZooKeeper mode): the broker's membership and what it answers as controller
        self.cluster: ClusterMembership | None = None
        self.controller: ControllerRequests | None = None
        self.fetchers: ReplicaFetchers | None = None
        self._cluster_tasks: trio.Nursery | None = None
        # how this broker connects to the others, shared by every such connection (ZooKeeper mode)
        self.peer_security: PeerSecurity | None = None
        if config.zookeeper_mode:
            self.peer_security = peer_security = PeerSecurity.of(config)
            backend = ZkBackend(config, self._open_partition, session_for(config), peer_security, self._on_roles)
            self.metadata = self.cluster = backend
            self.controller = backend.controller
        else:
            self.metadata = LocalMetadata(self.log_dir, config, self._open_partition)
        self.quotas = ReplicationQuotas(self.metadata, config)
        # the single node's first log dir holds its metadata: the broker stops when it fails
        self.log_dir_failures = LogDirFailureChannel(self.log_dirs,
                                                     metadata_dir=None if config.zookeeper_mode else self.log_dir)
        self.log_dir_failures.on_offline(self._take_log_dir_offline)
        self.placement = LogDirPlacement(self.log_dirs, lambda d: not self.log_dir_failures.is_offline(d))
        self.client_quotas = ClientQuotaManagers(self.metadata.client_quotas, config)
        if self.peer_security is not None:  # ZooKeeper mode
            self.fetchers = ReplicaFetchers(config, self.quotas, self.peer_security, self.log_dir_failures)
        # KIP-227 fetch sessions, on the event loop like the rest of the request state
        self.fetch_sessions = FetchSessionCache(config.int("max.incremental.fetch.session.cache.slots"), self.now_ms)
        self.metrics = BrokerMetrics(config[METRICS_LISTENER] is not None)
        self.replicas = ReplicaManager(self.metadata, self.now_ms, self.quotas, self.log_dir_failures,
                                       config["replica.selector.class"], self.metrics.topics)
        runtime = CoordinatorRuntime(self.metadata, self.replicas, config, self.now_ms)
        self.groups = GroupCoordinator(runtime)
        self.transactions = TransactionCoordinator(runtime, self._write_markers, self.metadata.allocate_producer_id)
        self.replicas.verify_transaction = self.transactions.verify_produce
        self.txn_peers: TransactionPeers | None = None
        if self.peer_security is not None:  # ZooKeeper mode
            self.replicas.verify_transaction = self._verify_transaction
            self.txn_peers = TransactionPeers(self.metadata, config, self.peer_security)
        self.cleaner = LogCleaner(self)
        # None without authorizer.class.name (Kafka's default: every request is allowed)
        self.authorizer = (Authorizer(parse_super_users(str(config["super.users"])),
                                      bool(config["allow.everyone.if.no.acl.found"]))
                           if config.authorizer_enabled else None)
        # where CreateAcls/DeleteAcls persist ACLs: the log dir's file on the single node (read by
        # load); in a cluster the cluster's own (Kafka 3.9's /kafka-acl tree), loaded as it starts
        self.acl_store: AclStore | None = None
        self._local_acls: LocalAclStore | None = None
        if self.authorizer is not None:
            if self.cluster is not None:
                self.acl_store = self.cluster.acl_store(self.authorizer)
            else:
                self.acl_store = self._local_acls = LocalAclStore(self.log_dir, self.authorizer)
        self.deletes = DelayedDeletes(lambda: int(topic_config.effective("file.delete.delay.ms", {}, config,
                                                                        self.metadata.broker_configs)[0]))
        self._recovery: dict[tuple[str, int], int] = {}
        self._high_watermarks: dict[tuple[str, int], int] = {}
        self._starts: dict[tuple[str, int], int] = {}
        # the log dirs the previous run shut down cleanly: it holds for the whole run, since in a
        # cluster the partitions open when the metadata names them, long after load()
        self._clean_dirs: set[Path] = set(self.log_dirs)
        self._recovered: set[tuple[str, int]] = set()  # opened once this run: recovered if need be
        self.partitions_opened = 0  # replicas opened since start (gc_policy.keep_heap_frozen)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # ---- startup / shutdown ------------------------------------------------------------------
    def load(self, zk_cluster_id: str | None = None) -> None:
        """Open the log dir: meta.properties, topics, every partition log (recovering those not
        cleanly shut down) and producer state. Runs in a worker before the broker serves. In a
        cluster the topics come from ZooKeeper afterwards (`run_cluster`)."""
        fresh = {d for d in self.log_dirs if not (d / "meta.properties").exists()}
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        if zk_cluster_id is None:
            self.cluster_id = log_dir_meta.load_kraft_meta(self.log_dirs, self.node_id, new_cluster_id)
        else:
            self.cluster_id = log_dir_meta.load_zk_meta(self.log_dirs, self.node_id, zk_cluster_id)
        self._clean_dirs = {d for d in self.log_dirs if (d / CLEAN_SHUTDOWN_FILE).exists()}
        self.placement.scan()
        for d in self.log_dirs:  # each dir's checkpoints, for the partitions it holds
            held = self.placement.held_in(d)
            for name, offsets in ((RECOVERY_CHECKPOINT, self._recovery), (HIGH_WATERMARK_CHECKPOINT, self._high_watermarks),
                                  (LOG_START_CHECKPOINT, self._starts)):
                offsets.update((k, v) for k, v in checkpoint.read_offsets(d / name).items() if k in held)
        self.metadata.load()
        if self._local_acls is not None:
            self._local_acls.load()
        for d in self.log_dirs:
            if d not in self._clean_dirs and d not in fresh:
                log.info("log dir %s was not shut down cleanly: its partitions are recovered past their "
                         "recovery points as they open", d)
            (d / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)

    async def join_cluster(self) -> None:
        """Cluster mode start-up: connect to ZooKeeper, check the log dir against /cluster/id,
        recover the checkpoints (the partitions open when the cluster state names them)."""
        assert self.cluster is not None
        cluster_id = await self.cluster.connect()
        await trio.to_thread.run_sync(self.load, cluster_id)

    async def run_cluster(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The replica fetchers and the metadata's reconcile loop; started once the broker joined,
        it returns to the caller after the first reconcile (registered, partitions in their roles)."""
        assert self.cluster is not None and self.fetchers is not None
        async with trio.open_nursery() as nursery:
            self._cluster_tasks = nursery
            await nursery.start(self.fetchers.run)
            await self.cluster.start()
            await nursery.start(self.cluster.run)
            task_status.started()

    async def controlled_shutdown(self) -> None:
        """Hand this broker's leaderships over before stopping (Kafka's controlled shutdown:
        controlled.shutdown.max.retries requests to the controller, retry.backoff between them),
        within shutdown.timeout.ms."""
        assert self.cluster is not None
        cfg = self.config
        log.info("controlled shutdown: asking the controller to move leaderships away")
        with trio.move_on_after(cfg.int("shutdown.timeout.ms") / 1000) as scope:
            if await self.cluster.controlled_shutdown(cfg.int("controlled.shutdown.max.retries"),
                                                      cfg.int("controlled.shutdown.retry.backoff.ms") / 1000):
                log.info("controlled shutdown: done")
        if scope.cancelled_caught:
            log.warning("controlled shutdown: not done within shutdown.timeout.ms; stopping anyway")

    async def leave_cluster(self) -> None:
        """Close the ZooKeeper session at the end of a shutdown: the registration goes at once."""
        if self.cluster is not None:
            await self.cluster.leave()

    def _on_roles(self, change: RoleChange) -> None:
        """Apply a reconcile's role changes: fetchers follow the new leaders; coordinators load
        the partitions of their topics this broker now leads and drop those it no longer does."""
        assert self.fetchers is not None
        for p in change.stop_fetching:
            self.fetchers.stop_following(p)
        for p, leader in change.follow:
            self.fetchers.follow(p, leader)
        for p in change.resigned:
            if p.topic == OFFSETS_TOPIC:
                self.groups.unload_partition(p.index)
            elif p.topic == TXN_TOPIC:
                self.transactions.unload_partition(p.index)
        for p in change.became_leader:
            if self._cluster_tasks is None:
                continue
            # loading from now, not from when the task first runs: nothing is served from the
            # partition before its replay (the load marks it again and clears it when done)
            if p.topic == OFFSETS_TOPIC:
                self.groups.loading.add(p.index)
                self._cluster_tasks.start_soon(self.groups.load_partition, p)
            elif p.topic == TXN_TOPIC:
                self.transactions.loading.add(p.index)
                self._cluster_tasks.start_soon(self.transactions.load_partition, p)

    def _open_partition(self, topic: Topic, index: int, new: bool) -> Partition:
        """This broker's replica of topic-index: its log (recovered past the recovery point
        after an unclean shutdown), epoch cache and producer state."""
        key = (topic.name, index)
        self.partitions_opened += 1  # from worker threads too: a count for the heap's freezes, not a ledger
        log_dir = self.placement.log_dir(key)
        directory = log_dir / f"{topic.name}-{index}"
        if self._of_another_topic(directory, topic, index):
            new = True  # that topic was deleted while this broker was away: this replica starts empty
        plog = PartitionLog(
            directory,
            topic_config.log_config(topic.configs, self.config, self.metadata.broker_configs),
            log_start_offset=0 if new else self._starts.get(key, 0),
            recovery_point=0 if new else self._recovery.get(key, 0),
            clean_shutdown=new or log_dir in self._clean_dirs or key in self._recovered,
            clock=self.clock,
        )
        self._recovered.add(key)
        metadata_file = PartitionMetadataFile(directory, uuid_to_base64(topic.topic_id))  # written later
        epochs = LeaderEpochCache(directory / "leader-epoch-checkpoint")
        epochs.recover(recovered_epoch_starts(plog), plog.log_start_offset, plog.log_end_offset)
        partition = Partition(topic.name, index, plog, epochs, clock=self.clock,
                              producer_id_expiration_ms=self.metadata.broker_configs.current_int(
                                  "producer.id.expiration.ms"),
                              node_id=self.node_id, lead=not self.config.zookeeper_mode, deletes=self.deletes,
                              metadata_file=metadata_file)
        if not new and self.config.zookeeper_mode:
            # a replica that restarts knows what was committed before (a coordinator loading it as
            # a new leader reads up to here before its followers report in)
            partition.restore_high_watermark(self._high_watermarks.get(key, 0))
        return partition

    def _of_another_topic(self, directory: Path, topic: Topic, index: int) -> bool:
        """Whether the directory holds a replica of another topic of the same name (KIP-516: its
        partition.metadata names another topic id): a topic deleted while this broker was down,
        perhaps created again since. Such a directory is renamed for deletion, as Kafka deletes a
        stray log, so that its records and checkpointed offsets never pass for the new topic's."""
        meta = directory / partition_metadata.FILE_NAME
        try:
            lines = meta.read_text().splitlines()
        except FileNotFoundError:
            return False
        stored = dict(line.split(": ", 1) for line in lines if ": " in line).get("topic_id")
        if stored is None or base64_to_uuid(stored.strip()) == topic.topic_id:
            return False
        retired = directory.rename(directory.parent / delete_directory_name(topic.name, index, uuid.uuid4().hex))
        log.warning("%s holds topic id %s, not %s's %s: a deleted topic's replica, renamed %s for deletion",
                    directory, stored.strip(), topic.name, uuid_to_base64(topic.topic_id), retired.name)
        self.deletes.schedule_directory(retired)
        for offsets in (self._recovery, self._high_watermarks, self._starts):
            offsets.pop((topic.name, index), None)
        return True

    async def write_txn_marker(self, topic: str, index: int, producer_id: int, producer_epoch: int,
                               coordinator_epoch: int, commit: bool) -> ErrorCode:
        """Write a transaction marker to one partition; a marker on __consumer_offsets also
        settles the producer's pending transactional offsets in the group coordinator."""
        code = await self.replicas.write_txn_marker(topic, index, producer_id, producer_epoch, coordinator_epoch,
                                                    commit, self.config.int("request.timeout.ms"))
        if code == ErrorCode.NONE and topic == OFFSETS_TOPIC:
            self.groups.offsets.complete_transaction(index, producer_id, commit)
        return code

    async def _write_markers(self, tps: list[tuple[str, int]], producer_id: int, producer_epoch: int,
                             coordinator_epoch: int, commit: bool) -> dict[tuple[str, int], ErrorCode]:
        """The transaction coordinator's marker writer: every partition's marker at once, those
        this broker leads appended here (each answered once replicated), and in a cluster those
        led by other brokers in one WriteTxnMarkers request per leader, as Kafka's coordinator
        sends them. A partition deleted meanwhile needs no marker (NONE); any other failure is
        its answer, and the transaction stays in its Prepare state to be retried."""
        answers: dict[tuple[str, int], ErrorCode] = {}
        remote: dict[int, list[tuple[str, int]]] = {}

        async def local(tp: tuple[str, int]) -> None:
            answers[tp] = await self.write_txn_marker(tp[0], tp[1], producer_id, producer_epoch, coordinator_epoch,
                                                      commit)

        async def elsewhere(leader: int, led: list[tuple[str, int]]) -> None:
            assert self.txn_peers is not None
            answers.update(await self.txn_peers.write(leader, led, producer_id, producer_epoch, coordinator_epoch,
                                                      commit))

        async with trio.open_nursery() as nursery:
            for tp in tps:
                topic = self.metadata.topic(tp[0])
                if self.txn_peers is None or self._local_leader(tp) is not None:
                    nursery.start_soon(local, tp)
                elif topic is None or not 0 <= tp[1] < len(topic.partitions):
                    answers[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    remote.setdefault(leader_of(self.metadata, *tp), []).append(tp)
            for leader, led in remote.items():
                nursery.start_soon(elsewhere, leader, led)
        return {tp: ErrorCode.NONE if code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else code
                for tp, code in answers.items()}

    def _local_leader(self, tp: tuple[str, int]) -> Partition | None:
        topic = self.metadata.topic(tp[0])
        p = topic.partitions[tp[1]] if topic is not None and 0 <= tp[1] < len(topic.partitions) else None
        return p if p is not None and p.is_leader else None

    def _verify_transaction(self, producer_id: int, producer_epoch: int, topic: str, index: int) -> ErrorCode:
        """Produce-side verification in a cluster: by this broker's transaction coordinator when
        it coordinates the producer; a producer coordinated elsewhere had the first batch of its
        transaction on the partition verified with its coordinator before the append (the
        Produce handler's AddPartitionsToTxn verify_only), and later batches pass."""
        if not self.transactions.knows_producer(producer_id):
            return ErrorCode.NONE
        return self.transactions.verify_produce(producer_id, producer_epoch, topic, index)

    async def load_coordinators(self, *, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """Replay the group coordinator's topic, then the transaction coordinator's: finishing a
        transaction's markers may settle offsets, so the groups must be loaded first. Started
        (trio's nursery.start) once both count every partition of their topic as loading, before
        the listeners accept: an InitProducerId served before its partition was replayed would
        find no state and write a new one over a transaction still open in the log (Kafka answers
        COORDINATOR_LOAD_IN_PROGRESS from start-up until the partition is loaded)."""
        self.groups.loading.update(p.index for p in self.groups.runtime.partitions(OFFSETS_TOPIC))
        self.transactions.loading.update(p.index for p in self.transactions.runtime.partitions(TXN_TOPIC))
        task_status.started()
        await self.groups.load()
        await self.transactions.load()

    def checkpoint_snapshot(self) -> CheckpointSnapshot:
        """Copy the recovery point and log start of every partition in an online log dir (on the
        event loop)."""
        recovery = {}
        starts = {}
        high_watermarks = {}
        log_dirs: dict[Path, set[tuple[str, int]]] = {d: set() for d in self.log_dir_failures.online_dirs}
        for p in self.metadata.iter_partitions():
            held = log_dirs.get(p.files.log_dir)
            if held is None:  # its log dir is offline: nothing of it is written any more
                continue
            key = (p.topic, p.index)
            held.add(key)
            recovery[key] = p.recovery_point
            starts[key] = p.log_start_offset
            high_watermarks[key] = p.high_watermark
        return CheckpointSnapshot(recovery, starts, high_watermarks, log_dirs)

    async def delete_topic(self, name: str) -> None:
        """Remove the topic from the metadata (its partitions go offline at once, waking their
        waiters), then delete its files in a worker thread."""
        topic = await self.metadata.delete_topic(name)
        for p in topic.local_partitions():
            await p.files.delete_files()
            self.placement.forget((p.topic, p.index))

    async def checkpoint(self) -> None:
        """Snapshot on the loop, write the checkpoint files in a worker; a failing write takes the
        log directory offline (Kafka's checkpoint writers report to the LogDirFailureChannel)."""
        for log_dir, exc in await trio.to_thread.run_sync(self.write_checkpoints, self.checkpoint_snapshot()):
            self.log_dir_failures.fail("writing the offset checkpoints", exc, log_dir)

    @staticmethod
    def write_checkpoints(snapshot: CheckpointSnapshot) -> list[tuple[Path, OSError]]:
        """Write Kafka's recovery-point, high-watermark and log-start checkpoint files in each
        online log dir (worker thread); returns the dirs whose files could not be written."""
        failed = []
        for log_dir, held in snapshot.log_dirs.items():
            try:
                for name, offsets in ((RECOVERY_CHECKPOINT, snapshot.recovery),
                                      (HIGH_WATERMARK_CHECKPOINT, snapshot.high_watermarks),
                                      (LOG_START_CHECKPOINT, snapshot.starts)):
                    checkpoint.write_offsets(log_dir / name, {k: v for k, v in offsets.items() if k in held})
            except OSError as exc:
                failed.append((log_dir, exc))
        return failed

    def shutdown(self) -> None:
        """Flush and close every log (closing writes its producer snapshot at the log end),
        checkpoint, and leave the clean-shutdown marker. Runs in a worker after every connection
        and background task has stopped. With the directory offline, the files are only closed:
        no flush, checkpoint or marker, so that the next start recovers the logs."""
        failures = self.log_dir_failures
        partitions = []
        for p in self.metadata.iter_partitions():
            if failures.offline or failures.is_offline(p.files.log_dir):
                p.files.abandon()
            else:
                partitions.append(p)
        if failures.offline:
            return
        for p in partitions:
            if p.metadata_file is not None:
                p.metadata_file.run()
            p.epochs.flush()
            p.files.flush()
        unwritten = set()
        for log_dir, exc in self.write_checkpoints(self.checkpoint_snapshot()):
            log.error("Error while writing the offset checkpoints in dir %s: %s", log_dir, exc)
            unwritten.add(log_dir)
        self.metadata.save()
        for p in partitions:
            p.files.close()
        for log_dir in failures.online_dirs:  # a failed dir gets no marker: its logs are recovered
            if log_dir not in unwritten:
                checkpoint.atomic_write(log_dir / CLEAN_SHUTDOWN_FILE, '{"version":0,"brokerEpoch":0}')

    def _take_log_dir_offline(self, log_dir: Path) -> None:
        """A log dir failed: its partitions answer KAFKA_STORAGE_ERROR from now on (Kafka's
        ReplicaManager.handleLogDirFailure); their files are left as they are until shutdown. In a
        cluster the controller is told, and moves their leaderships and ISR places away."""
        for p in self.metadata.iter_partitions():
            if p.files.log_dir == log_dir:
                p.take_offline(ErrorCode.KAFKA_STORAGE_ERROR)
        if self.cluster is not None and self.log_dir_failures.online_dirs:
            self.cluster.report_log_dir_failure()
