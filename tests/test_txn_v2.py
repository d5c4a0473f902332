"""Transaction version 2 (KIP-890 part 2) in the transaction coordinator on its own (its runtime
stood in for, markers recorded): EndTxn v5 bumps the epoch and its markers carry the new one, a
retry is told apart from the next transaction by its epoch (CONCURRENT_TRANSACTIONS while the
decision's markers are pending, the producer id and epoch in use once complete), an empty
transaction may be aborted, and an exhausted epoch moves the producer to a new producer id
allocated with the decision (NextProducerId in the Prepare record), as Kafka 4.3.1 answers."""

from __future__ import annotations

import pytest
import trio

from tests.test_txn_coordinator import TOPIC_PARTITION, _coordinator
from wirekafka.broker.coordinator import txn_records as tr
from wirekafka.broker.coordinator.transactions import TransactionCoordinator
from wirekafka.broker.coordinator.txn_metadata import MAX_EPOCH, TV2, TransactionMetadata, end_txn_goes_ahead
from wirekafka.broker.coordinator.txn_records import TxnState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def _meta(state: TxnState, epoch: int = 5, tv: int = TV2, pid: int = 4000, previous: int = -1) -> TransactionMetadata:
    partitions = {TOPIC_PARTITION} if state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT) else set()
    return TransactionMetadata("app", pid, epoch, 60_000, state, partitions, previous_producer_id=previous,
                               client_transaction_version=tv)


def _judge(meta: TransactionMetadata, epoch: int, commit: bool, tv2: bool = True, pid: int = 4000) -> object:
    try:
        return end_txn_goes_ahead(meta, pid, epoch, commit, tv2)
    except KafkaApiError as exc:
        return exc.code


@pytest.mark.parametrize("state, epoch, commit, tv2, expected", [
    # an open transaction ends with the producer's epoch only
    (TxnState.ONGOING, 5, True, True, True),
    (TxnState.ONGOING, 6, True, True, ErrorCode.PRODUCER_FENCED),
    (TxnState.ONGOING, 4, True, True, ErrorCode.PRODUCER_FENCED),
    # decided, markers pending: the retry carries the epoch before the bump
    (TxnState.PREPARE_COMMIT, 4, True, True, ErrorCode.CONCURRENT_TRANSACTIONS),
    (TxnState.PREPARE_COMMIT, 4, False, True, ErrorCode.INVALID_TXN_STATE),
    (TxnState.PREPARE_COMMIT, 5, True, True, ErrorCode.PRODUCER_FENCED),
    # complete: a retry answers the ids in use; the same epoch is the next transaction's
    (TxnState.COMPLETE_COMMIT, 4, True, True, False),
    (TxnState.COMPLETE_COMMIT, 4, False, True, ErrorCode.INVALID_TXN_STATE),
    (TxnState.COMPLETE_COMMIT, 5, True, True, ErrorCode.INVALID_TXN_STATE),
    (TxnState.COMPLETE_COMMIT, 5, False, True, True),  # aborting a transaction that holds nothing
    (TxnState.COMPLETE_COMMIT, 7, True, True, ErrorCode.PRODUCER_FENCED),
    (TxnState.COMPLETE_ABORT, 5, False, False, False),  # EndTxn v4 repeats the epoch in use
    (TxnState.EMPTY, 5, False, True, True),
    (TxnState.EMPTY, 5, True, True, ErrorCode.INVALID_TXN_STATE),
])
def test_end_txn_rules_under_transaction_version_2(state, epoch, commit, tv2, expected) -> None:
    assert _judge(_meta(state), epoch, commit, tv2) == expected


def test_version_1_transactions_keep_their_rules() -> None:
    assert _judge(_meta(TxnState.COMPLETE_COMMIT, tv=0), 5, True, tv2=False) is False
    assert _judge(_meta(TxnState.COMPLETE_COMMIT, tv=0), 4, True, tv2=False) == ErrorCode.PRODUCER_FENCED
    assert _judge(_meta(TxnState.PREPARE_ABORT, tv=0), 5, False, tv2=False) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert _judge(_meta(TxnState.ONGOING, tv=0), 5, True, pid=1) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_a_retry_from_the_id_before_an_overflow_is_answered_with_the_new_one() -> None:
    rotated = _meta(TxnState.COMPLETE_COMMIT, epoch=0, pid=5000, previous=4000)
    assert _judge(rotated, MAX_EPOCH - 1, True, pid=4000) is False
    assert _judge(rotated, MAX_EPOCH - 2, True, pid=4000) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


