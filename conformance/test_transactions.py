"""Transactions on the wire: the transaction coordinator's APIs (FindCoordinator key type 1,
InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, DescribeTransactions, ListTransactions, DescribeProducers) and what a
transaction does to Produce, Fetch and ListOffsets (last stable offset, markers, aborted list)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

from conformance.harness.scenarios import batch_bases, fetch, list_offsets, produce
from conformance.harness.wire import (TRANSIENT, Connection, create_topic, ensure_group_coordinator, metadata, poll,
                                     retry_transient, unique)
from wirekafka.protocol import records

NOW = 1_700_000_000_000
READ_COMMITTED = 1
CONCURRENT_TRANSACTIONS = 51


def _describe(conn: Connection, tid: str):
    return conn.call(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0]


def _wait_complete(conn: Connection, tid: str):
    """Kafka answers EndTxn once the decision is durable and writes the markers after: wait
    until the transaction is complete (only the settled answer is compared)."""
    return poll(lambda: _describe(conn, tid), lambda s: s.transaction_state.startswith("Complete"), interval=0.05)


def _find_txn_coordinator(conn: Connection, tid: str, version: int = 3):
    req = FindCoordinatorRequest(key=tid, key_type=1) if version < 4 else \
        FindCoordinatorRequest(key_type=1, coordinator_keys=[tid])
    code = (lambda r: r.error_code) if version < 4 else (lambda r: r.coordinators[0].error_code)
    return retry_transient(lambda: conn.call(req, version), code)


def _init(conn: Connection, tid: str, version: int = 4, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1):
    _find_txn_coordinator(conn, tid)
    req = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=pid,
                                producer_epoch=epoch)
    # CONCURRENT_TRANSACTIONS while an open transaction is being aborted: clients retry, and
    # only the answer that settles is compared (each retry that gets through bumps the epoch).
    return poll(lambda: conn.call(req, version),
                lambda r: r.error_code not in TRANSIENT | {CONCURRENT_TRANSACTIONS}, interval=0.05)


def _add_partitions(conn: Connection, tid: str, pid: int, epoch: int, topic: str, partitions=(0,), version: int = 3):
    req = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic,
                                                                                partitions=list(partitions))])
    res = conn.call(req, version)
    return {(t.name, p.partition_index): p.partition_error_code
            for t in res.results_by_topic_v3_and_below for p in t.results_by_partition}


def _end(conn: Connection, tid: str, pid: int, epoch: int, commit: bool, version: int = 3):
    req = EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)
    return retry_transient(lambda: conn.call(req, version), lambda r: r.error_code).error_code


def _txn_batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    return records.build_batch([(b"k", v, NOW + i) for i, v in enumerate(values)], producer_id=pid,
                               producer_epoch=epoch, base_sequence=seq, transactional=True)


def _open_transaction(conn: Connection, topic: str, tid: str):
    init = _init(conn, tid)
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    assert _add_partitions(conn, tid, pid, epoch, topic) == {(topic, 0): 0}
    res = produce(conn, topic, _txn_batch(pid, epoch, 0, [b"a", b"b"]), transactional_id=tid)
    assert (res.error_code, res.base_offset) == (0, 0)
    return pid, epoch


@pytest.mark.parametrize("version", range(0, 7))
def test_find_transaction_coordinator(target, version):
    res = None
    with Connection(target.bootstrap) as conn:
        res = _find_txn_coordinator(conn, unique("tx"), version)
    code = res.error_code if version < 4 else res.coordinators[0].error_code
    assert code == 0


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id_with_transactional_id_bumps_the_epoch(target, version):
    tid = unique("tx")
    with Connection(target.bootstrap) as conn:
        first = _init(conn, tid, version)
        second = _init(conn, tid, version)
        assert first.error_code == second.error_code == 0
        assert second.producer_id == first.producer_id
        assert second.producer_epoch == first.producer_epoch + 1
        bad = _init(conn, unique("tx"), version, timeout_ms=10**9)
        assert bad.error_code == 50  # INVALID_TRANSACTION_TIMEOUT


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_transaction_moves_the_last_stable_offset(target, commit):
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        pid, epoch = _open_transaction(conn, topic, tid)
        assert list_offsets(conn, topic, -1, isolation_level=READ_COMMITTED).offset == 0
        assert list_offsets(conn, topic, -1).offset == 2
        pending = fetch(conn, topic, 0, isolation_level=READ_COMMITTED, version=12)
        assert (pending.high_watermark, pending.last_stable_offset, pending.records) == (2, 0, b"")
        assert pending.aborted_transactions == []
        assert _end(conn, tid, pid, epoch, commit) == 0
        _wait_complete(conn, tid)
        done = fetch(conn, topic, 0, isolation_level=READ_COMMITTED, version=12)
        assert (done.high_watermark, done.last_stable_offset) == (3, 3)
        # The marker's timestamp (now) is past segment.ms after the batch's (2023): it opens a
        # new segment, and a fetch never spans two segments.
        assert batch_bases(done.records) == [0]
        marker = fetch(conn, topic, 2, isolation_level=READ_COMMITTED, version=12)
        assert batch_bases(marker.records) == [2]
        expected = [] if commit else [(pid, 0)]
        assert [(a.producer_id, a.first_offset) for a in done.aborted_transactions] == expected
        assert fetch(conn, topic, 0, version=12).aborted_transactions is None  # read_uncommitted
        assert _end(conn, tid, pid, epoch, commit) == 0  # a retry of the same decision
        assert _end(conn, tid, pid, epoch, not commit) == 48  # INVALID_TXN_STATE


@pytest.mark.parametrize("version", range(0, 4))
def test_add_partitions_errors(target, version):
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        init = _init(conn, tid)
        pid, epoch = init.producer_id, init.producer_epoch
        fenced = _add_partitions(conn, tid, pid, epoch - 1 if epoch else epoch + 1, topic, version=version)
        assert fenced == {(topic, 0): 90 if version >= 2 else 47}  # PRODUCER_FENCED / INVALID_PRODUCER_EPOCH
        assert _add_partitions(conn, tid, pid + 1000, epoch, topic, version=version) == {(topic, 0): 49}
        missing = _add_partitions(conn, tid, pid, epoch, topic, partitions=(0, 7), version=version)
        assert missing == {(topic, 0): 55, (topic, 7): 3}  # OPERATION_NOT_ATTEMPTED, UNKNOWN_TOPIC_OR_PARTITION
        assert _add_partitions(conn, tid, pid, epoch, topic, version=version) == {(topic, 0): 0}


def test_end_txn_without_a_transaction(target):
    tid = unique("tx")
    with Connection(target.bootstrap) as conn:
        init = _init(conn, tid)
        assert _end(conn, tid, init.producer_id, init.producer_epoch, True) == 48  # INVALID_TXN_STATE
        assert _end(conn, tid, init.producer_id + 1000, init.producer_epoch, True) == 49  # INVALID_PRODUCER_ID_MAPPING


def produce_outside_the_transaction(conn: Connection) -> Any:
    """A transaction open on partition 0 of a new 2-partition topic, and its producer's batch
    for partition 1, which was never added to it: the produce answer."""
    topic, tid = unique(), unique("tx")
    create_topic(conn, topic, partitions=2)
    pid, epoch = _open_transaction(conn, topic, tid)
    return produce(conn, topic, _txn_batch(pid, epoch, 0, [b"x"]), partition=1, transactional_id=tid)


def test_transactional_produce_to_a_partition_outside_the_transaction(target):
    with Connection(target.bootstrap) as conn:
        assert produce_outside_the_transaction(conn).error_code == 48  # INVALID_TXN_STATE: never added


def test_new_producer_aborts_the_open_transaction(target):
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        pid, epoch = _open_transaction(conn, topic, tid)
        again = _init(conn, tid)  # CONCURRENT_TRANSACTIONS until the abort is done, then a new epoch
        assert (again.error_code, again.producer_id) == (0, pid)
        assert again.producer_epoch == epoch + 2  # one bump fences and aborts, one for the new producer
        done = fetch(conn, topic, 0, isolation_level=READ_COMMITTED, version=12)
        assert done.last_stable_offset == 3
        assert [(a.producer_id, a.first_offset) for a in done.aborted_transactions] == [(pid, 0)]
        stale = produce(conn, topic, _txn_batch(pid, epoch, 2, [b"zombie"]), transactional_id=tid)
        assert stale.error_code == 47  # INVALID_PRODUCER_EPOCH


def test_transactional_offsets_count_with_the_commit(target):
    topic, tid, group = unique(), unique("tx"), unique("g")
    with Connection(target.bootstrap) as conn:
        pid, epoch = _transaction_with_offsets(conn, topic, tid, group)
        commit = _offset_commit_request(tid, group, pid, epoch, topic, 2)
        # Kafka 4.3.1 answered NOT_COORDINATOR here now and then (its new group coordinator still
        # loading the partition): a client looks again and retries, as this does
        res = retry_transient(lambda: conn.call(commit, 3), lambda r: r.topics[0].partitions[0].error_code)
        assert [p.error_code for t in res.topics for p in t.partitions] == [0]

        def fetch_offset(require_stable: bool):
            req = OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
                name=topic, partition_indexes=[0])], require_stable=require_stable)
            part = conn.call(req, 7).topics[0].partitions[0]
            return part.committed_offset, part.error_code

        assert fetch_offset(require_stable=False) == (-1, 0)
        assert fetch_offset(require_stable=True) == (-1, 88)  # UNSTABLE_OFFSET_COMMIT
        assert _end(conn, tid, pid, epoch, True) == 0
        _wait_complete(conn, tid)
        assert fetch_offset(require_stable=True) == (2, 0)


def test_describe_and_list_transactions_and_producers(target):
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        pid, epoch = _open_transaction(conn, topic, tid)
        described = conn.call(DescribeTransactionsRequest(transactional_ids=[tid, unique("missing")]), 0)
        ongoing, missing = described.transaction_states
        assert (ongoing.error_code, ongoing.transaction_state, ongoing.producer_id) == (0, "Ongoing", pid)
        assert [(t.topic, t.partitions) for t in ongoing.topics] == [(topic, [0])]
        assert missing.error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND
        listed = conn.call(ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], producer_id_filters=[pid],
                                                   duration_filter=-1, transactional_id_pattern=None), 1)
        assert listed.unknown_state_filters == ["Bogus"]
        assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [(tid, "Ongoing")]
        producers = conn.call(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name=topic, partition_indexes=[0])]), 0).topics[0].partitions[0]
        [state] = producers.active_producers
        assert (state.producer_id, state.producer_epoch, state.last_sequence, state.current_txn_start_offset) == \
            (pid, epoch, 1, 0)
        assert _end(conn, tid, pid, epoch, False) == 0
        after = _wait_complete(conn, tid)
        assert (after.transaction_state, after.topics) == ("CompleteAbort", [])


def _transaction_with_offsets(conn: Connection, topic: str, tid: str, group: str) -> tuple[int, int]:
    """A new topic with an open transaction writing to it, the group's offsets added to it."""
    create_topic(conn, topic)
    ensure_group_coordinator(conn, group)
    pid, epoch = _open_transaction(conn, topic, tid)
    add = AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
    assert conn.call(add, 3).error_code == 0
    return pid, epoch


