"""Authorization of the topic APIs and the cluster admin APIs against Kafka 4.3.1 with its
StandardAuthorizer (conformance/harness/acl_brokers.py: alice and bob log in with PLAIN and have no rights
until a scenario grants them some).

What each API needs, and what a client without it gets:
- Produce: WRITE on the topic, else TOPIC_AUTHORIZATION_FAILED per partition, whether the topic
  exists or not; a batch of a transaction needs WRITE on the request's transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition.
- Fetch: READ on the topic (DESCRIBE is not enough); a follower's fetch (replica_id >= 0) needs
  CLUSTER_ACTION, else TOPIC_AUTHORIZATION_FAILED for every partition.
- ListOffsets, OffsetForLeaderEpoch: DESCRIBE on the topic (OffsetForLeaderEpoch: or
  CLUSTER_ACTION), implied by READ; a DENY of DESCRIBE wins over the implication.
- Metadata: a topic without DESCRIBE is TOPIC_AUTHORIZATION_FAILED with no id and no partitions,
  whether it exists or not, and absent from an all-topics answer; auto-creation also needs CREATE
  on the cluster or the topic; topic authorized operations (v8+) and cluster authorized
  operations (v8-10: 0 without DESCRIBE on the cluster). By topic id (v12), a topic without
  DESCRIBE keeps its id and loses its name.
- DescribeTopicPartitions: like Metadata, the refused topics last; authorized operations.
- CreateTopics: CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED after the
  others; a topic created without DESCRIBE_CONFIGS on it is answered without its configs,
  partitions and replication factor (topic_config_error_code TOPIC_AUTHORIZATION_FAILED).
- DeleteTopics, by name and by id: DELETE on the cluster or the topic; a refused topic the client
  may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED even when it does not exist, and by id without
  its name.
- CreatePartitions: ALTER on the topic. DeleteRecords: DELETE on the topic.
- DescribeCluster: cluster authorized operations, 0 without DESCRIBE on the cluster.
- DescribeLogDirs: DESCRIBE on the cluster, else no results (and CLUSTER_AUTHORIZATION_FAILED v3+).
- ElectLeaders, AlterPartitionReassignments: ALTER on the cluster; ListPartitionReassignments:
  DESCRIBE on the cluster; else CLUSTER_AUTHORIZATION_FAILED for the request and each partition.
- LITERAL, PREFIXED and wildcard "*" grants apply alike; a DENY wins over an ALLOW.

The grants themselves are left out of the compared transcripts (acl_brokers.grant). Grants on the
cluster and on "*" would leak into later scenarios, so those scenarios revoke them
when they end; every other grant names the scenario's own topics."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Any, Iterator

from kafka.protocol.admin import (AlterPartitionReassignmentsRequest, ElectLeadersRequest,
                                  ListPartitionReassignmentsRequest)
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreateTopicsRequest, DeleteRecordsRequest,
                                         DeleteTopicsRequest, DescribeTopicPartitionsRequest)
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from conformance.harness.acl_brokers import (ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, CLUSTER_AUTHORIZATION_FAILED,
                                     CLUSTER_NAME, CREATE, DELETE, DENY, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE,
                                     PREFIXED, READ, TOPIC, TOPIC_AUTHORIZATION_FAILED,
                                     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, WRITE, Acl, acl_pair, grant, login,
                                     revoke, super_user)
from conformance.harness.scenarios import batch, fetch, list_offsets, produce
from conformance.harness.wire import Connection, create_topic, poll, unique

own_wirekafka, own_kafka, target = acl_pair()

UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 3, 100
NOT_REQUESTED = -2**31  # an authorized-operations field nobody asked for (kafka-python: None in a bit field)
ZERO_UUID = uuid.UUID(int=0)


def _bits(*operations: int) -> int:
    """An authorized-operations int32 (DescribeTopicPartitions)."""
    return sum(1 << op for op in operations)


def _ops(*operations: int) -> set[int]:
    """An authorized-operations bit field as kafka-python decodes it (Metadata, DescribeCluster)."""
    return set(operations)



def _topic(target, partitions: int = 1) -> str:
    name = unique("t")
    with super_user(target) as conn:
        create_topic(conn, name, partitions)
    return name


def _topic_id(target, name: str) -> uuid.UUID:
    with super_user(target) as conn:
        return _metadata(conn, [name]).topics[0].topic_id


@contextmanager
def _granted(target, *acls: Acl) -> Iterator[None]:
    """ACLs that would leak into later scenarios (on the cluster, on "*"): revoked at the end."""
    grant(target, *acls)
    try:
        yield
    finally:
        revoke(target, *acls)


def _metadata(conn: Connection, names: list[str] | None, version: int = 12, auto_create: bool = False,
              topic_ops: bool = False, cluster_ops: bool = False) -> Any:
    topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n, topic_id=ZERO_UUID)
                                         for n in names]
    return conn.call(MetadataRequest(topics=topics, allow_auto_topic_creation=auto_create,
                                     include_cluster_authorized_operations=cluster_ops,
                                     include_topic_authorized_operations=topic_ops), version)


def _shown(answer: Any) -> list[tuple[str | None, int, int]]:
    return [(t.name, t.error_code, len(t.partitions)) for t in answer.topics]


# ---- Produce -------------------------------------------------------------------------------------

def test_produce_needs_write_on_the_topic(target):
    name, missing = _topic(target), unique("missing")
    with login(target, "alice") as alice:
        refused = produce(alice, name, batch([b"v"]))
        assert (refused.error_code, refused.base_offset) == (TOPIC_AUTHORIZATION_FAILED, -1)
        # a topic that does not exist is refused alike: the client learns nothing of it
        assert produce(alice, missing, batch([b"v"])).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, DESCRIBE))
        assert produce(alice, name, batch([b"v"])).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, WRITE))
        written = produce(alice, name, batch([b"v"]))
        assert (written.error_code, written.base_offset) == (0, 0)
        grant(target, Acl(TOPIC, missing, WRITE))
        assert produce(alice, missing, batch([b"v"])).error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_produce_by_topic_id(target):
    name = _topic(target)
    topic_id = _topic_id(target, name)
    with login(target, "alice") as alice:
        assert produce(alice, "", batch([b"v"]), version=13, topic_id=topic_id).error_code == TOPIC_AUTHORIZATION_FAILED
        assert produce(alice, "", batch([b"v"]), version=13, topic_id=uuid.uuid4()).error_code == UNKNOWN_TOPIC_ID
        grant(target, Acl(TOPIC, name, WRITE))
        assert produce(alice, "", batch([b"v"]), version=13, topic_id=topic_id).error_code == 0


def test_produce_deny_wins_over_allow(target):
    prefix = unique("p")
    name = f"{prefix}-x"
    with super_user(target) as conn:
        create_topic(conn, name)
    with login(target, "alice") as alice:
        grant(target, Acl(TOPIC, prefix, WRITE, pattern=PREFIXED))
        assert produce(alice, name, batch([b"v"])).error_code == 0
        grant(target, Acl(TOPIC, name, WRITE, permission=DENY))
        assert produce(alice, name, batch([b"v"])).error_code == TOPIC_AUTHORIZATION_FAILED


def test_transactional_produce_needs_write_on_the_transactional_id(target):
    name, txn = _topic(target), unique("txn")
    grant(target, Acl(TOPIC, name, WRITE))
    records = batch([b"v"], producer_id=1000, producer_epoch=0, base_sequence=0, transactional=True)
    with login(target, "alice") as alice:
        for transactional_id in (txn, None):
            refused = produce(alice, name, records, transactional_id=transactional_id)
            assert (refused.error_code, refused.base_offset) == (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)


def test_produce_with_a_wildcard_grant(target):
    name = _topic(target)
    with login(target, "bob") as bob:
        assert produce(bob, name, batch([b"v"])).error_code == TOPIC_AUTHORIZATION_FAILED
        with _granted(target, Acl(TOPIC, "*", WRITE, principal="User:bob")):
            assert produce(bob, name, batch([b"v"])).error_code == 0


# ---- Fetch, ListOffsets, OffsetForLeaderEpoch ----------------------------------------------------

def _follower_fetch(conn: Connection, name: str) -> Any:
    req = FetchRequest(replica_id=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                       session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=name, topic_id=None, partitions=[
                           FetchRequest.FetchTopic.FetchPartition(
                               partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                               log_start_offset=-1, partition_max_bytes=1 << 20) for p in (0, 1)])],
                       forgotten_topics_data=[], rack_id="")
    return conn.call(req, 12)


def test_fetch_needs_read_on_the_topic(target):
    name, missing = _topic(target), unique("missing")
    with super_user(target) as conn:
        assert produce(conn, name, batch([b"v"])).error_code == 0
    with login(target, "alice") as alice:
        assert fetch(alice, name, 0).error_code == TOPIC_AUTHORIZATION_FAILED
        assert fetch(alice, missing, 0).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, DESCRIBE))
        refused = fetch(alice, name, 0)
        assert (refused.error_code, refused.high_watermark, refused.records) == (TOPIC_AUTHORIZATION_FAILED, -1, b"")
        grant(target, Acl(TOPIC, name, READ))
        read = fetch(alice, name, 0)
        assert (read.error_code, read.high_watermark) == (0, 1)
        grant(target, Acl(TOPIC, missing, READ))
        assert fetch(alice, missing, 0).error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_lists_refused_partitions_last(target):
    refused, allowed = _topic(target), _topic(target, partitions=2)
    grant(target, Acl(TOPIC, allowed, READ))
    with login(target, "alice") as alice:
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                   topic=n, topic_id=None, partitions=[FetchRequest.FetchTopic.FetchPartition(
                                       partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                       log_start_offset=-1, partition_max_bytes=1 << 20) for p in parts])
                                   for n, parts in ((allowed, [1]), (refused, [0]), (allowed, [0]))],
                               forgotten_topics_data=[], rack_id="")
        answer = alice.call(request, 12)
        assert [(t.topic, [(p.partition_index, p.error_code) for p in t.partitions]) for t in answer.responses] == [
            (allowed, [(1, 0), (0, 0)]), (refused, [(0, TOPIC_AUTHORIZATION_FAILED)])]


def test_fetch_by_topic_id(target):
    name = _topic(target)
    topic_id = _topic_id(target, name)
    with login(target, "alice") as alice:
        assert fetch(alice, "", 0, version=13, topic_id=topic_id).error_code == TOPIC_AUTHORIZATION_FAILED
        assert fetch(alice, "", 0, version=13, topic_id=uuid.uuid4()).error_code == UNKNOWN_TOPIC_ID
        grant(target, Acl(TOPIC, name, READ))
        assert fetch(alice, "", 0, version=13, topic_id=topic_id).error_code == 0


def test_a_follower_fetch_needs_cluster_action(target):
    name = _topic(target, partitions=2)
    grant(target, Acl(TOPIC, name, READ))
    with login(target, "alice") as alice:
        answer = _follower_fetch(alice, name)
        assert [p.error_code for p in answer.responses[0].partitions] == [TOPIC_AUTHORIZATION_FAILED] * 2


def test_list_offsets_needs_describe(target):
    name, missing = _topic(target), unique("missing")
    with login(target, "alice") as alice:
        refused = list_offsets(alice, name, -1)
        assert (refused.error_code, refused.offset, refused.timestamp) == (TOPIC_AUTHORIZATION_FAILED, -1, -1)
        assert list_offsets(alice, missing, -1).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, READ))  # READ implies DESCRIBE
        assert (list_offsets(alice, name, -1).error_code, list_offsets(alice, name, -1).offset) == (0, 0)
        grant(target, Acl(TOPIC, name, DESCRIBE, permission=DENY))
        assert list_offsets(alice, name, -1).error_code == TOPIC_AUTHORIZATION_FAILED


def _offset_for_leader_epoch(conn: Connection, names: list[str]) -> Any:
    req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic=n, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=-1, leader_epoch=0)]) for n in names])
    return conn.call(req, 4)


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(target):
    allowed, refused = _topic(target), _topic(target)
    grant(target, Acl(TOPIC, allowed, DESCRIBE))
    with login(target, "alice") as alice:
        answer = _offset_for_leader_epoch(alice, [refused, allowed])
        assert [(t.topic, t.partitions[0].error_code) for t in answer.topics] == [
            (allowed, 0), (refused, TOPIC_AUTHORIZATION_FAILED)]
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, CLUSTER_ACTION)):
            answer = _offset_for_leader_epoch(alice, [refused, allowed])
            assert [(t.topic, t.partitions[0].error_code) for t in answer.topics] == [(refused, 0), (allowed, 0)]


# ---- Metadata ------------------------------------------------------------------------------------

def test_metadata_hides_topics_without_describe(target):
    hidden, shown, missing = _topic(target), _topic(target), unique("missing")
    grant(target, Acl(TOPIC, shown, READ))  # READ implies DESCRIBE
    with login(target, "alice") as alice:
        answer = _metadata(alice, [hidden, missing, shown])
        assert _shown(answer) == [(shown, 0, 1), (hidden, TOPIC_AUTHORIZATION_FAILED, 0),
                                  (missing, TOPIC_AUTHORIZATION_FAILED, 0)] or _shown(answer) == [
            (shown, 0, 1), (missing, TOPIC_AUTHORIZATION_FAILED, 0), (hidden, TOPIC_AUTHORIZATION_FAILED, 0)]
        assert [t.topic_id for t in answer.topics if t.error_code] == [None, None]  # the zero id


def test_metadata_one_refused_topic_per_request(target):
    hidden, missing = _topic(target), unique("missing")
    with login(target, "alice") as alice:
        for version in (1, 4, 8, 12, 13):
            for name in (hidden, missing):
                answer = _metadata(alice, [name], version, auto_create=version >= 4)
                assert _shown(answer) == [(name, TOPIC_AUTHORIZATION_FAILED, 0)]


def test_metadata_authorized_operations(target):
    name, described = _topic(target), unique("missing")
    grant(target, Acl(TOPIC, name, READ), Acl(TOPIC, name, ALTER), Acl(TOPIC, described, DESCRIBE))
    with login(target, "alice") as alice:
        for version in (8, 10, 12):
            answer = _metadata(alice, [name, unique("missing"), described], version, topic_ops=True,
                               cluster_ops=True)
            assert answer.topics[0].authorized_operations == _ops(READ, ALTER, DESCRIBE)
            # a topic it may describe has its operations even when it does not exist; a refused one none
            assert (answer.topics[1].name, answer.topics[1].authorized_operations) == (described, _ops(DESCRIBE))
            assert answer.topics[2].authorized_operations is None
            assert answer.authorized_operations == (set() if version <= 10 else None)
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, DESCRIBE), Acl(CLUSTER, CLUSTER_NAME, ALTER)):
            answer = _metadata(alice, [name], 10, topic_ops=True, cluster_ops=True)
            assert answer.authorized_operations == _ops(ALTER, DESCRIBE)


def test_metadata_by_topic_id(target):
    name = _topic(target)
    topic_id = _topic_id(target, name)
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=topic_id)],
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    with login(target, "alice") as alice:
        refused = alice.call(request, 12).topics[0]
        assert (refused.name, refused.topic_id, refused.error_code) == (None, topic_id, TOPIC_AUTHORIZATION_FAILED)
        grant(target, Acl(TOPIC, name, DESCRIBE))
        found = alice.call(request, 12).topics[0]
        assert (found.name, found.error_code, len(found.partitions)) == (name, 0, 1)


def test_metadata_auto_creation_needs_create(target):
    by_topic, by_cluster, undescribed = unique("auto"), unique("auto"), unique("auto")
    grant(target, Acl(TOPIC, by_topic, DESCRIBE), Acl(TOPIC, by_cluster, DESCRIBE), Acl(TOPIC, undescribed, CREATE))
    with login(target, "alice") as alice:
        for name in (by_topic, undescribed):
            assert _shown(_metadata(alice, [name], auto_create=True)) == [(name, TOPIC_AUTHORIZATION_FAILED, 0)]
        assert _shown(_metadata(alice, [by_topic], auto_create=False)) == [(by_topic, UNKNOWN_TOPIC_OR_PARTITION, 0)]
        grant(target, Acl(TOPIC, by_topic, CREATE))
        _metadata(alice, [by_topic], auto_create=True)
        created = poll(lambda: _metadata(alice, [by_topic]), lambda a: a.topics[0].error_code == 0)
        assert _shown(created) == [(by_topic, 0, 1)]
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, CREATE)):
            _metadata(alice, [by_cluster], auto_create=True)
            created = poll(lambda: _metadata(alice, [by_cluster]), lambda a: a.topics[0].error_code == 0)
            assert _shown(created) == [(by_cluster, 0, 1)]



def test_metadata_orders_topics_as_kafka_sets_do(target):
    """Kafka keeps the requested names in a Scala Set and answers from sets split off it: the
    existing topics, then the missing ones, then the refused ones, each name once. Up to four
    names keep the request's order within each part; with more, each part follows its own set's
    hash order."""
    prefix = unique("p")
    found, missing = [f"{prefix}-f{i}" for i in range(3)], [f"{prefix}-m{i}" for i in range(2)]
    hidden, hidden_missing = [_topic(target) for _ in range(2)], [unique("missing") for _ in range(2)]
    with super_user(target) as conn:
        for name in found:
            create_topic(conn, name)
    grant(target, Acl(TOPIC, prefix, DESCRIBE, pattern=PREFIXED))
    with login(target, "alice") as alice:
        few = [missing[0], hidden[0], found[0]]
        assert _shown(_metadata(alice, few)) == [
            (found[0], 0, 1), (missing[0], UNKNOWN_TOPIC_OR_PARTITION, 0), (hidden[0], TOPIC_AUTHORIZATION_FAILED, 0)]
        many = [hidden_missing[0], missing[1], found[2], hidden[1], missing[0], found[0], hidden[0], found[1],
                hidden_missing[1], hidden[1], found[2]]
        answer = _shown(_metadata(alice, many))
        assert sorted(answer) == sorted([(n, 0, 1) for n in found]
                                        + [(n, UNKNOWN_TOPIC_OR_PARTITION, 0) for n in missing]
                                        + [(n, TOPIC_AUTHORIZATION_FAILED, 0) for n in hidden + hidden_missing])
        assert [code for _, code, _ in answer] == [0] * 3 + [UNKNOWN_TOPIC_OR_PARTITION] * 2 + [
            TOPIC_AUTHORIZATION_FAILED] * 4


def test_metadata_by_topic_id_lists_unknown_shown_then_refused(target):
    """By topic id, Kafka answers the unknown ids, then the topics the principal may describe,
    then those it may not (their id, no name), whatever the request's order."""
    prefix = unique("p")
    shown = f"{prefix}-shown"
    hidden = [_topic(target) for _ in range(2)]
    with super_user(target) as conn:
        create_topic(conn, shown)
    grant(target, Acl(TOPIC, shown, DESCRIBE))
    ids = {n: _topic_id(target, n) for n in [shown, *hidden]}
    unknown = uuid.uuid5(uuid.NAMESPACE_URL, unique("noid"))
    request = [ids[hidden[1]], ids[shown], unknown, ids[hidden[0]]]
    with login(target, "alice") as alice:
        answer = alice.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=i)
                                                    for i in request], allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False), 12)
    assert [(t.topic_id, t.name, t.error_code) for t in answer.topics] == [
        (unknown, None, UNKNOWN_TOPIC_ID), (ids[shown], shown, 0), (ids[hidden[1]], None, TOPIC_AUTHORIZATION_FAILED),
        (ids[hidden[0]], None, TOPIC_AUTHORIZATION_FAILED)]


