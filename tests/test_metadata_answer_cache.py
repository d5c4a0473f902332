"""Metadata answers to topics asked for by name, kept in the cluster metadata's answer cache
(wirekafka/broker/handlers/metadata.py): only when every topic asked for exists, one per list of
names and version, holding at most MAX_CACHED_PARTITIONS partitions in all. A single node tracks no changes (its
answer_cache is None), so the cache is handed in here; compat-tests/test_cluster.py checks a
cluster's answers follow its changes."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
import trio
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from wirekafka.broker import dispatch
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers import metadata
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import codec
from wirekafka.protocol.encoded_response import EncodedResponse


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[BrokerState, dict]:
    """A single node with topics a and b, whose metadata hands out one dict as its answer cache."""
    node = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "auto.create.topics.enable": "true"}))
    node.load()
    for name, partitions in (("a", 3), ("b", 2)):
        trio.run(node.metadata.create_topic, name, partitions)
    cache: dict = {}
    monkeypatch.setattr(node.metadata, "answer_cache", lambda: cache)
    return node, cache


def _ask(node: BrokerState, names: list[str], version: int = 12) -> tuple[Any, MetadataResponse]:
    """The handler's answer object and the answer decoded from its bytes."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                              allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="cache-test")
    frame = bytes(request.encode(header=True))
    header = codec.parse_header(frame)
    ctx = RequestContext(node, header, node.config.listeners[0].name, "127.0.0.1:5000")
    answer = trio.run(dispatch.dispatch, ctx, codec.decode_body(header, frame))
    out = codec.encode_response(header.api_key, version, 7, answer)
    assert struct.unpack_from(">i", out)[0] == len(out) - 4
    return answer, MetadataResponse.decode(out[8 + MetadataResponse.flexible_version_q(version):], version=version)


def test_an_answer_about_existing_topics_is_kept_per_list_and_version(state: tuple[BrokerState, dict]) -> None:
    node, cache = state
    first, decoded = _ask(node, ["b", "a"])
    assert [(t.name, len(t.partitions)) for t in decoded.topics] == [("b", 2), ("a", 3)]
    again, decoded_again = _ask(node, ["b", "a"])
    assert isinstance(again, EncodedResponse) and again is not first and again.payload is first.payload
    assert decoded_again == decoded
    _ask(node, ["a", "b"])  # another list: another answer (Kafka keeps up to four names in their order)
    _ask(node, ["b", "a"], version=9)
    assert len([k for k in cache if k[0] == "topics"]) == 3
    assert cache[metadata._CACHED_PARTITIONS] == 15


def test_an_answer_about_a_missing_topic_is_not_kept(state: tuple[BrokerState, dict]) -> None:
    node, cache = state
    _, decoded = _ask(node, ["a", "new-one"])  # auto-created by this very request: not in this answer
    assert {t.name: t.error_code for t in decoded.topics} == {"a": 0, "new-one": 3}
    assert cache == {}
    _, decoded = _ask(node, ["a", "new-one"])
    assert {t.name: t.error_code for t in decoded.topics} == {"a": 0, "new-one": 0}
    assert len([k for k in cache if k[0] == "topics"]) == 1


def test_past_the_bound_answers_are_built_each_time(state: tuple[BrokerState, dict]) -> None:
    node, cache = state
    cache[metadata._CACHED_PARTITIONS] = metadata.MAX_CACHED_PARTITIONS - 3
    answer, _ = _ask(node, ["a"])  # 3 partitions: just fits
    assert isinstance(answer, EncodedResponse) and cache[metadata._CACHED_PARTITIONS] == metadata.MAX_CACHED_PARTITIONS
    answer, decoded = _ask(node, ["b"])
    assert not isinstance(answer, EncodedResponse) and [t.name for t in decoded.topics] == ["b"]
    assert ("topics", 12, node.config.listeners[0].name, ("b",)) not in cache