def _offset_commit_request(tid, group, pid, epoch, topic, offset):
    P = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition
    return TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
        group_instance_id=None, topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
            name=topic, partitions=[P(partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                                      committed_metadata="")])])


@pytest.mark.parametrize("version", range(0, 6))
def test_end_txn_versions(target, version):
    """A transaction ended at each EndTxn version; a stale epoch is PRODUCER_FENCED from v2
    (INVALID_PRODUCER_EPOCH before, KIP-588)."""
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        pid, epoch = _open_transaction(conn, topic, tid)
        req = EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch + 1, committed=True)
        assert conn.call(req, version).error_code == (90 if version >= 2 else 47)
        req = EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
        res = conn.call(req, version)
        assert res.error_code == 0
        assert _wait_complete(conn, tid).transaction_state == "CompleteCommit"


@pytest.mark.parametrize("version", range(0, 5))
def test_add_offsets_to_txn_versions(target, version):
    topic, tid, group = unique(), unique("tx"), unique("g")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        ensure_group_coordinator(conn, group)
        pid, epoch = _open_transaction(conn, topic, tid)
        stale = AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch + 1, group_id=group)
        assert conn.call(stale, version).error_code == (90 if version >= 2 else 47)
        add = AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
        assert conn.call(add, version).error_code == 0
        described = _describe(conn, tid)
        assert sorted(t.topic for t in described.topics) == sorted([topic, "__consumer_offsets"])
        assert _end(conn, tid, pid, epoch, False) == 0
        _wait_complete(conn, tid)


