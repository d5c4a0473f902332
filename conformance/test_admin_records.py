"""DeleteRecords, OffsetForLeaderEpoch, DescribeCluster, DescribeLogDirs, AlterConfigs,
IncrementalAlterConfigs, OffsetDelete."""

from __future__ import annotations

import pytest
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.admin.topics import DeleteRecordsRequest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetDeleteRequest
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest

from conformance.harness.scenarios import batch, fetch, list_offsets, produce
from conformance.harness.wire import Connection, create_topic, ensure_group_coordinator, retry_transient, settled, unique


def _delete_records(conn, topic, offset, version, partition=0):
    req = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[
        DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=partition, offset=offset)])],
        timeout_ms=10000)
    return conn.call(req, version).topics[0].partitions[0]


@pytest.mark.parametrize("version", range(0, 3))
def test_delete_records(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, batch([b"a", b"b", b"c"]))
        produce(conn, name, batch([b"d", b"e"]))
        res = _delete_records(conn, name, 2, version)
        assert (res.error_code, res.low_watermark) == (0, 2)
        assert list_offsets(conn, name, -2).offset == 2
        assert fetch(conn, name, 1).error_code == 1
        assert fetch(conn, name, 2).error_code == 0
        assert _delete_records(conn, name, 9, version).error_code == 1
        res = _delete_records(conn, name, -1, version)
        assert (res.error_code, res.low_watermark) == (0, 5)
        assert _delete_records(conn, name, 0, version, partition=4).error_code == 3


@pytest.mark.parametrize("version", range(2, 5))
def test_offset_for_leader_epoch(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        t = create_topic(conn, name)
        produce(conn, name, batch([b"a", b"b", b"c"]))
        epoch = t.partitions[0].leader_epoch

        def ask(leader_epoch, current=-1):
            req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                topic=name, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
                    partition=0, current_leader_epoch=current, leader_epoch=leader_epoch)])])
            return conn.call(req, version).topics[0].partitions[0]

        res = ask(epoch)
        assert (res.error_code, res.leader_epoch, res.end_offset) == (0, epoch, 3)
        empty = unique()
        e = create_topic(conn, empty).partitions[0].leader_epoch
        # The leader's epoch entry exists before anything is written: (epoch, 0), not undefined.
        res = conn.call(OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic=empty, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=-1, leader_epoch=e)])]), version).topics[0].partitions[0]
        assert (res.error_code, res.leader_epoch, res.end_offset) == (0, e, 0)
        res = ask(epoch + 1)
        assert (res.error_code, res.leader_epoch, res.end_offset) == (0, -1, -1)
        assert ask(epoch, current=epoch + 5).error_code == 75   # UNKNOWN_LEADER_EPOCH
        if epoch > 0:
            assert ask(epoch, current=epoch - 1).error_code == 74  # FENCED_LEADER_EPOCH


@pytest.mark.parametrize("version", range(0, 3))
def test_describe_cluster(target, version):
    with Connection(target.bootstrap) as conn:
        resp = conn.call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                                include_fenced_brokers=False), version)
    assert resp.error_code == 0 and len(resp.brokers) == 1 and resp.cluster_id
    assert resp.brokers[0].port == int(target.bootstrap.rsplit(":", 1)[1])
    if version >= 1:  # a broker listener: controllers are asked for at the wrong endpoint; 3 is no type
        for endpoint_type, code in ((2, 114), (3, 115)):  # MISMATCHED_ / UNSUPPORTED_ENDPOINT_TYPE
            with Connection(target.bootstrap) as conn:
                bad = conn.call(DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                       endpoint_type=endpoint_type, include_fenced_brokers=False), version)
            assert (bad.error_code, bad.cluster_id, bad.controller_id, bad.brokers) == (code, "", -1, [])


@pytest.mark.parametrize("version", range(1, 6))
def test_describe_log_dirs(target, version):
    """The log directory with the size of each requested partition the broker holds (partitions
    and topics it does not hold are left out); null asks for every partition (this scenario's are
    compared, the broker's others left aside: conformance/harness/compare.py BROKER_WIDE)."""
    name = unique()
    T = DescribeLogDirsRequest.DescribableLogDirTopic
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, partitions=2)
        first, second, third = batch([b"a", b"b", b"c"]), batch([b"d"]), batch([b"e", b"f"])
        produce(conn, name, first)
        produce(conn, name, second)
        produce(conn, name, third, partition=1)
        resp = conn.call(DescribeLogDirsRequest(topics=[T(topic=name, partitions=[0, 1, 7]),
                                                        T(topic=unique(), partitions=[0])]), version)
        (result,) = resp.results
        assert result.error_code == 0 and result.log_dir
        sizes = {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
                 for t in result.topics for p in t.partitions}
        assert sizes == {(name, 0): (len(first) + len(second), 0, False), (name, 1): (len(third), 0, False)}
        if version >= 4:
            assert 0 < result.usable_bytes <= result.total_bytes
        resp = conn.call(DescribeLogDirsRequest(topics=None), version)
        assert {(t.name, p.partition_index) for t in resp.results[0].topics for p in t.partitions} >= set(sizes)
        resp = conn.call(DescribeLogDirsRequest(topics=[]), version)
        assert resp.results[0].topics == []


