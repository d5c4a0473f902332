"""ActiveController: what a ZooKeeper-mode broker does as the cluster's controller (whoever holds
the ephemeral /controller; /controller_epoch is bumped atomically with taking it), and the
controller's answers to other brokers.

On reads of its own (run_states) the controller brings new partitions online, elects leaders
where the leader died and takes dead replicas out of ISRs. After each reconcile it acts on
the snapshot: it deletes the topics marked in /admin/delete_topics, writes completed
reassignments, follows the legacy /admin znodes, and every
leader.imbalance.check.interval.seconds moves leaderships back to preferred replicas. It
answers ElectLeaders (the handlers send other brokers' askers away with NOT_CONTROLLER), AlterPartition (a leader's ISR change, judged against the
state znode as read now) and ControlledShutdown (moving a stopping broker's leaderships away and
remembering it as shutting down, as Kafka's controller keeps it in memory). Replicas on a broker's
failed log dir are learnt and remembered by offline_replicas.py, laid over each read like the
brokers shutting down. The decisions are
controller.py's pure functions; every write here is fenced by the controller epoch's znode
version and the state znode's version, so a controller that was replaced, or a decision made on
a stale read, fails instead of overwriting."""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Iterator

import trio
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.controller import (PREFERRED, AlterTopic, ClusterSnapshot, Election, IsrAnswer,
                                                     LeaderAndIsr, StateWrite, completed_reassignments,
                                                     controlled_shutdown_in_steps, elect, imbalanced_leaders,
                                                     judge_isr_proposal, led_partitions, moves_leader,
                                                     state_changes_in_steps, without_bounced)
from wirekafka.broker.metadata.zk.offline_replicas import OfflineReplicas
from wirekafka.broker.metadata.zk.reassignments import Reassignments
from wirekafka.broker.metadata.zk.session import ChangeFeed, ZkSession
from wirekafka.config import topic as topic_config
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.jvm import TopicPartitionKey, scala_mutable_hashmap_order
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

_SHUTDOWN_WRITE_ROUNDS = 3  # a controlled shutdown's writes, re-planned after a lost race
# partitions of an AlterPartition judged, or answered, between two turns of the loop: a leader
# proposes every ISR a restarted follower rejoins in one request (3,333 at 10,000 partitions)
ALTER_CHUNK = 250
# partitions the controller plans between two turns of the loop (about 5-15 us each)
PLAN_CHUNK = 1000
# state writes whose outcome is logged between two turns of the loop: a line each, some 20 us
# (the 10,000 writes of a create logged in one step held the loop for 0.2 s of CPU, 1 s of wall)
OUTCOME_CHUNK = 250
_FIRST_REBALANCE_CHECK_S = 5.0  # Kafka 3.9's first leader-imbalance check, after becoming the controller


async def _planned(steps: Iterator[list[StateWrite]]) -> list[StateWrite]:
    """The writes of a plan made in steps, with a turn of the loop between two steps."""
    writes: list[StateWrite] = []
    turns = LoopTurns(1)
    for step in steps:
        if turns.due():
            await turns.turn()
        writes += step
    return writes