@pytest.mark.parametrize("version", range(0, 6))
def test_txn_offset_commit_versions(target, version):
    """Offsets committed in a transaction at each TxnOffsetCommit version, then aborted: they
    never count. A stale epoch is INVALID_PRODUCER_EPOCH at every version."""
    topic, tid, group = unique(), unique("tx"), unique("g")
    with Connection(target.bootstrap) as conn:
        pid, epoch = _transaction_with_offsets(conn, topic, tid, group)
        stale = conn.call(_offset_commit_request(tid, group, pid, epoch + 1, topic, 1), version)
        assert [p.error_code for t in stale.topics for p in t.partitions] == [47]
        res = conn.call(_offset_commit_request(tid, group, pid, epoch, topic, 1), version)
        assert [p.error_code for t in res.topics for p in t.partitions] == [0]
        assert _end(conn, tid, pid, epoch, False) == 0
        _wait_complete(conn, tid)
        req = OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name=topic, partition_indexes=[0])], require_stable=True)
        assert conn.call(req, 7).topics[0].partitions[0].committed_offset == -1


@pytest.mark.parametrize("version", [4, 5])
def test_add_partitions_to_txn_batched_and_verify_only(target, version):
    """v4+ is the brokers' form (KIP-890): several transactions in one request, each added to
    or only verified."""
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, partitions=2)
        pid, epoch = _open_transaction(conn, topic, tid)

        def call(partitions, verify_only):
            req = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=verify_only,
                topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.AddPartitionsToTxnTopic(
                    name=topic, partitions=partitions)])])
            res = conn.call(req, version)
            assert res.error_code == 0
            [txn] = res.results_by_transaction
            return {p.partition_index: p.partition_error_code for t in txn.topic_results for p in t.results_by_partition}

        assert call([0, 1], verify_only=True) == {0: 0, 1: 120}  # TRANSACTION_ABORTABLE: 1 is not in it
        assert call([1], verify_only=False) == {1: 0}
        assert call([0, 1], verify_only=True) == {0: 0, 1: 0}
        assert _end(conn, tid, pid, epoch, False) == 0
        _wait_complete(conn, tid)


