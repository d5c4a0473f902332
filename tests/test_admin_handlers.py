"""The admin handlers (DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeCluster, DescribeLogDirs, DeleteRecords, OffsetForLeaderEpoch) on a BrokerState in
a temp dir. Every request goes over the wire format and back: encoded by kafka-python at the
version under test, decoded by wirekafka's codec, dispatched, and the response encoded at that
version and decoded again — so each served version is shown to encode. Expected codes and
messages are the ones Apache Kafka 4.3.1 returns for the same requests."""

from __future__ import annotations

import re
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest
from kafka.protocol.admin.configs import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.admin.topics import CreatePartitionsRequest, DeleteRecordsRequest, DeleteTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest

from wirekafka.broker import dispatch
from wirekafka.config import topic as topic_config
from wirekafka.broker.context import RequestContext
from wirekafka.broker.replica.partition import AppendOrigin
from wirekafka.broker.state import BrokerState
from wirekafka.config.broker_keys import BROKER_KEYS, KAFKA3_ONLY_KEYS
from wirekafka.config.loader import build_config
from wirekafka.startup_errors import ConfigError
from wirekafka.protocol import served_versions as api_versions, codec, records
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.response_parts import RegionResponse

ADMIN_KEYS = {20: "DeleteTopics", 21: "DeleteRecords", 23: "OffsetForLeaderEpoch", 32: "DescribeConfigs",
              33: "AlterConfigs", 35: "DescribeLogDirs", 37: "CreatePartitions", 44: "IncrementalAlterConfigs",
              60: "DescribeCluster"}
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
DYNAMIC_TOPIC, STATIC, DEFAULT = 1, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def versions(api_key: int) -> list[int]:
    lo, hi = api_versions.SUPPORTED[api_key]
    return list(range(lo, hi + 1))


def make_state(tmp_path: Path, **props: str) -> BrokerState:
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), **props}))
    state.load()
    return state


def reopen(state: BrokerState) -> BrokerState:
    """A new BrokerState on the same log dir after a clean shutdown."""
    state.shutdown()
    fresh = BrokerState(state.config)
    fresh.load()
    return fresh


def call(state: BrokerState, request: Any, version: int) -> Any:
    """Send request through wire bytes, dispatch it, and decode the response as a client would."""
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="admin-test")
    frame = bytes(request.encode(header=True))
    header = codec.parse_header(frame)
    body = codec.decode_body(header, frame)
    ctx = RequestContext(state, header, state.config.listeners[0].name, "test")
    response = trio.run(dispatch.dispatch, ctx, body)
    if isinstance(response, RegionResponse):  # a Fetch answer: join its parts as the socket would
        out = b"".join(p if isinstance(p, bytes) else p.read()
                       for p in codec.encode_response_parts(header.api_key, version, 7, response))
    else:
        out = codec.encode_response(header.api_key, version, 7, response)
    (size, correlation) = struct.unpack_from(">ii", out)
    assert size == len(out) - 4 and correlation == 7
    cls = api_versions.response_class(header.api_key)
    return cls.decode(out[8 + cls.flexible_version_q(version):], version=version)


def create_topic(state: BrokerState, name: str, partitions: int, configs: dict[str, str] | None = None):
    return trio.run(state.metadata.create_topic, name, partitions, configs)


def produce(state: BrokerState, topic: str, n: int, partition: int = 0, ts: int = 1_700_000_000_000) -> None:
    """n single-record batches appended as the produce path does."""
    p = state.metadata.partition(topic, partition)
    for i in range(n):
        batch = records.build_batch([(b"k", b"v%d" % i, ts + i)])
        p.append(batch, records.validate_batch(batch), AppendOrigin.CLIENT)


# ---- registration --------------------------------------------------------------------------------
def test_admin_apis_are_served_at_kafka_schema_ranges() -> None:
    for key in ADMIN_KEYS:
        cls = api_versions.request_class(key)
        assert api_versions.SUPPORTED[key] == tuple(cls.valid_versions), ADMIN_KEYS[key]
        assert key in dispatch.HANDLERS
    assert {k: api_versions.SUPPORTED[k] for k in ADMIN_KEYS} == {
        20: (1, 6), 21: (0, 2), 23: (2, 4), 32: (1, 4), 33: (0, 2), 35: (1, 5), 37: (0, 3), 44: (0, 1), 60: (0, 2)}
    dispatch.check_table()


# ---- DeleteTopics --------------------------------------------------------------------------------
def _delete_by_name(names: list[str]) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topic_names=names, timeout_ms=5000)