def test_metadata_orders_auto_created_topics_as_kafka_does(target):
    """With auto-creation, the topics Kafka creates come after the existing ones, then those
    refused creation, then those refused description."""
    prefix = unique("p")
    created = [f"{prefix}-new{i}" for i in range(5)]
    existing, no_create, hidden = f"{prefix}-old", unique("nocreate"), unique("missing")
    with super_user(target) as conn:
        create_topic(conn, existing)
    grant(target, Acl(TOPIC, prefix, DESCRIBE, pattern=PREFIXED), Acl(TOPIC, prefix, CREATE, pattern=PREFIXED),
          Acl(TOPIC, no_create, DESCRIBE))
    with login(target, "alice") as alice:
        answer = _shown(_metadata(alice, [hidden, *created, no_create, existing], auto_create=True))
        assert answer[0] == (existing, 0, 1)
        assert sorted(answer[1:6]) == sorted((n, UNKNOWN_TOPIC_OR_PARTITION, 0) for n in created)
        assert answer[6:] == [(no_create, TOPIC_AUTHORIZATION_FAILED, 0), (hidden, TOPIC_AUTHORIZATION_FAILED, 0)]
        for name in created:
            poll(lambda: _metadata(alice, [name]), lambda a: a.topics[0].error_code == 0)


