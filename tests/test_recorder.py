"""The recording proxy without Kafka: what it changes in answers before its client sees them
(conformance/harness/client_view.py), and a whole round trip through it against a fake broker, which
must leave the recorded frames exactly as the broker sent them."""

from __future__ import annotations

from functools import partial

import trio
from kafka.protocol.admin.cluster import DescribeClusterResponse
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from conformance.harness import client_view, frames
from conformance.harness.recorder import RecordingProxy
from conformance.recordings import CLOSE, REQUEST, RESPONSE
from conformance.harness.stream_frames import FrameStream
from wirekafka.protocol.served_versions import SUPPORTED

PROXY = ("127.0.0.1", 40000)


def _metadata(host: str = "10.0.0.7", port: int = 9092) -> MetadataResponse:
    return MetadataResponse(version=12, throttle_time_ms=0, cluster_id="c", controller_id=1, topics=[],
                            brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host=host, port=port, rack=None)])


def test_metadata_brokers_point_at_the_proxy() -> None:
    response = _metadata()
    assert client_view.present(3, response, PROXY)
    assert [(b.host, b.port) for b in response.brokers] == [PROXY]
    assert not client_view.present(3, response, PROXY)  # already pointing at it: nothing to change


def test_find_coordinator_old_and_batched_answers() -> None:
    old = FindCoordinatorResponse(version=2, throttle_time_ms=0, error_code=0, error_message="NONE", node_id=1,
                                  host="kafka", port=9092)
    assert client_view.present(10, old, PROXY) and (old.host, old.port) == PROXY
    batched = FindCoordinatorResponse(version=4, throttle_time_ms=0, coordinators=[
        FindCoordinatorResponse.Coordinator(key="g", node_id=1, host="kafka", port=9092, error_code=0, error_message=""),
        FindCoordinatorResponse.Coordinator(key="h", node_id=-1, host="", port=-1, error_code=15, error_message="")])
    assert client_view.present(10, batched, PROXY)
    assert [(c.host, c.port) for c in batched.coordinators] == [PROXY, ("", -1)]  # an error names no broker


def test_describe_cluster_and_fetch_node_endpoints() -> None:
    cluster = DescribeClusterResponse(version=1, throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                                      cluster_id="c", controller_id=1, authorized_operations=-2147483648, brokers=[
                                          DescribeClusterResponse.DescribeClusterBroker(broker_id=1, host="kafka",
                                                                                        port=9092, rack=None)])
    assert client_view.present(60, cluster, PROXY) and (cluster.brokers[0].host, cluster.brokers[0].port) == PROXY
    fetch = FetchResponse(version=16, throttle_time_ms=0, error_code=0, session_id=0, responses=[], node_endpoints=[
        FetchResponse.NodeEndpoint(node_id=1, host="kafka", port=9092, rack=None)])
    assert client_view.present(1, fetch, PROXY) and fetch.node_endpoints[0].port == PROXY[1]


def test_fetch_sessions_are_declined() -> None:
    fetch = FetchResponse(version=12, throttle_time_ms=0, error_code=0, session_id=123456, responses=[])
    assert client_view.present(1, fetch, None)
    assert fetch.session_id == 0


def test_api_versions_narrowed_to_what_wirekafka_serves() -> None:
    unserved = max(SUPPORTED) + 1
    lo, hi = SUPPORTED[3]
    response = ApiVersionsResponse(version=3, error_code=0, throttle_time_ms=0, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=3, min_version=lo, max_version=hi + 5),
        ApiVersionsResponse.ApiVersion(api_key=unserved, min_version=0, max_version=1)],
        supported_features=[ApiVersionsResponse.SupportedFeatureKey(name="group.version", min_version=0,
                                                                      max_version=1)],
        finalized_features_epoch=42, finalized_features=[
            ApiVersionsResponse.FinalizedFeatureKey(name="group.version", max_version_level=1, min_version_level=1)],
        zk_migration_ready=False)
    assert client_view.present(18, response, PROXY)
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(3, lo, hi)]
    assert (response.supported_features, response.finalized_features, response.finalized_features_epoch) == ([], [], -1)


def test_other_answers_are_untouched() -> None:
    assert 2 not in client_view.CHANGED_APIS  # ListOffsets: forwarded as Kafka sent it


async def _fake_broker(stream: trio.SocketStream) -> None:
    """Answers each Metadata request with one broker at kafka-host:9092."""
    reader = FrameStream(stream)
    while (frame := await reader.next_frame()) is not None:
        head = frames.request_head(frame)
        response = _metadata("kafka-host", 9092)
        response.with_header(correlation_id=head.correlation_id)
        await stream.send_all(frames.size_prefixed(frames.encode_response(response, head.version)))


async def _round_trip() -> tuple[RecordingProxy, MetadataResponse]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, _fake_broker, 0, host="127.0.0.1"))
        proxy = RecordingProxy(("127.0.0.1", listeners[0].socket.getsockname()[1]))
        listener = await nursery.start(proxy.serve)
        async with await trio.open_tcp_stream(*listener) as client:
            request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False)
            request.API_VERSION = 12
            request.with_header(correlation_id=7, client_id="test")
            await client.send_all(frames.size_prefixed(frames.encode_request(request, 12)))
            answer = frames.decode_response(3, 12, await FrameStream(client).next_frame())
        with trio.fail_after(5):
            while proxy.events[-1].kind != CLOSE:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    return proxy, answer


def test_proxy_round_trip_records_kafka_and_shows_itself() -> None:
    proxy, answer = trio.run(_round_trip)
    assert [(b.host, b.port) for b in answer.brokers] == [proxy.listener]
    kinds = [(e.kind, e.api_key, e.version, e.correlation_id) for e in proxy.events]
    assert kinds == [(REQUEST, 3, 12, 7), (RESPONSE, 3, 12, 7), (CLOSE, -1, -1, -1)]
    recorded = frames.decode_response(3, 12, proxy.events[1].frame)
    assert [(b.host, b.port) for b in recorded.brokers] == [("kafka-host", 9092)]
    assert not proxy.failures


def test_acks_zero_produce_expects_no_response() -> None:
    from kafka.protocol.producer.produce import ProduceRequest

    request = ProduceRequest(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[])
    request.API_VERSION = 9
    request.with_header(correlation_id=1, client_id="t")
    assert not frames.expects_response(frames.encode_request(request, 9))
    request.acks = -1
    assert frames.expects_response(frames.encode_request(request, 9))
