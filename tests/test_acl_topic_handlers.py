"""Authorization in the topic handlers, at the handler level: what the conformance scenarios
(conformance/test_acl_topics.py) cannot see, namely how often the authorizer is asked on the
produce and fetch paths (once per topic per request, never per partition), and the produce
checks that apply only with an authorizer."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
import trio
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from wirekafka.broker import dispatch
from wirekafka.security.acl.authorizer import (AccessControlEntry, AclBinding, AclOperation, Authorizer, PermissionType,
                                         PatternType, ResourcePattern, ResourceType)
from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import served_versions as api_versions, codec, records
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.response_parts import RegionResponse

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class CountingAuthorizer(Authorizer):
    """The broker's authorizer, counting the decisions it is asked for."""

    asked: list[tuple[AclOperation, ResourceType, str]]

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        self.asked.append((operation, resource_type, name))
        return super().authorize(principal, host, operation, resource_type, name)


def _state(tmp_path: Path, authorizer: bool) -> BrokerState:
    props = {"log.dirs": str(tmp_path / "data")}
    if authorizer:
        props |= {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    state = BrokerState(build_config(props))
    state.load()
    if authorizer:
        counting = CountingAuthorizer(state.authorizer.super_users, False)
        counting.asked = []
        state.authorizer = counting
    return state


def _allow(state: BrokerState, operation: AclOperation, resource_type: ResourceType, name: str) -> None:
    state.authorizer.add([AclBinding(ResourcePattern(resource_type, name, PatternType.LITERAL),
                                     AccessControlEntry("User:alice", "*", operation, PermissionType.ALLOW))])


def _dispatch(state: BrokerState, request: Any, version: int) -> tuple[codec.RequestHeader, Any]:
    """Dispatch `request` through wire bytes as alice from 127.0.0.1; the header and the answer."""
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="acl-test")
    frame = bytes(request.encode(header=True))
    header = codec.parse_header(frame)
    body = codec.decode_body(header, frame)
    ctx = RequestContext(state, header, state.config.listeners[0].name, "127.0.0.1:5000", principal="alice")
    return header, trio.run(dispatch.dispatch, ctx, body)


def _call(state: BrokerState, request: Any, version: int) -> Any:
    """The answer to `request` (see _dispatch), decoded as a client would."""
    header, response = _dispatch(state, request, version)
    if isinstance(response, RegionResponse):
        out = b"".join(p if isinstance(p, bytes) else p.read()
                       for p in codec.encode_response_parts(header.api_key, version, 7, response))
    else:
        out = codec.encode_response(header.api_key, version, 7, response)
    (size, correlation) = struct.unpack_from(">ii", out)
    assert size == len(out) - 4 and correlation == 7
    cls = api_versions.response_class(header.api_key)
    return cls.decode(out[8 + cls.flexible_version_q(version):], version=version)


def _produce(topic_partitions: dict[str, list[int]], transactional_id: str | None = None, acks: int = -1,
             transactional: bool = False) -> ProduceRequest:
    def records_for(i: int) -> bytes:
        if transactional:
            return records.build_batch([(b"k", b"v", 1_700_000_000_000)], producer_id=5, producer_epoch=0,
                                       base_sequence=0, transactional=True)
        return records.build_batch([(b"k", b"v%d" % i, 1_700_000_000_000)])
    return ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=t, topic_id=None, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=records_for(p)) for p in parts])
        for t, parts in topic_partitions.items()])


def _fetch(topic_partitions: dict[str, list[int]], replica_id: int = -1) -> FetchRequest:
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                            topic=t, topic_id=None, partitions=[FetchRequest.FetchTopic.FetchPartition(
                                partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                log_start_offset=-1, partition_max_bytes=1 << 20) for p in parts])
                            for t, parts in topic_partitions.items()],
                        forgotten_topics_data=[], rack_id="")


def _codes(answer: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.index): p.error_code for t in answer.responses for p in t.partition_responses}