def _describe_once(conn, topic, key):
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=topic, configuration_keys=[key])], include_synonyms=False)
    (c,) = conn.call(req, 4).results[0].configs
    return c.value, c.config_source


def _settled(conn, topic, key, expected):
    """The first len(expected) fields of the topic's key as described, once they read as expected."""
    return settled(lambda: _describe_once(conn, topic, key)[: len(expected)], expected)


@pytest.mark.parametrize("version", range(0, 2))
def test_incremental_alter_configs(target, version):
    name = unique()
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)

        def alter(configs, topic=name):
            req = IncrementalAlterConfigsRequest(resources=[R(resource_type=2, resource_name=topic, configs=[
                R.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in configs])],
                validate_only=False)
            return conn.call(req, version).responses[0].error_code

        assert alter([("retention.ms", 0, "7200000")]) == 0
        assert _settled(conn, name, "retention.ms", ("7200000", 1)) == ("7200000", 1)
        assert alter([("cleanup.policy", 2, "compact")]) == 0
        assert _settled(conn, name, "cleanup.policy", ("delete,compact",)) == ("delete,compact",)
        assert alter([("retention.ms", 1, None)]) == 0
        assert _settled(conn, name, "retention.ms", ("604800000", 5)) == ("604800000", 5)
        assert alter([("retention.ms", 0, "-7")]) == 40
        assert alter([("retention.ms", 0, "1")], topic=unique()) == 3


@pytest.mark.parametrize("version", range(0, 3))
def test_alter_configs(target, version):
    name = unique()
    R = AlterConfigsRequest.AlterConfigsResource
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, configs={"retention.ms": "1000000"})
        req = AlterConfigsRequest(resources=[R(resource_type=2, resource_name=name, configs=[
            R.AlterableConfig(name="cleanup.policy", value="compact")])], validate_only=False)
        assert conn.call(req, version).responses[0].error_code == 0
        assert _settled(conn, name, "cleanup.policy", ("compact", 1)) == ("compact", 1)
        assert _settled(conn, name, "retention.ms", ("604800000", 5)) == ("604800000", 5)  # replaced


def test_offset_delete(target):
    group, topic = unique("grp"), unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic, 2)
        ensure_group_coordinator(conn, group)
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        commit = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                     group_instance_id=None, topics=[T(name=topic, partitions=[
                                         T.OffsetCommitRequestPartition(partition_index=p, committed_offset=3,
                                                                        committed_metadata="") for p in (0, 1)])])
        done = retry_transient(lambda: conn.call(commit, 8), lambda r: r.topics[0].partitions[0].error_code)
        assert done.topics[0].partitions[0].error_code == 0
        D = OffsetDeleteRequest.OffsetDeleteRequestTopic
        req = OffsetDeleteRequest(group_id=group, topics=[D(name=topic, partitions=[
            D.OffsetDeleteRequestPartition(partition_index=0)])])
        resp = retry_transient(lambda: conn.call(req, 0), lambda r: r.error_code)
        assert resp.error_code == 0 and resp.topics[0].partitions[0].error_code == 0
        missing = conn.call(OffsetDeleteRequest(group_id=unique("nogroup"), topics=[]), 0)
        assert missing.error_code == 69


@pytest.mark.parametrize("version", range(0, 3))
def test_elect_leaders(target, version):
    """One broker leads every partition it has: a preferred or unclean election is never needed;
    an unknown partition is named as such."""
    from kafka.protocol.admin import ElectLeadersRequest

    name = unique()
    T = ElectLeadersRequest.TopicPartitions
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, partitions=2)
        for election_type in ((0, 1) if version >= 1 else (0,)):
            req = ElectLeadersRequest(election_type=election_type, timeout_ms=10000,
                                      topic_partitions=[T(topic=name, partitions=[0, 1, 7])])
            resp = conn.call(req, version)
            results = {p.partition_id: p.error_code for r in resp.replica_election_results for p in r.partition_result}
            assert results == {0: 84, 1: 84, 7: 3}
    # (All partitions at once lists every topic in Kafka's hash order: see tests/test_admin_handlers.py.)


