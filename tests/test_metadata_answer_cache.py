"""Metadata answers to topics asked for by name, kept in the cluster metadata's answer cache
(wirekafka/broker/handlers/metadata.py): only when every topic asked for exists, one per list of
names and version, holding at most MAX_CACHED_PARTITIONS partitions in all. A single node tracks no changes (its
answer_cache is None), so the cache is handed in here; compat-tests/test_cluster.py checks a
cluster's answers follow its changes."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from wirekafka.broker import dispatch
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers import metadata
from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata.answer_cache import AnswerCache
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import codec
from wirekafka.protocol.encoded_response import EncodedResponse


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[BrokerState, AnswerCache]:
    """A single node with topics a and b, whose metadata hands out one AnswerCache."""
    node = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), "auto.create.topics.enable": "true"}))
    node.load()
    for name, partitions in (("a", 3), ("b", 2)):
        trio.run(node.metadata.create_topic, name, partitions)
    metadata = node.metadata
    # a single node keeps no answers: its partition views, as a cluster's view keys its topics
    cache = AnswerCache(lambda t: (t.topic_id, tuple(metadata.partition_view(t, i) for i in range(len(t.partitions)))))
    monkeypatch.setattr(node.metadata, "answer_cache", lambda: cache)
    return node, cache


def _ask(node: BrokerState, names: list[str] | None, version: int = 12) -> tuple[Any, MetadataResponse]:
    """The handler's answer object and the answer decoded from its bytes (names None: all topics)."""
    request = MetadataRequest(topics=None if names is None else [MetadataRequest.MetadataRequestTopic(name=n)
                                                                 for n in names],
                              allow_auto_topic_creation=version >= 4, include_topic_authorized_operations=False)
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="cache-test")
    frame = bytes(request.encode(header=True))
    header = codec.parse_header(frame)
    ctx = RequestContext(node, header, node.config.listeners[0].name, "127.0.0.1:5000")
    answer = trio.run(dispatch.dispatch, ctx, codec.decode_body(header, frame))
    out = codec.encode_response(header.api_key, version, 7, answer)
    assert struct.unpack_from(">i", out)[0] == len(out) - 4
    return answer, MetadataResponse.decode(out[8 + MetadataResponse.flexible_version_q(version):], version=version)


def test_an_answer_about_existing_topics_is_kept_per_list_and_version(state: tuple[BrokerState, AnswerCache]) -> None:
    node, cache = state
    first, decoded = _ask(node, ["b", "a"])
    assert [(t.name, len(t.partitions)) for t in decoded.topics] == [("b", 2), ("a", 3)]
    again, decoded_again = _ask(node, ["b", "a"])
    assert isinstance(again, EncodedResponse) and again is not first and again.payload is first.payload
    assert decoded_again == decoded
    _ask(node, ["a", "b"])  # another list: another answer (Kafka keeps up to four names in their order)
    _ask(node, ["b", "a"], version=9)
    assert len([k for k in cache.answers if k[0] == "topics"]) == 3
    assert cache.named_partitions == 15


def test_an_answer_about_a_missing_topic_is_not_kept(state: tuple[BrokerState, AnswerCache]) -> None:
    node, cache = state
    _, decoded = _ask(node, ["a", "new-one"])  # auto-created by this very request: not in this answer
    assert {t.name: t.error_code for t in decoded.topics} == {"a": 0, "new-one": 3}
    assert cache.answers == {}
    _, decoded = _ask(node, ["a", "new-one"])
    assert {t.name: t.error_code for t in decoded.topics} == {"a": 0, "new-one": 0}
    assert len([k for k in cache.answers if k[0] == "topics"]) == 1


def _spliced_as_encoded(answer: Any, version: int = 12) -> bool:
    """Whether an answer spliced from parts holds the bytes the codec encodes its body to."""
    return isinstance(answer, EncodedResponse) and answer.payload == answer.body.encode(version=version)


def test_past_the_bound_answers_are_spliced_each_time(state: tuple[BrokerState, AnswerCache]) -> None:
    """Past the bound an answer is not kept, but still spliced from the topics' kept parts: a
    whole answer of 10,000 partitions took 40-60 ms to encode."""
    node, cache = state
    cache.named_partitions = metadata.MAX_CACHED_PARTITIONS - 3
    answer, _ = _ask(node, ["a"])  # 3 partitions: just fits
    assert isinstance(answer, EncodedResponse) and cache.named_partitions == metadata.MAX_CACHED_PARTITIONS
    answer, decoded = _ask(node, ["b", "a"])
    assert _spliced_as_encoded(answer) and [t.name for t in decoded.topics] == ["b", "a"]
    assert ("topics", 12, node.config.listeners[0].name, ("b", "a")) not in cache.answers
    assert set(_parts(node, cache)) == {"a", "b"}


