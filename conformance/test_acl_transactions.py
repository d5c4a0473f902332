"""ACLs on the transaction and producer APIs, against Kafka 4.3.1 with StandardAuthorizer: what
each API answers a principal without the rights it needs, with them, and with part of them.

- InitProducerId: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an
  idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
  (CLUSTER_AUTHORIZATION_FAILED), a DENY on the topic taking the second way away.
- A whole transaction as alice (InitProducerId, AddPartitionsToTxn, Produce, AddOffsetsToTxn,
  TxnOffsetCommit, EndTxn) with exactly the grants it needs.
- AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn without WRITE on the
  transactional id; AddPartitionsToTxn's per-topic WRITE (an unauthorized topic hides whether it
  exists; the others are OPERATION_NOT_ATTEMPTED); AddOffsetsToTxn's and TxnOffsetCommit's READ on
  the group, TxnOffsetCommit's READ per topic; AddPartitionsToTxn v4 (brokers only: CLUSTER_ACTION).
- PREFIXED grants on transactional ids, and a DENY over an ALLOW.
- WriteTxnMarkers (CLUSTER_ACTION on the cluster), DescribeProducers (READ per topic),
  DescribeTransactions (DESCRIBE per transactional id; the topics shown are those the principal
  may DESCRIBE), ListTransactions (only the transactional ids the principal may DESCRIBE).

The pair is this module's own (conformance/harness/acl_brokers.py). Setup (topics, the coordinators)
is done on the PLAINTEXT listener, whose principal is a super user; the checks run as alice or
bob on the SASL listener. ACLs outlive a scenario, so each one grants on names of its own."""

from __future__ import annotations

from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)

from conformance.harness.acl_brokers import (
    ALL,
    ALTER,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_AUTHORIZATION_FAILED,
    CLUSTER_NAME,
    DENY,
    DESCRIBE,
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    IDEMPOTENT_WRITE,
    PREFIXED,
    READ,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    WRITE,
    Acl,
    acl_pair,
    grant,
    login,
    revoke,
    super_user,
)
from conformance.harness.scenarios import produce
from conformance.test_transactions import _find_txn_coordinator, _txn_batch, _wait_complete
from conformance.harness.wire import TRANSIENT, Connection, create_topic, ensure_group_coordinator, poll, retry_transient, unique

own_wirekafka, own_kafka, target = acl_pair()

UNKNOWN_TOPIC_OR_PARTITION, OPERATION_NOT_ATTEMPTED, INVALID_TOPIC_EXCEPTION = 3, 55, 17
TRANSACTIONAL_ID_NOT_FOUND, TRANSACTION_ABORTABLE = 105, 120
CONCURRENT_TRANSACTIONS = 51
_Topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
_Txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
_CommitTopic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
_CommitPart = _CommitTopic.TxnOffsetCommitRequestPartition



def _init(conn: Connection, tid: str | None, version: int = 4):
    req = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    return poll(lambda: conn.call(req, version),
                lambda r: r.error_code not in TRANSIENT | {CONCURRENT_TRANSACTIONS}, interval=0.05)


def _init_answer(conn: Connection, tid: str | None, version: int = 4) -> tuple[int, int, int]:
    """(error code, producer id, epoch): the id only as "one was given" (>= 0) or -1."""
    r = _init(conn, tid, version)
    return r.error_code, r.producer_id if r.producer_id < 0 else 0, r.producer_epoch


def _add_partitions(conn: Connection, tid: str, pid: int, epoch: int, topics: dict[str, list[int]],
                    version: int = 3) -> dict[tuple[str, int], int]:
    req = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[_Topic(name=t, partitions=p) for t, p in topics.items()])
    res = retry_transient(lambda: conn.call(req, version),
                          lambda r: max((p.partition_error_code for t in r.results_by_topic_v3_and_below
                                         for p in t.results_by_partition), default=0))
    return {(t.name, p.partition_index): p.partition_error_code
            for t in res.results_by_topic_v3_and_below for p in t.results_by_partition}


def _add_offsets(conn: Connection, tid: str, pid: int, epoch: int, group: str, version: int = 3) -> int:
    req = AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
    return retry_transient(lambda: conn.call(req, version), lambda r: r.error_code).error_code


