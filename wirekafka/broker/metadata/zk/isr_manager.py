"""IsrManager: a partition leader's side of the ISR in ZooKeeper mode, as Kafka 3.9's leaders keep it.

Driven by events and one timer, never by a loop over every partition at a short period (a broker
leading thousands of partitions would spend its event loop scanning them):
- a follower fetch that makes an out-of-sync replica eligible to rejoin notes its partition
  (ReplicaSet.isr_watch; Kafka's maybeExpandIsr on each follower fetch) and wakes the manager;
- a partition this broker starts leading (or leads in a new epoch) is noted by the reconcile's role
  change: a leader after an unclean election moves to RECOVERED at once;
- every replica.lag.time.max.ms / 2 one sweep visits the led partitions for followers lagging past
  replica.lag.time.max.ms (Kafka's maybeShrinkIsr schedule), yielding to the loop between chunks;
- a refused proposal is tried again after a short backoff.
The new ISR is proposed to the controller with AlterPartition (alter_partition_client.py), the
noted partitions of a round in one request, one proposal in flight per partition; the ISR the
partition uses for its high watermark changes only once the controller recorded it
(`Partition.propose_isr` / `settle_isr`). A refusal that says this broker's view is stale asks for
a reconcile: the state the controller wrote meanwhile rules."""

from __future__ import annotations

import itertools
import logging
import math
import uuid
from functools import partial
from typing import Callable, Iterable, Iterator

import trio

from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata.cluster_role import RoleChange
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.controller import RECOVERING, LeaderAndIsr
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replication.alter_partition_client import IsrChange, IsrOutcome, IsrProposer
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

# AlterPartition answers that mean this broker's view of the partition is out of date
_STALE_VIEW = (ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
               ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.NEW_LEADER_ELECTED, ErrorCode.STALE_BROKER_EPOCH)
RETRY_S = 0.1  # a refused or not yet proposable change is looked at again after this long
SWEEP_CHUNK = 250  # partitions a round visits between two yields to the loop (a few ms of work)


