"""A transaction interrupted by a crash ends in its decided outcome on every partition.

The broker is stopped in the middle of a transaction, and its log directory is then put, with
wirekafka's own storage classes, in the state a crash at a given step leaves: the decision
(PrepareCommit / PrepareAbort) in `__transaction_state` and the markers of only some partitions
written. On restart the transaction coordinator loads the decision and finishes the markers, so
read_committed readers see the whole transaction or none of it. A transaction whose decision was
never written stays open until its producer comes back (or its timeout aborts it), and is then
aborted everywhere. Also: the coordinator aborts a transaction open past its timeout and fences
its producer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conformance.harness.scenarios import fetch
from conformance.harness.wire import Connection, create_topic
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest
from wirekafka.broker.coordinator import txn_records as tr
from wirekafka.broker.replica.partition import AppendOrigin, Partition
from wirekafka.protocol import records
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

pytestmark = pytest.mark.timeout(180)

TXN_PARTITIONS = 50  # transaction.state.log.num.partitions default
READ_COMMITTED = 1
NOW = int(time.time() * 1000)


def _retry(call, code_of, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        result = call()
        if code_of(result) not in (14, 15, 16, 51) or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def _open_transaction(conn: Connection, topic: str, tid: str, partitions: list[int]) -> tuple[int, int]:
    _retry(lambda: conn.call(FindCoordinatorRequest(key=tid, key_type=1), 3), lambda r: r.error_code)
    init = _retry(lambda: conn.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000,
                                                          producer_id=-1, producer_epoch=-1), 4),
                  lambda r: r.error_code)
    pid, epoch = init.producer_id, init.producer_epoch
    add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=partitions)])
    assert all(p.partition_error_code == 0 for t in conn.call(add, 3).results_by_topic_v3_and_below
               for p in t.results_by_partition)
    for p in partitions:
        batch = records.build_batch([(b"k", b"v%d" % p, NOW)], producer_id=pid, producer_epoch=epoch,
                                    base_sequence=0, transactional=True)
        req = ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=batch)])])
        assert conn.call(req, 9).responses[0].partition_responses[0].error_code == 0
    return pid, epoch


def _offline(data: Path, topic: str, index: int) -> Partition:
    directory = data / f"{topic}-{index}"
    return Partition(topic, index, PartitionLog(directory, LogConfig(), clean_shutdown=True),
                     LeaderEpochCache(directory / "leader-epoch-checkpoint"))


def _crash_state(data: Path, topic: str, tid: str, pid: int, epoch: int, commit: bool,
                 marked: list[int], all_partitions: list[int]) -> None:
    """Write what a coordinator killed after its decision and some markers leaves on disk."""
    state = _offline(data, tr.TRANSACTION_STATE_TOPIC, tr.partition_for(tid, TXN_PARTITIONS))
    value = tr.TransactionLogValue(
        producer_id=pid, producer_epoch=epoch, timeout_ms=60000,
        state=tr.TxnState.PREPARE_COMMIT if commit else tr.TxnState.PREPARE_ABORT,
        last_update_timestamp_ms=NOW, start_timestamp_ms=NOW,
        partitions=tr.group_partitions((topic, p) for p in all_partitions))
    batch = records.build_batch([(tr.encode_key(tid), tr.encode_value(value), NOW)])
    state.append(batch, records.validate_batch(batch), AppendOrigin.COORDINATOR)
    state.files.close()
    for p in marked:
        part = _offline(data, topic, p)
        part.append_marker(pid, epoch, 0, commit, NOW)
        part.files.close()


def _settled(conn: Connection, topic: str, partition: int):
    deadline = time.monotonic() + 30
    while True:
        answer = fetch(conn, topic, 0, partition=partition, isolation_level=READ_COMMITTED, version=12)
        if answer.last_stable_offset == answer.high_watermark or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _state(conn: Connection, tid: str) -> str:
    return _retry(lambda: conn.call(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0],
                  lambda s: s.error_code).transaction_state


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
@pytest.mark.parametrize("marked", [[], [0]], ids=["no-markers", "one-of-two-markers"])
def test_decided_transaction_is_finished_after_a_crash(broker_factory, commit, marked):
    b = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    topic, tid = "recovered", "tx-recovered"
    with Connection(b.bootstrap) as conn:
        create_topic(conn, topic, partitions=2)
        pid, epoch = _open_transaction(conn, topic, tid, [0, 1])
    b.stop()
    _crash_state(b.data_dir, topic, tid, pid, epoch, commit, marked, [0, 1])
    b.start()
    with Connection(b.bootstrap) as conn:
        deadline = time.monotonic() + 30
        while _state(conn, tid) != ("CompleteCommit" if commit else "CompleteAbort") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _state(conn, tid) == ("CompleteCommit" if commit else "CompleteAbort")
        for p in (0, 1):
            answer = _settled(conn, topic, p)
            assert answer.last_stable_offset == answer.high_watermark
            aborted = [(a.producer_id, a.first_offset) for a in answer.aborted_transactions]
            if commit:
                assert aborted == [], (p, aborted)
            else:
                # A partition whose marker was written before the crash gets a second one: like
                # Kafka's coordinator, the restarted one cannot know and re-sends every marker
                # (an empty aborted transaction at the duplicate's offset, harmless to readers).
                assert aborted[0] == (pid, 0) and {a[0] for a in aborted} == {pid}, (p, aborted)


def test_undecided_transaction_is_aborted_when_its_producer_returns(broker_factory):
    b = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    topic, tid = "undecided", "tx-undecided"
    with Connection(b.bootstrap) as conn:
        create_topic(conn, topic, partitions=2)
        pid, epoch = _open_transaction(conn, topic, tid, [0, 1])
    b.kill()
    b.start()
    with Connection(b.bootstrap) as conn:
        assert _state(conn, tid) == "Ongoing"
        assert fetch(conn, topic, 0, isolation_level=READ_COMMITTED, version=12).last_stable_offset == 0
        again = _retry(lambda: conn.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000,
                                                               producer_id=-1, producer_epoch=-1), 4),
                       lambda r: r.error_code)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 2)
        for p in (0, 1):
            answer = _settled(conn, topic, p)
            assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(pid, 0)]


def test_timed_out_transaction_is_aborted_and_its_producer_fenced(broker_factory):
    b = broker_factory({"group.initial.rebalance.delay.ms": "0",
                        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    topic, tid = "timed-out", "tx-timed-out"
    with Connection(b.bootstrap) as conn:
        create_topic(conn, topic)
        _retry(lambda: conn.call(FindCoordinatorRequest(key=tid, key_type=1), 3), lambda r: r.error_code)
        init = conn.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=1000, producer_id=-1,
                                               producer_epoch=-1), 4)
        pid, epoch = init.producer_id, init.producer_epoch
        add = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])])
        conn.call(add, 3)
        deadline = time.monotonic() + 30
        while _state(conn, tid) != "CompleteAbort" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _state(conn, tid) == "CompleteAbort"
        end = conn.call(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True), 3)
        assert end.error_code == 90  # PRODUCER_FENCED: the abort bumped the epoch


def test_idle_transactional_id_expires(broker_factory):
    """A transactional id idle past transactional.id.expiration.ms is forgotten (a tombstone in
    __transaction_state): describing it answers TRANSACTIONAL_ID_NOT_FOUND, and a new
    InitProducerId for it starts over with epoch 0."""
    b = broker_factory({"group.initial.rebalance.delay.ms": "0", "transactional.id.expiration.ms": "500",
                        "transaction.remove.expired.transaction.cleanup.interval.ms": "200"})
    tid = "tx-expiring"
    with Connection(b.bootstrap) as conn:
        _retry(lambda: conn.call(FindCoordinatorRequest(key=tid, key_type=1), 3), lambda r: r.error_code)
        init = conn.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1,
                                               producer_epoch=-1), 4)
        assert (init.error_code, init.producer_epoch) == (0, 0)
        deadline = time.monotonic() + 30
        described = conn.call(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0]
        while described.error_code == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            described = conn.call(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0]
        assert described.error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND
        again = conn.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1,
                                                producer_epoch=-1), 4)
        assert (again.error_code, again.producer_epoch) == (0, 0)
        assert again.producer_id != init.producer_id
