"""IsrProposer: a leader's ISR changes sent to the controller as AlterPartition, as Kafka 3.9's
ZooKeeper-mode brokers send them (AlterPartitionManager, inter-broker protocol 3.9: version 3).

The leader proposes; only the controller writes the partition state znode, with its own
controller epoch, and answers with the state it recorded and the znode's new version (the
partition epoch the next proposal must name). All changes found in one pass go in one request.
The round is bounded by request.timeout.ms and abandoned as soon as another broker becomes the
controller, so a leader never waits on a controller that is gone. What the leader does with an
answer (apply it, or re-read the state and propose again) is the caller's: the outcome of each
change is returned, or one error for all of them."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Callable

import trio

from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.metadata.zk.controller import RECOVERED
from wirekafka.broker.replication.peer_client import PeerPool, PeerUnavailable, answer_of
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import AlterPartitionRequest, AlterPartitionResponse

log = logging.getLogger(__name__)

ALTER_PARTITION_VERSION = 3
_CONTROLLER_POLL_S = 0.05
_Topic = AlterPartitionRequest.TopicData
_Part = _Topic.PartitionData


@dataclass(frozen=True)
class IsrChange:
    """One leader's proposal: its partition, the ISR in assignment order, and the partition
    epoch (state znode version) it was computed against."""

    partition: Partition
    topic_id: uuid.UUID
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True)
class IsrOutcome:
    """The controller's answer for one change: NONE with the recorded state, or an error."""

    error: ErrorCode
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = RECOVERED
    partition_epoch: int = -1


def build_request(broker_id: int, broker_epoch: int, changes: list[IsrChange]) -> AlterPartitionRequest:
    """One request, topics in first-seen order; broker epochs in the ISR are -1, as a
    ZooKeeper-mode Kafka sends them (its controller does not check them)."""
    by_topic: dict[uuid.UUID, list[_Part]] = {}
    for c in changes:
        by_topic.setdefault(c.topic_id, []).append(_Part(
            partition_index=c.partition.index, leader_epoch=c.leader_epoch,
            new_isr_with_epochs=[_Part.BrokerState(broker_id=b, broker_epoch=-1) for b in c.isr],
            leader_recovery_state=RECOVERED, partition_epoch=c.partition_epoch))
    return AlterPartitionRequest(version=ALTER_PARTITION_VERSION, broker_id=broker_id, broker_epoch=broker_epoch,
                                 topics=[_Topic(topic_id=t, partitions=parts) for t, parts in by_topic.items()])


def read_outcomes(response: AlterPartitionResponse,
                  changes: list[IsrChange]) -> dict[tuple[uuid.UUID, int], IsrOutcome] | ErrorCode:
    """Each change's outcome by (topic id, partition), or the top-level error; a change the
    answer leaves out counts as UNKNOWN_SERVER_ERROR (proposed again later)."""
    if response.error_code != ErrorCode.NONE:
        return ErrorCode(response.error_code)
    found = {}
    for t in response.topics:
        for p in t.partitions:
            found[(t.topic_id, p.partition_index)] = (
                IsrOutcome(ErrorCode(p.error_code)) if p.error_code != ErrorCode.NONE else
                IsrOutcome(ErrorCode.NONE, p.leader_id, p.leader_epoch, tuple(p.isr), p.leader_recovery_state,
                           p.partition_epoch))
    missing = IsrOutcome(ErrorCode.UNKNOWN_SERVER_ERROR)
    return {(c.topic_id, c.partition.index): found.get((c.topic_id, c.partition.index), missing) for c in changes}


class IsrProposer:
    def __init__(self, peers: PeerPool, controller: Callable[[], int]) -> None:
        """controller: the current controller's id as this broker knows it (-1: none)."""
        self.peers = peers
        self.controller = controller

    async def propose(self, broker_epoch: int, changes: list[IsrChange]
                      ) -> dict[tuple[uuid.UUID, int], IsrOutcome] | ErrorCode:
        """Send the changes to the controller; NOT_CONTROLLER when there is none, it cannot be
        reached, it changed during the round, or the round timed out."""
        target = self.controller()
        client = self.peers.client(target) if target >= 0 else None
        if client is None:
            return ErrorCode.NOT_CONTROLLER
        request = build_request(self.peers.config.node_id, broker_epoch, changes)
        answer: list[AlterPartitionResponse] = []
        async with trio.open_nursery() as nursery:
            nursery.cancel_scope.deadline = trio.current_time() + client.request_timeout_s

            async def exchange() -> None:
                try:
                    answer.append(answer_of(await client.send(request), AlterPartitionResponse))
                except PeerUnavailable as exc:
                    log.info("AlterPartition to controller %d failed: %s", target, exc)
                nursery.cancel_scope.cancel()

            async def watch_controller() -> None:
                while self.controller() == target:
                    await trio.sleep(_CONTROLLER_POLL_S)
                nursery.cancel_scope.cancel()

            nursery.start_soon(exchange)
            nursery.start_soon(watch_controller)
        if not answer:
            return ErrorCode.NOT_CONTROLLER
        return read_outcomes(answer[0], changes)
