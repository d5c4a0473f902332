"""The replayer's id mapping (conformance/harness/id_map.py) and comparison rules
(conformance/harness/session_rules.py), without any broker: ids learnt from a recorded and a replayed
answer side by side, substituted in later requests (record batches included, CRC recomputed),
requests Kafka refused as not ready, the timing rules and order-free lists."""

from __future__ import annotations

import uuid

from kafka.protocol.admin.topics import CreateTopicsResponse
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import HeartbeatResponse, JoinGroupResponse, SyncGroupRequest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdResponse

from conformance.harness import frames
from conformance.harness.compare import Difference
from conformance.harness.id_map import IdMap
from conformance.harness.session_rules import Answers, sort_order_free, timing_reasons, withhold_reason
from wirekafka.protocol import records

KAFKA_TOPIC, REPLAY_TOPIC = uuid.uuid4(), uuid.uuid4()


def _join(member: str, members: list[str] = ()) -> JoinGroupResponse:
    return JoinGroupResponse(version=7, throttle_time_ms=0, error_code=0, generation_id=1, protocol_type="consumer",
                             protocol_name="range", leader=member, member_id=member, members=[
                                 JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=None,
                                                                           metadata=b"") for m in members])


def _created(topic_id: uuid.UUID, name: str = "t") -> CreateTopicsResponse:
    return CreateTopicsResponse(version=7, throttle_time_ms=0, topics=[CreateTopicsResponse.CreatableTopicResult(
        name=name, topic_id=topic_id, error_code=0, error_message=None, num_partitions=1, replication_factor=1,
        configs=[])])


def test_member_and_topic_ids_are_substituted_in_later_requests() -> None:
    ids = IdMap()
    ids.learn(_join("rdkafka-kafka"), _join("rdkafka-replay"))
    ids.learn(_created(KAFKA_TOPIC), _created(REPLAY_TOPIC))
    sync = SyncGroupRequest(version=5, group_id="g", generation_id=1, member_id="rdkafka-kafka", group_instance_id=None,
                            protocol_type="consumer", protocol_name="range", assignments=[
                                SyncGroupRequest.SyncGroupRequestAssignment(member_id="rdkafka-kafka", assignment=b"")])
    assert ids.substitute(sync)
    assert sync.member_id == sync.assignments[0].member_id == "rdkafka-replay"
    fetch = FetchRequest(version=13, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1, isolation_level=0,
                         session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                             FetchRequest.FetchTopic(topic_id=KAFKA_TOPIC, partitions=[])])
    assert ids.substitute(fetch) and fetch.topics[0].topic_id == REPLAY_TOPIC
    untouched = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False)
    assert not ids.substitute(untouched)


def test_lists_pair_by_name_whatever_their_order() -> None:
    def metadata(*topics: tuple[str, uuid.UUID]) -> MetadataResponse:
        return MetadataResponse(version=12, throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1, topics=[
            MetadataResponse.MetadataResponseTopic(error_code=0, name=n, topic_id=t, is_internal=False, partitions=[])
            for n, t in topics])

    a, b, x, y = (uuid.uuid4() for _ in range(4))
    ids = IdMap()
    ids.learn(metadata(("a", a), ("b", b)), metadata(("b", y), ("a", x)))
    assert ids.ids["topic_id"] == {a: x, b: y}


def test_member_lists_are_not_paired_by_position() -> None:
    ids = IdMap()
    ids.learn(_join("k1", ["k1", "k2"]), _join("r1", ["r2", "r1"]))  # the broker's own member order
    assert ids.ids["member_id"] == {"k1": "r1"}