@pytest.mark.parametrize("version", [1, 2])
def test_write_txn_markers(target, version):
    """The coordinator's request to partition leaders, sent directly: the marker closes the
    producer's transaction on that partition; unknown partitions answer their own error."""
    from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        pid, epoch = _open_transaction(conn, topic, tid)
        M = WriteTxnMarkersRequest.WritableTxnMarker
        req = WriteTxnMarkersRequest(markers=[M(
            producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
            transaction_version=0, topics=[M.WritableTxnMarkerTopic(name=topic, partition_indexes=[0, 9])])])
        res = conn.call(req, version)
        [marker] = res.markers
        assert marker.producer_id == pid
        assert {p.partition_index: p.error_code for t in marker.topics for p in t.partitions} == {0: 0, 9: 3}
        done = fetch(conn, topic, 0, isolation_level=READ_COMMITTED, version=12)
        assert (done.last_stable_offset, [(a.producer_id, a.first_offset) for a in done.aborted_transactions]) == \
            (3, [(pid, 0)])


def test_write_txn_markers_of_two_transactions_in_one_request(target):
    """A coordinator batches the markers of several transactions bound for one leader into one
    request: each is written (a commit and an abort here, on two topics) and answered in the
    request's order, each partition with its own error."""
    from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

    committed, aborted = unique(), unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, committed)
        create_topic(conn, aborted)
        pid_c, epoch_c = _open_transaction(conn, committed, unique("tx"))
        pid_a, epoch_a = _open_transaction(conn, aborted, unique("tx"))
        M = WriteTxnMarkersRequest.WritableTxnMarker
        T = M.WritableTxnMarkerTopic
        res = conn.call(WriteTxnMarkersRequest(markers=[
            M(producer_id=pid_c, producer_epoch=epoch_c, transaction_result=True, coordinator_epoch=0,
              transaction_version=0, topics=[T(name=committed, partition_indexes=[0])]),
            M(producer_id=pid_a, producer_epoch=epoch_a, transaction_result=False, coordinator_epoch=0,
              transaction_version=0, topics=[T(name=aborted, partition_indexes=[0, 9])])]), 1)
        assert [(m.producer_id, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
                                 for t in m.topics]) for m in res.markers] == [
            (pid_c, [(committed, [(0, 0)])]), (pid_a, [(aborted, [(0, 0), (9, 3)])])]
        done = fetch(conn, committed, 0, isolation_level=READ_COMMITTED, version=12)
        assert (done.last_stable_offset, done.aborted_transactions) == (3, [])
        done = fetch(conn, aborted, 0, isolation_level=READ_COMMITTED, version=12)
        assert (done.last_stable_offset, [(a.producer_id, a.first_offset) for a in done.aborted_transactions]) == \
            (3, [(pid_a, 0)])


@pytest.mark.parametrize("version", range(0, 3))
def test_list_transactions_versions(target, version):
    tid = unique("tx")
    with Connection(target.bootstrap) as conn:
        init = _init(conn, tid)
        kwargs = {}
        if version >= 1:
            kwargs["duration_filter"] = -1
        if version >= 2:
            kwargs["transactional_id_pattern"] = tid.replace("-", ".")
        res = conn.call(ListTransactionsRequest(state_filters=["Empty"], producer_id_filters=[init.producer_id],
                                                **kwargs), version)
        assert res.error_code == 0
        assert [(s.transactional_id, s.transaction_state) for s in res.transaction_states] == [(tid, "Empty")]


