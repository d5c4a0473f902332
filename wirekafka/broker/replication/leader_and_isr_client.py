"""The controller's LeaderAndIsr to a broker that reported a failed log dir, as Kafka 3.9's
ZooKeeper controller sends it (inter-broker protocol 3.9: version 7) after a log dir event
notification: every partition the broker hosts, with its current state. The broker answers each
partition's error; KAFKA_STORAGE_ERROR names a replica on a failed log dir, which the controller
then treats as offline (its leaderships move, it leaves the ISRs).

wirekafka's brokers take their roles from ZooKeeper's state znodes, not from this request, so the
states it carries are the ones the broker reads there; the request serves for its answer, which is
the only way a ZooKeeper-mode Kafka controller learns which replicas a failed directory held."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Callable

import trio

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot
from wirekafka.broker.replication.peer_client import PeerPool, PeerUnavailable, answer_of
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import LeaderAndIsrRequest, LeaderAndIsrResponse

log = logging.getLogger(__name__)

LEADER_AND_ISR_VERSION = 7
INCREMENTAL = 0  # the request's Type: not every topic of the cluster is in it


@dataclass(frozen=True)
class ReplicaErrors:
    """A broker's answer: the request's error, and the partitions it answered an error for."""

    error: ErrorCode
    partitions: dict[tuple[str, int], ErrorCode]

    def offline(self) -> frozenset[tuple[str, int]]:
        """The replicas on a failed log dir."""
        return frozenset(tp for tp, e in self.partitions.items() if e == ErrorCode.KAFKA_STORAGE_ERROR)


def request_for(snapshot: ClusterSnapshot, controller_id: int, broker: int,
                lookup_leader: Callable[[int], BrokerInfo | None]) -> LeaderAndIsrRequest:
    """LeaderAndIsr with every partition `broker` hosts that has a state, and the live leaders of
    those partitions (lookup_leader(id) -> BrokerInfo | None, on the inter-broker listener)."""
    topic_states = []
    leaders: dict[int, BrokerInfo | None] = {}
    for name, view in sorted(snapshot.topics.items()):
        states = []
        for index, replicas in sorted(view.assignment.items()):
            current = view.states.get(index)
            if broker not in replicas or current is None:
                continue
            state, version = current
            states.append(LeaderAndIsrRequest.LeaderAndIsrPartitionState(
                partition_index=index, controller_epoch=state.controller_epoch, leader=state.leader,
                leader_epoch=state.leader_epoch, isr=list(state.isr), partition_epoch=version,
                replicas=list(replicas), adding_replicas=list(view.adding.get(index, ())),
                removing_replicas=list(view.removing.get(index, ())), is_new=False,
                leader_recovery_state=state.leader_recovery_state))
            if state.leader >= 0 and state.leader not in leaders:
                leaders[state.leader] = lookup_leader(state.leader)
        if states:
            topic_states.append(LeaderAndIsrRequest.LeaderAndIsrTopicState(
                topic_name=name, topic_id=view.topic_id, partition_states=states))
    return LeaderAndIsrRequest(
        version=LEADER_AND_ISR_VERSION, controller_id=controller_id, is_k_raft_controller=False,
        controller_epoch=snapshot.controller_epoch, broker_epoch=snapshot.broker_epochs.get(broker, -1),
        type=INCREMENTAL, topic_states=topic_states,
        live_leaders=[LeaderAndIsrRequest.LeaderAndIsrLiveLeader(broker_id=b, host_name=info.host, port=info.port)
                      for b, info in sorted(leaders.items()) if info is not None])


async def ask_broker(peers: PeerPool, broker: int, request: LeaderAndIsrRequest) -> ReplicaErrors | None:
    """Send it; the broker's answer, or None when the broker cannot be reached (the controller
    asks again later, as Kafka's controller channel keeps a request until the broker is gone)."""
    client = peers.client(broker)
    if client is None:
        return None
    names: dict[uuid.UUID, str] = {t.topic_id: t.topic_name for t in request.topic_states}
    try:
        with trio.fail_after(peers.config.int("controller.socket.timeout.ms") / 1000):
            await client.ready()
        answer = answer_of(await client.send(request, timeout_s=peers.config.int("request.timeout.ms") / 1000),
                           LeaderAndIsrResponse)
    except (trio.TooSlowError, PeerUnavailable) as exc:
        log.info("controller: LeaderAndIsr to broker %d not answered: %s", broker, exc or "timed out")
        return None
    errors = {(names[t.topic_id], p.partition_index): ErrorCode(p.error_code)
              for t in answer.topics if t.topic_id in names for p in t.partition_errors
              if p.error_code != ErrorCode.NONE}
    return ReplicaErrors(ErrorCode(answer.error_code), errors)
