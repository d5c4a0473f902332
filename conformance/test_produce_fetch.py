"""Produce and Fetch: offsets, errors, limits, long-poll timing."""

from __future__ import annotations

import threading
import time

import pytest

from conformance.harness.scenarios import batch, batch_bases, fetch, fetch_partitions, produce, record_offsets
from conformance.harness.wire import Connection, create_topic, poll, unique
from wirekafka.protocol.records import build_batch


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_assigns_dense_offsets(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        t = create_topic(conn, name)
        tid = t.topic_id if version >= 13 else None
        first = produce(conn, name, batch([b"a", b"b", b"c"]), version=version, topic_id=tid)
        second = produce(conn, name, batch([b"d"]), version=version, topic_id=tid)
    assert (first.error_code, first.base_offset) == (0, 0)
    assert (second.error_code, second.base_offset) == (0, 3)
    if version >= 2:
        assert first.log_append_time_ms == -1
    if version >= 5:
        assert second.log_start_offset == 0


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks(target, acks):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        result = produce(conn, name, batch([b"x"]), acks=acks)
        if acks == 0:
            assert result is None  # no answer to wait for: wait (bounded) for the record instead
            poll(lambda: fetch(conn, name, 0).high_watermark, lambda hw: hw == 1, timeout=10, interval=0.05)
        else:
            assert result.error_code == 0 and result.base_offset == 0
        assert fetch(conn, name, 0).high_watermark == 1


def test_produce_wrong_crc_is_corrupt_message(target):
    name = unique()
    bad = bytearray(batch([b"x" * 20]))
    bad[-3] ^= 0x5A
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        assert produce(conn, name, bytes(bad)).error_code == 2
        assert fetch(conn, name, 0).high_watermark == 0


def test_produce_two_batches_is_invalid_record(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        assert produce(conn, name, batch([b"a"]) + batch([b"b"])).error_code == 87


def test_produce_too_large_for_topic(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, configs={"max.message.bytes": "200"})
        assert produce(conn, name, batch([b"x" * 300])).error_code == 10
        assert produce(conn, name, batch([b"x" * 10])).error_code == 0


def test_produce_unknown_partition(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        assert produce(conn, name, batch([b"x"]), partition=5).error_code == 3


def test_produce_log_append_time(target):
    name = unique()
    before = int(time.time() * 1000)
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, configs={"message.timestamp.type": "LogAppendTime"})
        res = produce(conn, name, batch([b"x"], timestamps=[1000]))
        assert res.error_code == 0 and res.log_append_time_ms >= before - 1000
        data = fetch(conn, name, 0).records
    from wirekafka.protocol import records
    header = records.parse_header(data)
    assert header.is_log_append_time and header.max_timestamp == res.log_append_time_ms


@pytest.mark.parametrize("version", range(4, 19))
def test_fetch_returns_records_and_watermarks(target, version):
    name = unique()
    with Connection(target.bootstrap) as conn:
        t = create_topic(conn, name)
        produce(conn, name, batch([b"a", b"b"]))
        produce(conn, name, batch([b"c", b"d", b"e"]))
        part = fetch(conn, name, 0, version=version, topic_id=t.topic_id if version >= 13 else None)
    assert part.error_code == 0 and part.high_watermark == 5
    assert record_offsets(part.records) == [0, 1, 2, 3, 4]
    if version >= 4:
        assert part.last_stable_offset == 5
    if version >= 5:
        assert part.log_start_offset == 0


def test_fetch_mid_batch_starts_with_the_containing_batch(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, batch([b"a", b"b", b"c"]))
        produce(conn, name, batch([b"d", b"e"]))
        part = fetch(conn, name, 4)
        assert batch_bases(part.records) == [3]
        part = fetch(conn, name, 1)
        assert batch_bases(part.records)[0] == 0


def test_fetch_small_max_bytes_returns_one_whole_batch(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, batch([b"x" * 500]))
        produce(conn, name, batch([b"y" * 500]))
        part = fetch(conn, name, 0, max_bytes=10, partition_max_bytes=10)
    assert part.error_code == 0 and batch_bases(part.records) == [0]


@pytest.mark.parametrize("where", ["past-end", "far-past-end"])
def test_fetch_out_of_range(target, where):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, batch([b"a", b"b"]))
        offset = 3 if where == "past-end" else 1000
        part = fetch(conn, name, offset)
    assert part.error_code == 1 and part.high_watermark == -1 and part.log_start_offset == -1


def test_fetch_at_log_end_is_empty_not_an_error(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, batch([b"a"]))
        part = fetch(conn, name, 1)
    assert part.error_code == 0 and not part.records


def test_fetch_unknown_topic(target):
    with Connection(target.bootstrap) as conn:
        part = fetch(conn, unique(), 0)
    assert part.error_code == 3


def test_empty_fetch_long_polls_for_max_wait(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        start = time.monotonic()
        part = fetch(conn, name, 0, max_wait_ms=600)
        elapsed = time.monotonic() - start
    assert part.error_code == 0 and not part.records
    assert elapsed >= 0.5


def test_fetch_is_woken_by_a_produce(target):
    name = unique()
    with Connection(target.bootstrap) as conn, Connection(target.bootstrap) as other:
        create_topic(conn, name)

        def later() -> None:
            time.sleep(0.3)
            produce(other, name, batch([b"wake"]))

        producer = threading.Thread(target=later)
        producer.start()
        start = time.monotonic()
        part = fetch(conn, name, 0, max_wait_ms=10000)
        elapsed = time.monotonic() - start
        producer.join(30)  # before `other` closes: the produce's answer may still be on its way
        assert not producer.is_alive()
    assert record_offsets(part.records) == [0]
    assert elapsed < 5


def test_fetch_min_bytes_waits_for_enough_data(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, build_batch([(None, b"x", 1_700_000_000_000)]))
        start = time.monotonic()
        part = fetch(conn, name, 0, max_wait_ms=500, min_bytes=100_000)
        elapsed = time.monotonic() - start
    assert record_offsets(part.records) == [0] and elapsed >= 0.4


def test_fetch_partition_max_bytes_ending_inside_a_batch(target):
    """partition_max_bytes ends inside the second batch: both brokers deliver the first batch
    whole and the second not at all. Kafka's slice also carries the second batch's first bytes,
    which clients discard; wirekafka stops at the last whole batch (conformance/deviations.toml)."""
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        produce(conn, name, batch([b"x" * 500]))
        produce(conn, name, batch([b"y" * 500]))
        part = fetch(conn, name, 0, partition_max_bytes=700)
    assert part.error_code == 0 and record_offsets(part.records) == [0]


def test_fetch_response_max_bytes_leaves_too_little_for_the_next_partition(target):
    """What is left of the response's max_bytes after the first partition is less than the second
    partition's first batch: only the first partition may exceed a limit (one whole batch at
    least, KIP-74), so the second gets an empty record set."""
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name, partitions=2)
        produce(conn, name, batch([b"x" * 500]), partition=0)
        produce(conn, name, batch([b"y" * 500]), partition=1)
        parts = fetch_partitions(conn, name, {0: 0, 1: 0}, max_bytes=700)
    assert [p.error_code for p in parts] == [0, 0]
    assert record_offsets(parts[0].records) == [0] and not parts[1].records
