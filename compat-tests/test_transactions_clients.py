"""Transactions with kafka-python and aiokafka against a live wirekafka: a committed transaction
is read by read_committed consumers of the same client, an aborted one never is (while
read_uncommitted consumers see its records), and offsets sent to a transaction are committed
for the group only with it (consume-transform-produce). The scenario and its exact offsets are
txn_support's.

The same tests run against real Kafka with WIREKAFKA_EXTERNAL_BOOTSTRAP=host:port."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from txn_support import LAST, OPEN_ENDS, Read, check_commit_and_abort, create_topics

pytestmark = pytest.mark.timeout(120)


# ---- kafka-python ------------------------------------------------------------------------------

def _kp_read(bootstrap: str, topic: str, isolation: str, last: dict[int, int], timeout: float = 30.0) -> list[Read]:
    """Records of `topic` from offset 0 until each partition p yielded offset last[p] (bounded)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level=isolation)
    tps = [TopicPartition(topic, p) for p in last]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    got: list[Read] = []
    reached: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(reached) < len(last) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                for m in batch:
                    got.append((m.partition, m.offset, m.value))
                    if m.offset >= last[m.partition]:
                        reached.add(m.partition)
    finally:
        consumer.close()
    assert len(reached) == len(last), f"{isolation} read of {topic} stopped short: {sorted(got)}"
    return got


def _kp_end_offsets(bootstrap: str, topic: str, isolation: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=isolation)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in LAST], timeout_ms=10000)
    finally:
        consumer.close()
    return {tp.partition: offset for tp, offset in ends.items()}


def _kp_producer(bootstrap: str, transactional_id: str) -> Any:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                             transaction_timeout_ms=60000)
    producer.init_transactions()
    return producer


def test_kafka_python_commit_and_abort(broker, topic_name: str) -> None:
    create_topics(broker.bootstrap, (topic_name, 2))
    producer = _kp_producer(broker.bootstrap, f"tx-{topic_name}")
    try:
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic_name, value=b"committed-%d" % i, partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(5):
            producer.send(topic_name, value=b"aborted-%d" % i, partition=i % 2)
        producer.flush(30)  # the aborted records are in the log before the abort
        for isolation, ends in OPEN_ENDS.items():
            assert _kp_end_offsets(broker.bootstrap, topic_name, isolation) == ends, isolation
        producer.abort_transaction()
        producer.begin_transaction()
        for p in range(2):
            producer.send(topic_name, value=b"end-%d" % p, partition=p)
        producer.commit_transaction()
    finally:
        producer.close(timeout=10)
    check_commit_and_abort(_kp_read(broker.bootstrap, topic_name, "read_committed", LAST),
                            _kp_read(broker.bootstrap, topic_name, "read_uncommitted", LAST))