@pytest.mark.parametrize("version", range(0, 2))
def test_partition_reassignments(target, version):
    """One broker: reassigning a partition to itself completes at once, leaves nothing in
    progress, and a cancel finds nothing to cancel; unknown partitions and brokers are refused."""
    from kafka.protocol.admin import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest

    name = unique()
    A = AlterPartitionReassignmentsRequest.ReassignableTopic
    L = ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics
    with Connection(target.bootstrap) as conn:
        node = create_topic(conn, name, partitions=2).partitions[0].leader_id
        req = AlterPartitionReassignmentsRequest(timeout_ms=10000, topics=[A(name=name, partitions=[
            A.ReassignablePartition(partition_index=0, replicas=[node]),
            A.ReassignablePartition(partition_index=1, replicas=None),
            A.ReassignablePartition(partition_index=9, replicas=[node])])])
        resp = conn.call(req, version)
        assert [(p.partition_index, p.error_code) for p in resp.responses[0].partitions] == [(0, 0), (1, 85), (9, 3)]
        listed = conn.call(ListPartitionReassignmentsRequest(timeout_ms=10000, topics=[
            L(name=name, partition_indexes=[0, 1])]), 0)
        assert (listed.error_code, listed.topics) == (0, [])


@pytest.mark.parametrize("version", range(0, 2))
def test_incremental_alter_configs_clears_replication_throttles(target, version):
    """What kafka-reassign-partitions --verify sends every broker: deleting the (unset)
    replication throttles succeeds; setting a static broker config does not."""
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    C = R.AlterableConfig
    with Connection(target.bootstrap) as conn:
        node = str(conn.call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                                    include_fenced_brokers=False), 0).controller_id)
        clear = IncrementalAlterConfigsRequest(validate_only=False, resources=[R(resource_type=4, resource_name=node,
            configs=[C(name=k, config_operation=1, value=None) for k in (
                "leader.replication.throttled.rate", "follower.replication.throttled.rate",
                "replica.alter.log.dirs.io.max.bytes.per.second")])])
        assert conn.call(clear, version).responses[0].error_code == 0
        static = IncrementalAlterConfigsRequest(validate_only=False, resources=[R(resource_type=4, resource_name=node,
            configs=[C(name="log.dirs", config_operation=0, value="/elsewhere")])])
        assert conn.call(static, version).responses[0].error_code != 0


def test_delete_records_answers_are_grouped_in_kafkas_hash_order(target):
    """One answer per partition, grouped by topic in the order of Kafka's hash maps: the
    partitions it acted on and those it refused (no such partition, no such topic) together; when
    it acted on none, the refusals in its immutable maps' order."""
    T = DeleteRecordsRequest.DeleteRecordsTopic
    P = T.DeleteRecordsPartition
    a, b = unique(), unique()
    missing = [unique("miss") for _ in range(2)]
    with Connection(target.bootstrap) as conn:
        create_topic(conn, a, 2)
        create_topic(conn, b, 6)
        answers = [conn.call(DeleteRecordsRequest(timeout_ms=5000, topics=topics), 2) for topics in (
            [T(name=missing[0], partitions=[P(partition_index=0, offset=0)]),
             T(name=a, partitions=[P(partition_index=1, offset=0), P(partition_index=7, offset=0),
                                   P(partition_index=0, offset=5)])],
            [T(name=b, partitions=[P(partition_index=i, offset=0) for i in range(6)]),
             T(name=a, partitions=[P(partition_index=i, offset=0) for i in (4, 2, 7)])],
            [T(name=missing[0], partitions=[P(partition_index=0, offset=0), P(partition_index=3, offset=0)]),
             T(name=a, partitions=[P(partition_index=9, offset=0), P(partition_index=8, offset=0)]),
             T(name=missing[1], partitions=[P(partition_index=2, offset=0)])],
            [T(name=missing[0], partitions=[P(partition_index=0, offset=0)]),
             T(name=a, partitions=[P(partition_index=9, offset=0)])])]
    codes = [{t.name: {p.partition_index: p.error_code for p in t.partitions} for t in r.topics} for r in answers]
    assert codes[0] == {missing[0]: {0: 3}, a: {1: 0, 7: 3, 0: 1}}
    assert codes[1] == {b: {i: 0 for i in range(6)}, a: {4: 3, 2: 3, 7: 3}}
    assert codes[2] == {missing[0]: {0: 3, 3: 3}, a: {9: 3, 8: 3}, missing[1]: {2: 3}}
