"""The transaction coordinator on its own (its runtime stood in for): the markers carry its
coordinator epoch, the leader epoch of the transactional id's __transaction_state partition on
this broker (Kafka's coordinatorEpoch), so a partition's producer state can fence a former
coordinator's late marker; the abort timer survives a producer epoch that cannot be bumped."""

from __future__ import annotations

from dataclasses import dataclass

import trio

from wirekafka.broker.coordinator.transactions import MAX_EPOCH, TransactionCoordinator, TransactionMetadata
from wirekafka.broker.coordinator.txn_records import TxnState
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

TOPIC_PARTITION = ("orders", 0)


@dataclass
class _StatePartition:
    leader_epoch: int


class _Runtime:
    """What the coordinator asks of its runtime: the config, its state partitions (only their
    leader epoch matters here) and replicated writes (taken as done)."""

    def __init__(self, leader_epoch: int) -> None:
        self.config = build_config({})
        self.now_ms = lambda: 1_700_000_000_000
        self.state_partition = _StatePartition(leader_epoch)

    def partition(self, topic: str, index: int) -> _StatePartition:
        return self.state_partition

    async def write_and_wait(self, *args: object) -> None:
        return None


def _coordinator(leader_epoch: int, markers: list[tuple]) -> TransactionCoordinator:
    async def write_marker(tps, producer_id, producer_epoch, coordinator_epoch, commit) -> dict:
        markers.extend((tp, producer_id, producer_epoch, coordinator_epoch, commit) for tp in tps)
        return dict.fromkeys(tps, ErrorCode.NONE)

    async def allocate() -> int:
        return 4000

    return TransactionCoordinator(_Runtime(leader_epoch), write_marker, allocate)  # type: ignore[arg-type]


def _commit_one_transaction(leader_epoch: int) -> list[tuple]:
    markers: list[tuple] = []

    async def main() -> None:
        coordinator = _coordinator(leader_epoch, markers)
        pid, epoch = await coordinator.init_producer_id("app", 60_000, -1, -1)
        await coordinator.add_partitions("app", pid, epoch, [TOPIC_PARTITION])
        await coordinator.end_txn("app", pid, epoch, commit=True)

    trio.run(main)
    return markers


def test_markers_carry_the_leader_epoch_of_the_transaction_state_partition() -> None:
    assert _commit_one_transaction(leader_epoch=0) == [(TOPIC_PARTITION, 4000, 0, 0, True)]
    assert _commit_one_transaction(leader_epoch=7) == [(TOPIC_PARTITION, 4000, 0, 7, True)]


def test_the_abort_timer_leaves_a_transaction_whose_epoch_cannot_be_bumped_and_goes_on() -> None:
    """Kafka's prepareFenceProducerEpoch refuses an epoch of Short.MaxValue (its scheduler logs
    the error); the timer used to raise struct.error there, which stopped the broker."""
    markers: list[tuple] = []
    coordinator = _coordinator(0, markers)
    for tid, epoch in (("exhausted", MAX_EPOCH), ("young", 3)):
        coordinator.transactions[tid] = TransactionMetadata(tid, 4000 + epoch, epoch, 1000, TxnState.ONGOING,
                                                            {TOPIC_PARTITION}, start_ms=0, update_ms=0)
    trio.run(coordinator.abort_timed_out)
    assert coordinator.transactions["exhausted"].state is TxnState.ONGOING
    assert coordinator.transactions["young"].state is TxnState.COMPLETE_ABORT
    assert markers == [(TOPIC_PARTITION, 4003, 4, 0, False)]  # fenced: the abort in the next epoch


def test_markers_that_fail_are_retried_until_every_partition_has_one_and_end_txn_succeeds() -> None:
    """Kafka answers EndTxn once the decision is durable and its marker channel retries until
    every partition has its marker; a partition done is not sent a second one. Before, the first
    failure answered EndTxn with an error and left the transaction in PrepareCommit for good."""
    markers: list[tuple] = []
    down = {("orders", 1)}
    coordinator = _coordinator(0, [])

    async def write_marker(tps, producer_id, producer_epoch, coordinator_epoch, commit) -> dict:
        markers.extend(tp for tp in tps if tp not in down)
        return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER if tp in down else ErrorCode.NONE for tp in tps}

    coordinator._write_marker = write_marker

    async def main() -> None:
        pid, epoch = await coordinator.init_producer_id("app", 60_000, -1, -1)
        await coordinator.add_partitions("app", pid, epoch, [("orders", 0), ("orders", 1)])
        await coordinator.end_txn("app", pid, epoch, commit=True)  # no error: the decision is written
        assert coordinator.transactions["app"].state is TxnState.PREPARE_COMMIT
        await coordinator.complete_decided()  # the leader is still away
        assert coordinator.transactions["app"].state is TxnState.PREPARE_COMMIT
        down.clear()
        await coordinator.complete_decided()

    trio.run(main)
    assert coordinator.transactions["app"].state is TxnState.COMPLETE_COMMIT
    assert markers == [("orders", 0), ("orders", 1)]