def test_kafka_python_offsets_sent_to_a_transaction(broker, topic_name: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"copier-{topic_name}"
    create_topics(broker.bootstrap, (source, 1), (sink, 1))
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(6):
        plain.send(source, value=b"in-%d" % i, partition=0)
    plain.flush(30)
    plain.close(timeout=10)
    tp = TopicPartition(source, 0)
    consumer = KafkaConsumer(source, bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed")
    producer = _kp_producer(broker.bootstrap, f"tx-{topic_name}")
    try:
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            got += consumer.poll(timeout_ms=500, max_records=3 - len(got)).get(tp, [])
        assert [m.value for m in got] == [b"in-0", b"in-1", b"in-2"]
        for outcome in ("abort", "commit"):
            producer.begin_transaction()
            for m in got:
                producer.send(sink, value=m.value.replace(b"in", b"out"), partition=0)
            producer.flush(30)  # in the log before the abort, so both brokers write the same offsets
            producer.send_offsets_to_transaction({tp: OffsetAndMetadata(3, "", -1)}, consumer.group_metadata())
            if outcome == "abort":
                producer.abort_transaction()
                assert consumer.committed(tp) is None
            else:
                producer.commit_transaction()
                assert consumer.committed(tp) == 3
    finally:
        producer.close(timeout=10)
        consumer.close(autocommit=False)
    # sink: out-0..2 aborted at 0-2, ABORT marker at 3, out-0..2 committed at 4-6, COMMIT at 7
    assert sorted(_kp_read(broker.bootstrap, sink, "read_committed", {0: 6})) == [
        (0, 4, b"out-0"), (0, 5, b"out-1"), (0, 6, b"out-2")]
    assert len(_kp_read(broker.bootstrap, sink, "read_uncommitted", {0: 6})) == 6


# ---- aiokafka ----------------------------------------------------------------------------------

async def _aio_read(bootstrap: str, topic: str, isolation: str, last: dict[int, int],
                    timeout: float = 30.0) -> list[Read]:
    """The same as _kp_read with aiokafka."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level=isolation)
    await consumer.start()
    got: list[Read] = []
    reached: set[int] = set()
    try:
        tps = [TopicPartition(topic, p) for p in last]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        deadline = time.monotonic() + timeout
        while len(reached) < len(last) and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                for m in batch:
                    got.append((m.partition, m.offset, m.value))
                    if m.offset >= last[m.partition]:
                        reached.add(m.partition)
    finally:
        await consumer.stop()
    assert len(reached) == len(last), f"{isolation} read of {topic} stopped short: {sorted(got)}"
    return got


async def _aio_end_offsets(bootstrap: str, topic: str, isolation: str) -> dict[int, int]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=isolation)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in LAST])
    finally:
        await consumer.stop()
    return {tp.partition: offset for tp, offset in ends.items()}


class _Abort(Exception):
    """Raised inside `async with producer.transaction()` to make the context abort."""


def test_aiokafka_commit_and_abort(broker, topic_name: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> tuple[list[Read], list[Read]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"tx-{topic_name}",
                                    transaction_timeout_ms=60000)
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(10):
                    await producer.send(topic_name, value=b"committed-%d" % i, partition=i % 2)
            with pytest.raises(_Abort):
                async with producer.transaction():
                    sent = [await producer.send(topic_name, value=b"aborted-%d" % i, partition=i % 2)
                            for i in range(5)]
                    await asyncio.gather(*sent)  # the aborted records are in the log before the abort
                    for isolation, ends in OPEN_ENDS.items():
                        assert await _aio_end_offsets(broker.bootstrap, topic_name, isolation) == ends, isolation
                    raise _Abort
            async with producer.transaction():
                for p in range(2):
                    await producer.send(topic_name, value=b"end-%d" % p, partition=p)
        finally:
            await producer.stop()
        return (await _aio_read(broker.bootstrap, topic_name, "read_committed", LAST),
                await _aio_read(broker.bootstrap, topic_name, "read_uncommitted", LAST))

    create_topics(broker.bootstrap, (topic_name, 2))
    check_commit_and_abort(*asyncio.run(run()))


async def _committed_once_stable(consumer: Any, tp: Any, expected: int, timeout: float = 10.0) -> int | None:
    """The group's committed offset for tp, asked again until it is `expected` (bounded): Kafka
    answers EndTxn once the decision is durable and writes the markers afterwards, so the commit
    reaches the group a moment later; aiokafka's OffsetFetch does not ask for stable offsets
    (require_stable), which would make the broker say so instead of answering the old offset."""
    deadline = time.monotonic() + timeout
    offset = await consumer.committed(tp)
    while offset != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        offset = await consumer.committed(tp)
    return offset


def test_aiokafka_offsets_sent_to_a_transaction(broker, topic_name: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"copier-{topic_name}"
    tp = TopicPartition(source, 0)

    async def run() -> tuple[list[int | None], list[Read], list[Read]]:
        plain = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await plain.start()
        try:
            for i in range(6):
                await plain.send_and_wait(source, value=b"in-%d" % i, partition=0)
        finally:
            await plain.stop()
        consumer = AIOKafkaConsumer(source, bootstrap_servers=broker.bootstrap, group_id=group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    isolation_level="read_committed")
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"tx-{topic_name}",
                                    transaction_timeout_ms=60000)
        await consumer.start()
        await producer.start()
        committed: list[int | None] = []
        try:
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < 3 and time.monotonic() < deadline:
                got += (await consumer.getmany(tp, timeout_ms=500, max_records=3 - len(got))).get(tp, [])
            assert [m.value for m in got] == [b"in-0", b"in-1", b"in-2"]
            with pytest.raises(_Abort):
                async with producer.transaction():
                    sent = [await producer.send(sink, value=m.value.replace(b"in", b"out"), partition=0)
                            for m in got]
                    await asyncio.gather(*sent)  # in the log before the abort, as on every broker
                    await producer.send_offsets_to_transaction({tp: 3}, group)
                    raise _Abort
            committed.append(await consumer.committed(tp))
            async with producer.transaction():
                for m in got:
                    await producer.send(sink, value=m.value.replace(b"in", b"out"), partition=0)
                await producer.send_offsets_to_transaction({tp: 3}, group)
            committed.append(await _committed_once_stable(consumer, tp, 3))
        finally:
            await producer.stop()
            await consumer.stop()
        return (committed, await _aio_read(broker.bootstrap, sink, "read_committed", {0: 6}),
                await _aio_read(broker.bootstrap, sink, "read_uncommitted", {0: 6}))

    create_topics(broker.bootstrap, (source, 1), (sink, 1))
    committed, read_committed, read_uncommitted = asyncio.run(run())
    assert committed == [None, 3]
    # sink: out-0..2 aborted at 0-2, ABORT marker at 3, out-0..2 committed at 4-6, COMMIT at 7
    assert sorted(read_committed) == [(0, 4, b"out-0"), (0, 5, b"out-1"), (0, 6, b"out-2")]
    assert len(read_uncommitted) == 6