@pytest.mark.parametrize("version", versions(20))
def test_delete_topics_by_name(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    topic = create_topic(state, "doomed", 2)
    produce(state, "doomed", 3)
    directory = tmp_path / "data" / "doomed-0"
    assert directory.is_dir()
    if version < 6:
        req = _delete_by_name(["doomed", "ghost", "twice", "twice"])
    else:
        D = DeleteTopicsRequest.DeleteTopicState
        req = DeleteTopicsRequest(topics=[D(name=n, topic_id=None) for n in ["doomed", "ghost", "twice", "twice"]],
                                  timeout_ms=5000)
    resp = call(state, req, version)
    got = {r.name: r for r in resp.responses}
    assert len(resp.responses) == 3
    assert got["doomed"].error_code == ErrorCode.NONE
    assert got["ghost"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert got["twice"].error_code == ErrorCode.INVALID_REQUEST
    if version >= 5:
        assert got["twice"].error_message == "Duplicate topic name."
    if version >= 6:
        assert got["doomed"].topic_id == topic.topic_id
    assert state.metadata.topic("doomed") is None and state.metadata.topic_by_id(topic.topic_id) is None
    assert not directory.exists() and not (tmp_path / "data" / "doomed-1").exists()
    # Kafka's asynchronous deletion: renamed now, removed after log.segment.delete.delay.ms
    renamed = sorted(p.name for p in (tmp_path / "data").iterdir() if p.name.endswith("-delete"))
    assert [re.sub(r"\.[0-9a-f]{32}-", ".<uuid>-", name) for name in renamed] == \
        ["doomed-0.<uuid>-delete", "doomed-1.<uuid>-delete"]
    assert state.deletes.pending() == 2
    assert reopen(state).metadata.topic("doomed") is None


def test_delete_topics_by_id_v6(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    a, b = create_topic(state, "a", 1), create_topic(state, "b", 1)
    unknown = uuid.uuid4()
    D = DeleteTopicsRequest.DeleteTopicState
    req = DeleteTopicsRequest(topics=[
        D(name=None, topic_id=a.topic_id),           # deleted by id
        D(name=None, topic_id=unknown),              # UNKNOWN_TOPIC_ID
        D(name=None, topic_id=None),                 # neither
        D(name="b", topic_id=b.topic_id),            # both
    ], timeout_ms=5000)
    resp = call(state, req, 6)
    by = {(r.name, r.topic_id): (r.error_code, r.error_message) for r in resp.responses}
    assert by[("a", a.topic_id)] == (ErrorCode.NONE, None)
    assert by[(None, unknown)] == (ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
    assert by[(None, None)] == (ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
    assert by[("b", b.topic_id)] == (ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
    assert {t.name for t in state.metadata.all_topics()} == {"b"}
    # A name and the id it maps to in one request: refused, nothing deleted.
    resp = call(state, DeleteTopicsRequest(topics=[D(name=None, topic_id=b.topic_id), D(name="b", topic_id=None)],
                                           timeout_ms=5000), 6)
    assert [(r.name, r.error_code) for r in resp.responses] == [("b", ErrorCode.INVALID_REQUEST)]
    assert resp.responses[0].error_message == "The provided topic name maps to an ID that was already supplied."
    assert state.metadata.topic("b") is not None


@pytest.mark.parametrize("version", versions(20))
def test_delete_topics_disabled_refuses_every_entry(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path, **{"delete.topic.enable": "false"})
    create_topic(state, "kept", 1)
    if version < 6:
        req = _delete_by_name(["kept", "ghost"])
    else:
        D = DeleteTopicsRequest.DeleteTopicState
        req = DeleteTopicsRequest(topics=[D(name="kept", topic_id=None), D(name="ghost", topic_id=None)],
                                  timeout_ms=5000)
    resp = call(state, req, version)
    expected = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
    assert [(r.name, r.error_code) for r in resp.responses] == [("kept", expected), ("ghost", expected)]
    assert state.metadata.topic("kept") is not None


def test_delete_internal_topic_is_refused(tmp_path: Path) -> None:
    state = make_state(tmp_path, **{"offsets.topic.num.partitions": "2"})
    trio.run(state.groups.ensure_offsets_topic)  # creates __consumer_offsets as FindCoordinator does
    resp = call(state, _delete_by_name(["__consumer_offsets"]), 5)
    assert resp.responses[0].error_code == ErrorCode.INVALID_REQUEST
    assert state.metadata.topic("__consumer_offsets") is not None


# ---- CreatePartitions ----------------------------------------------------------------------------
def _grow(name: str, count: int, assignments: list[list[int]] | None = None) -> Any:
    T = CreatePartitionsRequest.CreatePartitionsTopic
    return T(name=name, count=count,
             assignments=None if assignments is None else [T.CreatePartitionsAssignment(broker_ids=a)
                                                           for a in assignments])


def _create_partitions(state: BrokerState, version: int, *topics: Any, validate_only: bool = False) -> Any:
    req = CreatePartitionsRequest(topics=list(topics), timeout_ms=5000, validate_only=validate_only)
    return {r.name: (r.error_code, r.error_message) for r in call(state, req, version).results}


@pytest.mark.parametrize("version", versions(37))
def test_create_partitions(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    create_topic(state, "t", 2)
    assert _create_partitions(state, version, _grow("t", 5), validate_only=True) == {"t": (ErrorCode.NONE, None)}
    assert len(state.metadata.topic("t").partitions) == 2
    assert _create_partitions(state, version, _grow("t", 4, [[1], [1]])) == {"t": (ErrorCode.NONE, None)}
    assert len(state.metadata.topic("t").partitions) == 4 and (tmp_path / "data" / "t-3").is_dir()
    produce(state, "t", 2, partition=3)
    assert state.metadata.partition("t", 3).high_watermark == 2
    assert _create_partitions(state, version, _grow("t", 4)) == {
        "t": (ErrorCode.INVALID_PARTITIONS, "Topic already has 4 partition(s).")}
    assert _create_partitions(state, version, _grow("t", 1)) == {
        "t": (ErrorCode.INVALID_PARTITIONS, "The topic t currently has 4 partition(s); 1 would not be an increase.")}
    assert _create_partitions(state, version, _grow("ghost", 3)) == {"ghost": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)}
    assert _create_partitions(state, version, _grow("t", 6), _grow("t", 7)) == {
        "t": (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")}
    bad = {
        "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.": [[1]],
        "The manual partition assignment includes an empty replica list.": [[1], []],
        "The manual partition assignment includes broker 7, but no such broker is registered.": [[1], [7]],
        "The manual partition assignment includes the broker 1 more than once.": [[1, 1], [1]],
    }
    for message, assignment in bad.items():
        assert _create_partitions(state, version, _grow("t", 6, assignment)) == {
            "t": (ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)}
    assert len(state.metadata.topic("t").partitions) == 4
    assert len(reopen(state).metadata.topic("t").partitions) == 4


# ---- DescribeConfigs -----------------------------------------------------------------------------
def _describe(state: BrokerState, version: int, rtype: int, name: str, keys: list[str] | None = None,
              synonyms: bool = True) -> Any:
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=rtype, resource_name=name, configuration_keys=keys)],
                                 include_synonyms=synonyms, include_documentation=False)
    return call(state, req, version).results[0]


def _syn(entry: Any) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


@pytest.mark.parametrize("version", versions(32))
def test_describe_topic_configs(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path, **{"log.retention.ms": "7200000", "log.segment.bytes": "2097152"})
    create_topic(state, "t", 1, {"segment.bytes": "1048576", "cleanup.policy": "compact"})
    result = _describe(state, version, TOPIC, "t")
    assert (result.error_code, result.error_message) == (ErrorCode.NONE, "")
    entries = {c.name: c for c in result.configs}
    # every topic config but Kafka's internal one, listed only when set
    assert sorted(entries) == sorted(set(topic_config.TOPIC_CONFIGS) - {"internal.segment.bytes"})
    seg = entries["segment.bytes"]
    assert (seg.value, seg.config_source, seg.read_only, seg.is_sensitive) == ("1048576", DYNAMIC_TOPIC, False, False)
    assert _syn(seg) == [("segment.bytes", "1048576", DYNAMIC_TOPIC), ("log.segment.bytes", "2097152", STATIC),
                         ("log.segment.bytes", "1073741824", DEFAULT)]
    ret = entries["retention.ms"]
    assert (ret.value, ret.config_source) == ("7200000", STATIC)
    assert _syn(ret) == [("log.retention.ms", "7200000", STATIC), ("log.retention.hours", "168", DEFAULT)]
    assert (entries["cleanup.policy"].value, entries["cleanup.policy"].config_source) == ("compact", DYNAMIC_TOPIC)
    # Kafka's chain starts at the topic config's own broker key: no log.roll.ms, no synonyms.
    assert (entries["segment.ms"].value, entries["segment.ms"].config_source, _syn(entries["segment.ms"])) == (
        "604800000", DEFAULT, [])
    assert _syn(entries["max.message.bytes"]) == [("message.max.bytes", "1048588", DEFAULT)]
    assert _syn(entries["preallocate"]) == [("log.preallocate", "false", DEFAULT)]
    if version >= 3:
        assert (entries["retention.ms"].config_type, entries["cleanup.policy"].config_type,
                entries["segment.bytes"].config_type, entries["preallocate"].config_type) == (5, 7, 3, 1)
    assert all(c.synonyms == [] for c in _describe(state, version, TOPIC, "t", synonyms=False).configs)


@pytest.mark.parametrize("version", versions(32))
def test_internal_segment_bytes_replaces_segment_bytes_and_is_listed_only_when_set(tmp_path: Path,
                                                                                   version: int) -> None:
    """Kafka 4's internal topic config internal.segment.bytes (any INT, no 1 MiB minimum): what
    Kafka's tests, and wirekafka's, use for small segments. Kafka 4.3.1 lists it in DescribeConfigs
    only for a topic that sets it, as a dynamic topic config with no broker synonym."""
    state = make_state(tmp_path)
    topic = create_topic(state, "t", 1, {"internal.segment.bytes": "1024"})
    assert topic.partitions[0].log_config.segment_bytes == 1024
    entries = {c.name: c for c in _describe(state, version, TOPIC, "t").configs}
    internal = entries["internal.segment.bytes"]
    assert (internal.value, internal.config_source, _syn(internal)) == (
        "1024", DYNAMIC_TOPIC, [("internal.segment.bytes", "1024", DYNAMIC_TOPIC)])
    assert (entries["segment.bytes"].value, entries["segment.bytes"].config_source) == ("1073741824", DEFAULT)
    if version >= 3:
        assert internal.config_type == 3  # INT
    for value in ("abc", "2147483648"):
        assert _alter(state, 1, (TOPIC, "t", {"internal.segment.bytes": value})) == [
            (ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration internal.segment.bytes: "
                                       "Not a number of type INT")]
    assert _incremental(state, 1, TOPIC, "t", [("internal.segment.bytes", SET, "-5")]) == (ErrorCode.NONE, None)
    assert topic.partitions[0].log_config.segment_bytes == -5  # Kafka accepts it too
    assert _incremental(state, 1, TOPIC, "t", [("internal.segment.bytes", DELETE, None)]) == (ErrorCode.NONE, None)
    assert topic.partitions[0].log_config.segment_bytes == 1073741824
    assert "internal.segment.bytes" not in {c.name for c in _describe(state, version, TOPIC, "t").configs}


def test_broker_log_segment_bytes_has_kafka_4s_minimum(tmp_path: Path) -> None:
    """Kafka 4.3.1 refuses a log.segment.bytes under 1 MiB at start-up (KIP-1030), with this
    message, and has no broker-level internal key for smaller segments."""
    with pytest.raises(ConfigError) as exc:
        build_config({"log.dirs": str(tmp_path), "log.segment.bytes": "1048575"})
    assert str(exc.value) == ("Invalid value 1048575 for configuration log.segment.bytes: "
                              "Value must be at least 1048576")
    assert build_config({"log.dirs": str(tmp_path), "log.segment.bytes": "1048576"}).int("log.segment.bytes") == 1048576


@pytest.mark.parametrize("version", versions(32))
def test_describe_configs_filters_and_errors(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    create_topic(state, "t", 1)
    picked = _describe(state, version, TOPIC, "t", ["retention.ms", "no.such.key"])
    assert [c.name for c in picked.configs] == ["retention.ms"]
    assert len(_describe(state, version, TOPIC, "t", []).configs) == len(topic_config.TOPIC_CONFIGS) - 1
    assert _describe(state, version, TOPIC, "t", ["internal.segment.bytes"]).configs == []  # internal, not set
    missing = _describe(state, version, TOPIC, "ghost")
    assert (missing.error_code, missing.error_message, missing.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "", [])
    # Kafka 4.3.1's texts for illegal names (a 249-character name is legal, so merely unknown).
    for name, text in (
            ("bad/name", "'bad/name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
            ("", "the empty string is not allowed"), ("..", "'..' is not allowed"),
            ("a" * 250, f"the length of '{'a' * 250}' is longer than the max allowed length 249")):
        illegal = _describe(state, version, TOPIC, name)
        assert (illegal.error_code, illegal.error_message) == (
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {text}")
    assert _describe(state, version, TOPIC, "a" * 249).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    wrong = _describe(state, version, BROKER, "7")
    assert (wrong.error_code, wrong.error_message) == (
        ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 7")
    assert _describe(state, version, BROKER, "abc").error_message == "Broker id must be an integer, but it is: abc"
    # the cluster-wide dynamic defaults a Kafka 4 cluster is formatted with
    cluster_default = _describe(state, version, BROKER, "")
    assert cluster_default.error_code == ErrorCode.NONE
    assert [(c.name, c.value, c.config_source) for c in cluster_default.configs] == [("min.insync.replicas", "1", 3)]
    for rtype in (16, 32, 9):
        refused = _describe(state, version, rtype, "x")
        assert refused.error_code == ErrorCode.INVALID_REQUEST and refused.error_message
    assert _describe(state, version, 99, "x").error_message.startswith(
        "This most likely occurs because of a request being malformed by the client library")


def test_a_dropped_key_set_at_start_is_listed(tmp_path: Path) -> None:
    """Kafka lists every key a broker was started with, so a 3.x key set in server.properties
    is listed on the single node too."""
    state = make_state(tmp_path, **{"shutdown.timeout.ms": "5000"})
    names = {c.name for c in _describe(state, 4, BROKER, "1").configs}
    assert "shutdown.timeout.ms" in names and "zookeeper.connect" not in names


@pytest.mark.parametrize("version", versions(32))
def test_describe_broker_configs(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path, **{"message.max.bytes": "2000000", "log.cleanup.policy": "compact,delete"})
    result = _describe(state, version, BROKER, "1")
    entries = {c.name: c for c in result.configs}
    # a single node leaves out the keys Kafka 4 dropped (ZooKeeper's and other 3.x leftovers)
    assert sorted(entries) == sorted(set(BROKER_KEYS) - KAFKA3_ONLY_KEYS)
    mmb = entries["message.max.bytes"]
    assert (mmb.value, mmb.config_source, mmb.read_only) == ("2000000", STATIC, False)  # dynamic in Kafka 4
    assert entries["log.dirs"].read_only and entries["log.retention.hours"].read_only
    assert _syn(mmb) == [("message.max.bytes", "2000000", STATIC), ("message.max.bytes", "1048588", DEFAULT)]
    assert (entries["log.cleanup.policy"].value, entries["log.cleanup.policy"].config_source) == ("compact,delete", STATIC)
    assert (entries["auto.create.topics.enable"].value, entries["auto.create.topics.enable"].config_source) == (
        "true", DEFAULT)
    assert (entries["log.dirs"].value, entries["log.dirs"].config_source) == (str(tmp_path / "data"), STATIC)
    assert (entries["log.retention.ms"].value, _syn(entries["log.retention.ms"])) == (None, [])
    assert _syn(entries["log.retention.hours"]) == [("log.retention.hours", "168", DEFAULT)]
    assert entries["log.cleaner.min.cleanable.ratio"].value == "0.5"
    if version >= 3:
        types = {n: entries[n].config_type for n in ("message.max.bytes", "log.retention.ms", "log.cleanup.policy",
                                                     "delete.topic.enable", "compression.type",
                                                     "log.cleaner.min.cleanable.ratio", "offsets.topic.replication.factor")}
        assert types == {"message.max.bytes": 3, "log.retention.ms": 5, "log.cleanup.policy": 7,
                         "delete.topic.enable": 1, "compression.type": 2, "log.cleaner.min.cleanable.ratio": 6,
                         "offsets.topic.replication.factor": 4}
    loggers = {c.name: c for c in _describe(state, version, BROKER_LOGGER, "1").configs}
    assert "root" in loggers and loggers["root"].value in {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}
    assert _describe(state, version, BROKER_LOGGER, "").error_code == ErrorCode.INVALID_REQUEST


# ---- AlterConfigs --------------------------------------------------------------------------------
def _alter(state: BrokerState, version: int, *resources: tuple[int, str, dict[str, str | None]],
           validate_only: bool = False) -> list[tuple[int, str | None]]:
    R = AlterConfigsRequest.AlterConfigsResource
    req = AlterConfigsRequest(resources=[R(resource_type=t, resource_name=n, configs=[
        R.AlterableConfig(name=k, value=v) for k, v in c.items()]) for t, n, c in resources],
        validate_only=validate_only)
    return [(r.error_code, r.error_message) for r in call(state, req, version).responses]


@pytest.mark.parametrize("version", versions(33))
def test_alter_configs_replaces_all_overrides(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    topic = create_topic(state, "t", 2, {"flush.ms": "60000", "retention.ms": "1000000"})
    ok = [(ErrorCode.NONE, None)]
    assert _alter(state, version, (TOPIC, "t", {"retention.ms": "5000"}), validate_only=True) == ok
    assert topic.configs == {"flush.ms": "60000", "retention.ms": "1000000"}
    assert _alter(state, version, (TOPIC, "t", {"retention.ms": "5000", "segment.bytes": "2097152"})) == ok
    assert topic.configs == {"retention.ms": "5000", "segment.bytes": "2097152"}  # flush.ms back to default
    for p in topic.partitions:  # the live logs obey at once
        assert (p.log_config.retention_ms, p.log_config.segment_bytes) == (5000, 2097152)
        assert p.log_config.flush_ms == 2**63 - 1
    assert reopen(state).metadata.topic("t").configs == {"retention.ms": "5000", "segment.bytes": "2097152"}


@pytest.mark.parametrize("version", versions(33))
def test_alter_configs_errors(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    topic = create_topic(state, "t", 1, {"retention.ms": "1000000"})
    assert _alter(state, version, (TOPIC, "t", {"retention.ms": "abc"})) == [
        (ErrorCode.INVALID_CONFIG, "Invalid value abc for configuration retention.ms: Not a number of type LONG")]
    assert _alter(state, version, (TOPIC, "t", {"segment.bytes": "1000"})) == [
        (ErrorCode.INVALID_CONFIG, "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576")]
    assert _alter(state, version, (TOPIC, "t", {"nope.name": "1"})) == [
        (ErrorCode.INVALID_CONFIG, "Unknown topic config name: nope.name")]
    assert _alter(state, version, (TOPIC, "t", {"retention.ms": None})) == [
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")]
    assert _alter(state, version, (TOPIC, "ghost", {"retention.ms": "1"})) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist.")]
    assert _alter(state, version, (TOPIC, "t", {}), (TOPIC, "t", {})) == [
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2
    assert _alter(state, version, (BROKER, "1", {"log.retention.hours": "1"})) == [
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [log.retention.hours]")]
    assert _alter(state, version, (BROKER, "", {})) == [  # the whole default would lose min.insync.replicas
        (ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")]
    assert _alter(state, version, (BROKER, "1", {})) == [(ErrorCode.NONE, None)]
    assert _alter(state, version, (BROKER, "9", {})) == [
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 9")]
    assert _alter(state, version, (BROKER_LOGGER, "1", {"root": "INFO"})) == [
        (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")]
    assert topic.configs == {"retention.ms": "1000000"}


def test_broker_throttles_are_listed_kept_across_restarts_and_replaced(tmp_path: Path) -> None:
    """The dynamic throttles join the full broker listing once set, outlive a restart (kept with
    the topics), and AlterConfigs replaces the broker's whole set."""
    state = make_state(tmp_path)
    leader, follower = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
    before = {c.name for c in _describe(state, 4, BROKER, "1").configs}
    assert leader not in before
    assert _alter(state, 1, (BROKER, "1", {leader: "1000", follower: "2000"})) == [(ErrorCode.NONE, None)]
    assert _incremental(state, 1, BROKER, "", [(leader, SET, "3000")]) == (ErrorCode.NONE, None)
    listed = {c.name: c for c in _describe(state, 4, BROKER, "1").configs}
    assert set(listed) == before | {leader, follower}
    assert (listed[leader].value, listed[leader].config_source, listed[leader].read_only) == ("1000", 2, False)
    assert _syn(listed[leader]) == [(leader, "1000", 2), (leader, "3000", 3)]
    assert [c.name for c in _describe(state, 4, BROKER, "").configs] == ["leader.replication.throttled.rate",
                                                                         "min.insync.replicas"]
    assert state.quotas.leader.exceeded() is False
    state = reopen(state)
    assert state.metadata.broker_configs.own == {leader: "1000", follower: "2000"}
    assert state.metadata.broker_configs.rate(leader) == 1000
    assert _alter(state, 1, (BROKER, "1", {follower: "5"})) == [(ErrorCode.NONE, None)]
    assert state.metadata.broker_configs.own == {follower: "5"}
    assert state.metadata.broker_configs.rate(leader) == 3000  # the cluster default now


# ---- IncrementalAlterConfigs ---------------------------------------------------------------------
def _incremental(state: BrokerState, version: int, rtype: int, name: str, ops: list[tuple[str, int, str | None]],
                 validate_only: bool = False) -> tuple[int, str | None]:
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[R(resource_type=rtype, resource_name=name, configs=[
        R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])], validate_only=validate_only)
    (r,) = call(state, req, version).responses
    return r.error_code, r.error_message


@pytest.mark.parametrize("version", versions(44))
def test_incremental_alter_configs_operations(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    topic = create_topic(state, "t", 1, {"flush.ms": "60000"})
    ok = (ErrorCode.NONE, None)
    assert _incremental(state, version, TOPIC, "t", [("retention.ms", SET, "7200000")], validate_only=True) == ok
    assert topic.configs == {"flush.ms": "60000"}
    assert _incremental(state, version, TOPIC, "t", [("retention.ms", SET, "7200000"), ("flush.ms", DELETE, None),
                                                     ("segment.bytes", SET, "1048576")]) == ok
    assert topic.configs == {"retention.ms": "7200000", "segment.bytes": "1048576"}
    assert topic.partitions[0].log_config.retention_ms == 7200000
    assert topic.partitions[0].log_config.segment_bytes == 1048576
    # APPEND without an override starts from Kafka's default ("delete"); items already present are kept once.
    assert _incremental(state, version, TOPIC, "t", [("cleanup.policy", APPEND, "compact,delete")]) == ok
    assert topic.configs["cleanup.policy"] == "delete,compact"
    assert _incremental(state, version, TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")]) == ok
    assert topic.configs["cleanup.policy"] == "compact"
    assert _incremental(state, version, TOPIC, "t", [("no.such.config", DELETE, None)]) == ok
    assert reopen(state).metadata.topic("t").configs == {"retention.ms": "7200000", "segment.bytes": "1048576",
                                                 "cleanup.policy": "compact"}


@pytest.mark.parametrize("version", versions(44))
def test_incremental_alter_configs_errors(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    topic = create_topic(state, "t", 1, {"retention.ms": "1000"})
    not_list = "Can't {} to key retention.ms because its type is not LIST."
    cases = [
        ([("retention.ms", APPEND, "5")], ErrorCode.INVALID_CONFIG, not_list.format("APPEND")),
        ([("retention.ms", SUBTRACT, "5")], ErrorCode.INVALID_CONFIG, not_list.format("SUBTRACT")),
        ([("retention.ms", SET, "-7")], ErrorCode.INVALID_CONFIG,
         "Invalid value -7 for configuration retention.ms: Value must be at least -1"),
        ([("nope.name", SET, "5")], ErrorCode.INVALID_CONFIG, "Unknown topic config name: nope.name"),
        ([("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ([("retention.ms", SET, "5"), ("retention.ms", SET, "6")], ErrorCode.INVALID_REQUEST,
         "Error due to duplicate config keys"),
        ([("retention.ms", 9, "5")], ErrorCode.INVALID_REQUEST, "Unknown operations type 9"),
    ]
    for ops, code, message in cases:
        assert _incremental(state, version, TOPIC, "t", ops) == (code, message)
    assert _incremental(state, version, TOPIC, "ghost", [("retention.ms", SET, "5")]) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist.")
    assert _incremental(state, version, BROKER, "1", [("log.roll.hours", SET, "5"), ("log.dirs", DELETE, None)]) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [log.roll.hours, log.dirs]")
    assert _incremental(state, version, BROKER_LOGGER, "1", [("root", SET, "DEBUG")])[0] == ErrorCode.INVALID_REQUEST
    assert topic.configs == {"retention.ms": "1000"}


# ---- DescribeCluster -----------------------------------------------------------------------------
@pytest.mark.parametrize("version", versions(60))
def test_describe_cluster(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path, **{"listeners": "PLAINTEXT://127.0.0.1:19092",
                                    "advertised.listeners": "PLAINTEXT://kafka.example:29092"})
    req = DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1,
                                 include_fenced_brokers=True)
    resp = call(state, req, version)
    assert (resp.error_code, resp.cluster_id, resp.controller_id) == (ErrorCode.NONE, state.cluster_id, 1)
    (b,) = resp.brokers
    assert (b.broker_id, b.host, b.port, b.rack) == (1, "kafka.example", 29092, None)
    assert set(resp.authorized_operations) == {5, 7, 8, 9, 10, 11, 12}
    if version >= 1:
        assert resp.endpoint_type == 1
    if version >= 2:
        assert b.is_fenced is False
    resp = call(state, DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                              include_fenced_brokers=False), version)
    assert resp.error_code == ErrorCode.NONE and not resp.authorized_operations
    if version >= 1:
        # Kafka's broker listener: controllers are asked for at the wrong endpoint; 3 is no endpoint type.
        for endpoint_type, code, message in (
                (2, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                 "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
                (3, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 3")):
            bad = call(state, DescribeClusterRequest(include_cluster_authorized_operations=True,
                                                     endpoint_type=endpoint_type, include_fenced_brokers=False), version)
            assert (bad.error_code, bad.error_message, bad.endpoint_type, bad.cluster_id, bad.controller_id,
                    bad.brokers, bad.authorized_operations) == (code, message, 1, "", -1, [], None)


# ---- DescribeLogDirs -----------------------------------------------------------------------------
@pytest.mark.parametrize("version", versions(35))
def test_describe_log_dirs(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    create_topic(state, "t", 2)
    produce(state, "t", 3)
    batch_size = len(records.build_batch([(b"k", b"v0", 1_700_000_000_000)]))
    T = DescribeLogDirsRequest.DescribableLogDirTopic

    def describe(topics: list[Any] | None) -> tuple[Any, dict[tuple[str, int], tuple[int, int, bool]]]:
        resp = call(state, DescribeLogDirsRequest(topics=topics), version)
        (result,) = resp.results
        assert (result.error_code, result.log_dir) == (0, str((tmp_path / "data").absolute()))
        if version >= 3:
            assert resp.error_code == 0
        if version >= 4:
            assert 0 < result.usable_bytes <= result.total_bytes
        return result, {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
                        for t in result.topics for p in t.partitions}

    # Partitions and topics the broker does not hold are left out, as Kafka leaves them out.
    _, parts = describe([T(topic="t", partitions=[0, 1, 9]), T(topic="missing", partitions=[0])])
    assert parts == {("t", 0): (3 * batch_size, 0, False), ("t", 1): (0, 0, False)}
    result, parts = describe([T(topic="missing", partitions=[0])])
    assert result.topics == [] and parts == {}
    _, parts = describe(None)  # every partition
    assert parts == {("t", 0): (3 * batch_size, 0, False), ("t", 1): (0, 0, False)}


# ---- DeleteRecords -------------------------------------------------------------------------------
def _delete_records(state: BrokerState, version: int, topic: str, offset: int, partition: int = 0) -> tuple[int, int]:
    T = DeleteRecordsRequest.DeleteRecordsTopic
    req = DeleteRecordsRequest(topics=[T(name=topic, partitions=[T.DeleteRecordsPartition(
        partition_index=partition, offset=offset)])], timeout_ms=5000)
    p = call(state, req, version).topics[0].partitions[0]
    assert p.partition_index == partition
    return p.error_code, p.low_watermark


def _fetch_error(state: BrokerState, topic: str, offset: int) -> int:
    F = FetchRequest.FetchTopic
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                       session_epoch=-1, topics=[F(topic=topic, topic_id=None, partitions=[F.FetchPartition(
                           partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                           log_start_offset=-1, partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    return call(state, req, 12).responses[0].partitions[0].error_code


def _earliest(state: BrokerState, topic: str) -> int:
    T = ListOffsetsRequest.ListOffsetsTopic
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[T(name=topic, partitions=[
        T.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-2)])], timeout_ms=5000)
    return call(state, req, 8).topics[0].partitions[0].offset


@pytest.mark.parametrize("version", versions(21))
def test_delete_records(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    create_topic(state, "t", 2, {"internal.segment.bytes": "200"})  # about two one-record batches per segment
    produce(state, "t", 10)
    directory = tmp_path / "data" / "t-0"
    segments_before = sorted(directory.glob("*.log"))
    assert len(segments_before) >= 4
    assert _delete_records(state, version, "t", 5) == (ErrorCode.NONE, 5)
    assert state.metadata.partition("t", 0).log_start_offset == 5
    assert _earliest(state, "t") == 5
    assert _fetch_error(state, "t", 4) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert _fetch_error(state, "t", 5) == ErrorCode.NONE
    segments_after = sorted(directory.glob("*.log"))
    assert all(int(p.stem) <= 5 for p in segments_after[:1]) and len(segments_after) < len(segments_before)
    assert _delete_records(state, version, "t", 3) == (ErrorCode.NONE, 5)  # below the start: nothing moves
    assert _delete_records(state, version, "t", 11) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert _delete_records(state, version, "t", -2) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert _delete_records(state, version, "t", 0, partition=1) == (ErrorCode.NONE, 0)
    assert _delete_records(state, version, "t", 0, partition=7) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert _delete_records(state, version, "ghost", 0) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert _delete_records(state, version, "t", -1) == (ErrorCode.NONE, 10)  # -1: the high watermark
    assert _fetch_error(state, "t", 9) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert _fetch_error(state, "t", 10) == ErrorCode.NONE


def test_delete_records_refusals(tmp_path: Path) -> None:
    state = make_state(tmp_path, **{"offsets.topic.num.partitions": "1"})
    create_topic(state, "compacted", 1, {"cleanup.policy": "compact"})
    create_topic(state, "both", 1, {"cleanup.policy": "compact,delete"})
    produce(state, "compacted", 2)
    produce(state, "both", 2)
    trio.run(state.groups.ensure_offsets_topic)
    assert _delete_records(state, 2, "compacted", 1) == (ErrorCode.POLICY_VIOLATION, -1)
    assert _delete_records(state, 2, "both", 1) == (ErrorCode.NONE, 1)
    assert _delete_records(state, 2, "__consumer_offsets", 0) == (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)


def test_delete_records_survives_a_crash_and_a_clean_restart(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    create_topic(state, "t", 1)
    produce(state, "t", 6)
    for p in state.metadata.iter_partitions():
        p.files.flush()
    assert _delete_records(state, 2, "t", 4) == (ErrorCode.NONE, 4)
    # No shutdown: the checkpoint written by the handler is all a crashed broker leaves behind.
    crashed = BrokerState(state.config)
    crashed.load()
    assert crashed.metadata.partition("t", 0).log_start_offset == 4
    assert _earliest(crashed, "t") == 4 and _fetch_error(crashed, "t", 3) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert reopen(crashed).metadata.partition("t", 0).log_start_offset == 4


# ---- OffsetForLeaderEpoch ------------------------------------------------------------------------
def _epoch_end(state: BrokerState, version: int, leader_epoch: int, current: int = -1, partition: int = 0,
               topic: str = "t") -> tuple[int, int, int]:
    T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[T(topic=topic, partitions=[T.OffsetForLeaderPartition(
        partition=partition, current_leader_epoch=current, leader_epoch=leader_epoch)])])
    p = call(state, req, version).topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


@pytest.mark.parametrize("version", versions(23))
def test_offset_for_leader_epoch(tmp_path: Path, version: int) -> None:
    state = make_state(tmp_path)
    create_topic(state, "t", 2)
    assert _epoch_end(state, version, 0) == (ErrorCode.NONE, 0, 0)  # the epoch exists before any write
    produce(state, "t", 3)
    assert _epoch_end(state, version, 0) == (ErrorCode.NONE, 0, 3)
    assert _epoch_end(state, version, 0, current=0) == (ErrorCode.NONE, 0, 3)
    assert _epoch_end(state, version, 0, partition=1) == (ErrorCode.NONE, 0, 0)
    assert _epoch_end(state, version, 1) == (ErrorCode.NONE, -1, -1)
    assert _epoch_end(state, version, -1) == (ErrorCode.NONE, -1, -1)
    assert _epoch_end(state, version, 0, current=5) == (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1)
    assert _epoch_end(state, version, 0, partition=9) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert _epoch_end(state, version, 0, topic="ghost") == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)


def test_offset_for_leader_epoch_rules_in_a_later_epoch(tmp_path: Path) -> None:
    """Kafka's cache rules for epochs other than the current one, with the partition in epoch 3."""
    state = make_state(tmp_path)
    create_topic(state, "t", 1)
    partition = state.metadata.partition("t", 0)
    partition.become_leader(3)  # leader in epoch 3 from offset 0: the cache holds (3, 0) alone
    produce(state, "t", 5)
    assert _epoch_end(state, 4, 3) == (ErrorCode.NONE, 3, 5)
    assert _epoch_end(state, 4, 1) == (ErrorCode.NONE, 1, 0)  # older than any known epoch: the entry's start
    assert _epoch_end(state, 4, 7) == (ErrorCode.NONE, -1, -1)
    assert _epoch_end(state, 4, 3, current=2) == (ErrorCode.FENCED_LEADER_EPOCH, -1, -1)
    assert _epoch_end(state, 4, 3, current=4) == (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1)
    assert _delete_records(state, 2, "t", 2) == (ErrorCode.NONE, 2)
    assert _epoch_end(state, 4, 1) == (ErrorCode.NONE, 1, 2)  # the entry's start moved with the log start


# ---- ElectLeaders --------------------------------------------------------------------------------
def test_elect_leaders_on_one_node(tmp_path: Path) -> None:
    """Nothing needs an election on one node; all partitions at once lists each topic empty."""
    from kafka.protocol.admin import ElectLeadersRequest

    state = make_state(tmp_path)
    create_topic(state, "t", 2)
    T = ElectLeadersRequest.TopicPartitions
    resp = call(state, ElectLeadersRequest(election_type=0, timeout_ms=1000,
                                           topic_partitions=[T(topic="t", partitions=[1, 5])]), 2)
    assert [(p.partition_id, p.error_code) for r in resp.replica_election_results for p in r.partition_result] \
        == [(1, 84), (5, 3)]
    resp = call(state, ElectLeadersRequest(election_type=1, timeout_ms=1000, topic_partitions=None), 2)
    assert [(r.topic, r.partition_result) for r in resp.replica_election_results] == [("t", [])]
    resp = call(state, ElectLeadersRequest(election_type=7, timeout_ms=1000, topic_partitions=None), 2)
    assert resp.error_code == 42
