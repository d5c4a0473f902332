"""Quiet partitions of an incremental fetch (quiet_partitions.py): which session partitions a
fetch may skip because a read would find nothing new, which it must read, and that a long poll
still wakes for a skipped partition that moves."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
import trio.testing

from wirekafka.broker.replica.fetch_sessions import SessionPartition
from wirekafka.broker.replica.partition import Isolation, Partition
from wirekafka.broker.replica.quiet_partitions import QuietPartitions, settle
from wirekafka.broker.replica.replica_manager import FetchParams, FetchTarget, ProduceEntry
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records

FOLLOWER = 2


def _state(tmp_path: Path) -> BrokerState:
    state = BrokerState(build_config({"log.dirs": str(tmp_path / "data"),
                                      "log.message.timestamp.before.max.ms": str(2**62)}))
    state.load()
    return state


def _batch(n: int = 1) -> bytes:
    return records.build_batch([(b"k", b"value", 0) for _ in range(n)])


def _led_with_follower(partition: Partition, epoch: int = 3) -> None:
    """This broker leads the partition with FOLLOWER in the ISR."""
    me = partition.replica_set.local_id
    partition.make_leader(epoch, (me, FOLLOWER), frozenset((me, FOLLOWER)))


def _answered(partition: Partition, offset: int) -> SessionPartition:
    """A session partition at offset, last answered cleanly with the partition's watermarks."""
    part = SessionPartition(partition.topic, uuid.UUID(int=0), partition.index, offset, 10**6,
                            current_leader_epoch=partition.leader_epoch)
    part.high_watermark, part.local_log_start_offset = partition.high_watermark, partition.log_start_offset
    settle(part, partition, clean=True)
    return part


def _quiet(part: SessionPartition, replica: Partition, isolation: Isolation = Isolation.LOG_END,
           named: set | None = None) -> bool:
    quiet = QuietPartitions(isolation, FOLLOWER if isolation is Isolation.LOG_END else -1, 0)
    return not quiet.split([(part, replica)], named or set(), False)


def test_a_caught_up_follower_is_quiet_until_something_moves(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 1)
        p = topic.partitions[0]
        _led_with_follower(p)
        await state.replicas.append_records([ProduceEntry(topic, 0, _batch(2))], acks=1, timeout_ms=1000)
        p.record_follower_fetch(FOLLOWER, 2)  # the high watermark reaches 2
        part = _answered(p, 2)
        assert _quiet(part, p)
        # what the fetcher names is read; so is a replica other than the one answered
        assert not _quiet(part, p, named={part.key(False)})
        other = (await state.metadata.create_topic("u", 1)).partitions[0]
        assert not _quiet(part, other)
        # a position behind the log end has records to read
        assert not _quiet(_answered(p, 1), p)
        # a new epoch, an unclean last answer, a stale watermark: read again
        settle(part, p, clean=False)
        assert not _quiet(part, p)
        settle(part, p, clean=True)
        part.high_watermark = 1
        assert not _quiet(part, p)
        part.high_watermark = 2
        _led_with_follower(p, epoch=4)
        assert not _quiet(part, p)

    trio.run(main)


def test_a_follower_out_of_the_isr_is_read_so_that_it_can_rejoin(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        p = (await state.metadata.create_topic("t", 1)).partitions[0]
        me = p.replica_set.local_id
        p.make_leader(1, (me, FOLLOWER), frozenset((me,)))
        assert not _quiet(_answered(p, 0), p)

    trio.run(main)


def test_a_quiet_follower_counts_as_caught_up_now(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        p = (await state.metadata.create_topic("t", 1)).partitions[0]
        _led_with_follower(p)
        quiet = QuietPartitions(Isolation.LOG_END, FOLLOWER, now_ms=123_456)
        assert not quiet.split([(_answered(p, 0), p)], set(), False)
        progress = p.replica_set.followers[FOLLOWER]
        assert progress.last_caught_up_ms == 123_456 and progress.log_end_offset == 0

    trio.run(main)


def test_a_consumer_is_quiet_at_its_isolation_limit(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 1)
        p = topic.partitions[0]
        await state.replicas.append_records([ProduceEntry(topic, 0, _batch(3))], acks=1, timeout_ms=1000)
        assert _quiet(_answered(p, 3), p, Isolation.READ_UNCOMMITTED)
        assert _quiet(_answered(p, 3), p, Isolation.READ_COMMITTED)
        assert not _quiet(_answered(p, 2), p, Isolation.READ_UNCOMMITTED)

    trio.run(main)


def test_a_long_poll_over_quiet_partitions_waits_and_reads_the_one_that_moved(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 2)
        quiet = QuietPartitions(Isolation.READ_UNCOMMITTED, -1, 0)
        parts = [(_answered(p, 0), p) for p in topic.partitions]
        assert not quiet.split(parts, set(), False)
        targets: list[FetchTarget] = []
        got = []

        async def consumer() -> None:
            got.extend(await state.replicas.fetch(FetchParams(10**6, 1, 30_000), targets, quiet))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consumer)
            await trio.testing.wait_all_tasks_blocked()
            assert not got  # waiting, although nothing was read
            await state.replicas.append_records([ProduceEntry(topic, 1, _batch(2))], acks=1, timeout_ms=1000)
        assert [t.source for t in targets] == [parts[1][0]]
        assert got[0].read.size > 0 and got[0].read.high_watermark == 2
        got[0].read.region.close()
        assert quiet.replicas() == [topic.partitions[0]]

    trio.run(main)


def test_the_change_count_spares_the_full_test_but_never_hides_a_change(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 1)
        p = topic.partitions[0]
        _led_with_follower(p)
        await state.replicas.append_records([ProduceEntry(topic, 0, _batch(4))], acks=1, timeout_ms=1000)
        p.record_follower_fetch(FOLLOWER, 4)
        part = _answered(p, 4)
        assert part.seen_changes == -1  # an answer forgets it: the next fetch tests in full
        assert _quiet(part, p) and part.seen_changes == p.changes
        assert _quiet(part, p)  # the count did not move: still quiet
        await state.replicas.append_records([ProduceEntry(topic, 0, _batch(1))], acks=1, timeout_ms=1000)
        assert not _quiet(part, p)  # an append moved it: records to read
        part = _answered(p, 5)
        p.record_follower_fetch(FOLLOWER, 5)
        part.high_watermark = p.high_watermark
        assert _quiet(part, p)
        p.delete_records_before(2)  # the log start moved: the fetcher is told
        assert not _quiet(part, p)

    trio.run(main)