def test_all_topics_shows_only_the_describable_ones(target):
    """bob is granted nothing else in this module but inside _granted, so his all-topics answers
    hold this scenario's topic alone."""
    shown = _topic(target)
    _topic(target)  # a topic bob may not describe
    grant(target, Acl(TOPIC, shown, DESCRIBE, principal="User:bob"))
    with login(target, "bob") as bob:
        assert _shown(_metadata(bob, None)) == [(shown, 0, 1)]
        assert _shown(_metadata(bob, [], version=0)) == [(shown, 0, 1)]
        answer = bob.call(DescribeTopicPartitionsRequest(topics=[], response_partition_limit=2000, cursor=None), 0)
        assert [(t.name, t.error_code) for t in answer.topics] == [(shown, 0)]


# ---- DescribeTopicPartitions ---------------------------------------------------------------------

def _describe_partitions(conn: Connection, names: list[str], limit: int = 2000) -> Any:
    return conn.call(DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=n) for n in names],
        response_partition_limit=limit, cursor=None), 0)


def test_describe_topic_partitions_needs_describe(target):
    first, hidden, last = _topic(target, 2), _topic(target), _topic(target, 2)
    missing = unique("missing")
    grant(target, Acl(TOPIC, first, DESCRIBE), Acl(TOPIC, last, WRITE), Acl(TOPIC, missing, DESCRIBE))
    with login(target, "alice") as alice:
        answer = _describe_partitions(alice, [last, hidden, first, missing])
        assert [(t.name, t.error_code, len(t.partitions)) for t in answer.topics] == [
            (missing, UNKNOWN_TOPIC_OR_PARTITION, 0), (first, 0, 2), (last, 0, 2),
            (hidden, TOPIC_AUTHORIZATION_FAILED, 0)]
        assert [t.topic_authorized_operations for t in answer.topics] == [
            _bits(DESCRIBE), _bits(DESCRIBE), _bits(WRITE, DESCRIBE), NOT_REQUESTED]
        # the partition limit stops the answer at an authorized topic; refused ones before it are listed
        answer = _describe_partitions(alice, [last, hidden, first], limit=2)
        assert [(t.name, t.error_code) for t in answer.topics] == [(first, 0), (hidden, TOPIC_AUTHORIZATION_FAILED)]
        assert (answer.next_cursor.topic_name, answer.next_cursor.partition_index) == (last, 0)


