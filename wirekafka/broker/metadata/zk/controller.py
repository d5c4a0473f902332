"""The controller's decisions: which partition states to write, given the cluster as read from
ZooKeeper. Pure functions over a `ClusterSnapshot`; `active_controller.py` writes what they return with
conditional writes, so a decision made on a stale read fails instead of overwriting.

Kafka 3.9's ZooKeeper controller (KafkaController, PartitionStateMachine, ReplicaStateMachine)
in prose, as far as wirekafka implements it:
- A new partition (assignment without a state znode) comes online with the live replicas of its
  assignment as ISR and the first of them as leader, epoch 0.
- A partition whose leader is dead gets a new leader: the first replica in assignment order that
  is alive and in the ISR (OfflinePartitionLeaderElectionStrategy); the dead ones leave the ISR;
  the leader epoch goes up by one.
- With no live ISR member: if unclean.leader.election.enable holds for the topic, the first live
  replica leads with itself as ISR and leader_recovery_state RECOVERING; otherwise the partition
  is left without a leader (leader -1, epoch + 1) and its ISR keeps its last member, so that
  member can lead cleanly when it returns.
- A dead follower leaves the ISR of partitions whose leader lives (epoch + 1, as ZooKeeper-mode
  Kafka bumps it on every controller-made ISR change).
- A leaderless partition whose ISR has a live member again gets it as leader.
- The legacy /admin/reassign_partitions znode (before KIP-455 the only way to move replicas) is
  read by the controller: each entry starts a reassignment like AlterPartitionReassignments does
  (without its live-broker check: such a move waits for the broker), an entry for a partition
  that does not exist is dropped, and entries leave the znode as their reassignment completes;
  the znode is deleted when it is empty. An entry for a partition that the API reassigns later
  is dropped by the API (the latest request wins). /admin/preferred_replica_election is read
  once: its partitions get a preferred-leader election and the znode is deleted, elected or not."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Iterator

import uuid

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.protocol.errors import ErrorCode

RECOVERED, RECOVERING = 0, 1


@dataclass(frozen=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = RECOVERED


@dataclass
class TopicView:
    topic_id: uuid.UUID
    assignment: dict[int, tuple[int, ...]]
    configs: dict[str, str] = field(default_factory=dict)
    states: dict[int, tuple[LeaderAndIsr, int]] = field(default_factory=dict)  # partition -> (state, znode version)
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)  # reassignments in progress (KIP-455)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    version: int = -1  # of the /brokers/topics/<t> znode


@dataclass
class ClusterSnapshot:
    """The cluster as read from ZooKeeper at one moment (not atomically: every decision taken on
    it is a conditional write)."""

    brokers: dict[int, BrokerInfo]
    controller: int
    controller_epoch: int
    controller_epoch_version: int
    topics: dict[str, TopicView]
    deleting: tuple[str, ...] = ()
    # the legacy admin znodes, None when absent: (target replicas by partition, znode version)
    legacy_reassignments: tuple[dict[tuple[str, int], tuple[int, ...]], int] | None = None
    legacy_elections: set[tuple[str, int]] | None = None
    # /config/brokers/<entity> of the entities read (this broker's id, <default>), when present
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    # /config/users/<user>: each user's settings (its SCRAM credentials by mechanism)
    users: dict[str, dict[str, str]] = field(default_factory=dict)
    # every quota entity's config znode by its path under /config ("users/<u>", "clients/<c>",
    # "users/<u>/clients/<c>", "ips/<ip>"; names sanitized as stored)
    quota_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    # each live broker's epoch: the czxid of its /brokers/ids registration
    broker_epochs: dict[int, int] = field(default_factory=dict)
    # live brokers the controller is shutting down (ControlledShutdown): not ZooKeeper's, the
    # controller's own memory, as in Kafka, laid over each read (ActiveController)
    shutting_down: frozenset[int] = frozenset()
    # live brokers' replicas on a failed log dir, by broker: the controller's memory too, learnt
    # from the brokers' LeaderAndIsr answers (Kafka's ControllerContext.replicasOnOfflineDirs)
    offline_replicas: dict[int, frozenset[tuple[str, int]]] = field(default_factory=dict)

    @property
    def eligible(self) -> set[int]:
        """The brokers a replica may lead or join an ISR on: live and not shutting down (Kafka's
        isReplicaOnline). A shutting-down broker still counts as alive: it keeps what it leads
        until a controlled shutdown moves it, and stays in the ISRs it is not removed from."""
        return set(self.brokers) - self.shutting_down

    @cached_property
    def offline_at(self) -> dict[tuple[str, int], frozenset[int]]:
        """Each partition's replicas on a failed log dir: down for that partition alone, though
        their brokers are live (Kafka's isReplicaOnline checks replicasOnOfflineDirs too). Once
        per snapshot: an election over every partition asks it per partition."""
        by_partition: dict[tuple[str, int], set[int]] = {}
        for broker, partitions in self.offline_replicas.items():
            for tp in partitions:
                by_partition.setdefault(tp, set()).add(broker)
        return {tp: frozenset(brokers) for tp, brokers in by_partition.items()}


@dataclass(frozen=True)
class StateWrite:
    """A partition state to write: create it when version is None, else replace that version."""

    topic: str
    partition: int
    state: LeaderAndIsr
    version: int | None


def without_bounced(snapshot: ClusterSnapshot, acted_epochs: dict[int, int]) -> tuple[ClusterSnapshot, frozenset[int]]:
    """Kafka's bounced brokers (KafkaController.processBrokerChange; broker epochs, KIP-380): a
    broker registered under another epoch than the one the controller last acted on restarted
    before its old session expired, and its log may have lost a tail it had acknowledged as a
    leader or in an ISR. It counts as failed for one round (its leaderships move to the rest of
    the ISR, it leaves the ISRs), then as newly started. The snapshot without those brokers, and
    who they are."""
    bounced = frozenset(b for b, epoch in snapshot.broker_epochs.items()
                        if b in acted_epochs and acted_epochs[b] != epoch)
    if not bounced:
        return snapshot, bounced
    return replace(snapshot, brokers={b: info for b, info in snapshot.brokers.items()
                                       if b not in bounced}), bounced


def plan_state_changes(snapshot: ClusterSnapshot, controller_epoch: int,
                       unclean_allowed: Callable[[str], bool]) -> list[StateWrite]:
    """Every partition state the controller should write now."""
    return [w for w in _state_changes(snapshot, controller_epoch, unclean_allowed) if w is not None]


def state_changes_in_steps(snapshot: ClusterSnapshot, controller_epoch: int, unclean_allowed: Callable[[str], bool],
                           step: int) -> Iterator[list[StateWrite]]:
    """plan_state_changes a step at a time (_in_steps), so that the controller gives its loop a
    turn between two steps of a plan over 10,000 partitions (one unbroken plan took 150-200 ms of
    CPU, measured in the cluster-scale bench). The snapshot is read, never changed."""
    return _in_steps(_state_changes(snapshot, controller_epoch, unclean_allowed), step)


def _in_steps(looked: Iterator[StateWrite | None], step: int) -> Iterator[list[StateWrite]]:
    """A plan's writes (None for a partition looked at and left alone) in lists, one for every
    `step` partitions looked at, then the rest (which may be empty)."""
    writes: list[StateWrite] = []
    left = step
    for write in looked:
        if not left:
            yield writes
            writes, left = [], step
        left -= 1
        if write is not None:
            writes.append(write)
    yield writes


def _state_changes(snapshot: ClusterSnapshot, controller_epoch: int,
                   unclean_allowed: Callable[[str], bool]) -> Iterator[StateWrite | None]:
    """plan_state_changes' write for each partition looked at, None where there is none."""
    live, eligible = set(snapshot.brokers), snapshot.eligible
    offline = snapshot.offline_at
    for name, topic in snapshot.topics.items():
        if name in snapshot.deleting:
            continue
        unclean = unclean_allowed(name)  # a topic's config, looked up once, not per partition
        for index, replicas in sorted(topic.assignment.items()):
            current = topic.states.get(index)
            down = offline.get((name, index))
            if current is None:
                online = tuple(r for r in replicas if r in eligible and not (down and r in down))
                yield StateWrite(name, index, LeaderAndIsr(online[0], 0, online, controller_epoch), None) \
                    if online else None
                continue
            state, version = current
            new = _next_state(state, replicas, live - down if down else live, eligible - down if down else eligible,
                              controller_epoch, unclean)
            yield None if new is None else StateWrite(name, index, new, version)


def _next_state(state: LeaderAndIsr, replicas: tuple[int, ...], live: set[int], eligible: set[int],
                controller_epoch: int, unclean: bool) -> LeaderAndIsr | None:
    """A live leader only loses its dead followers; a new leader, and its ISR, come from the
    eligible brokers (live, not shutting down)."""
    if state.leader in live:
        if live.issuperset(state.isr):  # the usual case, checked without building a tuple
            return None
        live_isr = tuple(r for r in state.isr if r in live)
        return replace(state, leader_epoch=state.leader_epoch + 1, isr=live_isr, controller_epoch=controller_epoch)
    eligible_isr = tuple(r for r in state.isr if r in eligible)
    in_order = tuple(r for r in replicas if r in eligible_isr)
    if in_order:
        return LeaderAndIsr(in_order[0], state.leader_epoch + 1, eligible_isr, controller_epoch)
    alive = tuple(r for r in replicas if r in eligible)
    if unclean and alive:
        return LeaderAndIsr(alive[0], state.leader_epoch + 1, (alive[0],), controller_epoch, RECOVERING)
    if state.leader == -1:
        return None
    keep = (state.leader,) if state.leader in state.isr else state.isr[:1]
    return LeaderAndIsr(-1, state.leader_epoch + 1, keep, controller_epoch, state.leader_recovery_state)


PREFERRED, UNCLEAN = 0, 1  # ElectLeaders' election types


@dataclass(frozen=True)
class Election:
    """One partition's answer to an election: the write to make (None if none) and the error."""

    write: StateWrite | None
    error: str  # an ErrorCode name: NONE, ELECTION_NOT_NEEDED, ...
    message: str | None = None


def elect(snapshot: ClusterSnapshot, controller_epoch: int, topic: str, index: int, election_type: int) -> Election:
    """Kafka's ElectLeaders for one partition. Preferred: its first assigned replica leads if it
    is alive and in the ISR (ELECTION_NOT_NEEDED if it already leads). Unclean: a partition
    without a live leader gets one, from the ISR if possible, else any live replica."""
    view = snapshot.topics.get(topic)
    current = view.states.get(index) if view is not None else None
    if view is None or index not in view.assignment or current is None:
        return Election(None, "UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist.")
    state, version = current
    replicas = view.assignment[index]
    # a leader that is shutting down counts as gone, as in Kafka, and so does a replica on a failed log dir
    live = snapshot.eligible - snapshot.offline_at.get((topic, index), frozenset())
    if election_type == PREFERRED:
        preferred = replicas[0]
        if state.leader == preferred:
            return Election(None, "ELECTION_NOT_NEEDED", "Leader election not needed for topic partition.")
        if preferred in live and preferred in state.isr:
            return Election(StateWrite(topic, index, replace(state, leader=preferred,
                                                             leader_epoch=state.leader_epoch + 1,
                                                             controller_epoch=controller_epoch), version), "NONE")
        return Election(None, "PREFERRED_LEADER_NOT_AVAILABLE", f"Failed to elect leader for partition "
                        f"{topic}-{index} under strategy PreferredReplicaPartitionLeaderElectionStrategy")
    if state.leader in live:
        return Election(None, "ELECTION_NOT_NEEDED", "Leader election not needed for topic partition.")
    new = _next_state(state, replicas, live, live, controller_epoch, unclean=True)
    if new is None or new.leader == -1:
        return Election(None, "ELIGIBLE_LEADERS_NOT_AVAILABLE", f"Failed to elect leader for partition "
                        f"{topic}-{index} under strategy OfflinePartitionLeaderElectionStrategy(true)")
    return Election(StateWrite(topic, index, new, version), "NONE")


def plan_controlled_shutdown(snapshot: ClusterSnapshot, controller_epoch: int, broker: int) -> list[StateWrite]:
    """Every write of a controlled shutdown of `broker` (_shutdown_changes)."""
    return [w for w in _shutdown_changes(snapshot, controller_epoch, broker) if w is not None]


def controlled_shutdown_in_steps(snapshot: ClusterSnapshot, controller_epoch: int, broker: int,
                                 step: int) -> Iterator[list[StateWrite]]:
    """plan_controlled_shutdown a step at a time (_in_steps), so that the controller can give the
    event loop a turn between them: a broker in 10,000 partitions took over 100 ms of CPU in one go."""
    return _in_steps(_shutdown_changes(snapshot, controller_epoch, broker), step)


def _shutdown_changes(snapshot: ClusterSnapshot, controller_epoch: int, broker: int) -> Iterator[StateWrite | None]:
    """Kafka 3.9's controller on a ControlledShutdown of `broker` (already in
    snapshot.shutting_down), for each partition with more than one replica on it that has a state
    and whose topic is not being deleted: one it leads moves to the first replica in assignment
    order that is in the ISR and eligible, with every shutting-down broker out of the ISR
    (ControlledShutdownPartitionLeaderElectionStrategy), and stays where it is when there is none;
    one it follows loses it from the ISR unless it is the ISR's only member (the replica going
    offline). Each write bumps the leader epoch and keeps the recovery state. None for each
    partition looked at and left alone."""
    eligible = snapshot.eligible
    offline = snapshot.offline_at
    for name, view in snapshot.topics.items():
        if name in snapshot.deleting:
            continue
        for index, replicas in sorted(view.assignment.items()):
            current = view.states.get(index)
            if broker not in replicas or len(replicas) < 2 or current is None:
                yield None
                continue
            state, version = current
            if state.leader == broker:
                down = offline.get((name, index), frozenset())
                leader = next((r for r in replicas if r in state.isr and r in eligible and r not in down), None)
                if leader is None:
                    yield None
                    continue
                isr = tuple(r for r in state.isr if r not in snapshot.shutting_down)
            elif broker in state.isr:
                leader, isr = state.leader, state.isr if len(state.isr) == 1 else tuple(
                    r for r in state.isr if r != broker)
            else:
                yield None
                continue
            yield StateWrite(name, index, replace(state, leader=leader, leader_epoch=state.leader_epoch + 1,
                                                  isr=isr, controller_epoch=controller_epoch), version)


def led_partitions(snapshot: ClusterSnapshot, broker: int) -> list[tuple[str, int]]:
    """The partitions `broker` leads that a controlled shutdown should move: more than one replica,
    topic not being deleted (Kafka's partitionLeadersOnBroker)."""
    return [(name, index) for name, view in snapshot.topics.items() if name not in snapshot.deleting
            for index, replicas in sorted(view.assignment.items())
            if len(replicas) > 1 and index in view.states and view.states[index][0].leader == broker]


@dataclass(frozen=True)
class ReassignmentDone:
    """A reassignment whose target replicas are all in sync: the partition state to write (new
    leader if the old one is leaving, the leaving replicas out of the ISR) and the final replicas."""

    state: StateWrite
    replicas: tuple[int, ...]


def start_reassignment(current: tuple[int, ...], target: tuple[int, ...]
                       ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """KIP-455's first step: (replicas during the move, adding, removing): the target replicas
    first, then the current ones that are leaving."""
    adding = tuple(r for r in target if r not in current)
    removing = tuple(r for r in current if r not in target)
    return tuple(target) + removing, adding, removing


def reassignment_target(view: TopicView, index: int) -> tuple[int, ...]:
    """The replicas a partition ends with: its assignment less the replicas it is losing."""
    removing = view.removing.get(index, ())
    return tuple(r for r in view.assignment[index] if r not in removing)


@dataclass
class LegacyReassignmentPlan:
    """What the controller does with the /admin/reassign_partitions entries: reassignments to
    start (target replicas) and entries to take out of the znode (finished or impossible)."""

    start: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    drop: dict[tuple[str, int], str] = field(default_factory=dict)  # partition -> why


def plan_legacy_reassignments(snapshot: ClusterSnapshot) -> LegacyReassignmentPlan:
    """Each entry is started unless the partition is already moving to that target; an entry
    whose partition already has exactly those replicas, with nothing in flight, is done."""
    plan = LegacyReassignmentPlan()
    if snapshot.legacy_reassignments is None:
        return plan
    for (name, index), target in sorted(snapshot.legacy_reassignments[0].items()):
        view = snapshot.topics.get(name)
        if view is None or name in snapshot.deleting or index not in view.assignment:
            plan.drop[(name, index)] = "the partition does not exist"
        elif not target or len(set(target)) != len(target):
            plan.drop[(name, index)] = f"invalid replica list {list(target)}"
        elif index in view.adding or index in view.removing:
            if reassignment_target(view, index) != target:
                plan.start[(name, index)] = target
        elif view.assignment[index] == target:
            plan.drop[(name, index)] = "completed"
        else:
            plan.start[(name, index)] = target
    return plan


def completed_reassignments(snapshot: ClusterSnapshot, controller_epoch: int) -> list[ReassignmentDone]:
    """Reassignments whose target replicas have all joined the ISR: KIP-455's last step."""
    live = snapshot.eligible
    done = []
    for name, view in snapshot.topics.items():
        for index in sorted(set(view.adding) | set(view.removing)):
            current = view.states.get(index)
            if current is None:
                continue
            state, version = current
            target = reassignment_target(view, index)
            if not all(r in state.isr for r in target):
                continue
            isr = tuple(r for r in state.isr if r in target)
            leader = state.leader if state.leader in target and state.leader in live else next(
                (r for r in target if r in isr and r in live), -1)
            if leader == -1:
                continue
            new = LeaderAndIsr(leader, state.leader_epoch + 1, isr, controller_epoch)
            done.append(ReassignmentDone(StateWrite(name, index, new, version), target))
    return done


# per partition (error, message); then the topic znode's new assignment, adding and removing maps
ReassignmentPlan = tuple[dict[int, tuple[ErrorCode, str | None]], dict[int, list[int]] | None,
                         dict[int, list[int]] | None, dict[int, list[int]] | None]


def plan_reassignments(view: TopicView | None, items: list[tuple[int, list[int] | None]], live: set[int],
                       require_live: bool = True) -> ReassignmentPlan:
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



def moves_leader(w: StateWrite, snapshot: ClusterSnapshot) -> bool:
    """A write that creates a partition's state or changes its leader."""
    view = snapshot.topics.get(w.topic)
    current = view.states.get(w.partition) if view is not None else None
    return current is None or current[0].leader != w.state.leader



def imbalanced_leaders(snapshot: ClusterSnapshot, controller_epoch: int, percentage: int) -> list[StateWrite]:
    """Kafka's auto leader rebalance: for each broker whose share of partitions led by someone
    else, among those it is preferred for, is above leader.imbalance.per.broker.percentage,
    the preferred elections of those partitions that can be done."""
    preferred_of: dict[int, list[tuple[str, int]]] = {}
    for name, view in snapshot.topics.items():
        for index, replicas in view.assignment.items():
            if replicas and index in view.states:
                preferred_of.setdefault(replicas[0], []).append((name, index))
    writes = []
    for broker, partitions in preferred_of.items():
        if broker not in snapshot.eligible:
            continue
        led_elsewhere = [(t, p) for t, p in partitions if snapshot.topics[t].states[p][0].leader != broker]
        if len(led_elsewhere) * 100 > percentage * len(partitions):
            for t, p in led_elsewhere:
                e = elect(snapshot, controller_epoch, t, p, PREFERRED)
                if e.write is not None:
                    writes.append(e.write)
    return writes


@dataclass(frozen=True)
class IsrProposal:
    """One partition of an AlterPartition request: the state its leader asks the controller to
    record. partition_epoch is the version of the state znode the leader last saw."""

    leader: int  # the requesting broker
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


def judge_isr_proposal(current: LeaderAndIsr, version: int, proposal: IsrProposal, live: set[int],
                       request_version: int) -> ErrorCode | None:
    """Kafka 3.9's ZooKeeper controller on one partition of an AlterPartition, against the state
    znode as it is (`current` at `version`): None to record the proposal; NONE when the partition
    already is in the proposed state (answered with its current state, whatever partition epoch was
    sent, so a retried request is idempotent); else the error, checked in Kafka's order. Epochs
    above the controller's mean it is not the controller any more (NOT_CONTROLLER, the leader looks
    for the new one); an ISR naming a broker that is not alive is INELIGIBLE_REPLICA (KIP-841),
    OPERATION_NOT_ATTEMPTED before v2. Like Kafka's ZooKeeper controller it takes the requester as
    the leader without checking that it leads: the leader epoch is the fence."""
    if proposal.partition_epoch > version or proposal.leader_epoch > current.leader_epoch:
        return ErrorCode.NOT_CONTROLLER
    if proposal.leader_epoch < current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if (proposal.leader, proposal.leader_epoch, proposal.isr, proposal.leader_recovery_state) == (
            current.leader, current.leader_epoch, tuple(current.isr), current.leader_recovery_state):
        return ErrorCode.NONE
    if proposal.partition_epoch < version:
        return ErrorCode.INVALID_UPDATE_VERSION
    if proposal.leader_recovery_state == RECOVERING and len(proposal.isr) > 1:
        return ErrorCode.INVALID_REQUEST
    if current.leader_recovery_state == RECOVERED and proposal.leader_recovery_state == RECOVERING:
        return ErrorCode.INVALID_REQUEST
    if set(proposal.isr) - live:
        return ErrorCode.INELIGIBLE_REPLICA if request_version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return None


@dataclass
class IsrAnswer:
    """One partition of an AlterPartition and the controller's answer: an error, or the state
    recorded (or found already recorded) with its znode version."""

    index: int
    proposal: IsrProposal
    error: ErrorCode = ErrorCode.NONE
    state: LeaderAndIsr | None = None
    partition_epoch: int = -1


@dataclass
class AlterTopic:
    """One topic of an AlterPartition: by name (v0-1) or topic id (v2+), as the request gave it."""

    name_or_id: str | uuid.UUID
    partitions: list[IsrAnswer]
