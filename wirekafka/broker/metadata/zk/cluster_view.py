"""ClusterView: a ZooKeeper-mode broker's cache of the cluster metadata, and the applier of each
snapshot read from ZooKeeper to this broker's replicas.

The view answers the look-ups of `ClusterMetadata` (topics by name and id, live brokers, the
controller, each partition's leader and ISR) from the last snapshot this broker applied, never
from a newer read: Metadata must not name a leader whose state this broker has not acted on.
`apply` makes the local side match a snapshot: topics appear (this broker's replicas are
opened, in a worker thread) or go (their files are deleted), a reassignment adds or removes a
replica here, the dynamic broker configs, SCRAM credentials and client quotas are replaced, and
each local partition becomes leader or follower as its state znode says; what the broker must
do about it (fetchers, coordinators) goes out as one `RoleChange`.

Who waits for the cluster to catch up (a topic created, deleted or grown; an election) asks
for reconciles with `wait_until` until its condition holds."""

from __future__ import annotations

import logging
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, TypeVar

import trio

from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata import assignment as assigner
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, OpenPartition, PartitionView, Topic, TopicIndex
from wirekafka.broker.metadata.cluster_role import RoleChange
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk.broker_passwords import BrokerPasswords
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot, LeaderAndIsr, TopicView
from wirekafka.broker.quotas.entities import ClientQuotas
from wirekafka.broker.replica.partition import Partition
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.dynamic import DEFAULT_ENTITY, DynamicBrokerConfigs
from wirekafka.security.scram_store import ScramCredentials

log = logging.getLogger(__name__)

T = TypeVar("T")
APPLY_CHUNK = 500  # partitions apply looks at between two returns to the loop, at most
# role changes handed to the broker (its fetchers, its ISR manager) at once: a failover's 3,300
# followers moving to new leaders, handed over together, took 30-60 ms of CPU in one step
ROLES_CHUNK = 250