# ---- CreateTopics --------------------------------------------------------------------------------

def _create(conn: Connection, names: list[str], version: int = 7, validate_only: bool = False) -> Any:
    return conn.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=n, num_partitions=2, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name="retention.ms", value="3600000")])
        for n in names], timeout_ms=30000, validate_only=validate_only), version)


def test_create_topics_needs_create(target):
    refused, allowed = unique("t"), unique("t")
    grant(target, Acl(TOPIC, allowed, CREATE), Acl(TOPIC, allowed, DESCRIBE_CONFIGS))
    with login(target, "alice") as alice:
        answer = _create(alice, [refused, allowed], validate_only=True)
        assert [(t.name, t.error_code, t.num_partitions) for t in answer.topics] == [
            (allowed, 0, 2), (refused, TOPIC_AUTHORIZATION_FAILED, -1)]
        answer = _create(alice, [refused, allowed])
        assert [(t.name, t.error_code, t.num_partitions, t.topic_config_error_code) for t in answer.topics] == [
            (allowed, 0, 2, 0), (refused, TOPIC_AUTHORIZATION_FAILED, -1, 0)]
        assert answer.topics[0].configs
        for version in (2, 4, 5):
            assert [t.error_code for t in _create(alice, [unique("t")], version).topics] == [
                TOPIC_AUTHORIZATION_FAILED]



