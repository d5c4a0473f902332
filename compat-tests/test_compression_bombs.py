"""Compression bombs sent to a real `wirekafka serve` process (issue 36, item 1): small batches
that inflate to hundreds of MB, on topics where the broker must read the records. Each is refused
with Kafka's error, the broker's RSS grows by a window's worth rather than by what the bombs
inflate to, and a bystander producing on another connection is answered meanwhile
(scripts/benchlib/bombs.py builds the bombs and runs the load; the bench's `bombs` row is the
same load side by side with Kafka 4.3.1)."""

from __future__ import annotations

import time

import pytest

from raw_connections import wirekafka_and_kafka
from scripts.benchlib import bombs, workloads
from scripts.benchlib.brokers import proc_status_kb
from testsupport.broker_process import api_versions_ok
from wirekafka.protocol.errors import ErrorCode

MB = 1 << 20


@pytest.fixture
def dedicated(broker_factory):
    """A broker of this test's own, so that its RSS is the bombs' alone."""
    return broker_factory()


@pytest.mark.parametrize("topic_config", [{}, {"compression.type": "uncompressed"}, {"cleanup.policy": "compact"}],
                         ids=["producer-codec", "converted", "compacted"])
def test_four_concurrent_bombs_are_refused_in_bounded_memory_while_a_bystander_is_served(
        dedicated, topic_config: dict[str, str]) -> None:
    r = bombs.run(dedicated.bootstrap, dedicated.proc.pid, bombs=4, inflated=192 * MB, quiet_seconds=2.0,
                  after_seconds=1.0, topic_config=topic_config)
    assert r.codes == [ErrorCode.INVALID_TIMESTAMP] * 4
    assert r.rss_growth_mb <= 64, r
    # the bystander was answered while the bombs were in flight, without waiting for them; its
    # worst ack against its worst without bombs is the bench's figure (`bench.py --only bombs`):
    # the bound here only catches a broker that stops serving, so a busy machine cannot fail it
    assert r.bombs_acks > 0 and r.bombs_worst_ack_ms < 5000, r
    assert dedicated.alive() and api_versions_ok("127.0.0.1", dedicated.port)


bootstrap = wirekafka_and_kafka({})


# what a client retries after a metadata refresh: a topic just created may not be led on the
# broker yet (Kafka 4.3.1 once answered NOT_LEADER_OR_FOLLOWER right after its CreateTopics)
_NOT_LED_YET = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _one(bootstrap: str, topic_config: dict[str, str], batch: bytes) -> int:
    """The answer to one Produce of batch to a new topic, once the topic is led."""
    topic = workloads.new_topic_name("bomb")
    workloads.create_topic(bootstrap, topic, 1, config=topic_config)
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + 30
    while (code := bombs.produce_raw(host, int(port), topic, batch)) in _NOT_LED_YET and time.monotonic() < deadline:
        time.sleep(0.2)
    return code


def test_bombs_of_every_codec_get_kafkas_answers(bootstrap: str) -> None:
    """The same bombs, 16 MiB inflated (Kafka holds a converted record whole on its heap), on
    wirekafka and on Kafka 4.3.1: the same error codes."""
    now = int(time.time() * 1000)
    for codec in (bombs.GZIP, bombs.SNAPPY, bombs.LZ4, bombs.ZSTD):
        # records past the declared count: Kafka's iterator reads one byte more and refuses the batch
        trailing = bombs.bomb_batch(10, now, codec=codec, trailing=16 * MB)
        assert _one(bootstrap, {"cleanup.policy": "compact"}, trailing) == ErrorCode.INVALID_RECORD
        keyless = bombs.bomb_batch(16 * MB, now, codec=codec, key=None)
        assert _one(bootstrap, {"cleanup.policy": "compact"}, keyless) == ErrorCode.INVALID_RECORD
        big = bombs.bomb_batch(16 * MB, now, codec=codec)
        # converted, the batch outgrows max.message.bytes (RecordTooLargeException) ...
        assert _one(bootstrap, {"compression.type": "uncompressed"}, big) == ErrorCode.MESSAGE_TOO_LARGE
        # ... unless the topic's codec packs it small again: then it is a batch like any other
        assert _one(bootstrap, {"compression.type": "gzip"}, big) == ErrorCode.NONE
        ahead = bombs.bomb_batch(16 * MB, now + bombs.DAY_MS, codec=codec)
        assert _one(bootstrap, {}, ahead) == ErrorCode.INVALID_TIMESTAMP
    host, port = bootstrap.rsplit(":", 1)
    assert api_versions_ok(host, int(port))  # still serving


def _offset_for_time(bootstrap: str, topic: str, timestamp_ms: int) -> int:
    """ListOffsets by timestamp through librdkafka (offsets_for_times), on partition 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "log_level": 3})
    try:
        [found] = consumer.offsets_for_times([TopicPartition(topic, 0, timestamp_ms)], timeout=60)
        assert found.error is None, found.error
        return found.offset
    finally:
        consumer.close()


def _stored_bomb_then_records(bootstrap: str, inflated: int) -> tuple[str, int]:
    """A topic holding a batch that breaks no rule, so it is stored: a bomb at offset 0 and a
    small record 5 ms later at offset 1; then a small batch 1 s later at offset 2. (topic, the
    bomb's timestamp)"""
    now = int(time.time() * 1000) - 10_000
    topic = workloads.new_topic_name("stored-bomb")
    workloads.create_topic(bootstrap, topic, 1)
    host, port = bootstrap.rsplit(":", 1)
    stored = bombs.bomb_batch(inflated, now, then_after_ms=5)
    assert bombs.produce_raw(host, int(port), topic, stored) == ErrorCode.NONE
    small = bombs.bomb_batch(10, now + 1000)
    assert bombs.produce_raw(host, int(port), topic, small, correlation_id=2) == ErrorCode.NONE
    return topic, now


def test_a_search_by_timestamp_through_a_stored_bomb_gets_kafkas_offsets(bootstrap: str) -> None:
    """ListOffsets by timestamp reads the records inside the stored bomb's batch, on Kafka as
    here, and both brokers give the same offsets."""
    topic, at = _stored_bomb_then_records(bootstrap, 16 * MB)
    assert _offset_for_time(bootstrap, topic, at) == 0
    assert _offset_for_time(bootstrap, topic, at + 1) == 1  # the record behind the bomb
    assert _offset_for_time(bootstrap, topic, at + 5) == 1
    assert _offset_for_time(bootstrap, topic, at + 6) == 2
    assert _offset_for_time(bootstrap, topic, at + 1001) == -1  # past every record: the log end


def test_a_search_by_timestamp_through_a_stored_bomb_holds_a_window(dedicated) -> None:
    """The search streams through the stored batch: the broker's peak RSS grows by a window's
    worth, not by the 192 MiB the record inflates to."""
    topic, at = _stored_bomb_then_records(dedicated.bootstrap, 192 * MB)
    peak_before = proc_status_kb(dedicated.proc.pid, "VmHWM")  # the peak RSS so far, storing the bomb included
    assert _offset_for_time(dedicated.bootstrap, topic, at + 1) == 1  # found past the whole bomb
    growth_mb = (proc_status_kb(dedicated.proc.pid, "VmHWM") - peak_before) / 1024
    assert growth_mb <= 64, growth_mb
    assert dedicated.alive() and api_versions_ok("127.0.0.1", dedicated.port)
