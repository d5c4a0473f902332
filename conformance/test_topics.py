"""Metadata, CreateTopics, CreatePartitions, DeleteTopics, DescribeConfigs."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from kafka.protocol.metadata.metadata import MetadataRequest

from conformance.harness.wire import Connection, create_topic, metadata, unique, wait_for_topic


def _create(conn, name, partitions=1, rf=1, configs=None, validate_only=False, version=7):
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name=k, value=v)
                 for k, v in (configs or {}).items()])], timeout_ms=30000, validate_only=validate_only)
    return conn.call(req, version).topics[0]


@pytest.mark.parametrize("version", range(2, 8))
def test_create_topics(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        res = _create(conn, name, 3, version=version)
        assert res.error_code == 0 and res.name == name
        if version >= 5:
            assert res.num_partitions == 3 and res.replication_factor == 1
            configs = {c.name: c.value for c in res.configs}
            assert configs["cleanup.policy"] == "delete" and configs["retention.ms"] == "604800000"
        assert _create(conn, name, 3, version=version).error_code == 36  # TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize("case,kwargs,code", [
    ("zero-partitions", {"partitions": 0}, 37),
    ("replication-3", {"rf": 3}, 38),
    ("bad-config-value", {"configs": {"retention.ms": "abc"}}, 40),
    ("small-segment", {"configs": {"segment.bytes": "1024"}}, 40),
    ("internal-segment-not-int", {"configs": {"internal.segment.bytes": "abc"}}, 40),
    ("unknown-config", {"configs": {"no.such.config": "1"}}, 40),
])
def test_create_topics_errors(target, case, kwargs, code):
    with Connection(target.bootstrap) as conn:
        res = _create(conn, unique(), **kwargs)
    assert res.error_code == code


def test_create_topics_invalid_name(target):
    with Connection(target.bootstrap) as conn:
        assert _create(conn, "bad/name").error_code == 17
        assert _create(conn, "x" * 250).error_code == 17


def test_create_topics_validate_only(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        assert _create(conn, name, 2, validate_only=True).error_code == 0
        assert metadata(conn, [name]).topics[0].error_code == 3


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_existing_topic(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, 2)
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        resp = conn.call(req, version)
    (t,) = resp.topics
    assert t.error_code == 0 and t.name == name and len(t.partitions) == 2
    assert sorted(p.partition_index for p in t.partitions) == [0, 1]
    assert len(resp.brokers) == 1
    for p in t.partitions:
        assert p.error_code == 0 and p.leader_id == resp.brokers[0].node_id
        assert list(p.replica_nodes) == [resp.brokers[0].node_id] == list(p.isr_nodes)
        if version >= 7:
            assert p.leader_epoch >= 0
    if version >= 10:
        assert t.topic_id is not None and t.topic_id.int != 0
    if version >= 2:
        assert resp.cluster_id and resp.controller_id == resp.brokers[0].node_id


def _by_ids(conn, ids, version, names=()):
    topics = [MetadataRequest.MetadataRequestTopic(name=None, topic_id=i) for i in ids]
    topics += [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    req = MetadataRequest(topics=topics, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return conn.call(req, version)


def _unknown_ids(count: int) -> list[uuid.UUID]:
    """Ids no topic has, the same on both brokers (their hash order decides Kafka's answer)."""
    return [uuid.uuid5(uuid.NAMESPACE_URL, unique("noid")) for _ in range(count)]


def _answered(resp) -> list[tuple]:
    return [(t.error_code, t.name, len(t.partitions)) for t in resp.topics]


@pytest.mark.parametrize("version", [12, 13])
def test_metadata_by_topic_ids_answers_unknown_ids_first(target, version):
    """Kafka answers ids once each, the unknown ones first: up to four ids in the request's order."""
    names = [unique() for _ in range(2)]
    with Connection(target.bootstrap) as conn:
        for name in names:
            create_topic(conn, name, 2)
        known = [t.topic_id for t in metadata(conn, names).topics]
        x, y = _unknown_ids(2)
        resp = _by_ids(conn, [known[1], x, known[0], x, y, known[1]], version)
    assert _answered(resp) == [(100, None, 0), (100, None, 0), (0, names[1], 2), (0, names[0], 2)]
    assert [t.topic_id for t in resp.topics] == [x, y, known[1], known[0]]


@pytest.mark.parametrize("version", [12, 13])
def test_metadata_by_many_topic_ids_follows_kafkas_hash_order(target, version):
    """More than four ids: Kafka's sets of ids and of names iterate in hash order."""
    names = [unique() for _ in range(6)]
    with Connection(target.bootstrap) as conn:
        for name in names:
            create_topic(conn, name)
        known = [t.topic_id for t in metadata(conn, names).topics]
        unknown = _unknown_ids(3)
        resp = _by_ids(conn, [unknown[2], *known, unknown[0], known[3], unknown[1]], version)
    assert sorted(t.name for t in resp.topics[3:]) == sorted(names)
    assert {t.topic_id for t in resp.topics[:3]} == set(unknown) and all(t.error_code == 100 for t in resp.topics[:3])


def test_metadata_by_topic_ids_ignores_names_in_the_same_request(target):
    names = [unique() for _ in range(2)]
    with Connection(target.bootstrap) as conn:
        for name in names:
            create_topic(conn, name)
        first = metadata(conn, names[:1]).topics[0].topic_id
        resp = _by_ids(conn, [first], 12, names=names[1:])
    assert _answered(resp) == [(0, names[0], 1)]


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_topic_ids_before_v12_are_an_invalid_request(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        known = metadata(conn, [name]).topics[0].topic_id
        resp = _by_ids(conn, [known], version, names=[name])
        nameless = _by_ids(conn, [], version, names=[name]).topics
        resp_null = conn.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None)],
                                              allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False), version)
    assert [(t.error_code, t.name) for t in resp.topics] == [(42, ""), (42, name)]
    assert (resp.brokers, resp.controller_id) == ([], -1)
    assert [t.error_code for t in nameless] == [0]
    assert [(t.error_code, t.name) for t in resp_null.topics] == [(42, "")]