def test_create_topics_lists_refused_topics_in_kafka_hash_order(target):
    """Many refused topics and names given twice in one request: Kafka's controller lists the
    duplicates, then the refused topics, from Java HashSets of the names (the names given twice
    were in the first set for a while, which grew its table), so not in the request's order."""
    refused, twice, allowed = [unique("t") for _ in range(10)], [unique("t") for _ in range(3)], unique("t")
    grant(target, Acl(TOPIC, allowed, CREATE))
    with login(target, "alice") as alice:
        answer = _create(alice, [*twice, *refused, *twice, allowed], validate_only=True)
        assert sorted((t.name, t.error_code) for t in answer.topics) == sorted(
            [(allowed, 0)] + [(n, 42) for n in twice] + [(n, TOPIC_AUTHORIZATION_FAILED) for n in refused])
        assert answer.topics[0].name == allowed


def test_create_topics_without_describe_configs(target):
    name = unique("t")
    grant(target, Acl(TOPIC, name, CREATE))
    with login(target, "alice") as alice:
        created = _create(alice, [name]).topics[0]
        assert (created.error_code, created.num_partitions, created.replication_factor, created.configs,
                created.topic_config_error_code) == (0, -1, -1, [], TOPIC_AUTHORIZATION_FAILED)
        # the topic exists; alice may not describe it
        again = _create(alice, [name]).topics[0]
        assert again.error_code == 36  # TOPIC_ALREADY_EXISTS