def test_list_transactions_duration_filter_counts_from_the_last_start(target):
    """ListTransactions v1's duration filter keeps every id whose last transaction began more
    than that long ago, whatever its state now; an id that never began one has start time -1, so
    it passes any filter (Kafka's TransactionStateManager.listTransactionStates)."""
    empty, done, ongoing = unique("tx"), unique("tx"), unique("tx")
    with Connection(target.bootstrap) as conn:
        assert _init(conn, empty).error_code == 0
        done_topic, ongoing_topic = unique(), unique()
        create_topic(conn, done_topic)
        create_topic(conn, ongoing_topic)
        pid, epoch = _open_transaction(conn, done_topic, done)
        assert _end(conn, done, pid, epoch, True) == 0
        _wait_complete(conn, done)
        ongoing_pid, ongoing_epoch = _open_transaction(conn, ongoing_topic, ongoing)

        def listed(duration_ms: int) -> list[tuple[str, str]]:
            req = ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=duration_ms,
                                          transactional_id_pattern="|".join((empty, done, ongoing)))
            res = conn.call(req, 2)
            assert res.error_code == 0
            return sorted((s.transactional_id, s.transaction_state) for s in res.transaction_states)

        # Kafka keeps a transaction only if it began strictly more than the filter ago: one begun in
        # the same millisecond as the listing would not pass 0
        time.sleep(0.02)
        assert listed(0) == sorted([(empty, "Empty"), (done, "CompleteCommit"), (ongoing, "Ongoing")])
        assert listed(10**12) == [(empty, "Empty")]  # ~32 years: only a start time of -1 is that old
        assert _end(conn, ongoing, ongoing_pid, ongoing_epoch, False) == 0


def test_txn_offset_commit_from_a_stale_member(target):
    """TxnOffsetCommit v3+ carries the consumer's generation and member id (KIP-447): a stale
    generation is ILLEGAL_GENERATION and an unknown member UNKNOWN_MEMBER_ID, as for OffsetCommit."""
    from conformance.test_groups_protocol import _member

    topic, tid, group = unique(), unique("tx"), unique("g")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        joined = _member(conn, group)
        pid, epoch = _open_transaction(conn, topic, tid)
        add = AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
        assert conn.call(add, 3).error_code == 0

        def commit(generation: int, member_id: str) -> list[int]:
            req = _offset_commit_request(tid, group, pid, epoch, topic, 1)
            req.generation_id, req.member_id = generation, member_id
            return [p.error_code for t in conn.call(req, 3).topics for p in t.partitions]

        assert commit(joined.generation_id + 1, joined.member_id) == [22]  # ILLEGAL_GENERATION
        assert commit(joined.generation_id, "someone-else") == [25]  # UNKNOWN_MEMBER_ID
        assert _end(conn, tid, pid, epoch, False) == 0
        _wait_complete(conn, tid)


def test_clients_may_not_write_control_batches(target):
    """A produce request holding a COMMIT marker built by a client is refused (INVALID_RECORD);
    the log is untouched."""
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        pid, epoch = _open_transaction(conn, topic, tid)
        marker = records.build_marker_batch(pid, epoch, 0, True, NOW)
        res = produce(conn, topic, marker, transactional_id=tid)
        assert res.error_code == 87  # INVALID_RECORD
        assert fetch(conn, topic, 0, version=12).high_watermark == 2
        assert _end(conn, tid, pid, epoch, False) == 0
        _wait_complete(conn, tid)


def _mixed_produce(topics: list[tuple[str, uuid.UUID | None, list[int]]], transactional_id: str | None,
                   acks: int = -1) -> ProduceRequest:
    """A produce request whose first partition holds a transaction's batch and the others plain
    batches: one transactional batch makes the whole request transactional for Kafka."""
    first = True
    topic_data = []
    for name, topic_id, partitions in topics:
        data = []
        for index in partitions:
            kw = {"producer_id": 1000, "producer_epoch": 0, "base_sequence": 0, "transactional": True} if first else {}
            data.append(ProduceRequest.TopicProduceData.PartitionProduceData(
                index=index, records=records.build_batch([(b"k", b"v", NOW)], **kw)))
            first = False
        topic_data.append(ProduceRequest.TopicProduceData(name=name, topic_id=topic_id, partition_data=data))
    return ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=10000, topic_data=topic_data)


@pytest.mark.parametrize("version", [3, 9, 13])
def test_transactional_batch_without_a_transactional_id(target, version):
    """A transaction's batch in a request without a transactional id: Kafka refuses the whole
    request before looking at its topics, even with no authorizer, with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition (its HashMap order: a partition named
    twice answers once). Nothing is written; with acks=0 the connection is closed."""
    existing, missing = unique(), unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, existing, partitions=3)
        if version >= 13:  # by id: fixed ids, so both brokers walk the same hash order
            topics = [(existing, uuid.UUID(int=0x1234_5678_9ABC_DEF0 << 64 | 7), [2, 0, 1, 0]),
                      (missing, uuid.UUID(int=0x0FED_CBA9_8765_4321 << 64 | 99), [5, 3])]
        else:
            topics = [(existing, None, [2, 0, 1, 0]), (missing, None, [5, 3])]
        answer = conn.call(_mixed_produce(topics, None), version)
        assert {p.error_code for t in answer.responses for p in t.partition_responses} == {53}
        assert sorted(len(t.partition_responses) for t in answer.responses) == [2, 3]
        assert produce(conn, existing, records.build_batch([(b"k", b"v", NOW)])).base_offset == 0
    with Connection(target.bootstrap) as conn:
        conn.send(_mixed_produce(topics, None, acks=0), version, expect_response=False)
        with pytest.raises(ConnectionError):
            conn.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0)