def test_an_answer_with_a_missing_topic_splices_its_error_beside_the_parts(
        state: tuple[BrokerState, AnswerCache]) -> None:
    node, _ = state
    answer, decoded = _ask(node, ["a", "new-two", "b"], version=9)
    assert _spliced_as_encoded(answer, 9)
    assert [(t.name, t.error_code, len(t.partitions)) for t in decoded.topics] == [
        ("a", 0, 3), ("b", 0, 2), ("new-two", 3, 0)]


def _parts(node: BrokerState, cache: AnswerCache, version: int = 12) -> dict:
    """name -> the bytes of the topic's kept part for answers at version."""
    return {name: part[1] for name, (_, part) in
            cache.parts(node.config.listeners[0].name, metadata._PARTS_OF_VERSION[version]).items()}


def test_a_change_rebuilds_the_parts_of_the_topics_it_touched(state: tuple[BrokerState, AnswerCache]) -> None:
    node, cache = state
    _, before = _ask(node, None)
    kept = _parts(node, cache)
    assert set(kept) == {"a", "b"}
    b = node.metadata.topic("b")
    assert b is not None
    trio.run(node.metadata.add_partitions, b, 4)
    cache.changed(["a", "b"])  # what a cluster's metadata does when it applies the change
    assert cache.answers == {}
    _, after = _ask(node, None)
    now = _parts(node, cache)
    assert now["a"] is kept["a"] and now["b"] is not kept["b"]
    assert [(t.name, len(t.partitions)) for t in after.topics] == [("a", 3), ("b", 4)]
    assert [t for t in after.topics if t.name == "a"] == [t for t in before.topics if t.name == "a"]
    _, by_name = _ask(node, ["b"])  # a list of names is built from the same parts
    assert _parts(node, cache)["b"] is now["b"] and len(by_name.topics[0].partitions) == 4


def test_the_parts_of_a_deleted_topic_go_with_it(state: tuple[BrokerState, AnswerCache]) -> None:
    node, cache = state
    _ask(node, None)
    trio.run(node.metadata.delete_topic, "a")
    cache.changed(["b"])
    assert set(_parts(node, cache)) == {"b"}
    _, after = _ask(node, None)
    assert [t.name for t in after.topics] == ["b"]


def test_the_parts_a_change_made_stale_are_built_before_anyone_asks(state: tuple[BrokerState, AnswerCache]) -> None:
    """keep_parts_built: after a change the metadata applied, the stale parts of every shape a
    client asked for are built again, off any request; the next request splices them."""
    node, cache = state
    _ask(node, None)
    _ask(node, ["a", "b"], version=9)

    def held() -> dict[int, dict]:
        """version -> name -> the bytes of the kept part, in the cache's order of shapes"""
        return {version: {name: part[1] for name, (_, part) in parts.items()} for _, version, parts in cache.held()}

    kept = held()
    assert list(kept) == [10, 9]  # v12's parts are v10's (test_versions_whose_parts_are_the_same_bytes_share_them)
    b = node.metadata.topic("b")
    assert b is not None
    trio.run(node.metadata.add_partitions, b, 4)
    cache.changed(["a", "b"])

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(metadata.keep_parts_built, node.metadata)
            await trio.testing.wait_all_tasks_blocked()
            assert held() == kept, "built before any change was applied"
            cache.applied()
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()

    trio.run(main)
    warmed = held()
    assert list(warmed) == [10, 9]  # building them did not count as asking for them
    for version in (10, 9):
        assert warmed[version]["a"] is kept[version]["a"] and warmed[version]["b"] is not kept[version]["b"]
    _, after = _ask(node, None)
    assert _parts(node, cache)["b"] is warmed[10]["b"], "the request rebuilt a part the task had built"
    assert [(t.name, len(t.partitions)) for t in after.topics] == [("a", 3), ("b", 4)]
    _, by_name = _ask(node, ["b"], version=9)
    assert _parts(node, cache, 9)["b"] is warmed[9]["b"] and len(by_name.topics[0].partitions) == 4


