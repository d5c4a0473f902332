"""ReplicaManager: produce outcomes and errors, acks=all and min.insync.replicas, delayed fetch,
and the I/O rule — a partition whose fsync stalls in a worker does not hold up other producers."""

from __future__ import annotations

import threading
from pathlib import Path

import trio
import trio.testing

from wirekafka.broker.replica.partition import Isolation
from wirekafka.broker.replica.replica_manager import FetchParams, FetchTarget, ProduceEntry
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.segment import LogSegment


def _state(tmp_path: Path, **overrides: str) -> BrokerState:
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"), **overrides}))
    state.load()
    return state


def _batch(n: int = 1, key: bytes | None = b"k") -> bytes:
    return records.build_batch([(key, b"value", 0) for _ in range(n)])


def test_produce_outcomes_and_errors(tmp_path: Path) -> None:
    state = _state(tmp_path, **{"log.message.timestamp.before.max.ms": str(2**62)})

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 2)
        strict = await state.metadata.create_topic("strict", 1, {"min.insync.replicas": "2"})
        rm = state.replicas
        out = await rm.append_records([ProduceEntry(topic, 0, _batch(3)), ProduceEntry(topic, 1, _batch(1)),
                                       ProduceEntry(topic, 0, _batch(2)), ProduceEntry(None, 0, _batch(1)),
                                       ProduceEntry(topic, 5, _batch(1))], acks=-1, timeout_ms=1000)
        assert [o.error for o in out] == [ErrorCode.NONE] * 3 + [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 2
        assert [o.base_offset for o in out[:3]] == [0, 0, 3]
        corrupt = bytearray(_batch(1))
        corrupt[-1] ^= 0xFF
        out = await rm.append_records([ProduceEntry(topic, 0, bytes(corrupt))], acks=1, timeout_ms=1000)
        # refused before the log is involved: Kafka answers no log start offset and no message
        assert (out[0].error, out[0].log_start_offset, out[0].message) == (ErrorCode.CORRUPT_MESSAGE, -1, None)
        # min.insync.replicas counts at most the partition's replicas (Kafka 3.7+): one replica is enough
        out = await rm.append_records([ProduceEntry(strict, 0, _batch())], acks=-1, timeout_ms=1000)
        assert out[0].error == ErrorCode.NONE
        # with two replicas and one in sync, acks=all is refused before the log; acks=1 is not
        strict.partitions[0].replica_set.replicas = (1, 2)
        out = await rm.append_records([ProduceEntry(strict, 0, _batch())], acks=-1, timeout_ms=1000)
        assert (out[0].error, out[0].log_start_offset, out[0].message) == (ErrorCode.NOT_ENOUGH_REPLICAS, 0, None)
        out = await rm.append_records([ProduceEntry(strict, 0, _batch())], acks=1, timeout_ms=1000)
        assert out[0].error == ErrorCode.NONE
        # altered topic configs apply to the next batch (the per-topic policy cache follows them)
        await state.metadata.set_topic_configs(topic, {"max.message.bytes": "64"})
        out = await rm.append_records([ProduceEntry(topic, 0, _batch(3))], acks=1, timeout_ms=1000)
        assert out[0].error == ErrorCode.MESSAGE_TOO_LARGE
        await state.metadata.set_topic_configs(topic, {})
        out = await rm.append_records([ProduceEntry(topic, 0, _batch(3))], acks=1, timeout_ms=1000)
        assert out[0].error == ErrorCode.NONE
        # internal topics take writes only from Kafka's admin client id
        offsets = await state.metadata.create_topic("__consumer_offsets", 1)
        out = await rm.append_records([ProduceEntry(offsets, 0, _batch())], acks=1, timeout_ms=1000)
        assert out[0].error == ErrorCode.INVALID_TOPIC_EXCEPTION

    trio.run(main)


def test_records_the_log_validator_rejects_are_explained_record_by_record(tmp_path: Path) -> None:
    """Kafka's RecordValidationException: the log start offset, the summary and each record's
    index and message; the partition's log is untouched and the next batch gets offset 0."""
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("c", 1, {"cleanup.policy": "compact"})
        rm = state.replicas
        keyless = records.build_batch([(b"a", b"v", 0), (None, b"v", 0), (b"b", b"v", 0)])
        out = await rm.append_records([ProduceEntry(topic, 0, keyless)], acks=1, timeout_ms=1000)
        said = "Compacted topic cannot accept message without key in topic partition c-0"
        assert (out[0].error, out[0].base_offset, out[0].log_start_offset) == (ErrorCode.INVALID_RECORD, -1, 0)
        assert out[0].record_errors == ((1, said),)
        assert out[0].message == ("One or more records have been rejected due to 1 record errors in total, and only "
                                  f"showing the first three errors at most: [RecordError(batchIndex=1, message='{said}')]")
        out = await rm.append_records([ProduceEntry(topic, 0, _batch(2))], acks=1, timeout_ms=1000)
        assert (out[0].error, out[0].base_offset, out[0].record_errors) == (ErrorCode.NONE, 0, ())

    trio.run(main)


def test_delayed_fetch_wakes_on_append_and_times_out_empty(tmp_path: Path) -> None:
    state = _state(tmp_path, **{"log.message.timestamp.before.max.ms": str(2**62)})

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 1)
        partition = topic.partitions[0]
        rm = state.replicas
        params = FetchParams(max_bytes=10**6, min_bytes=1, max_wait_ms=30_000)
        got = []

        async def consumer() -> None:
            got.extend(await rm.fetch(params, [FetchTarget(partition, 0, 10**6)]))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consumer)
            await trio.testing.wait_all_tasks_blocked()
            assert not got  # waiting for data, not polling
            await rm.append_records([ProduceEntry(topic, 0, _batch(2))], acks=1, timeout_ms=1000)
        assert got[0].error == ErrorCode.NONE and got[0].read.size > 0
        got[0].read.region.close()
        with trio.move_on_after(5) as scope:
            empty = await rm.fetch(FetchParams(10**6, 10**6, 50, Isolation.READ_COMMITTED),
                                   [FetchTarget(partition, 2, 10**6)])
        assert not scope.cancelled_caught
        assert empty[0].error == ErrorCode.NONE and empty[0].read.size == 0
        assert empty[0].read.high_watermark == 2

    trio.run(main)