class ClusterView(TopicIndex):
    def __init__(self, config: BrokerConfig, open_partition: OpenPartition,
                 ask_reconcile: Callable[[], None]) -> None:
        """ask_reconcile: have the reconcile loop read the cluster again soon (the session's mark)."""
        self.config = config
        self.node_id = config.node_id
        self._open_partition = open_partition
        self._ask_reconcile = ask_reconcile
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._creating: set[str] = set()
        # the topics of the snapshot being applied (or applied last): in ZooKeeper, if not here yet
        self._read_topics: Mapping[str, TopicView] = {}
        self.snapshot = ClusterSnapshot({}, -1, 0, -1, {})  # the last one applied
        self.amendments = 0  # changes made to the applied snapshot in place (amended)
        # what apply applied last: each topic's view, and what every role depends on besides
        self._applied_views: dict[str, TopicView] = {}
        self._applied_world: tuple | None = None
        self._reconciled = trio.Event()
        self._reconciles = 0  # reconciles finished, for waiters of the next one
        self.stopping = False  # this broker is stopping: it follows no leader any more
        self.broker_configs = DynamicBrokerConfigs(self.node_id, self.config)
        self.broker_configs.observe(self.apply_all_configs)
        self.passwords = BrokerPasswords(config)  # the password configs in /config/brokers, as Kafka encodes them
        self.scram = ScramCredentials()
        self.client_quotas = ClientQuotas()
        # set by the broker: start/stop following a leader (the replica fetchers)
        self.on_roles: Callable[[RoleChange], None] = lambda change: None

    @property
    def config_entities(self) -> tuple[str, ...]:
        """The /config/brokers entities whose dynamic configs apply here."""
        return DEFAULT_ENTITY, str(self.node_id)

    @property
    def by_name(self) -> Mapping[str, Topic]:
        """The topics this broker has applied, by name (read-only to callers)."""
        return self._topics

    def amended(self) -> None:
        """The applied snapshot was changed in place (a state this leader had recorded by the
        controller, ahead of its watch): what was derived from it is stale."""
        self.amendments += 1

    # ---- waiting for the cluster ------------------------------------------------------------------
    def reconciled(self) -> None:
        """A reconcile finished: wake whoever waits for one."""
        self._reconciles += 1
        self._reconciled.set()
        self._reconciled = trio.Event()

    async def wait_until(self, probe: Callable[[], T | None], timeout_s: float) -> T | None:
        """Ask for reconciles, one after another, until probe() answers something (returned), or
        None once timeout_s has passed."""
        with trio.move_on_after(timeout_s):
            while (found := probe()) is None:
                self._ask_reconcile()
                await self._reconciled.wait()
            return found
        return None

    def next_reconcile(self) -> Callable[[], bool | None]:
        """A probe for wait_until that holds once a reconcile has finished after this call."""
        seen = self._reconciles
        return lambda: True if self._reconciles > seen else None

    @contextmanager
    def creating(self, name: str) -> Iterator[None]:
        """The topic is being created here: refused as a duplicate meanwhile (being_created)."""
        self._creating.add(name)
        try:
            yield
        finally:
            self._creating.discard(name)

    def being_created(self, name: str) -> bool:
        """Also while a topic read from ZooKeeper is not applied here yet (apply opens this
        broker's replicas first, tens of seconds for thousands of partitions): Metadata's
        auto-creation of it would only find it exists, a ZooKeeper request for each such topic
        of each request, while producers ask for their topics again and again."""
        return super().being_created(name) or (name in self._read_topics and name not in self._topics)

    def online(self, name: str) -> Topic | None:
        """The topic once this broker has applied it with a state for every partition."""
        topic = self._topics.get(name)
        view = self.snapshot.topics.get(name)
        if topic is None or view is None or len(view.states) < len(view.assignment):
            return None
        return topic

    # ---- look-ups (ClusterMetadata) ---------------------------------------------------------------
    def brokers(self, listener: str) -> list[BrokerInfo]:
        live = self.snapshot.brokers
        return [b for b in (live[n].on(listener) for n in sorted(live)) if b is not None]

    def controller_id(self) -> int:
        return self.snapshot.controller

    def partition_view(self, topic: Topic, index: int) -> PartitionView:
        view = self.snapshot.topics.get(topic.name)
        replicas = view.assignment.get(index, ()) if view is not None else ()
        current = view.states.get(index) if view is not None else None
        if current is None:
            return PartitionView(-1, -1, replicas, (), replicas)
        state = current[0]
        live = self.snapshot.brokers
        offline = () if all(map(live.__contains__, replicas)) else tuple(r for r in replicas if r not in live)
        return PartitionView(state.leader if state.leader in live else -1, state.leader_epoch, replicas, state.isr,
                             offline)

    def topic_answer_key(self, topic: Topic) -> object:
        """All partition_view reads for the topic's partitions, as one value to compare with ==:
        the topic's id and partition count here, its assignment and states as applied, and the
        live brokers. A state amended in place is a new entry, compared by value."""
        view = self.snapshot.topics.get(topic.name)
        mine = (topic.topic_id, len(topic.partitions), tuple(self.snapshot.brokers))
        if view is None:
            return mine
        return mine + (tuple(view.assignment.items()), tuple(view.states.items()))

    def broker_metadata(self) -> list[assigner.BrokerMetadata]:
        """The live brokers as replica assignment sees them (id and rack)."""
        live = self.snapshot.brokers
        return [assigner.BrokerMetadata(n, live[n].rack) for n in sorted(live)]

    def peer(self, snapshot: ClusterSnapshot, broker_id: int) -> BrokerInfo | None:
        """A live broker as this one reaches it: on the inter-broker listener."""
        info = snapshot.brokers.get(broker_id)
        return info.on(self.config.inter_broker_listener) if info is not None else None

    # ---- applying a snapshot ------------------------------------------------------------------------
    def stop_following(self) -> None:
        """This broker is stopping: it fetches nothing more (a caught-up follower would otherwise
        rejoin ISRs), now and after every later reconcile."""
        self.stopping = True
        self.on_roles(RoleChange(stop_fetching=list(self.iter_partitions())))

    async def apply(self, snapshot: ClusterSnapshot, full: bool = True) -> None:
        """Make the local topics, dynamic broker configs and partition roles match the snapshot.
        Unless full, a topic whose view is the very object applied last time (the reader's memo
        keeps an unchanged topic's view) is passed over while the live brokers, the broker
        configs and whether this broker is stopping are as they were too: a change costs in
        proportion to the topics it touched. A full apply (at the safety re-read) re-asserts
        every role and fetch."""
        self._read_topics = snapshot.topics
        world = (snapshot.brokers, snapshot.broker_configs, self.stopping)
        same_world = not full and world == self._applied_world
        self._applied_world = world
        for entity in self.config_entities:
            self.broker_configs.replace(entity, self.passwords.decoded(entity, snapshot.broker_configs.get(entity, {})))
        await self.broker_configs.listener_tls.apply_stored()
        self.scram.load(snapshot.users)
        self.client_quotas.replace_all(zl.quota_entities(snapshot.quota_configs))
        for name in [n for n in self._topics if n not in snapshot.topics]:
            await self._drop_topic(name)
        change = RoleChange()
        # a change of thousands of roles, or a full apply re-asserting 10,000 (about 40 ms), never
        # holds the loop for long
        turns = LoopTurns(APPLY_CHUNK)
        applied, self._applied_views = self._applied_views, dict(snapshot.topics)
        for name, view in snapshot.topics.items():
            topic = self._topics.get(name)
            if same_world and topic is not None and applied.get(name) is view:
                continue
            reconfigure = topic is None or topic.configs != view.configs
            opened = False  # replicas opened here by this apply
            if topic is None or topic.topic_id != view.topic_id:
                if topic is not None:
                    await self._drop_topic(name)
                topic = Topic(name, view.topic_id, configs=dict(view.configs))
                topic.partitions = await self._open_replicas(topic, view, 0)
                self._topics[name] = topic
                self._by_id[topic.topic_id] = topic
                opened = True
            else:
                if len(topic.partitions) < len(view.assignment):
                    topic.partitions.extend(await self._open_replicas(topic, view, len(topic.partitions)))
                    opened = True
                await self._follow_reassignments(topic, view, change)
            if reconfigure or opened:
                topic.configs = dict(view.configs)
                self.apply_topic_configs(topic)
            min_isr = int(self.topic_config_value(topic, "min.insync.replicas"))
            for p in topic.local_partitions():
                if turns.due():
                    await turns.turn()
                p.min_insync_replicas = min_isr  # replicas a reassignment opened here too
                current = view.states.get(p.index)
                if not p.online:  # on a failed log dir: it takes no role (Kafka answers KAFKA_STORAGE_ERROR)
                    continue
                if current is not None and self._apply_role(p, view.assignment.get(p.index, ()), current[0],
                                                            snapshot, change):
                    if change.size() >= ROLES_CHUNK:  # handed over in parts: each costs the fetchers' work
                        self.on_roles(change)
                        change = RoleChange()
                    await turns.turn_now()  # a new role (a log line, the epoch cache) costs more than a look
            if opened:
                # the followers of a topic just opened here start fetching now, not once every
                # topic of the snapshot is open (100 new topics of 100 partitions: tens of
                # seconds, past which their leaders would drop this broker from the ISRs)
                self.on_roles(change)
                change = RoleChange()
        self.on_roles(change)

    def _apply_role(self, p: Partition, replicas: tuple[int, ...], state: LeaderAndIsr, snapshot: ClusterSnapshot,
                    change: RoleChange) -> bool:
        """Bring the partition to its role in state; True if it took a new role or epoch."""
        isr = frozenset(state.isr)
        rs = p.replica_set
        if state.leader == self.node_id:
            if not p.is_leader or p.leader_epoch != state.leader_epoch:
                log.info("%s-%d: leader in epoch %d, ISR %s", p.topic, p.index, state.leader_epoch, sorted(isr))
                change.stop_fetching.append(p)
                if not p.is_leader:
                    change.became_leader.append(p)
                p.make_leader(state.leader_epoch, replicas, isr)
                return True
            if rs.isr != isr or rs.replicas != replicas:
                rs.set_replicas(replicas)
                p.set_isr(isr)
            return False
        if p.is_leader or p.leader_epoch != state.leader_epoch or rs.leader != state.leader:
            log.info("%s-%d: follower of %d in epoch %d", p.topic, p.index, state.leader, state.leader_epoch)
            if p.is_leader:
                change.resigned.append(p)
            p.make_follower(state.leader_epoch, state.leader, replicas, isr)
            change.stop_fetching.append(p)
            leader = self.peer(snapshot, state.leader)
            if leader is not None and not self.stopping:
                change.follow.append((p, leader))
            return True
        rs.isr = isr
        rs.replicas = replicas
        leader = self.peer(snapshot, state.leader)
        if leader is not None and not self.stopping:
            change.follow.append((p, leader))  # a no-op if already following it
        return False

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
                await local.files.delete_files()
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
            await p.files.delete_files()
        log.info("topic %s is gone: deleted its local replicas", name)