class IsrManager:
    def __init__(self, config: BrokerConfig, zk: ZkSession, view: ClusterView, proposer: IsrProposer,
                 broker_epoch: Callable[[], int]) -> None:
        """broker_epoch: this broker's current epoch (its registration's czxid), named in each proposal."""
        self.config = config
        self.node_id = config.node_id
        self.zk = zk
        self.view = view
        self._proposer = proposer
        self._broker_epoch = broker_epoch
        self._due: set[Partition] = set()  # noted: looked at in the next round
        self._retry: set[Partition] = set()  # refused or not yet proposable: noted again at _retry_at
        self._retry_at = math.inf
        self._wake = trio.Event()
        # ISR changes recorded for partitions this broker leads (ReplicaManager's IsrShrinksPerSec
        # and IsrExpandsPerSec)
        self.shrinks = 0
        self.expands = 0

    def on_roles(self, change: RoleChange) -> None:
        """A reconcile's role changes: each partition this broker now leads (or leads in a new
        epoch) is watched, so that its followers' fetches note it, and looked at now."""
        for p in change.stop_fetching:
            if p.is_leader and p.online:
                self._watch(p)
                self.note(p)

    def note(self, p: Partition) -> None:
        """p's ISR may change: look at it in the next round, which starts now if none is running."""
        self._due.add(p)
        self._wake.set()

    def _watch(self, p: Partition) -> None:
        if p.replica_set.isr_watch is None:
            p.replica_set.isr_watch = partial(self.note, p)

    async def run(self) -> None:
        """Rounds, each when a partition was noted, a sweep is due or a backoff ended: the noted
        partitions whose ISR should shrink (a follower lagging past replica.lag.time.max.ms) or
        expand (a follower caught up), or that lead after an unclean election, are proposed to the
        controller together, built and settled SWEEP_CHUNK partitions a step; a partition with a
        proposal in flight waits for its answer (Kafka's one in-flight AlterPartition per
        partition)."""
        lag_ms = self.config.int("replica.lag.time.max.ms")
        period = max(lag_ms / 2000, RETRY_S)
        next_sweep, sweep = trio.current_time() + period, False
        while True:
            if not self._due and not sweep:
                with trio.move_on_at(min(next_sweep, self._retry_at)):
                    await self._wake.wait()
            self._wake = trio.Event()
            now = trio.current_time()
            if now >= self._retry_at:
                self._due |= self._retry
                self._retry, self._retry_at = set(), math.inf
            if now >= next_sweep:
                next_sweep, sweep = now + period, True
            if not self.zk.connected:
                await trio.sleep(RETRY_S)  # nothing can be proposed: the noted partitions and the sweep wait
                continue
            due, self._due = self._due - self._retry, set()  # one backing off waits for its retry
            candidates: Iterable[Partition] = itertools.chain(due, self._led(due)) if sweep else due
            sweep = False
            wanted = await self._wanting_change(candidates, lag_ms)
            changes = []
            # thousands of changes (a restarted follower rejoining every ISR) built in one step
            # held the loop for 50-140 ms of CPU; each change is built from its partition as it
            # is then, and the controller refuses one that went stale
            turns = LoopTurns(SWEEP_CHUNK)
            for p in wanted:
                if turns.due():
                    await turns.turn()
                isr = self._next_isr(p, lag_ms)
                change = self._isr_change(p, isr) if isr is not None else None
                if change is not None:
                    changes.append(change)
                elif isr is not None:
                    self._back_off(p)  # the view does not name this broker leader yet
            if changes:
                await self._propose_isrs(changes)

    def _led(self, noted: set[Partition]) -> Iterator[Partition]:
        """The sweep's partitions, read as it goes: every one led here, but those already noted
        or backing off (the shrink check; it also catches anything an event missed)."""
        for topic in self.view.all_topics():  # a list of its own: topics may come and go meanwhile
            for p in topic.local_partitions():
                if p.is_leader and p.online and p not in noted and p not in self._retry:
                    self._watch(p)
                    yield p

    async def _wanting_change(self, candidates: Iterable[Partition], lag_ms: int) -> list[Partition]:
        """The candidates whose ISR should change, yielding to the loop every SWEEP_CHUNK partitions
        so a sweep over thousands never holds it for long."""
        wanted = []
        turns = LoopTurns(SWEEP_CHUNK)
        for p in candidates:
            if turns.due():
                await turns.turn()
            if self._next_isr(p, lag_ms) is not None:
                wanted.append(p)
        return wanted

    def _next_isr(self, p: Partition, lag_ms: int) -> frozenset[int] | None:
        """The ISR p should propose now, None when it keeps its ISR or cannot propose (not the
        leader, offline, a proposal in flight)."""
        if not p.is_leader or not p.online or p.replica_set.pending_isr is not None:
            return None
        isr = p.replica_set.isr
        new = (isr - p.isr_shrink(lag_ms)) | p.isr_expansion()
        return new if new != isr or self._recovering(p) else None

    def _back_off(self, p: Partition) -> None:
        """Look at p again after RETRY_S."""
        self._retry.add(p)
        if self._retry_at == math.inf:
            self._retry_at = trio.current_time() + RETRY_S

    def _recovering(self, p: Partition) -> bool:
        """Led after an unclean election (leader_recovery_state RECOVERING): the leader proposes
        RECOVERED with its next ISR, as Kafka's leader does once it leads."""
        view = self.view.snapshot.topics.get(p.topic)
        current = view.states.get(p.index) if view is not None else None
        return current is not None and current[0].leader_recovery_state == RECOVERING

    def _isr_change(self, p: Partition, isr: frozenset[int]) -> IsrChange | None:
        """The proposal for p (ISR in assignment order), against the state this broker last read;
        None while that state does not name this broker as leader in p's epoch."""
        view = self.view.snapshot.topics.get(p.topic)
        current = view.states.get(p.index) if view is not None else None
        if view is None or current is None or current[0].leader != self.node_id or current[0].leader_epoch != p.leader_epoch:
            return None
        ordered = tuple(r for r in p.replica_set.replicas if r in isr) + tuple(sorted(isr - set(p.replica_set.replicas)))
        return IsrChange(p, view.topic_id, p.leader_epoch, ordered, current[1])

    async def _propose_isrs(self, changes: list[IsrChange]) -> None:
        """Send the proposals and apply the answers: a recorded ISR becomes the partition's (with
        the state and partition epoch the controller answered); any refusal leaves the ISR as it
        was, and one that says this broker's view is stale re-reads the cluster first."""
        for c in changes:
            c.partition.propose_isr(frozenset(c.isr))
        try:
            outcomes = await self._proposer.propose(self._broker_epoch(), changes)
        except BaseException:
            for c in changes:
                self._settle_isr(c, IsrOutcome(ErrorCode.UNKNOWN_SERVER_ERROR))
            raise
        turns = LoopTurns(SWEEP_CHUNK)  # every change is settled, in steps
        for c in changes:
            if turns.due():
                await turns.turn()
            if isinstance(outcomes, dict):
                outcome = outcomes.get((c.topic_id, c.partition.index)) or IsrOutcome(ErrorCode.UNKNOWN_SERVER_ERROR)
            else:
                outcome = IsrOutcome(outcomes)
            self._settle_isr(c, outcome)

    def _settle_isr(self, c: IsrChange, outcome: IsrOutcome) -> None:
        p = c.partition
        if outcome.error != ErrorCode.NONE:
            p.settle_isr(None)
            self._back_off(p)
            level = logging.DEBUG if outcome.error in (ErrorCode.NOT_CONTROLLER, ErrorCode.INELIGIBLE_REPLICA) else logging.INFO
            log.log(level, "%s-%d: ISR %s not recorded: %s", p.topic, p.index, list(c.isr), outcome.error.name)
            if outcome.error in _STALE_VIEW:
                self.zk.mark_changed()
            return
        if not p.is_leader or p.leader_epoch != outcome.leader_epoch or outcome.leader != self.node_id:
            p.settle_isr(None)  # leadership moved while the proposal was out: the new state rules
            return
        view = self.view.snapshot.topics.get(p.topic)
        previous = view.states.get(p.index) if view is not None else None
        if view is not None and (previous is None or previous[1] < outcome.partition_epoch):
            view.states[p.index] = (LeaderAndIsr(outcome.leader, outcome.leader_epoch, outcome.isr,
                                                 self.view.snapshot.controller_epoch, outcome.leader_recovery_state),
                                    outcome.partition_epoch)
            self.view.amended()
        if previous is not None and tuple(previous[0].isr) != outcome.isr:
            log.info("%s-%d: ISR %s -> %s", p.topic, p.index, list(previous[0].isr), list(outcome.isr))
        before = len(p.replica_set.isr)
        p.settle_isr(frozenset(outcome.isr))
        self.shrinks += len(p.replica_set.isr) < before
        self.expands += len(p.replica_set.isr) > before