def test_create_topics_by_prefix_and_on_the_cluster(target):
    prefix = unique("p")
    with login(target, "alice") as alice:
        grant(target, Acl(TOPIC, prefix, CREATE, pattern=PREFIXED), Acl(TOPIC, prefix, DESCRIBE, pattern=PREFIXED))
        created = _create(alice, [f"{prefix}-a"]).topics[0]
        assert (created.error_code, created.topic_config_error_code) == (0, TOPIC_AUTHORIZATION_FAILED)
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, CREATE)):
            name = unique("t")
            assert [t.error_code for t in _create(alice, [name, name]).topics] == [42]  # INVALID_REQUEST
            assert [t.error_code for t in _create(alice, [unique("t")]).topics] == [0]


# ---- DeleteTopics --------------------------------------------------------------------------------

def _delete_by_name(conn: Connection, name: str, version: int = 5) -> Any:
    return conn.call(DeleteTopicsRequest(topic_names=[name], timeout_ms=30000), version).responses[0]


def _delete(conn: Connection, name: str | None = None, topic_id: uuid.UUID = ZERO_UUID) -> Any:
    return conn.call(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=name, topic_id=topic_id)],
                                         timeout_ms=30000), 6).responses[0]


def test_delete_topics_by_name(target):
    name, missing = _topic(target), unique("missing")
    with login(target, "alice") as alice:
        for version in (1, 5, 6):
            answer = _delete_by_name(alice, name, version) if version < 6 else _delete(alice, name)
            assert (answer.name, answer.error_code) == (name, TOPIC_AUTHORIZATION_FAILED)
        assert _delete(alice, missing).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, DESCRIBE), Acl(TOPIC, missing, DESCRIBE))
        assert _delete(alice, name).error_code == TOPIC_AUTHORIZATION_FAILED
        assert _delete(alice, missing).error_code == UNKNOWN_TOPIC_OR_PARTITION
        grant(target, Acl(TOPIC, name, DELETE))
        assert _delete(alice, name).error_code == 0