def test_producer_ids_are_patched_into_record_batches() -> None:
    ids = IdMap()
    ids.learn(InitProducerIdResponse(version=4, throttle_time_ms=0, error_code=0, producer_id=0, producer_epoch=0),
              InitProducerIdResponse(version=4, throttle_time_ms=0, error_code=0, producer_id=1000, producer_epoch=0))
    batch = records.build_batch([(b"k", b"v", 1_700_000_000_000)], producer_id=0, producer_epoch=0, base_sequence=0)
    produce = ProduceRequest(version=9, transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    produce.with_header(correlation_id=3, client_id="c")
    frame = frames.encode_request(produce, 9)
    request = frames.decode_request(frame)
    assert ids.substitute(request)
    patched = frames.decode_request(frames.encode_request(request, 9)).topic_data[0].partition_data[0].records
    header = records.validate_batch(patched)  # the CRC was recomputed
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1000, 0, 0)


def test_a_request_kafka_refused_as_not_ready_is_withheld() -> None:
    refused = HeartbeatResponse(version=4, throttle_time_ms=0, error_code=16)
    assert "NOT_COORDINATOR" in withhold_reason(refused)
    assert withhold_reason(HeartbeatResponse(version=4, throttle_time_ms=0, error_code=27)) is None
    assert withhold_reason(HeartbeatResponse(version=4, throttle_time_ms=0, error_code=0)) is None


def test_a_request_refused_in_part_is_sent_and_the_refused_part_not_compared() -> None:
    answer = ProduceResponse(version=9, throttle_time_ms=0, responses=[ProduceResponse.TopicProduceResponse(
        name="t", partition_responses=[
            ProduceResponse.TopicProduceResponse.PartitionProduceResponse(
                index=i, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                record_errors=[], error_message=None) for i, code in enumerate((0, 6))])])
    assert withhold_reason(answer) is None
    kafka = {"responses": [{"partition_responses": [{"error_code": 0}, {"error_code": 6, "base_offset": -1}]}]}
    refused = Difference("responses[0].partition_responses[1].base_offset", -1, 0)
    other = Difference("responses[0].partition_responses[0].base_offset", 3, 0)
    explained = timing_reasons(Answers("Produce", None, kafka, kafka, frozenset()), [refused, other])
    assert [d for d, _ in explained] == [refused]


def test_timing_rules_explain_only_what_timing_can_change() -> None:
    diff = Difference("error_code", 27, 0)
    heartbeat = Answers("Heartbeat", None, {"error_code": 27}, {"error_code": 0}, frozenset({"JoinGroup"}))
    assert [d for d, _ in timing_reasons(heartbeat, [diff])] == [diff]
    alone = Answers("Heartbeat", None, {"error_code": 27}, {"error_code": 0}, frozenset({"Fetch"}))
    assert timing_reasons(alone, [diff]) == []
    other = Difference("error_code", 25, 0)  # UNKNOWN_MEMBER_ID is no question of timing
    assert timing_reasons(heartbeat, [other]) == []

    def fetch(hw: int) -> dict:
        return {"responses": [{"partitions": [{"high_watermark": hw, "records": []}]}]}

    records_diff = Difference("responses[0].partitions[0].records", [], ["r"])
    raced = Answers("Fetch", None, fetch(0), fetch(1), frozenset({"Produce"}))
    assert [d for d, _ in timing_reasons(raced, [records_diff])] == [records_diff]
    same_state = Answers("Fetch", None, fetch(1), fetch(1), frozenset({"Produce"}))
    assert timing_reasons(same_state, [records_diff]) == []


def test_order_free_lists_are_sorted_before_or_after_normalisation() -> None:
    tree = {"topics": [{"name": "b"}, {"name": "a"}]}
    assert sort_order_free("Metadata", tree, normalised=False) == {"topics": [{"name": "a"}, {"name": "b"}]}
    members = {"members": [{"member_id": "<member_id#2>"}, {"member_id": "<member_id#1>"}]}
    assert sort_order_free("JoinGroup", members, normalised=False)["members"][0]["member_id"] == "<member_id#2>"
    assert sort_order_free("JoinGroup", members, normalised=True)["members"][0]["member_id"] == "<member_id#1>"