@pytest.mark.parametrize("version", [4, 9, 12])
def test_metadata_unknown_topic_without_auto_create(target, version):
    with Connection(target.bootstrap) as conn:
        resp = metadata(conn, [unique()], version=version, auto_create=False)
    assert resp.topics[0].error_code == 3


def test_metadata_auto_creates_topic(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        first = metadata(conn, [name], auto_create=True)
        # Kafka answers before its controller has created the topic: UNKNOWN_TOPIC_OR_PARTITION.
        assert (first.topics[0].error_code, first.topics[0].partitions) == (3, [])
        t = wait_for_topic(conn, name, 1)
    assert t.error_code == 0 and len(t.partitions) == 1


def test_metadata_invalid_topic_name(target):
    with Connection(target.bootstrap) as conn:
        assert metadata(conn, ["bad/name"], auto_create=True).topics[0].error_code == 17


@pytest.mark.parametrize("version", range(0, 4))
def test_create_partitions(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, 1)
        def grow(count):
            req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
                name=name, count=count, assignments=None)], timeout_ms=10000, validate_only=False)
            return conn.call(req, version).results[0]
        assert grow(3).error_code == 0
        assert grow(2).error_code == 37
        assert grow(3).error_code == 37
        req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name=unique(), count=3, assignments=None)], timeout_ms=10000, validate_only=False)
        assert conn.call(req, version).results[0].error_code == 3


@pytest.mark.parametrize("version", range(1, 7))
def test_delete_topics(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        t = create_topic(conn, name, 1)
        if version >= 6:
            req = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=t.topic_id)],
                                      timeout_ms=10000)
        else:
            req = DeleteTopicsRequest(topic_names=[name], timeout_ms=10000)
        res = conn.call(req, version).responses[0]
        assert res.error_code == 0
        if version >= 6:
            assert res.name == name
        again = DeleteTopicsRequest(topic_names=[name], topics=[DeleteTopicsRequest.DeleteTopicState(name=name)],
                                    timeout_ms=10000)
        assert conn.call(again, version).responses[0].error_code == 3


def test_internal_segment_bytes_is_accepted_and_listed_only_when_set(target):
    """Kafka 4's internal topic config for segments under 1 MiB (what tests use since KIP-1030):
    CreateTopics takes it, and it is listed (by CreateTopics and DescribeConfigs) only for a
    topic that sets it."""
    small, plain = unique(), unique()
    with Connection(target.bootstrap) as conn:
        res = _create(conn, small, configs={"internal.segment.bytes": "1024"})
        assert res.error_code == 0
        listed = {c.name: (c.value, c.config_source) for c in res.configs}
        assert listed["internal.segment.bytes"] == ("1024", 1) and listed["segment.bytes"] == ("1073741824", 5)
        assert "internal.segment.bytes" not in {c.name for c in _create(conn, plain).configs}
        for name, present in ((small, True), (plain, False)):
            wait_for_topic(conn, name, 1)
            req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=2, resource_name=name, configuration_keys=["internal.segment.bytes"])],
                include_synonyms=True, include_documentation=False)
            res = conn.call(req, 4).results[0]
            assert res.error_code == 0
            assert [(c.name, c.value, c.config_source, c.config_type) for c in res.configs] == (
                [("internal.segment.bytes", "1024", 1, 3)] if present else [])


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_configs_topic(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, 1, {"retention.ms": "123456"})
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name=name, configuration_keys=["retention.ms", "cleanup.policy"])],
            include_synonyms=True, include_documentation=False)
        res = conn.call(req, version).results[0]
        assert res.error_code == 0
        configs = {c.name: c for c in res.configs}
        assert set(configs) == {"retention.ms", "cleanup.policy"}
        assert configs["retention.ms"].value == "123456" and configs["cleanup.policy"].value == "delete"
        assert configs["retention.ms"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
        assert configs["cleanup.policy"].config_source == 5  # DEFAULT_CONFIG
        if version >= 3:
            assert configs["retention.ms"].config_type == 5  # LONG
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name=unique(), configuration_keys=None)], include_synonyms=False)
        assert conn.call(req, version).results[0].error_code == 3