def test_delete_topics_by_id(target):
    name, other = _topic(target), _topic(target)
    topic_id, other_id = _topic_id(target, name), _topic_id(target, other)
    with login(target, "alice") as alice:
        refused = _delete(alice, topic_id=topic_id)
        assert (refused.name, refused.topic_id, refused.error_code) == (None, topic_id, TOPIC_AUTHORIZATION_FAILED)
        assert _delete(alice, topic_id=uuid.uuid4()).error_code == UNKNOWN_TOPIC_ID
        grant(target, Acl(TOPIC, name, DESCRIBE))
        refused = _delete(alice, topic_id=topic_id)
        assert (refused.name, refused.error_code) == (name, TOPIC_AUTHORIZATION_FAILED)
        grant(target, Acl(TOPIC, name, DELETE))
        deleted = _delete(alice, topic_id=topic_id)
        assert (deleted.name, deleted.error_code) == (name, 0)
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, DELETE)):
            deleted = _delete(alice, topic_id=other_id)
            assert (deleted.name, deleted.error_code) == (other, 0)


# ---- CreatePartitions, DeleteRecords -------------------------------------------------------------

def _create_partitions(conn: Connection, name: str, count: int, version: int = 3) -> Any:
    return conn.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name=name, count=count, assignments=None)], timeout_ms=30000, validate_only=False), version).results[0]


def test_create_partitions_needs_alter(target):
    name, missing = _topic(target), unique("missing")
    with login(target, "alice") as alice:
        for version in (0, 3):
            refused = _create_partitions(alice, name, 2, version)
            assert (refused.error_code, refused.error_message) == (TOPIC_AUTHORIZATION_FAILED, None)
        assert _create_partitions(alice, missing, 2).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, DESCRIBE))
        assert _create_partitions(alice, name, 2).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, ALTER), Acl(TOPIC, missing, ALTER))
        assert _create_partitions(alice, name, 2).error_code == 0
        assert _create_partitions(alice, missing, 2).error_code == UNKNOWN_TOPIC_OR_PARTITION


def _delete_records(conn: Connection, name: str, offset: int = 1) -> Any:
    return conn.call(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=name, partitions=[DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
            partition_index=0, offset=offset)])], timeout_ms=30000), 2).topics[0].partitions[0]


def test_delete_records_needs_delete(target):
    name, missing = _topic(target), unique("missing")
    with super_user(target) as conn:
        assert produce(conn, name, batch([b"a", b"b"])).error_code == 0
    with login(target, "alice") as alice:
        refused = _delete_records(alice, name)
        assert (refused.error_code, refused.low_watermark) == (TOPIC_AUTHORIZATION_FAILED, -1)
        assert _delete_records(alice, missing).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, WRITE))
        assert _delete_records(alice, name).error_code == TOPIC_AUTHORIZATION_FAILED
        grant(target, Acl(TOPIC, name, DELETE))
        deleted = _delete_records(alice, name)
        assert (deleted.error_code, deleted.low_watermark) == (0, 1)


