"""Client quotas enforced, side by side with Kafka 4.3.1: a producer over its producer_byte_rate,
a consumer over its consumer_byte_rate, a client over its request_percentage and an admin client
over its controller_mutation_rate are throttled the way Kafka throttles them.

Each scenario sets a quota for a client id of its own (a unique name, so no other scenario's
connections share its rate) and waits until the broker describes it (Kafka applies it from its
metadata log a moment after AlterClientQuotas answers). Rates are measured over Kafka's padded
window (quota.window.num - 1 = 10 windows of 1 s for a new client), so a client may use ten
seconds' worth of its quota before it is throttled; the scenarios send well past that at once
and check what must hold whatever the timing: nothing throttled under the burst allowance, a
throttle time once over it, the connection muted for (most of) that time, an empty answer to
a consumer's fetch once it is over its rate, and a topic creation refused
with THROTTLING_QUOTA_EXCEEDED (no message) once the mutation bucket is in debt."""

from __future__ import annotations

import time

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.producer.produce import ProduceRequest

from conformance.harness.scenarios import batch, produce
from conformance.harness.wire import Connection, create_topic, metadata, poll, unique

THROTTLING_QUOTA_EXCEEDED, INVALID_FETCH_SESSION_EPOCH = 89, 71
# whatever log defaults other scenarios leave on the session's brokers, nothing is deleted while
# these run (a retention pass would move log_start_offset at a moment of each broker's choosing)
KEEP_EVERYTHING = {"retention.ms": "-1", "retention.bytes": "-1"}
_Entry = AlterClientQuotasRequest.EntryData


def _set_client_quota(bootstrap: str, client_id: str, key: str, value: float) -> None:
    with Connection(bootstrap) as conn:
        answer = conn.call(AlterClientQuotasRequest(entries=[_Entry(
            entity=[_Entry.EntityData(entity_type="client-id", entity_name=client_id)],
            ops=[_Entry.OpData(key=key, value=value, remove=False)])], validate_only=False), 1)
        assert [e.error_code for e in answer.entries] == [0]
        describe = DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
            entity_type="client-id", match_type=0, match=client_id)], strict=True)
        poll(lambda: conn.call(describe, 1), lambda r: [(v.key, v.value) for e in r.entries for v in e.values]
             == [(key, value)])


def _create(conn: Connection, name: str, partitions: int, version: int):
    request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=30000, validate_only=False)
    return conn.call(request, version)


def test_producer_over_its_byte_rate_is_throttled_and_muted(target):
    client, topic = unique("quota-producer"), unique("quota-produce")
    with Connection(target.bootstrap) as admin:
        create_topic(admin, topic, configs=KEEP_EVERYTHING)
    _set_client_quota(target.bootstrap, client, "producer_byte_rate", 50_000)
    records = batch([b"x" * 240_000])  # 240 kB requests: two fit in 10 s x 50 kB/s
    with Connection(target.bootstrap, client_id=client) as conn:
        throttles = []
        for _ in range(3):
            answer = conn.call(_produce_request(topic, records), 9)
            assert answer.responses[0].partition_responses[0].error_code == 0
            throttles.append(answer.throttle_time_ms)
        assert throttles[:2] == [0, 0]  # within the burst allowance
        # 720 kB over the 10 s window is 72 kB/s: (72 - 50) / 50 x 10 s, about 4.4 s of throttle
        assert 3000 < throttles[2] <= 4500, throttles
        began = time.monotonic()
        assert produce(conn, topic, records).error_code == 0  # read only once the mute is over
        assert time.monotonic() - began > throttles[2] / 1000 * 0.5


def test_consumer_fetch_is_capped_then_throttled_empty(target):
    client, topic = unique("quota-consumer"), unique("quota-fetch")
    with Connection(target.bootstrap) as admin:
        create_topic(admin, topic, configs=KEEP_EVERYTHING)
        for _ in range(12):  # 1.2 MB in 100 kB batches
            assert produce(admin, topic, batch([b"y" * 100_000])).error_code == 0
    _set_client_quota(target.bootstrap, client, "consumer_byte_rate", 50_000)
    with Connection(target.bootstrap, client_id=client) as conn:
        # 300 kB is within the burst allowance (10 s x 50 kB/s): answered with data
        first = conn.call(_fetch_request(topic, 300_000), 12)
        assert first.throttle_time_ms == 0 and first.responses[0].partitions[0].records
        # a fetch allowed 10 MB is capped at one window's bytes, 500 kB, and that is over the rate:
        # throttled, and answered with nothing at all (its bytes are not sent)
        throttled = conn.call(_fetch_request(topic, 10_000_000), 12)
        assert throttled.throttle_time_ms > 0
        assert (throttled.responses, throttled.error_code, throttled.session_id) == ([], 0, 0)


