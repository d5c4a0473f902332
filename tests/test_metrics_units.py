"""The pure parts of metrics and logging: the histogram's buckets, the error-code walk over a
response, API names, the listener address parser, the exposition of the families, the start-up
line's choice of values and the JSON log formatter."""

from __future__ import annotations

import json
import logging
import sys
import time

import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from wirekafka.broker.metrics.api_names import constant_name, request_name
from wirekafka.broker.metrics.collector import request_families, socket_families, topic_families
from wirekafka.broker.metrics.error_counts import count_errors
from wirekafka.broker.metrics.histogram import Histogram
from wirekafka.broker.metrics.request_metrics import RequestMetrics
from wirekafka.broker.metrics.socket_metrics import SocketMetrics
from wirekafka.broker.metrics.topic_metrics import TopicMetrics
from wirekafka.config.broker_keys import parse_host_port
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.produce_response import FastProduceResponse, PartitionAnswer, TopicAnswer
from wirekafka.protocol.served_versions import response_class
from wirekafka.server.logging_setup import JsonFormatter
from wirekafka.server.metrics_endpoint import pool_families, render
from wirekafka.server.memory_pool import RequestMemoryPool
from wirekafka.server.startup_log import non_defaults


def test_histogram_buckets_are_cumulative_with_inf_last() -> None:
    h = Histogram((1, 10))
    for v in (0.5, 1, 3, 10, 11, 500):
        h.observe(v)
    assert h.cumulative() == [("1.0", 2), ("10.0", 4), ("+Inf", 6)]
    assert h.count == 6 and h.total == pytest.approx(525.5)


def test_histogram_refuses_bounds_out_of_order() -> None:
    with pytest.raises(ValueError):
        Histogram((10, 1))


def test_errors_are_counted_at_every_level_of_a_response() -> None:
    metadata = response_class(3)
    topic, partition = metadata.MetadataResponseTopic, metadata.MetadataResponseTopic.MetadataResponsePartition
    body = metadata(version=12, topics=[
        topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name="gone", partitions=[]),
        topic(error_code=0, name="t", partitions=[partition(error_code=0), partition(error_code=9)])])
    counts: dict[int, int] = {}
    count_errors(body, counts)
    # the top-level code (v13+) reads as its default at v12: Kafka's errorCounts counts it too
    assert counts == {0: 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 1, 9: 1}


def test_the_fast_produce_answer_is_walked_like_the_schema() -> None:
    answer = FastProduceResponse([TopicAnswer("t", None, [PartitionAnswer(0, 0, 5, -1, 0),
                                                          PartitionAnswer(1, 6, -1, -1, -1)])])
    counts: dict[int, int] = {}
    count_errors(answer, counts)
    count_errors(answer, counts)
    assert counts == {0: 2, 6: 2}


def test_a_body_without_a_schema_counts_nothing() -> None:
    counts: dict[int, int] = {}
    count_errors(object(), counts)
    assert counts == {}


@pytest.mark.parametrize("key, label, constant", [(0, "Produce", "PRODUCE"), (2, "ListOffsets", "LIST_OFFSETS"),
                                                  (23, "OffsetForLeaderEpoch", "OFFSET_FOR_LEADER_EPOCH"),
                                                  (18, "ApiVersions", "API_VERSIONS")])
def test_api_names_are_kafkas(key: int, label: str, constant: str) -> None:
    assert request_name(key) == label and constant_name(key) == constant


@pytest.mark.parametrize("text, expected", [("127.0.0.1:9404", ("127.0.0.1", 9404)), (":9404", ("", 9404)),
                                            ("[::1]:0", ("::1", 0)), (" host.example:65535 ", ("host.example", 65535))])
def test_listener_addresses_parse(text: str, expected: tuple[str, int]) -> None:
    assert parse_host_port(text) == expected


@pytest.mark.parametrize("text", ["9404", "host:", "host:65536", "::1:9404", "[::1:9404", "host:-1"])
def test_bad_listener_addresses_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_host_port(text)


def test_an_empty_metrics_listener_is_unset() -> None:
    assert build_config({"wirekafka.metrics.listener": " "})["wirekafka.metrics.listener"] is None


def _exposed(families: list) -> dict[tuple[str, frozenset], float]:
    text = render(families).decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_request_and_topic_families_expose_the_exporters_names() -> None:
    requests, topics, sockets = RequestMetrics(), TopicMetrics(), SocketMetrics()
    requests.finished(0, 9, 3.0)
    requests.finished(0, 9, 30.0)
    requests.answered(0, FastProduceResponse([TopicAnswer("t", None, [PartitionAnswer(0, 0, 0, -1, 0)])]))
    topics.appended("t", 10, 700)
    topics.appended("u", 1, 70)
    topics.fetched("t", 500)
    sockets.connections["PLAINTEXT"] += 2
    sockets.failed_authentications["SASL"] += 1
    got = _exposed(request_families(requests) + topic_families(topics) + socket_families(sockets))
    assert got[("kafka_network_requestmetrics_requests_total", frozenset({("request", "Produce"), ("version", "9")}))] == 2
    assert got[("kafka_network_requestmetrics_errors_total", frozenset({("request", "Produce"), ("error", "NONE")}))] == 1
    assert got[("kafka_network_requestmetrics_totaltimems_count", frozenset({("request", "Produce")}))] == 2
    assert got[("kafka_network_requestmetrics_totaltimems_sum", frozenset({("request", "Produce")}))] == 33
    assert got[("kafka_network_requestmetrics_totaltimems_bucket", frozenset({("request", "Produce"), ("le", "5.0")}))] == 1
    assert got[("kafka_server_brokertopicmetrics_messagesin_total", frozenset({("topic", "t")}))] == 10
    assert got[("kafka_server_brokertopicmetrics_messagesin_total", frozenset())] == 11
    assert got[("kafka_server_brokertopicmetrics_bytesin_total", frozenset())] == 770
    assert got[("kafka_server_brokertopicmetrics_bytesout_total", frozenset({("topic", "t")}))] == 500
    assert got[("kafka_server_socket_server_metrics_connection_count",
                frozenset({("listener", "PLAINTEXT"), ("networkProcessor", "0")}))] == 2
    assert got[("kafka_server_socket_server_metrics_failed_authentication_total",
                frozenset({("listener", "SASL"), ("networkProcessor", "0")}))] == 1


