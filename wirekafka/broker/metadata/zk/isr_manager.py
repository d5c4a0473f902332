"""IsrManager: a partition leader's side of the ISR in ZooKeeper mode, as Kafka 3.9's leaders keep it.

Every 100 ms each partition this broker leads is checked: a follower lagging past
replica.lag.time.max.ms leaves the ISR, one caught up joins it, and a leader after an unclean
election moves to RECOVERED. The new ISR is proposed to the controller with AlterPartition
(alter_partition_client.py), one proposal in flight per partition; the ISR the partition uses
for its high watermark changes only once the controller recorded it (`Partition.propose_isr`
/ `settle_isr`). A refusal that says this broker's view is stale asks for a reconcile: the state
the controller wrote meanwhile rules."""

from __future__ import annotations

import logging
import uuid
from typing import Callable

import trio

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

    async def run(self) -> None:
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
            for topic in self.view.all_topics():
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
        outcomes: dict[tuple[uuid.UUID, int], IsrOutcome] | ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
        try:
            outcomes = await self._proposer.propose(self._broker_epoch(), changes)
        finally:
            for c in changes:
                if isinstance(outcomes, dict):
                    outcome = outcomes.get((c.topic_id, c.partition.index)) or IsrOutcome(ErrorCode.UNKNOWN_SERVER_ERROR)
                else:
                    outcome = IsrOutcome(outcomes)
                self._settle_isr(c, outcome)

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
        view = self.view.snapshot.topics.get(p.topic)
        previous = view.states.get(p.index) if view is not None else None
        if view is not None and (previous is None or previous[1] < outcome.partition_epoch):
            view.states[p.index] = (LeaderAndIsr(outcome.leader, outcome.leader_epoch, outcome.isr,
                                                 self.view.snapshot.controller_epoch, outcome.leader_recovery_state),
                                    outcome.partition_epoch)
        if previous is not None and tuple(previous[0].isr) != outcome.isr:
            log.info("%s-%d: ISR %s -> %s", p.topic, p.index, list(previous[0].isr), list(outcome.isr))
        p.settle_isr(frozenset(outcome.isr))