def test_a_throttled_fetch_keeps_its_session(target):
    client, topic = unique("quota-session"), unique("quota-session-fetch")
    with Connection(target.bootstrap) as admin:
        create_topic(admin, topic, configs=KEEP_EVERYTHING)
        for _ in range(12):
            assert produce(admin, topic, batch([b"z" * 100_000])).error_code == 0
    _set_client_quota(target.bootstrap, client, "consumer_byte_rate", 50_000)
    with Connection(target.bootstrap, client_id=client) as conn:
        first = conn.call(_fetch_request(topic, 300_000, session=(0, 0)), 12)  # a full fetch opening a session
        assert first.throttle_time_ms == 0 and first.session_id != 0
        sid = first.session_id
        # throttled: no partitions, but the session's id, and the session has moved to its next epoch
        throttled = conn.call(_fetch_request(topic, 10_000_000, session=(sid, 1)), 12)
        assert throttled.throttle_time_ms > 0
        assert (throttled.responses, throttled.error_code, throttled.session_id) == ([], 0, sid)
        repeated = conn.call(_fetch_request(topic, 10_000_000, session=(sid, 1)), 12)  # read after the mute
        assert (repeated.error_code, repeated.session_id, repeated.responses) == (INVALID_FETCH_SESSION_EPOCH, 0, [])


def test_topic_creation_over_the_mutation_rate(target):
    client = unique("quota-admin")
    _set_client_quota(target.bootstrap, client, "controller_mutation_rate", 1)
    with Connection(target.bootstrap, client_id=client) as conn:
        # the bucket starts full (11 permits); a strict charge may drive it into debt, unthrottled
        first = _create(conn, unique("quota-t"), 20, 7)
        assert (first.topics[0].error_code, first.throttle_time_ms) == (0, 0)
        refused = _create(conn, unique("quota-t"), 1, 7)
        assert (refused.topics[0].error_code, refused.topics[0].error_message) == (THROTTLING_QUOTA_EXCEEDED, None)
        assert refused.throttle_time_ms > 5000
        # the connection stays muted for that time, so the bucket has refilled to -1 permit when
        # the next request is read; before v6 a topic is created regardless, only throttled
        permissive = _create(conn, unique("quota-t"), 1, 5)
        assert permissive.topics[0].error_code == 0 and 0 < permissive.throttle_time_ms <= 1000


def test_requests_over_the_request_percentage_are_throttled_at_most_a_window(target):
    client = unique("quota-requests")
    # 0.0001 % of a thread: 10 us of request handling in a new client's 10 s window, less than
    # any request takes, so the first one is already over it
    _set_client_quota(target.bootstrap, client, "request_percentage", 0.0001)
    with Connection(target.bootstrap, client_id=client) as conn:
        first = metadata(conn, [])
        began = time.monotonic()
        second = metadata(conn, [])  # read once the mute is over
        waited = time.monotonic() - began
    # the request quota's throttle time is capped at one window (quota.window.size.seconds)
    assert 0 < first.throttle_time_ms <= 1000 and 0 < second.throttle_time_ms <= 1000
    assert waited > first.throttle_time_ms / 1000 * 0.5


def _produce_request(topic: str, records: bytes):
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])])


def _fetch_request(topic: str, max_bytes: int, session: tuple[int, int] = (0, -1)):
    """A fetch of partition 0 from offset 0; session is (session id, epoch), none by default."""
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, isolation_level=0,
                        session_id=session[0], session_epoch=session[1], topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                            FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1,
                                                                  fetch_offset=0, last_fetched_epoch=-1,
                                                                  log_start_offset=-1, partition_max_bytes=max_bytes)])],
                        forgotten_topics_data=[], rack_id="")