def _txn_commit(conn: Connection, tid: str, pid: int, epoch: int, group: str, topics: dict[str, list[int]],
                version: int = 3) -> dict[tuple[str, int], int]:
    req = TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
        member_id="", group_instance_id=None,
        topics=[_CommitTopic(name=t, partitions=[_CommitPart(partition_index=p, committed_offset=1,
                                                             committed_leader_epoch=-1, committed_metadata="")
                                                 for p in parts]) for t, parts in topics.items()])
    res = retry_transient(lambda: conn.call(req, version),
                          lambda r: max((p.error_code for t in r.topics for p in t.partitions), default=0))
    return {(t.name, p.partition_index): p.error_code for t in res.topics for p in t.partitions}


def _end(conn: Connection, tid: str, pid: int, epoch: int, commit: bool = True, version: int = 3):
    req = EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)
    return retry_transient(lambda: conn.call(req, version), lambda r: r.error_code)


def _describe_txn(conn: Connection, tids: list[str]):
    return conn.call(DescribeTransactionsRequest(transactional_ids=tids), 0).transaction_states


def _prepared(target, tid: str, topics: list[str] = (), group: str | None = None) -> tuple[int, int]:
    """As the super user: the topics exist, the coordinators are loaded, and `tid` has a
    producer id; returns (producer id, epoch)."""
    with super_user(target) as admin:
        for topic in topics:
            create_topic(admin, topic)
        if group is not None:
            ensure_group_coordinator(admin, group)
        _find_txn_coordinator(admin, tid)
        r = _init(admin, tid)
        assert r.error_code == 0, r
        return r.producer_id, r.producer_epoch