# ---- transaction version 2 (KIP-890 part 2) ------------------------------------------------------
# Kafka 4.3.1 finalizes transaction.version 2: a Produce v12+ batch adds its partition to the
# transaction (no AddPartitionsToTxn), every EndTxn v5 moves the producer to the next epoch, and a
# retry is told from the next transaction by its epoch.

INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE = 47, 45
INVALID_TXN_STATE, PRODUCER_FENCED = 48, 90


def _end_v5(conn: Connection, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    res = retry_transient(lambda: conn.call(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                          committed=commit), 5), lambda r: r.error_code)
    return res.error_code, res.producer_id, res.producer_epoch


def _produce_v12(conn: Connection, topic: str, tid: str, pid: int, epoch: int, seq: int, partition: int = 0,
                 version: int = 12) -> tuple[int, int]:
    res = produce(conn, topic, _txn_batch(pid, epoch, seq, [b"v"]), partition=partition, transactional_id=tid,
                  version=version)
    return res.error_code, res.base_offset


def _producers(conn: Connection, topic: str, partition: int = 0) -> list[tuple[int, int, int, int]]:
    part = conn.call(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=topic, partition_indexes=[partition])]), 0).topics[0].partitions[0]
    return [(s.producer_id, s.producer_epoch, s.last_sequence, s.current_txn_start_offset)
            for s in part.active_producers]


@pytest.mark.parametrize("version", [12, 13])
def test_tv2_produce_adds_the_partition_and_end_txn_bumps_the_epoch(target, version):
    """The transaction is opened by the partition leader on the first batch; EndTxn v5 answers the
    next epoch, which the markers carry into the partition's producer state (its sequence starts
    again); the retry of a completed EndTxn (the epoch before the bump) answers the ids in use."""
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, partitions=2)
        init = _init(conn, tid, version=5)
        pid, epoch = init.producer_id, init.producer_epoch
        topic_id = metadata(conn, [topic]).topics[0].topic_id if version >= 13 else None
        res = produce(conn, topic if version < 13 else "", _txn_batch(pid, epoch, 0, [b"a", b"b"]),
                      transactional_id=tid, version=version, topic_id=topic_id)
        assert (res.error_code, res.base_offset) == (0, 0)
        ongoing = _describe(conn, tid)
        assert (ongoing.transaction_state, [(t.topic, t.partitions) for t in ongoing.topics]) == \
            ("Ongoing", [(topic, [0])])
        assert _end_v5(conn, tid, pid, epoch, True) == (0, pid, epoch + 1)
        done = _wait_complete(conn, tid)
        assert (done.transaction_state, done.producer_epoch) == ("CompleteCommit", epoch + 1)
        assert _end_v5(conn, tid, pid, epoch, True) == (0, pid, epoch + 1)  # a retry
        assert _end_v5(conn, tid, pid, epoch, False)[0] == INVALID_TXN_STATE  # the other outcome
        assert _end_v5(conn, tid, pid, epoch + 1, True)[0] == INVALID_TXN_STATE  # nothing to commit
        assert _end_v5(conn, tid, pid, epoch + 3, True)[0] == PRODUCER_FENCED
        assert _produce_v12(conn, topic, tid, pid, epoch, 2) == (INVALID_PRODUCER_EPOCH, -1)  # the old epoch
        assert _produce_v12(conn, topic, tid, pid, epoch + 5, 0) == (INVALID_PRODUCER_EPOCH, -1)
        assert _produce_v12(conn, topic, tid, pid, epoch + 1, 1) == (OUT_OF_ORDER_SEQUENCE, -1)
        assert _produce_v12(conn, topic, tid, pid, epoch + 1, 0) == (0, 3)
        # the marker moved the partition's producer to the new epoch: its sequence began again
        # (only compared after a data batch: a marker's timestamp is the broker's clock)
        assert _producers(conn, topic) == [(pid, epoch + 1, 0, 3)]
        assert _produce_v12(conn, topic, tid, pid, epoch + 1, 0, partition=1) == (0, 0)
        assert _end_v5(conn, tid, pid, epoch + 2, True)[0] == PRODUCER_FENCED
        assert _end_v5(conn, tid, pid, epoch, True)[0] == PRODUCER_FENCED
        assert _end_v5(conn, tid, pid, epoch + 1, False) == (0, pid, epoch + 2)
        aborted = _wait_complete(conn, tid)
        assert (aborted.transaction_state, aborted.producer_epoch) == ("CompleteAbort", epoch + 2)
        read = fetch(conn, topic, 3, isolation_level=READ_COMMITTED, version=12)
        assert (read.last_stable_offset, [(a.producer_id, a.first_offset) for a in read.aborted_transactions]) == \
            (5, [(pid, 3)])