def test_produce_asks_once_per_topic(tmp_path: Path) -> None:
    state = _state(tmp_path, authorizer=True)
    trio.run(state.metadata.create_topic, "a", 3)
    trio.run(state.metadata.create_topic, "b", 2)
    _allow(state, AclOperation.WRITE, ResourceType.TOPIC, "a")
    answer = _call(state, _produce({"a": [0, 1, 2], "b": [0, 1]}), 9)
    assert _codes(answer) == {("a", 0): 0, ("a", 1): 0, ("a", 2): 0,
                              ("b", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                              ("b", 1): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert state.authorizer.asked == [(AclOperation.WRITE, ResourceType.TOPIC, "a"),
                                      (AclOperation.WRITE, ResourceType.TOPIC, "b")]
    assert state.metadata.partition("b", 0).log_end_offset == 0  # nothing written where refused


def test_fetch_asks_once_per_topic_and_once_for_a_follower(tmp_path: Path) -> None:
    state = _state(tmp_path, authorizer=True)
    trio.run(state.metadata.create_topic, "a", 3)
    _allow(state, AclOperation.READ, ResourceType.TOPIC, "a")
    answer = _call(state, _fetch({"a": [0, 1, 2]}), 12)
    assert [p.error_code for p in answer.responses[0].partitions] == [0, 0, 0]
    assert state.authorizer.asked == [(AclOperation.READ, ResourceType.TOPIC, "a")]
    state.authorizer.asked.clear()
    answer = _call(state, _fetch({"a": [0, 1, 2]}, replica_id=1), 12)
    assert [p.error_code for p in answer.responses[0].partitions] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 3
    assert state.authorizer.asked == [(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")]


def test_transactional_batch_needs_write_on_its_transactional_id(tmp_path: Path) -> None:
    state = _state(tmp_path, authorizer=True)
    trio.run(state.metadata.create_topic, "a", 1)
    _allow(state, AclOperation.WRITE, ResourceType.TOPIC, "a")
    for transactional_id in ("txn", None):
        answer = _call(state, _produce({"a": [0]}, transactional_id, transactional=True), 9)
        part = answer.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset, part.error_message) == (
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, None)
    with pytest.raises(CloseConnection):  # acks=0: Kafka closes the connection instead of answering
        _dispatch(state, _produce({"a": [0]}, "txn", acks=0, transactional=True), 9)
    # an idempotent (not transactional) batch needs no transactional id
    assert _codes(_call(state, _produce({"a": [0]}), 9)) == {("a", 0): 0}


def test_without_an_authorizer_nothing_is_refused(tmp_path: Path) -> None:
    state = _state(tmp_path, authorizer=False)
    trio.run(state.metadata.create_topic, "a", 2)
    assert _codes(_call(state, _produce({"a": [0, 1]}), 9)) == {("a", 0): 0, ("a", 1): 0}
    answer = _call(state, _fetch({"a": [0, 1]}, replica_id=-1), 12)
    assert [p.error_code for p in answer.responses[0].partitions] == [0, 0]
    meta = _call(state, MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                        include_cluster_authorized_operations=True,
                                        include_topic_authorized_operations=True), 10)
    assert [(t.name, t.authorized_operations) for t in meta.topics] == [("a", {3, 4, 5, 6, 7, 8, 10, 11})]
    assert meta.authorized_operations == {5, 7, 8, 9, 10, 11, 12}


def test_metadata_asks_cluster_create_once(tmp_path: Path) -> None:
    state = _state(tmp_path, authorizer=True)
    for name in ("x", "y"):
        _allow(state, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    _allow(state, AclOperation.CREATE, ResourceType.TOPIC, "y")
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("x", "y", "z")],
                              allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    answer = _call(state, request, 9)
    assert [(t.name, t.error_code) for t in answer.topics] == [
        ("y", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("x", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("z", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert state.authorizer.asked.count((AclOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster")) == 1
