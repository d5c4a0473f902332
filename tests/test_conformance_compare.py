"""The conformance comparison machinery without brokers: normalisation (ordinals for allocated ids,
values a broker stamps), field-path diffs, deviations, record-batch decoding, transcripts and the
deterministic scenario names that make two brokers' transcripts comparable."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from kafka.protocol.consumer.fetch import FetchResponse

from conformance.harness import compare, transcript, wire
from conformance.harness.compare import Deviation, Difference, Normalizer
from wirekafka.protocol import records

T0 = 1_700_000_000_000


# ---- normalisation -----------------------------------------------------------------------------
def test_allocated_ids_become_ordinals_in_order_of_appearance() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    norm = Normalizer()
    tree = {"topics": [{"topic_id": str(a)}, {"topic_id": str(b)}, {"topic_id": str(a)}]}
    assert norm(tree) == {"topics": [{"topic_id": "<topic_id#1>"}, {"topic_id": "<topic_id#2>"},
                                     {"topic_id": "<topic_id#1>"}]}
    # ordinals continue across the responses of one sequence, and each sequence has its own
    assert norm({"topic_id": str(uuid.uuid4())}) == {"topic_id": "<topic_id#3>"}
    assert Normalizer()({"topic_id": str(b)}) == {"topic_id": "<topic_id#1>"}


def test_sentinel_ids_are_kept_and_aliases_share_ordinals() -> None:
    norm = Normalizer()
    assert norm({"topic_id": uuid.UUID(int=0), "producer_id": -1, "session_id": 0, "member_id": ""}) == \
        {"topic_id": uuid.UUID(int=0), "producer_id": -1, "session_id": 0, "member_id": ""}
    assert norm({"topic_id": None, "member_id": None}) == {"topic_id": None, "member_id": None}
    joined = norm({"member_id": "c-1", "leader": "c-1", "members": [{"member_id": "c-2"}]})
    assert joined == {"member_id": "<member_id#1>", "leader": "<member_id#1>",
                      "members": [{"member_id": "<member_id#2>"}]}


def test_volatile_fields() -> None:
    norm = Normalizer()
    assert norm({"error_message": "boom", "throttle_time_ms": 0, "port": 9092}) == \
        {"error_message": "<message>", "throttle_time_ms": "<throttle_time_ms>", "port": "<port>"}
    assert norm({"error_message": None, "log_append_time_ms": -1}) == {"error_message": None, "log_append_time_ms": -1}
    assert norm({"log_append_time_ms": T0}) == {"log_append_time_ms": "<broker time>"}


def test_the_broker_clock_in_a_record_error_is_normalised_and_the_rest_compared() -> None:
    norm = Normalizer()
    said = ("Timestamp 1699992800000 of message with offset 1 is out of range. "
            "The timestamp should be within [1699996400000, 1700003600000]")
    assert norm({"record_errors": [{"batch_index": 1, "batch_index_error_message": said}]}) == \
        {"record_errors": [{"batch_index": 1, "batch_index_error_message":
                            "Timestamp 1699992800000 of message with offset 1 is out of range. The timestamp should "
                            "be within [<broker time - before.max.ms>, <broker time + after.max.ms>]"}]}
    other = "Compacted topic cannot accept message without key in topic partition t-0"
    assert norm({"batch_index_error_message": other}) == {"batch_index_error_message": other}
    assert norm({"batch_index_error_message": None}) == {"batch_index_error_message": None}


def _fetch_response(data: bytes) -> FetchResponse:
    topic = FetchResponse.FetchableTopicResponse
    return FetchResponse(version=12, throttle_time_ms=0, error_code=0, session_id=0, node_endpoints=[], responses=[
        topic(topic="t", topic_id=None, partitions=[topic.PartitionData(
            partition_index=0, error_code=0, high_watermark=2, last_stable_offset=2, log_start_offset=0,
            aborted_transactions=None, preferred_read_replica=-1, records=data)])])


def _batches(response: FetchResponse | dict) -> list[dict]:
    tree = response if isinstance(response, dict) else compare.to_tree(response)
    return tree["responses"][0]["partitions"][0]["records"]


def test_record_data_is_decoded_into_batches_and_a_cut_batch_is_kept_as_its_length() -> None:
    data = records.build_batch([(b"k", b"v", T0), (None, b"w", T0 + 1)], base_offset=5)
    (batch, cut) = _batches(_fetch_response(data + data[:20]))
    assert (batch["base_offset"], batch["records_count"], batch["max_timestamp"]) == (5, 2, T0 + 1)
    assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == [(5, b"k", b"v"), (6, None, b"w")]
    assert cut == {"partial_batch_bytes": 20}
    assert _batches(_fetch_response(data))[1:] == [{"partial_batch_bytes": 0}]  # no tail: one field to compare
    assert _batches(_fetch_response(b"")) == []


def test_log_append_time_batches_lose_only_the_stamped_values() -> None:
    data = bytearray(records.build_batch([(b"k", b"v", 1000)]))
    records.set_log_append_time(data, T0)
    (batch, _) = _batches(Normalizer()(compare.to_tree(_fetch_response(bytes(data)))))
    assert (batch["max_timestamp"], batch["crc"], batch["records"][0]["timestamp"]) == \
        ("<stamped max_timestamp>", "<stamped crc>", "<stamped timestamp>")
    assert batch["base_timestamp"] == 1000 and batch["records"][0]["value"] == b"v"
    (create_time, _) = _batches(Normalizer()(compare.to_tree(_fetch_response(records.build_batch([(b"k", b"v", 1000)])))))
    assert create_time["max_timestamp"] == 1000 and isinstance(create_time["crc"], int)


def test_cleaned_batches_lose_the_delete_horizon_and_compressed_bytes_only() -> None:
    from wirekafka.storage import batch_filter

    v = b"1" * 100
    plain = records.build_batch([(b"a", v, T0), (b"b", None, T0 + 1)])
    header = records.parse_header(plain)
    horizon = batch_filter.rewrite(plain, header, bytearray([1, 1]), T0 + 86_400_000)  # tombstones kept: a horizon
    gzip = records.build_batch([(b"a", v, T0), (b"b", v, T0 + 1), (b"c", v, T0 + 2)], compression=1)
    dropped = batch_filter.rewrite(gzip, records.parse_header(gzip), bytearray([0, 1, 1]),
                                   None)  # the first record superseded
    (stamped, recompressed, produced, _) = _batches(Normalizer()(compare.to_tree(
        _fetch_response(horizon + dropped + gzip))))
    assert (stamped["base_timestamp"], stamped["crc"]) == ("<stamped base_timestamp>", "<stamped crc>")
    assert stamped["batch_length"] == len(horizon) - records.LOG_OVERHEAD  # uncompressed: compared
    assert [r["timestamp"] for r in stamped["records"]] == [T0, T0 + 1]  # records are compared whole
    assert (recompressed["batch_length"], recompressed["crc"], recompressed["base_timestamp"]) == \
        ("<stamped batch_length>", "<stamped crc>", T0 + 1)
    assert [r["key"] for r in recompressed["records"]] == [b"b", b"c"]
    # any compressed batch may be the broker's (a topic's compression.type): its bytes are not
    # compared, its header fields and records are
    assert (produced["batch_length"], produced["crc"], produced["base_timestamp"]) == (
        "<stamped batch_length>", "<stamped crc>", T0)
    assert [r["key"] for r in produced["records"]] == [b"a", b"b", b"c"]
    assert isinstance(stamped["crc"], str) and isinstance(_batches(Normalizer()(compare.to_tree(
        _fetch_response(plain))))[0]["crc"], int)  # an uncompressed batch's CRC is compared


def test_canonical_order_sorts_hash_ordered_lists_and_cuts_broker_wide_listings() -> None:
    answer = {"topics": [{"name": "t", "partitions": [{"partition_index": 2}, {"partition_index": 0}]}]}
    assert compare.canonical_order("ListOffsets", answer) == \
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 2}]}]}
    assert compare.canonical_order("Fetch", answer) == answer  # order is compared elsewhere
    groups = {"groups": [{"group_id": "mine-2"}, {"group_id": "theirs"}, {"group_id": "mine-1"}]}
    assert compare.canonical_order("ListGroups", groups, owned=lambda g: g.startswith("mine")) == \
        {"groups": [{"group_id": "mine-1"}, {"group_id": "mine-2"}]}


# ---- diff ------------------------------------------------------------------------------------------
def test_diff_names_each_differing_leaf_by_path() -> None:
    kafka = {"a": 1, "b": [{"c": 1}, {"c": 2}], "only_kafka": 0}
    wirekafka = {"a": 1, "b": [{"c": 1}, {"c": 3}, {"c": 4}], "only_wirekafka": 0}
    assert list(compare.diff(kafka, wirekafka)) == [
        Difference("b[1].c", 2, 3), Difference("b[2]", "<absent>", {"c": 4}),
        Difference("only_kafka", 0, "<absent>"), Difference("only_wirekafka", "<absent>", 0)]


def test_keyed_lists_are_compared_by_identity_and_order() -> None:
    kafka = {"api_keys": [{"api_key": 0, "max_version": 13}, {"api_key": 1, "max_version": 18},
                          {"api_key": 2, "max_version": 11}]}
    wirekafka = {"api_keys": [{"api_key": 0, "max_version": 12}, {"api_key": 2, "max_version": 11}]}
    assert list(compare.diff(kafka, wirekafka)) == [
        Difference("api_keys[api_key=0].max_version", 13, 12),
        Difference("api_keys[api_key=1]", {"api_key": 1, "max_version": 18}, "<absent>")]
    swapped = {"configs": [{"name": "b"}, {"name": "a"}]}
    assert list(compare.diff({"configs": [{"name": "a"}, {"name": "b"}]}, swapped)) == [
        Difference("configs.<order of name>", ["a", "b"], ["b", "a"])]


# ---- deviations --------------------------------------------------------------------------------
def test_deviation_matching_by_api_versions_path_and_scenario() -> None:
    dev = Deviation("Metadata", (4, 9), "topics[*].partitions[*].offline_replicas", "why", "*metadata*")
    path = "topics[0].partitions[3].offline_replicas"
    assert dev.covers("Metadata", 4, path, "test_metadata_x")
    assert not dev.covers("Metadata", 10, path, "test_metadata_x")
    assert not dev.covers("Fetch", 4, path, "test_metadata_x")
    assert not dev.covers("Metadata", 4, "topics[0].partitions[3].isr_nodes", "test_metadata_x")
    assert not dev.covers("Metadata", 4, path, "test_fetch")
    # [*] matches keyed items too, but only whole items
    whole = Deviation("ApiVersions", (0, 4), "api_keys[*]", "why")
    assert whole.covers("ApiVersions", 3, "api_keys[api_key=68]")
    assert not whole.covers("ApiVersions", 3, "api_keys[api_key=1].max_version")


def test_load_deviations_and_judge(tmp_path: Path) -> None:
    path = tmp_path / "deviations.toml"
    path.write_text('[[deviation]]\napi = "Fetch"\nversions = "4-18"\npath = "throttle*"\nreason = "r"\n'
                    '[[deviation]]\napi = "Produce"\nversions = "9"\npath = "x"\nreason = "s"\nscenario = "t*"\n')
    fetch, produce = compare.load_deviations(path)
    assert (fetch.versions, produce.versions, produce.scenario) == ((4, 18), (9, 9), "t*")
    verdict = compare.judge("Fetch", 12, [Difference("throttle", 1, 2), Difference("error_code", 0, 1)], [fetch])
    assert verdict.unexplained == [Difference("error_code", 0, 1)]
    assert [(d.path, dev.reason) for d, dev in verdict.deliberate] == [("throttle", "r")]
    assert compare.load_deviations(tmp_path / "missing.toml") == []


def test_shipped_deviations_parse_and_carry_reasons() -> None:
    for dev in compare.load_deviations():
        assert dev.reason.strip() and dev.versions[0] <= dev.versions[1]


# ---- transcripts -----------------------------------------------------------------------------
class _Answer(SimpleNamespace):
    def to_dict(self, json: bool = False) -> dict:
        return dict(vars(self))


class MetadataRequest:  # named like kafka-python's classes: the API name comes from it
    pass


def _exchange(api_key: int, version: int, **answer: object) -> transcript.Exchange:
    return transcript.Exchange(api_key, version, MetadataRequest(), _Answer(**answer))


def test_compare_transcripts_prefixes_each_path_with_its_exchange() -> None:
    kafka = [_exchange(3, 12, error_code=0, topic_id=str(uuid.uuid4())), _exchange(3, 12, error_code=3)]
    wirekafka = [_exchange(3, 12, error_code=0, topic_id=str(uuid.uuid4())), _exchange(3, 12, error_code=0)]
    verdict = compare.compare_transcripts(kafka, wirekafka, [])
    assert verdict.unexplained == [Difference("#1 Metadata v12 error_code", 3, 0)]


def test_compare_transcripts_reports_a_different_sequence() -> None:
    kafka = [_exchange(3, 12, error_code=0), _exchange(3, 12, error_code=0)]
    verdict = compare.compare_transcripts(kafka, [_exchange(3, 11, error_code=0)], [])
    assert verdict.unexplained == [Difference("exchanges", 2, 1), Difference("#0", "#0 Metadata v12", "Metadata v11")]


def test_settle_records_only_the_last_round_in_send_order() -> None:
    recording = transcript.Transcript()
    transcript.activate(recording)
    try:
        first = transcript.sent(3, 12, "before")
        with transcript.settle() as rounds:
            for attempt in range(3):
                rounds.attempt()
                transcript.sent(3, 12, f"poll {attempt}")
                transcript.sent(2, 8, f"check {attempt}")
        transcript.sent(1, 12, "after")
    finally:
        transcript.activate(None)
    assert recording.exchanges[0] is first
    assert [e.request for e in recording.exchanges] == ["before", "poll 2", "check 2", "after"]
    assert (1, 12) in transcript.EXERCISED


# ---- scenario names ----------------------------------------------------------------------------
def test_unique_names_derive_from_the_scenario() -> None:
    wire.begin_scenario("conformance/test_fake.py::test_names[zero-partitions-37]")
    first, group = wire.unique(), wire.unique("grp")
    assert (first, group) == ("conf-test_fake-test_names-zero-partitions-37-1",
                              "grp-test_fake-test_names-zero-partitions-37-2")
    assert wire.owned(first) and wire.owned(group) and not wire.owned("conf-other-1")
    wire.begin_scenario("conformance/test_fake.py::test_names[zero-partitions-37]")
    assert wire.unique() == first  # the same scenario on the other broker
    wire.begin_scenario("conformance/test_fake.py::test_names[" + "p" * 400 + "]")
    assert len(wire.unique("nogroup")) <= wire.MAX_NAME
    with pytest.raises(ValueError):  # two scenarios that would share names
        wire.begin_scenario("conformance/test_fake.py::test_names[zero/partitions-37]")
