"""The controller's decisions: which partition states to write, given the cluster as read from
ZooKeeper. Pure functions over a `ClusterSnapshot`; `ZkMetadata` writes what they return with
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
- A leaderless partition whose ISR has a live member again gets it as leader."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import uuid

from wirekafka.broker.metadata import BrokerInfo

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


@dataclass(frozen=True)
class StateWrite:
    """A partition state to write: create it when version is None, else replace that version."""

    topic: str
    partition: int
    state: LeaderAndIsr
    version: int | None


def plan_state_changes(snapshot: ClusterSnapshot, controller_epoch: int,
                       unclean_allowed: Callable[[str], bool]) -> list[StateWrite]:
    """Every partition state the controller should write now."""
    live = set(snapshot.brokers)
    writes: list[StateWrite] = []
    for name, topic in snapshot.topics.items():
        if name in snapshot.deleting:
            continue
        for index, replicas in sorted(topic.assignment.items()):
            current = topic.states.get(index)
            if current is None:
                online = tuple(r for r in replicas if r in live)
                if online:
                    writes.append(StateWrite(name, index, LeaderAndIsr(online[0], 0, online, controller_epoch), None))
                continue
            state, version = current
            new = _next_state(state, replicas, live, controller_epoch, unclean_allowed(name))
            if new is not None:
                writes.append(StateWrite(name, index, new, version))
    return writes


def _next_state(state: LeaderAndIsr, replicas: tuple[int, ...], live: set[int], controller_epoch: int,
                unclean: bool) -> LeaderAndIsr | None:
    live_isr = tuple(r for r in state.isr if r in live)
    if state.leader in live:
        if live_isr == state.isr:
            return None
        return replace(state, leader_epoch=state.leader_epoch + 1, isr=live_isr, controller_epoch=controller_epoch)
    in_order = tuple(r for r in replicas if r in live_isr)
    if in_order:
        return LeaderAndIsr(in_order[0], state.leader_epoch + 1, live_isr, controller_epoch)
    alive = tuple(r for r in replicas if r in live)
    if unclean and alive:
        return LeaderAndIsr(alive[0], state.leader_epoch + 1, (alive[0],), controller_epoch, RECOVERING)
    if state.leader == -1:
        return None
    keep = (state.leader,) if state.leader in state.isr else state.isr[:1]
    return LeaderAndIsr(-1, state.leader_epoch + 1, keep, controller_epoch, state.leader_recovery_state)


def preferred_leader_changes(snapshot: ClusterSnapshot, controller_epoch: int,
                             only: set[tuple[str, int]] | None = None) -> list[StateWrite]:
    """Kafka's preferred replica election: partitions whose first assigned replica is alive, in
    the ISR and not leading get it as leader (epoch + 1). only: the partitions asked for."""
    live = set(snapshot.brokers)
    writes = []
    for name, topic in snapshot.topics.items():
        for index, replicas in sorted(topic.assignment.items()):
            if only is not None and (name, index) not in only:
                continue
            current = topic.states.get(index)
            if current is None or not replicas:
                continue
            state, version = current
            preferred = replicas[0]
            if state.leader != preferred and preferred in live and preferred in state.isr:
                writes.append(StateWrite(name, index, replace(state, leader=preferred,
                                                              leader_epoch=state.leader_epoch + 1,
                                                              controller_epoch=controller_epoch), version))
    return writes