def test_tv2_abort_of_an_empty_transaction(target):
    """Under transaction version 2 a producer may abort without having written: the epoch moves
    on; a commit of nothing is INVALID_TXN_STATE. EndTxn v4 (version 1) still repeats the epoch
    in use to retry."""
    tid = unique("tx")
    with Connection(target.bootstrap) as conn:
        init = _init(conn, tid, version=5)
        pid, epoch = init.producer_id, init.producer_epoch
        assert _end_v5(conn, tid, pid, epoch, True)[0] == INVALID_TXN_STATE
        assert _end_v5(conn, tid, pid, epoch, False) == (0, pid, epoch + 1)
        assert _wait_complete(conn, tid).transaction_state == "CompleteAbort"
        assert _end_v5(conn, tid, pid, epoch, False) == (0, pid, epoch + 1)  # a retry
        assert _end(conn, tid, pid, epoch + 1, False, version=4) == 0
        assert _end_v5(conn, tid, pid, epoch + 1, True)[0] == INVALID_TXN_STATE
        assert _end_v5(conn, tid, pid, epoch + 1, False) == (0, pid, epoch + 2)
        assert _wait_complete(conn, tid).producer_epoch == epoch + 2


def test_tv2_and_version_1_requests_on_one_transactional_id(target):
    """The request decides: AddPartitionsToTxn and Produce v9 then EndTxn v5 (bumps), Produce v12
    then EndTxn v3 (keeps the epoch); InitProducerId after either bumps once, and once more to
    fence an open transaction, a retry with the fenced epoch getting the same answer."""
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, partitions=2)
        pid, epoch = _open_transaction(conn, topic, tid)
        assert _end_v5(conn, tid, pid, epoch, False) == (0, pid, epoch + 1)
        _wait_complete(conn, tid)
        assert _produce_v12(conn, topic, tid, pid, epoch + 1, 0, partition=1) == (0, 0)
        assert _end(conn, tid, pid, epoch + 1, True, version=3) == 0
        assert _wait_complete(conn, tid).producer_epoch == epoch + 1
        again = _init(conn, tid, version=5, pid=pid, epoch=epoch + 1)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 2)
        assert _produce_v12(conn, topic, tid, pid, epoch + 2, 0) == (0, 3)
        fenced = _init(conn, tid, version=5, pid=pid, epoch=epoch + 2)
        assert (fenced.error_code, fenced.producer_id, fenced.producer_epoch) == (0, pid, epoch + 3)
        assert _describe(conn, tid).transaction_state == "Empty"
        assert _produce_v12(conn, topic, tid, pid, epoch + 2, 1) == (INVALID_PRODUCER_EPOCH, -1)
        assert _produce_v12(conn, topic, tid, pid, epoch + 3, 0) == (0, 5)
        assert _producers(conn, topic) == [(pid, epoch + 3, 0, 5)]