def test_a_request_builds_the_stale_parts_it_needs_with_turns_of_the_loop(
        state: tuple[BrokerState, AnswerCache], monkeypatch: pytest.MonkeyPatch) -> None:
    """A request whose topics' parts are not kept builds them first, a turn of the loop every
    WARM_PARTITIONS partitions built (10,000 partitions built in one step held a busy broker's
    loop over 100 ms), then answers in one step; parts already kept cost no turn."""
    node, cache = state
    for name in ("c", "d"):
        trio.run(node.metadata.create_topic, name, 1)
    turns: list[int] = []
    turn = LoopTurns.turn

    async def counted(self: LoopTurns) -> None:
        turns.append(self.every)
        await turn(self)

    monkeypatch.setattr(LoopTurns, "turn", counted)
    monkeypatch.setattr(metadata, "WARM_PARTITIONS", 2)
    _, by_name = _ask(node, ["d", "c", "b", "a"])
    assert len(turns) == 2  # d and c (1 partition each), a turn, b (2), a turn, a
    assert [(t.name, len(t.partitions)) for t in by_name.topics] == [("d", 1), ("c", 1), ("b", 2), ("a", 3)]
    turns.clear()
    _, every = _ask(node, None)  # every part is kept: no turn
    assert turns == []
    assert sorted((t.name, len(t.partitions)) for t in every.topics) == [("a", 3), ("b", 2), ("c", 1), ("d", 1)]
    b = node.metadata.topic("b")
    assert b is not None
    trio.run(node.metadata.add_partitions, b, 4)
    cache.changed(["a", "b", "c", "d"])
    _, after = _ask(node, ["d", "c", "b"])  # b's part is built again, the others are kept
    assert turns == [] and [len(t.partitions) for t in after.topics] == [1, 1, 4]


def test_no_task_runs_where_the_metadata_keeps_no_answers(tmp_path: Path) -> None:
    node = BrokerState(build_config({"log.dirs": str(tmp_path / "data")}))
    node.load()
    assert node.metadata.answer_cache() is None

    async def main() -> None:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                await nursery.start(metadata.keep_parts_built, node.metadata)  # returns: the nursery ends

    trio.run(main)


@pytest.mark.parametrize("version", range(MetadataRequest.min_version, MetadataRequest.max_version + 1))
def test_an_answer_from_parts_is_the_answer_built_whole(state: tuple[BrokerState, AnswerCache], version: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    node, cache = state
    names = None if version else []  # v0 asks for every topic with an empty list
    _ask(node, names, version)  # builds the parts
    cache.changed(["a", "b"])
    kept, decoded = _ask(node, names, version)  # from the parts kept
    assert isinstance(kept, EncodedResponse) and _parts(node, cache, version)
    monkeypatch.setattr(node.metadata, "answer_cache", lambda: None)
    whole, decoded_whole = _ask(node, names, version)
    assert not isinstance(whole, EncodedResponse)
    assert decoded == decoded_whole and kept.payload == bytes(whole.encode(version=version))


def test_versions_whose_parts_are_the_same_bytes_share_them(state: tuple[BrokerState, AnswerCache],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """librdkafka asks with v13 and Java clients with v12: one set of parts serves v10-v13, and
    each answer spliced from them is the answer encoded whole at its own version."""
    assert [v for v, same in metadata._PARTS_OF_VERSION.items() if same == 10] == [10, 11, 12, 13]
    assert metadata._PARTS_OF_VERSION[5] != metadata._PARTS_OF_VERSION[6]  # LISTENER_NOT_FOUND from v6
    node, cache = state
    _ask(node, None, 13)
    kept = _parts(node, cache, 10)
    assert set(kept) == {"a", "b"}
    for version in (10, 11, 12, 13):
        cache.changed(["a", "b"])
        spliced, decoded = _ask(node, None, version)
        assert isinstance(spliced, EncodedResponse)
        assert all(_parts(node, cache, 10)[name] is kept[name] for name in kept), f"v{version} built its own parts"
        with monkeypatch.context() as whole_only:
            whole_only.setattr(node.metadata, "answer_cache", lambda: None)
            whole, decoded_whole = _ask(node, None, version)
        assert decoded == decoded_whole and spliced.payload == bytes(whole.encode(version=version))


@pytest.mark.parametrize("version", range(MetadataRequest.min_version, MetadataRequest.max_version + 1))
def test_partition_rows_encode_as_the_schemas_partitions(state: tuple[BrokerState, AnswerCache], version: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler describes partitions with its own rows (_PartitionRow), which the codec's
    compiled encoder reads by field name: the bytes are those of the schema's partition objects."""
    node, _ = state
    monkeypatch.setattr(node.metadata, "answer_cache", lambda: None)
    answer, _ = _ask(node, None if version else [], version)
    rows = bytes(answer.encode(version=version))
    fields = [f.name for f in dataclasses.fields(metadata._PartitionRow)]
    for topic in answer.topics:
        assert topic.partitions and all(isinstance(p, metadata._PartitionRow) for p in topic.partitions)
        topic.partitions = [metadata._Partition(**{f: getattr(p, f) for f in fields}) for p in topic.partitions]
    assert rows == bytes(answer.encode(version=version))