class ActiveController:
    def __init__(self, config: BrokerConfig, zk: ZkSession, view: ClusterView, reassignments: Reassignments,
                 offline: OfflineReplicas) -> None:
        self.config = config
        self.node_id = config.node_id
        self.zk = zk
        self.view = view
        self.reassignments = reassignments
        self.offline = offline  # replicas on brokers' failed log dirs
        # the brokers in controlled shutdown, with the broker epoch they asked in
        self._brokers_shutting_down: dict[int, int] = {}
        # each live broker's epoch as of the last state changes this controller made: a broker
        # seen under another epoch since restarted unnoticed (controller.without_bounced)
        self._acted_epochs: dict[int, int] = {}
        self._shutdown_lock = trio.Lock()
        self._last_read: ClusterSnapshot | None = None  # run_states' last read, while the controller
        self._next_rebalance_check = float("inf")  # trio time of the next leader-imbalance check
        self._rebalance_rescheduled = trio.Event()

    # ---- taking the role and acting on a snapshot ------------------------------------------------------
    async def try_claim(self) -> None:
        """No controller: try to become it (another broker may win the race)."""
        try:
            epoch = await self.zk.call(io.claim_controller, self.zk.client, self.node_id)
        except NodeExistsError:
            return
        log.info("broker %d is the controller (epoch %d)", self.node_id, epoch)
        self._next_rebalance_check = trio.current_time() + _FIRST_REBALANCE_CHECK_S
        self._rebalance_rescheduled.set()
        self.zk.mark_changed()

    async def act(self, snapshot: ClusterSnapshot) -> None:
        """What the controller does after a reconcile (the partition states are run_states'):
        deletions, completed reassignments, the legacy /admin znodes."""
        epoch = snapshot.controller_epoch
        await self.offline.notice()
        for name in snapshot.deleting:
            await self.zk.call(io.delete_topic_znodes, self.zk.client, name)
            log.info("controller: deleted topic %s", name)
        for done in completed_reassignments(snapshot, epoch):
            if (done.state.topic, done.state.partition) in await self._write_states([done.state], snapshot):
                continue
            await self.reassignments.finish(snapshot, done)
        await self.reassignments.follow_legacy(snapshot)
        await self._run_legacy_elections(snapshot)

    async def run_states(self, feed: ChangeFeed, safety_s: float) -> None:
        """The partition states the controller writes (new partitions online, elections, dead
        replicas out of ISRs), decided on a read of its own each time a metadata watch fires
        (or every safety_s), while /controller names this broker. Apart from the reconcile
        loop, so that they never wait for this broker to apply a read: opening its own replicas
        of thousands of new partitions takes seconds, and Kafka's controller too writes the
        states and leaves the logs to the brokers. A change of live brokers is first decided
        on the last read (elect_for_broker_change)."""
        memo = io.TopicMemo()
        while True:
            changed = await feed.wait(safety_s)
            if not self.zk.connected:
                continue
            try:
                if await self.zk.call(io.read_controller_id, self.zk.cache, self.zk.cache.watch) != self.node_id:
                    self._last_read = None
                    continue
                if zl.BROKER_IDS in changed:
                    await self.elect_for_broker_change()
                read = await self.zk.call(io.read_snapshot, self.zk.cache, self.zk.cache.watch, (), memo)
                self._last_read = read
                await self.change_states(self.as_controller(read))
            except Exception:  # ZooKeeper unreachable or a race: the next round retries
                log.warning("controller: writing partition states failed; retrying", exc_info=True)
                await trio.sleep(0.2)
                feed.mark(None)

    def _latest(self) -> ClusterSnapshot:
        """The newest cluster state this controller knows: its own last read (run_states), or
        before the first, what this broker applied."""
        return self._last_read if self._last_read is not None else self.view.snapshot

    async def elect_for_broker_change(self) -> None:
        """The controller's fast path when the set of live brokers changed (a broker died or came
        back): elect from the last snapshot with the brokers read anew, before the full re-read
        (which takes ~0.1 s with a few hundred partitions), as Kafka's controller acts on its
        cached state. Every write is conditional on the state versions of that snapshot, so a
        state that moved meanwhile (a leader's ISR change, say) is left to run_states' full
        read that follows."""
        last = self._latest()
        brokers, epochs = await self.zk.call(io.read_brokers, self.zk.client, None)
        if epochs == last.broker_epochs:
            return
        snapshot = self.as_controller(dataclasses.replace(last, brokers=brokers, broker_epochs=epochs))
        log.info("controller: live brokers now %s", sorted(brokers))
        await self.change_states(snapshot)

    async def change_states(self, snapshot: ClusterSnapshot) -> None:
        """Elections and ISR changes for dead, bounced and new brokers' partitions, then the
        broker epochs they were decided on remembered (a bounced broker's only once its
        partitions were all written: else it counts as bounced again at the next round)."""
        planning, bounced = without_bounced(snapshot, self._acted_epochs)
        if bounced:
            log.info("controller: brokers %s re-registered under a new epoch: handled as failed, then started",
                     sorted(bounced))
        writes = await _planned(state_changes_in_steps(planning, snapshot.controller_epoch,
                                                       self._unclean_allowed(snapshot), PLAN_CHUNK))
        failed = await self._write_states(writes, planning)
        self._acted_epochs = {b: (self._acted_epochs[b] if b in bounced and failed else epoch)
                              for b, epoch in snapshot.broker_epochs.items()}

    def as_controller(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """The snapshot with the brokers this controller is shutting down laid over it. A broker
        leaves that set when its registration goes or changes (it stopped, or restarted), and the
        whole set is forgotten when this broker is not the controller (Kafka's controller keeps
        it in memory and a new controller starts without it)."""
        if snapshot.controller != self.node_id:
            self._brokers_shutting_down.clear()
            self._acted_epochs.clear()  # a new controller starts from the registrations it reads
            self.offline.forget()
        for broker, epoch in list(self._brokers_shutting_down.items()):
            if snapshot.broker_epochs.get(broker) != epoch:
                del self._brokers_shutting_down[broker]
        return dataclasses.replace(snapshot, shutting_down=frozenset(self._brokers_shutting_down),
                                   offline_replicas=self.offline.lay_over(snapshot))

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
            await self.zk.call(io.delete_fenced, self.zk.client, [zl.PREFERRED_REPLICA_ELECTION],
                               snapshot.controller_epoch_version)
        except (BadVersionError, NoNodeError):
            self.zk.mark_changed()

    def _unclean_allowed(self, snapshot: ClusterSnapshot) -> Callable[[str], bool]:
        def allowed(name: str) -> bool:
            view = snapshot.topics.get(name)
            value = topic_config.effective("unclean.leader.election.enable", view.configs if view else {},
                                           self.config, self.view.broker_configs)[0]
            return str(value).lower() == "true"
        return allowed

    async def _write_states(self, writes: list[StateWrite], snapshot: ClusterSnapshot) -> set[tuple[str, int]]:
        """Write the states conditionally, all in one pipelined round (a dead broker's
        partitions all move at once, as Kafka's controller batches its ZooKeeper writes);
        returns the partitions whose write lost a race."""
        if not writes:
            return set()
        writes = sorted(writes, key=lambda w: not moves_leader(w, snapshot))  # what clients wait for first
        results = await self.zk.call(io.write_states, self.zk.client, writes, snapshot.controller_epoch_version)
        failed = set()
        turns = LoopTurns(OUTCOME_CHUNK)
        for w, error in zip(writes, results):
            if turns.due():
                await turns.turn()
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

    # ---- elections ---------------------------------------------------------------------------------------
    async def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None,
                            timeout_s: float) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """ElectLeaders: decided by the controller on a fresh read of the topics named (of all,
        when none are; its memory of the brokers in controlled shutdown laid over it), written
        with its conditional writes (fenced by the controller epoch and each state's version),
        then waited for until this broker has applied them. All partitions (None) answers only
        those where an election was needed, as Kafka does."""
        named = None if partitions is None else {t for t, _ in partitions}
        snapshot = self.as_controller(await self.zk.call(io.read_snapshot, self.zk.client, None, (), None,
                                                         None if named is None else named.intersection))
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
            await self.view.wait_until(self.view.next_reconcile(), timeout_s)
        return answer

    async def run_rebalance(self) -> None:
        """Kafka's leader-imbalance check: 5 s after this broker becomes the controller (Kafka
        3.9's onControllerFailover schedules it so), then every
        leader.imbalance.check.interval.seconds, on the controller's last read of the states."""
        interval = self.config.int("leader.imbalance.check.interval.seconds")
        while True:
            with trio.move_on_at(self._next_rebalance_check):
                await self._rebalance_rescheduled.wait()
            if self._rebalance_rescheduled.is_set():  # became the controller: the first check moved
                self._rebalance_rescheduled = trio.Event()
                continue
            self._next_rebalance_check = trio.current_time() + interval
            read = self._last_read
            if read is None or read.controller != self.node_id or not self.zk.connected:
                continue
            snapshot = self.as_controller(read)
            writes = imbalanced_leaders(snapshot, snapshot.controller_epoch,
                                        self.config.int("leader.imbalance.per.broker.percentage"))
            if writes:
                log.info("controller: moving %d leaderships back to their preferred replicas", len(writes))
                await self._write_states(writes, snapshot)

    # ---- ControlledShutdown (controller) -------------------------------------------------------------------
    async def shut_down_broker(self, broker_id: int, broker_epoch: int) -> tuple[ErrorCode, list[tuple[str, int]]]:
        """Kafka 3.9's ZooKeeper controller answering ControlledShutdown: STALE_CONTROLLER_EPOCH on
        any other broker (Kafka's ControllerMovedException); with a broker epoch, UNKNOWN_SERVER_ERROR for a broker that is not
        registered (Kafka's lookup fails) and STALE_BROKER_EPOCH for an epoch below the
        registration's; BROKER_NOT_AVAILABLE for an unregistered broker otherwise. Then the broker
        is shutting down until its registration goes: it is not elected anywhere nor let into an
        ISR, its leaderships move (controlled_shutdown_in_steps) and it leaves the ISRs it follows,
        in the controller's fenced writes, retried on a lost race. The answer lists what it still
        leads, in the order of Kafka's hash map of partition leaderships."""
        if self.view.snapshot.controller != self.node_id or not self.zk.connected:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        async with self._shutdown_lock:
            involved = self._topics_involving(broker_id)
            snapshot = await self.zk.call(io.read_snapshot, self.zk.client, None, (), None, involved)
            if snapshot.controller != self.node_id:
                return ErrorCode.STALE_CONTROLLER_EPOCH, []
            registered = snapshot.broker_epochs.get(broker_id)
            if broker_epoch != -1 and registered is None:
                return ErrorCode.UNKNOWN_SERVER_ERROR, []
            if broker_epoch != -1 and registered is not None and broker_epoch < registered:
                log.info("controller: ignoring ControlledShutdown of broker %d with stale broker epoch %d "
                         "(registered: %d)", broker_id, broker_epoch, registered)
                return ErrorCode.STALE_BROKER_EPOCH, []
            if registered is None:
                return ErrorCode.BROKER_NOT_AVAILABLE, []
            log.info("controller: shutting down broker %d", broker_id)
            self._brokers_shutting_down[broker_id] = registered
            for _ in range(_SHUTDOWN_WRITE_ROUNDS):
                view = self.as_controller(snapshot)
                writes = await _planned(controlled_shutdown_in_steps(view, view.controller_epoch, broker_id,
                                                                     PLAN_CHUNK))
                failed = await self._write_states(writes, view)
                snapshot = await self.zk.call(io.read_snapshot, self.zk.client, None, (), None, involved)
                if not failed:
                    break
            self.zk.mark_changed()  # the next reconcile lays the new shutting-down set over its read
            led = led_partitions(self.as_controller(snapshot), broker_id)
            return ErrorCode.NONE, scala_mutable_hashmap_order(TopicPartitionKey(t, p) for t, p in led)

    def _topics_involving(self, broker_id: int) -> Callable[[list[str]], set[str]]:
        """Given every topic's name: those a controlled shutdown of broker_id reads, the ones
        whose replicas include it as this broker last applied them, and any this broker has not
        seen yet (created since). Kafka's controller decides from its memory of the cluster;
        here the state znodes of those topics are read anew, and no others."""
        known = self.view.snapshot.topics

        def involved(names: list[str]) -> set[str]:
            return {name for name in names if (view := known.get(name)) is None
                    or any(broker_id in replicas for replicas in view.assignment.values())
                    or any(broker_id in replicas for replicas in view.adding.values())}
        return involved

    # ---- AlterPartition (controller) --------------------------------------------------------------------
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
        UNKNOWN_TOPIC_OR_PARTITION. Every broker learns the new states from its watches.
        Topic ids are looked up in the controller's own last read (run_states), not in what this
        broker has applied: applying 10,000 new partitions (opening this broker's replicas of them)
        takes tens of seconds, and meanwhile the leaders' ISR changes to the topics it had not
        applied yet were refused with UNKNOWN_TOPIC_ID (12,020 times on one broker in one create),
        so the partitions whose followers were slow to start stayed below min.insync.replicas."""
        snapshot = self._latest()
        if snapshot.controller != self.node_id or not self.zk.connected:
            return ErrorCode.NOT_CONTROLLER, []
        by_id = {view.topic_id: name for name, view in snapshot.topics.items()}
        names = [t.name_or_id if isinstance(t.name_or_id, str) else by_id.get(t.name_or_id) for t in topics]
        paths = [zl.partition_state_path(name, a.index) for name, t in zip(names, topics) if name is not None
                 for a in t.partitions]
        registered, live, states = await self.zk.call(io.read_for_alter_partition, self.zk.client, broker_id, paths)
        live -= self._brokers_shutting_down.keys()  # no ISR may take a broker that is shutting down
        if registered is None or registered != broker_epoch:
            log.info("controller: ignoring AlterPartition from broker %d with stale broker epoch %d (registered: %s)",
                     broker_id, broker_epoch, registered)
            return ErrorCode.STALE_BROKER_EPOCH, []
        current = iter(states)
        writes: list[tuple[IsrAnswer, StateWrite]] = []
        turns = LoopTurns(ALTER_CHUNK)  # the writes are conditional on the versions read
        for name, t in zip(names, topics):
            for a in t.partitions:
                if turns.due():
                    await turns.turn()
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
        results = await self.zk.call(io.write_states, self.zk.client, [w for _, w in writes],
                                     snapshot.controller_epoch_version) if writes else []
        turns = LoopTurns(ALTER_CHUNK)
        for (a, w), result in zip(writes, results):
            if turns.due():
                await turns.turn()
            if isinstance(result, int):
                a.state, a.partition_epoch = w.state, result
                log.info("controller: %s-%d ISR %s (from broker %d, partition epoch %d)", w.topic, w.partition,
                         list(w.state.isr), broker_id, result)
            elif isinstance(result, io.ControllerMovedError):
                return ErrorCode.UNKNOWN_SERVER_ERROR, []  # Kafka's answer when its controller moved meanwhile
            elif isinstance(result, BadVersionError):
                a.error = ErrorCode.INVALID_UPDATE_VERSION
            else:
                log.warning("controller: %s-%d ISR update failed: %r", w.topic, w.partition, result)
                a.error = ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.NONE, topics