# ---- Cluster APIs --------------------------------------------------------------------------------

def test_describe_cluster_authorized_operations(target):
    with login(target, "alice") as alice:
        for version in (0, 1, 2):
            answer = alice.call(DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1,
                                                       include_fenced_brokers=False), version)
            assert (answer.error_code, answer.authorized_operations) == (0, set())
        answer = alice.call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                                   include_fenced_brokers=False), 2)
        assert answer.authorized_operations is None
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, DESCRIBE), Acl(CLUSTER, CLUSTER_NAME, CREATE),
                      Acl(CLUSTER, CLUSTER_NAME, ALTER, permission=DENY)):
            answer = alice.call(DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1,
                                                       include_fenced_brokers=False), 2)
            assert answer.authorized_operations == _ops(CREATE, DESCRIBE)
    with login(target, "admin") as admin:
        answer = admin.call(DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1,
                                                   include_fenced_brokers=False), 2)
        assert answer.authorized_operations == _ops(CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
                                                    ALTER_CONFIGS, IDEMPOTENT_WRITE)


def test_describe_log_dirs_needs_describe_on_the_cluster(target):
    name = _topic(target)
    request = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=name, partitions=[0])])
    with login(target, "alice") as alice:
        assert alice.call(request, 1).results == []
        for version in (3, 4):
            answer = alice.call(request, version)
            assert (answer.error_code, answer.results) == (CLUSTER_AUTHORIZATION_FAILED, [])
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, DESCRIBE)):
            answer = alice.call(request, 4)
            assert answer.error_code == 0 and answer.results[0].topics[0].name == name


def test_elect_leaders_needs_alter_on_the_cluster(target):
    name = _topic(target, partitions=2)
    with login(target, "alice") as alice:
        for version in (0, 1, 2):
            request = ElectLeadersRequest(election_type=0, topic_partitions=[
                ElectLeadersRequest.TopicPartitions(topic=name, partitions=[0, 1])], timeout_ms=10000)
            answer = alice.call(request, version)
            assert [p.error_code for r in answer.replica_election_results for p in r.partition_result] == [
                CLUSTER_AUTHORIZATION_FAILED] * 2
            if version >= 1:
                assert answer.error_code == CLUSTER_AUTHORIZATION_FAILED
        everything = alice.call(ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=10000), 2)
        assert (everything.error_code, everything.replica_election_results) == (CLUSTER_AUTHORIZATION_FAILED, [])
        grant(target, Acl(TOPIC, name, ALTER))  # ALTER on the topic does not help
        answer = alice.call(ElectLeadersRequest(election_type=0, topic_partitions=[
            ElectLeadersRequest.TopicPartitions(topic=name, partitions=[0])], timeout_ms=10000), 2)
        assert answer.error_code == CLUSTER_AUTHORIZATION_FAILED


def test_partition_reassignments_need_the_cluster(target):
    name = _topic(target)
    alter = AlterPartitionReassignmentsRequest(timeout_ms=10000, allow_replication_factor_change=True, topics=[
        AlterPartitionReassignmentsRequest.ReassignableTopic(name=name, partitions=[
            AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(partition_index=0,
                                                                                       replicas=None)])])
    listing = ListPartitionReassignmentsRequest(timeout_ms=10000, topics=[
        ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name=name, partition_indexes=[0])])
    with login(target, "alice") as alice:
        for version in (0, 1):
            answer = alice.call(alter, version)
            assert answer.error_code == CLUSTER_AUTHORIZATION_FAILED
            assert [p.error_code for t in answer.responses for p in t.partitions] == [CLUSTER_AUTHORIZATION_FAILED]
        answer = alice.call(listing, 0)
        assert answer.error_code == CLUSTER_AUTHORIZATION_FAILED
        everything = alice.call(ListPartitionReassignmentsRequest(timeout_ms=10000, topics=None), 0)
        assert (everything.error_code, everything.topics) == (CLUSTER_AUTHORIZATION_FAILED, [])
        with _granted(target, Acl(CLUSTER, CLUSTER_NAME, DESCRIBE)):
            assert alice.call(listing, 0).error_code == 0
            assert alice.call(alter, 1).error_code == CLUSTER_AUTHORIZATION_FAILED