def test_tv2_produce_v11_outside_the_transaction(target):
    """Produce v11 (before transaction version 2) to a partition never added: KIP-890's
    TRANSACTION_ABORTABLE, which v11 clients know (older versions get INVALID_TXN_STATE)."""
    with Connection(target.bootstrap) as conn:
        topic, tid = unique(), unique("tx")
        create_topic(conn, topic, partitions=2)
        pid, epoch = _open_transaction(conn, topic, tid)
        assert _produce_v12(conn, topic, tid, pid, epoch, 0, partition=1, version=11)[0] == 120
        assert _end(conn, tid, pid, epoch, False) == 0
        _wait_complete(conn, tid)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tv2_epoch_exhaustion_moves_the_producer_to_a_new_id(target):
    """A producer whose epoch reached Short.MaxValue - 1 (32766 InitProducerId bumps, pipelined
    on one connection: both brokers take a connection's requests one at a time) ends its
    transaction with EndTxn v5: the answer is a new producer id at epoch 0, the markers carry the
    old id at Short.MaxValue, a retry from the old id gets the new one, and the new id writes."""
    topic, tid = unique(), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        init = _init(conn, tid, version=5)
        pid = init.producer_id
        epoch = init.producer_epoch
        while epoch < 32766:
            sent = []
            for _ in range(min(500, 32766 - epoch)):
                sent.append(conn.send(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000,
                                                            producer_id=pid, producer_epoch=epoch), 5))
                epoch += 1
            answers = [conn.receive(InitProducerIdRequest.API_KEY, 5, cid) for cid in sent]
            assert [(a.error_code, a.producer_id) for a in answers] == [(0, pid)] * len(sent)
            assert answers[-1].producer_epoch == epoch
        assert _produce_v12(conn, topic, tid, pid, epoch, 0) == (0, 0)
        code, new_pid, new_epoch = _end_v5(conn, tid, pid, epoch, True)
        assert (code, new_epoch) == (0, 0) and new_pid != pid
        done = _wait_complete(conn, tid)
        assert (done.transaction_state, done.producer_id, done.producer_epoch) == ("CompleteCommit", new_pid, 0)
        assert _end_v5(conn, tid, pid, epoch, True) == (0, new_pid, 0)  # a retry from the old id
        # the partition knows the old id at Short.MaxValue (the marker): fenced there
        assert _produce_v12(conn, topic, tid, pid, epoch, 1) == (INVALID_PRODUCER_EPOCH, -1)
        assert _produce_v12(conn, topic, tid, new_pid, 0, 0) == (0, 2)
        assert _end_v5(conn, tid, new_pid, 0, False) == (0, new_pid, 1)


@pytest.mark.parametrize("version", [4, 5])
def test_tv2_txn_offset_commit_adds_the_offsets_partition(target, version):
    """A transactional producer commits a group's offsets without AddOffsetsToTxn: from v5
    (transaction version 2) the group's offsets partition joins the transaction and the offsets
    count with the commit; before, the partition is not in the transaction (TRANSACTION_ABORTABLE,
    which v4 clients know; INVALID_TXN_STATE before v4)."""
    topic, tid, group = unique(), unique("tx"), unique("g")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        ensure_group_coordinator(conn, group)
        init = _init(conn, tid, version=5)
        pid, epoch = init.producer_id, init.producer_epoch
        assert _produce_v12(conn, topic, tid, pid, epoch, 0) == (0, 0)

        def commit(producer_epoch: int) -> Any:
            # Kafka may answer NOT_COORDINATOR while the group's partition settles: retried
            return retry_transient(lambda: conn.call(_offset_commit_request(tid, group, pid, producer_epoch, topic, 1),
                                                     version), lambda r: r.topics[0].partitions[0].error_code)

        stale = commit(epoch + 1)
        assert [p.error_code for t in stale.topics for p in t.partitions] == [INVALID_PRODUCER_EPOCH]
        res = commit(epoch)
        assert [p.error_code for t in res.topics for p in t.partitions] == [0 if version >= 5 else 120]
        assert sorted(t.topic for t in _describe(conn, tid).topics) == \
            sorted([topic] + (["__consumer_offsets"] if version >= 5 else []))
        assert _end_v5(conn, tid, pid, epoch, True) == (0, pid, epoch + 1)
        _wait_complete(conn, tid)
        req = OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name=topic, partition_indexes=[0])], require_stable=True)
        # only the settled answer counts: Kafka's group coordinator may still be moving in
        res = poll(lambda: conn.call(req, 7), lambda r: r.error_code == 0 and bool(r.topics)
                   and r.topics[0].partitions[0].error_code == 0, interval=0.05)
        assert res.topics[0].partitions[0].committed_offset == (1 if version >= 5 else -1)


def test_tv2_a_partition_fences_an_older_epoch_it_knows(target):
    """Before asking the coordinator, the partition leader refuses a transactional batch whose
    producer it knows at a newer epoch (INVALID_PRODUCER_EPOCH); otherwise the coordinator
    answers for the transactional id (a producer id not its own: INVALID_PRODUCER_ID_MAPPING)."""
    topic, first, second = unique(), unique("tx"), unique("tx")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, partitions=2)
        a = _init(conn, first, version=5)
        b = _init(conn, second, version=5)
        assert _produce_v12(conn, topic, first, a.producer_id, a.producer_epoch, 0) == (0, 0)
        assert _end_v5(conn, first, a.producer_id, a.producer_epoch, True) == (0, a.producer_id, a.producer_epoch + 1)
        _wait_complete(conn, first)
        assert b.producer_id != a.producer_id
        assert _produce_v12(conn, topic, second, a.producer_id, a.producer_epoch, 1) == (INVALID_PRODUCER_EPOCH, -1)
        assert _produce_v12(conn, topic, second, a.producer_id, a.producer_epoch, 0, partition=1) == (49, -1)
        assert _produce_v12(conn, topic, second, a.producer_id, a.producer_epoch + 1, 0) == (49, -1)