def test_stalled_flush_of_one_partition_does_not_stall_other_producers(tmp_path: Path, monkeypatch) -> None:
    """Slow disk: the fsync of partition `slow` (flush.messages=1) blocks in its worker thread until
    the test releases it; meanwhile a producer to another topic is answered. No timing involved:
    the other produce completes while the stalled fsync is still provably blocked."""
    state = _state(tmp_path, **{"log.message.timestamp.before.max.ms": str(2**62)})

    async def topics() -> tuple:
        return (await state.metadata.create_topic("slow", 1, {"flush.messages": "1"}),
                await state.metadata.create_topic("fast", 1))

    slow, fast = trio.run(topics)
    slow_dir = str(tmp_path / "data" / "slow-0")
    stalled = threading.Event()
    release = threading.Event()
    real_flush = LogSegment.flush

    def stalling_flush(self: LogSegment) -> None:
        if str(self.log_path).startswith(slow_dir):
            stalled.set()
            release.wait(30)
        real_flush(self)

    monkeypatch.setattr(LogSegment, "flush", stalling_flush)

    async def main() -> None:
        rm = state.replicas
        slow_done = trio.Event()

        async def slow_producer() -> None:
            out = await rm.append_records([ProduceEntry(slow, 0, _batch())], acks=1, timeout_ms=1000)
            assert out[0].error == ErrorCode.NONE
            slow_done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_producer)
            await trio.to_thread.run_sync(stalled.wait, 30)
            for i in range(20):
                out = await rm.append_records([ProduceEntry(fast, 0, _batch())], acks=-1, timeout_ms=1000)
                assert out[0].error == ErrorCode.NONE and out[0].base_offset == i
            assert not slow_done.is_set() and not release.is_set()  # the stall is still on
            release.set()
        assert slow_done.is_set()
        assert slow.partitions[0].recovery_point == 1  # the flush completed and moved it

    trio.run(main)