# ---- InitProducerId -------------------------------------------------------------------------------
def test_idempotent_producer_needs_idempotent_write_or_write_on_a_topic(target):
    """The first scenario of the module: neither user has any topic WRITE yet."""
    topic = unique("t")
    with super_user(target) as admin:
        create_topic(admin, topic)
        _find_txn_coordinator(admin, unique("tx"))
    with login(target, "bob") as bob:
        assert _init_answer(bob, None) == (CLUSTER_AUTHORIZATION_FAILED, -1, -1)
        assert _init_answer(bob, None, version=2) == (CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    cluster = Acl(CLUSTER, CLUSTER_NAME, IDEMPOTENT_WRITE, principal="User:bob")
    grant(target, cluster)
    with login(target, "bob") as bob:
        assert _init_answer(bob, None) == (0, 0, 0)
    revoke(target, cluster)
    # WRITE on one topic is the other way in; a DENY on a prefix of it takes it away again
    write = Acl(TOPIC, topic, WRITE, principal="User:bob")
    deny = Acl(TOPIC, topic[:-1], WRITE, principal="User:bob", permission=DENY, pattern=PREFIXED)
    grant(target, write)
    with login(target, "bob") as bob:
        assert _init_answer(bob, None) == (0, 0, 0)
        grant(target, deny)
        assert _init_answer(bob, None) == (CLUSTER_AUTHORIZATION_FAILED, -1, -1)
        # a DENY of IDEMPOTENT_WRITE does not matter while a topic WRITE allows it
        revoke(target, deny)
        denied_cluster = Acl(CLUSTER, CLUSTER_NAME, IDEMPOTENT_WRITE, principal="User:bob", permission=DENY)
        grant(target, denied_cluster)
        assert _init_answer(bob, None) == (0, 0, 0)
        revoke(target, denied_cluster)
    # a topic WRITE through a PREFIXED pattern counts as well
    revoke(target, write)
    prefixed = Acl(TOPIC, f"{topic}-more", WRITE, principal="User:bob", pattern=PREFIXED)
    grant(target, prefixed)
    with login(target, "bob") as bob:
        assert _init_answer(bob, None) == (0, 0, 0)
    revoke(target, prefixed)
    with login(target, "bob") as bob:
        assert _init_answer(bob, None) == (CLUSTER_AUTHORIZATION_FAILED, -1, -1)


def test_init_producer_id_needs_write_on_the_transactional_id(target):
    tid = unique("tx")
    with super_user(target) as admin:
        _find_txn_coordinator(admin, tid)
    with login(target, "alice") as alice:
        assert _init_answer(alice, tid) == (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    describe = Acl(TRANSACTIONAL_ID, tid, DESCRIBE)
    grant(target, describe)
    with login(target, "alice") as alice:
        assert _init_answer(alice, tid, version=0) == (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    revoke(target, describe)
    grant(target, Acl(TRANSACTIONAL_ID, tid, WRITE))
    with login(target, "alice") as alice:
        assert _init_answer(alice, tid) == (0, 0, 0)
        assert _init_answer(alice, tid) == (0, 0, 1)


def test_prefixed_grant_and_deny_on_transactional_ids(target):
    prefix = unique("txp")
    inside, other, denied = f"{prefix}-a", unique("tx"), f"{prefix}-denied"
    with super_user(target) as admin:
        for tid in (inside, other, denied):
            _find_txn_coordinator(admin, tid)
    grant(target, Acl(TRANSACTIONAL_ID, prefix, WRITE, pattern=PREFIXED),
          Acl(TRANSACTIONAL_ID, denied, WRITE, permission=DENY))
    with login(target, "alice") as alice:
        assert _init_answer(alice, inside) == (0, 0, 0)
        assert _init_answer(alice, other) == (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
        # the literal DENY wins over the PREFIXED ALLOW that covers the same id
        assert _init_answer(alice, denied) == (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
        assert [(s.transactional_id, s.error_code) for s in _describe_txn(alice, [inside, denied])] == \
            [(inside, 0), (denied, TRANSACTIONAL_ID_NOT_FOUND)]  # DESCRIBE comes with the ALLOW


# ---- a whole transaction ------------------------------------------------------------------------
def test_a_whole_transaction_as_alice(target):
    topic, consumed, tid, group = unique("t"), unique("t"), unique("tx"), unique("g")
    _prepared(target, tid, [topic, consumed], group)
    grant(target, Acl(TRANSACTIONAL_ID, tid, WRITE), Acl(TOPIC, topic, WRITE), Acl(TOPIC, consumed, READ),
          Acl(GROUP, group, READ))
    with login(target, "alice") as alice:
        init = _init(alice, tid)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        assert _add_partitions(alice, tid, pid, epoch, {topic: [0]}) == {(topic, 0): 0}
        res = produce(alice, topic, _txn_batch(pid, epoch, 0, [b"a", b"b"]), transactional_id=tid)
        assert (res.error_code, res.base_offset) == (0, 0)
        assert _add_offsets(alice, tid, pid, epoch, group) == 0
        assert _txn_commit(alice, tid, pid, epoch, group, {consumed: [0]}) == {(consumed, 0): 0}
        assert _end(alice, tid, pid, epoch).error_code == 0
        state = _wait_complete(alice, tid)
        assert (state.error_code, state.transaction_state) == (0, "CompleteCommit")


def test_transaction_apis_without_write_on_the_transactional_id(target):
    topic, tid, group = unique("t"), unique("tx"), unique("g")
    pid, epoch = _prepared(target, tid, [topic], group)
    grant(target, Acl(TRANSACTIONAL_ID, tid, DESCRIBE), Acl(TOPIC, topic, ALL), Acl(GROUP, group, READ))
    with login(target, "alice") as alice:
        failed = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        for version in (0, 3):
            assert _add_partitions(alice, tid, pid, epoch, {topic: [0, 1], "missing": [0]}, version) == \
                {(topic, 0): failed, (topic, 1): failed, ("missing", 0): failed}
        assert _add_offsets(alice, tid, pid, epoch, group) == failed
        assert _txn_commit(alice, tid, pid, epoch, group, {topic: [0], "missing": [3]}) == \
            {(topic, 0): failed, ("missing", 3): failed}
        ended = _end(alice, tid, pid, epoch, version=4)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (failed, -1, -1)
        ended = _end(alice, tid, pid, epoch, version=5)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (failed, -1, -1)
        state = _describe_txn(alice, [tid])[0]
        assert (state.error_code, state.transaction_state) == (0, "Empty")


def test_add_partitions_needs_write_on_each_topic(target):
    allowed, forbidden, tid = unique("t"), unique("t"), unique("tx")
    prefix = unique("p")
    pid, epoch = _prepared(target, tid, [allowed, forbidden])
    grant(target, Acl(TRANSACTIONAL_ID, tid, WRITE), Acl(TOPIC, allowed, WRITE),
          Acl(TOPIC, prefix, WRITE, pattern=PREFIXED))
    with login(target, "alice") as alice:
        # an unauthorized topic fails whether or not it exists; the rest are not attempted
        assert _add_partitions(alice, tid, pid, epoch, {allowed: [0], forbidden: [0], f"{prefix}-x": [0],
                                                        "nowhere": [1]}) == {
            (allowed, 0): OPERATION_NOT_ATTEMPTED, (forbidden, 0): TOPIC_AUTHORIZATION_FAILED,
            (f"{prefix}-x", 0): UNKNOWN_TOPIC_OR_PARTITION, ("nowhere", 1): TOPIC_AUTHORIZATION_FAILED}
        assert _add_partitions(alice, tid, pid, epoch, {allowed: [0, 5]}) == {
            (allowed, 0): OPERATION_NOT_ATTEMPTED, (allowed, 5): UNKNOWN_TOPIC_OR_PARTITION}
        assert _add_partitions(alice, tid, pid, epoch, {allowed: [0]}) == {(allowed, 0): 0}
        assert _describe_txn(alice, [tid])[0].transaction_state == "Ongoing"
    with super_user(target) as admin:  # an internal topic is never authorized, not even for a super user
        assert _add_partitions(admin, tid, pid, epoch, {"__consumer_offsets": [0], allowed: [0]}) == {
            ("__consumer_offsets", 0): TOPIC_AUTHORIZATION_FAILED, (allowed, 0): OPERATION_NOT_ATTEMPTED}


def test_add_partitions_v4_is_for_brokers(target):
    topic, tid = unique("t"), unique("tx")
    pid, epoch = _prepared(target, tid, [topic])
    grant(target, Acl(TRANSACTIONAL_ID, tid, WRITE), Acl(TOPIC, topic, WRITE))
    req = AddPartitionsToTxnRequest(transactions=[_Txn(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                       verify_only=True, topics=[_Topic(name=topic, partitions=[0])])])
    with login(target, "alice") as alice:
        res = alice.call(req, 4)
        assert (res.error_code, res.results_by_transaction) == (CLUSTER_AUTHORIZATION_FAILED, [])
    cluster_action = Acl(CLUSTER, CLUSTER_NAME, CLUSTER_ACTION)
    grant(target, cluster_action)
    with login(target, "alice") as alice:
        res = alice.call(req, 4)
        assert res.error_code == 0
        assert [(r.transactional_id, [(t.name, [(p.partition_index, p.partition_error_code)
                                                for p in t.results_by_partition]) for t in r.topic_results])
                for r in res.results_by_transaction] == [(tid, [(topic, [(0, TRANSACTION_ABORTABLE)])])]
    revoke(target, cluster_action)  # the other scenarios' alice is no broker


def test_add_offsets_and_txn_offset_commit_need_read_on_the_group_and_topics(target):
    readable, other, tid, group = unique("t"), unique("t"), unique("tx"), unique("g")
    pid, epoch = _prepared(target, tid, [readable, other], group)
    described = Acl(GROUP, group, DESCRIBE)
    grant(target, Acl(TRANSACTIONAL_ID, tid, WRITE), Acl(TOPIC, readable, READ), Acl(TOPIC, other, WRITE), described)
    with login(target, "alice") as alice:
        assert _add_offsets(alice, tid, pid, epoch, group) == GROUP_AUTHORIZATION_FAILED
        assert _txn_commit(alice, tid, pid, epoch, group, {readable: [0]}) == {(readable, 0): GROUP_AUTHORIZATION_FAILED}
    revoke(target, described)
    grant(target, Acl(GROUP, group, READ))
    with login(target, "alice") as alice:
        assert _add_offsets(alice, tid, pid, epoch, group) == 0
        assert _txn_commit(alice, tid, pid, epoch, group, {other: [0], readable: [0, 7], "nowhere": [0]}) == {
            (other, 0): TOPIC_AUTHORIZATION_FAILED, (readable, 0): 0, (readable, 7): UNKNOWN_TOPIC_OR_PARTITION,
            ("nowhere", 0): TOPIC_AUTHORIZATION_FAILED}
        assert _end(alice, tid, pid, epoch, commit=False).error_code == 0


# ---- the inter-broker and admin APIs ----------------------------------------------------------------
def test_write_txn_markers_needs_cluster_action(target):
    marker = WriteTxnMarkersRequest.WritableTxnMarker
    req = WriteTxnMarkersRequest(markers=[marker(
        producer_id=4242, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
        topics=[marker.WritableTxnMarkerTopic(name="nowhere", partition_indexes=[0])])])

    def answer(conn: Connection) -> list:
        return [(m.producer_id, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in m.topics])
                for m in conn.call(req, 1).markers]

    refused = [(4242, [("nowhere", [(0, CLUSTER_AUTHORIZATION_FAILED)])])]
    served = [(4242, [("nowhere", [(0, UNKNOWN_TOPIC_OR_PARTITION)])])]
    with login(target, "alice") as alice:
        assert answer(alice) == refused
    # (one ACL on the cluster at a time, each revoked before the next)
    for acl, user, expected in [(Acl(CLUSTER, CLUSTER_NAME, DESCRIBE), "alice", refused),
                                (Acl(CLUSTER, CLUSTER_NAME, CLUSTER_ACTION), "alice", served),
                                # Kafka lets ALTER on the cluster stand in for CLUSTER_ACTION here
                                (Acl(CLUSTER, CLUSTER_NAME, ALTER, principal="User:bob"), "bob", served)]:
        grant(target, acl)
        with login(target, user) as conn:
            assert answer(conn) == expected
        revoke(target, acl)


def test_describe_producers_needs_read_on_the_topic(target):
    readable, described, tid = unique("t"), unique("t"), unique("tx")
    pid, epoch = _prepared(target, tid, [readable, described])
    with super_user(target) as admin:
        assert _add_partitions(admin, tid, pid, epoch, {readable: [0]}) == {(readable, 0): 0}
        res = produce(admin, readable, _txn_batch(pid, epoch, 0, [b"a"]), transactional_id=tid)
        assert res.error_code == 0
    prefix = unique("p")
    grant(target, Acl(TOPIC, readable, READ), Acl(TOPIC, described, DESCRIBE), Acl(TOPIC, prefix, READ, pattern=PREFIXED))
    req = DescribeProducersRequest(topics=[
        DescribeProducersRequest.TopicRequest(name=t, partition_indexes=p)
        for t, p in ((readable, [0, 4]), (described, [0]), ("nowhere", [0]), (f"{prefix}-x", [0, 1]),
                     ("bad name!", [0]))])
    with login(target, "alice") as alice:
        res = alice.call(req, 0)
    assert [(t.name, [(p.partition_index, p.error_code, p.error_message is None, len(p.active_producers))
                      for p in t.partitions]) for t in res.topics] == [
        (readable, [(0, 0, True, 1), (4, 3, True, 0)]),
        (described, [(0, TOPIC_AUTHORIZATION_FAILED, False, 0)]),
        ("nowhere", [(0, TOPIC_AUTHORIZATION_FAILED, False, 0)]),
        (f"{prefix}-x", [(0, UNKNOWN_TOPIC_OR_PARTITION, False, 0), (1, UNKNOWN_TOPIC_OR_PARTITION, False, 0)]),
        ("bad name!", [(0, INVALID_TOPIC_EXCEPTION, False, 0)])]


def test_describe_transactions_needs_describe_and_hides_topics(target):
    shown, hidden, tid, secret = unique("t"), unique("t"), unique("tx"), unique("tx")
    pid, epoch = _prepared(target, tid, [shown, hidden])
    _prepared(target, secret)
    with super_user(target) as admin:
        assert _add_partitions(admin, tid, pid, epoch, {shown: [0], hidden: [0]}) == {(shown, 0): 0, (hidden, 0): 0}
    grant(target, Acl(TRANSACTIONAL_ID, tid, DESCRIBE), Acl(TOPIC, shown, DESCRIBE))
    with login(target, "alice") as alice:
        states = _describe_txn(alice, [tid, secret, "never-seen"])
    assert [(s.transactional_id, s.error_code, s.transaction_state, s.producer_id == pid, s.producer_epoch,
             s.transaction_timeout_ms, [(t.topic, t.partitions) for t in s.topics]) for s in states] == [
        (tid, 0, "Ongoing", True, epoch, 60000, [(shown, [0])]),
        (secret, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "", False, 0, 0, []),
        ("never-seen", TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "", False, 0, 0, [])]


def test_list_transactions_shows_only_describable_ids(target):
    mine, theirs, prefix = unique("tx"), unique("tx"), unique("txl")
    by_prefix = f"{prefix}-1"
    pids = [_prepared(target, tid)[0] for tid in (mine, theirs, by_prefix)]
    grant(target, Acl(TRANSACTIONAL_ID, mine, WRITE), Acl(TRANSACTIONAL_ID, prefix, DESCRIBE, pattern=PREFIXED))
    req = ListTransactionsRequest(state_filters=[], producer_id_filters=pids, duration_filter=-1)
    with login(target, "alice") as alice:
        res = alice.call(req, 1)
        assert res.error_code == 0
        assert sorted((s.transactional_id, s.transaction_state) for s in res.transaction_states) == \
            sorted([(mine, "Empty"), (by_prefix, "Empty")])
    with login(target, "bob") as bob:
        res = bob.call(req, 1)
        assert (res.error_code, res.transaction_states) == (0, [])