class _Recorder:
    """write_and_wait that keeps what was written."""

    def __init__(self) -> None:
        self.written: list[tuple[bytes, bytes | None]] = []

    async def __call__(self, partition: object, entries: list[tuple[bytes, bytes | None]], timeout_ms: int) -> None:
        self.written.extend(entries)


def _recording(markers: list[tuple]) -> tuple[TransactionCoordinator, _Recorder]:
    coordinator = _coordinator(0, markers)
    recorder = _Recorder()
    coordinator.runtime.write_and_wait = recorder  # type: ignore[method-assign]
    return coordinator, recorder


def test_each_end_txn_v5_bumps_the_epoch_and_its_markers_carry_it() -> None:
    markers: list[tuple] = []
    coordinator, _ = _recording(markers)
    answers = []

    async def main() -> None:
        pid, epoch = await coordinator.init_producer_id("app", 60_000, -1, -1)
        for commit in (True, False):
            await coordinator.add_partitions("app", pid, epoch, [TOPIC_PARTITION], client_transaction_version=TV2)
            pid, epoch = await coordinator.end_txn("app", pid, epoch, commit, bump_epoch=True)
            answers.append((pid, epoch))
        answers.append(await coordinator.end_txn("app", pid, epoch - 1, False, bump_epoch=True))  # a retry

    trio.run(main)
    assert answers == [(4000, 1), (4000, 2), (4000, 2)]
    assert markers == [(TOPIC_PARTITION, 4000, 1, 0, True), (TOPIC_PARTITION, 4000, 2, 0, False)]
    meta = coordinator.transactions["app"]
    assert (meta.state, meta.client_transaction_version, meta.last_producer_epoch) == (TxnState.COMPLETE_ABORT, 2, 1)


def test_an_exhausted_epoch_moves_the_producer_to_the_next_producer_id() -> None:
    """The decision is written with the last epoch and the next producer id; the markers carry
    the old id at Short.MaxValue; completion moves to the new id at epoch 0, the old one kept
    as the previous id; a retry from the old id gets the new one."""
    markers: list[tuple] = []
    coordinator, recorder = _recording(markers)
    coordinator.transactions["app"] = TransactionMetadata("app", 3000, MAX_EPOCH - 1, 60_000, TxnState.ONGOING,
                                                          {TOPIC_PARTITION}, 0, 0, client_transaction_version=TV2)
    answer = trio.run(lambda: coordinator.end_txn("app", 3000, MAX_EPOCH - 1, True, bump_epoch=True))
    assert answer == (4000, 0)
    assert markers == [(TOPIC_PARTITION, 3000, MAX_EPOCH, 0, True)]
    prepare, complete = [tr.decode_value(v) for _, v in recorder.written]
    assert prepare is not None and complete is not None
    assert (prepare.state, prepare.producer_id, prepare.producer_epoch, prepare.next_producer_id) == \
        (TxnState.PREPARE_COMMIT, 3000, MAX_EPOCH, 4000)
    assert (complete.state, complete.producer_id, complete.producer_epoch, complete.next_producer_id,
            complete.previous_producer_id) == (TxnState.COMPLETE_COMMIT, 4000, 0, -1, 3000)
    assert coordinator.knows_producer(4000) and not coordinator.knows_producer(3000)
    retry = trio.run(lambda: coordinator.end_txn("app", 3000, MAX_EPOCH - 1, True, bump_epoch=True))
    assert retry == (4000, 0)


def test_a_coordinator_replaying_a_prepare_record_completes_to_the_next_producer_id() -> None:
    markers: list[tuple] = []
    coordinator, _ = _recording(markers)
    prepare = tr.TransactionLogValue(3000, MAX_EPOCH, 60_000, TxnState.PREPARE_ABORT, 0, 0,
                                     tr.group_partitions([TOPIC_PARTITION]), next_producer_id=4000,
                                     client_transaction_version=TV2)
    coordinator._replay_record(tr.encode_key("app"), tr.encode_value(prepare))
    trio.run(coordinator.complete_decided)
    meta = coordinator.transactions["app"]
    assert (meta.state, meta.producer_id, meta.producer_epoch) == (TxnState.COMPLETE_ABORT, 4000, 0)
    assert markers == [(TOPIC_PARTITION, 3000, MAX_EPOCH, 0, False)]


def test_a_pending_transition_answers_concurrent_transactions_before_any_epoch_check() -> None:
    meta = _meta(TxnState.PREPARE_COMMIT)
    meta.pending = True  # the markers are being written
    assert _judge(meta, 4, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert _judge(meta, 9, True, pid=1) == ErrorCode.CONCURRENT_TRANSACTIONS