def test_the_memory_pool_gauges_follow_reservations() -> None:
    pool = RequestMemoryPool(1000)
    assert pool.try_reserve(300)
    got = _exposed(pool_families(pool))
    assert got[("kafka_network_socketserver_memorypoolavailable", frozenset())] == 700
    assert got[("kafka_network_socketserver_memorypoolused", frozenset())] == 300
    unbounded = _exposed(pool_families(RequestMemoryPool(-1)))
    assert unbounded[("kafka_network_socketserver_memorypoolused", frozenset())] == 0


def test_the_startup_values_are_the_changed_ones_with_secrets_hidden() -> None:
    config = build_config({"num.partitions": "1", "log.retention.hours": "1", "ssl.key.password": "s3cret-7",
                           "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'x password="p-9";',
                           "super.users": "User:admin", "listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://:9093",
                           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"})
    shown = dict(non_defaults(config))
    assert "num.partitions" not in shown  # 1 is Kafka's default
    assert shown["log.retention.hours"] == "1" and shown["super.users"] == "User:admin"
    assert shown["listeners"] == "PLAINTEXT://127.0.0.1:9092,INTERNAL://:9093"
    assert shown["ssl.key.password"] == "[hidden]"
    assert shown["listener.name.sasl_plaintext.plain.sasl.jaas.config"] == "[hidden]"


def test_json_log_lines_carry_the_exception_text() -> None:
    logger = logging.getLogger("test.json")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logger.makeRecord("test.json", logging.ERROR, __file__, 1, "failed %s", ("x",), sys.exc_info())
    entry = json.loads(JsonFormatter().format(record))
    assert entry["level"] == "ERROR" and entry["logger"] == "test.json" and entry["message"] == "failed x"
    assert entry["time"].endswith("+00:00") and "RuntimeError: boom" in entry["exception"]
    plain = json.loads(JsonFormatter().format(logger.makeRecord("l", logging.INFO, __file__, 1, "ok", (), None)))
    assert "exception" not in plain


def test_a_scrape_of_ten_thousand_partitions_hands_the_loop_back() -> None:
    """partition_families yields to the loop every CHUNK partitions (no timing: a task that counts
    the turns it gets while the scrape runs)."""
    from wirekafka.broker.metrics.partition_collector import CHUNK, partition_families

    class _Replicas:
        is_leader, isr, replicas = True, frozenset({1}), (1,)

        @staticmethod
        def effective_min_isr(configured: int) -> int:
            return configured

    class _Partition:
        online, size_bytes, log_start_offset, log_end_offset = True, 10, 0, 5
        min_insync_replicas = 1
        replica_set = _Replicas()

        def __init__(self, index: int) -> None:
            self.topic, self.index = "t", index

    turns = 0

    async def main() -> None:
        nonlocal turns
        async with trio.open_nursery() as nursery:
            async def count_turns() -> None:
                nonlocal turns
                while True:
                    await trio.lowlevel.checkpoint()
                    turns += 1
            nursery.start_soon(count_turns)
            await trio.lowlevel.checkpoint()
            families, offline = await partition_families([_Partition(i) for i in range(10 * CHUNK)])
            nursery.cancel_scope.cancel()
        assert offline == 0
        by_name = {f.name: f for f in families}
        assert len(by_name["kafka_log_log_size"].samples) == 10 * CHUNK
        assert by_name["kafka_server_replicamanager_leadercount"].samples[0].value == 10 * CHUNK

    trio.run(main)
    assert turns >= 5  # one scan with no checkpoint would give the counter one turn at most


def test_the_loop_lateness_timer_counts_its_wake_ups_and_a_stall() -> None:
    """The 1 ms timer observes every wake-up; a 50 ms block of the loop is its worst lateness
    and lands in the 50 ms bucket; both families are exposed under their names."""
    from wirekafka.broker.metrics.loop_lateness import HISTOGRAM_NAME, MAX_NAME, LoopLateness

    meter = LoopLateness()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(meter.run)
            await trio.sleep(0.1)
            time.sleep(0.05)  # the loop held: the timer's next wake-up is ~50 ms late
            await trio.sleep(0.05)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert 0.045 <= meter.max_seconds < 0.5
    got = _exposed(meter.families())
    count = got[(HISTOGRAM_NAME + "_count", frozenset())]
    assert 10 <= count <= 160  # ~150 ms of 1 ms sleeps, each at least 1 ms
    assert got[(HISTOGRAM_NAME + "_bucket", frozenset({("le", "+Inf")}))] == count
    # the stall is above 25 ms; most wake-ups are not (a busy machine may delay a few more)
    assert count / 2 <= got[(HISTOGRAM_NAME + "_bucket", frozenset({("le", "0.025")}))] <= count - 1
    assert got[(HISTOGRAM_NAME + "_sum", frozenset())] >= 0.045
    assert got[(MAX_NAME, frozenset())] == meter.max_seconds


def test_no_loop_timer_without_the_endpoint() -> None:
    from wirekafka.broker.metrics.broker_metrics import BrokerMetrics

    assert BrokerMetrics(enabled=False).loop is None and BrokerMetrics(enabled=True).loop is not None
