"""Quiet partitions of an incremental fetch (quiet_partitions.py): which session partitions a
fetch may skip because a read would find nothing new, which it must read, and that a long poll
still wakes for a skipped partition that moves."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import trio
import trio.testing

from wirekafka.broker.replica.fetch_sessions import CacheShard, FetchSession, SessionPartition
from wirekafka.broker.replica.partition import Isolation, Partition
from wirekafka.broker.replica.quiet_partitions import QuietTerms, SessionQuiet, settle
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


def _session_quiet(isolation: Isolation, parts: list[SessionPartition]) -> SessionQuiet:
    return SessionQuiet(QuietTerms(isolation, FOLLOWER if isolation is Isolation.LOG_END else -1, 0, "User:ANONYMOUS",
                                   "127.0.0.1"), parts)


def _quiet(part: SessionPartition, replica: Partition, isolation: Isolation = Isolation.LOG_END,
           named: set | None = None) -> bool:
    """Whether a fetch would set part aside (and then let it go again, as a next test needs)."""
    quiet = _session_quiet(isolation, [part])
    held = not quiet.split([(part, replica)], named or set(), False, 0)
    quiet.close()
    return held


async def _held_follower(state: BrokerState, now_ms: int) -> tuple[Partition, SessionPartition, SessionQuiet]:
    """A new partition led here with FOLLOWER in sync, and a follower session's fetch at now_ms
    that set it aside."""
    p = (await state.metadata.create_topic("t", 1)).partitions[0]
    _led_with_follower(p)
    part = _answered(p, 0)
    quiet = _session_quiet(Isolation.LOG_END, [part])
    assert not quiet.split([(part, p)], set(), False, now_ms)
    return p, part, quiet


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
        p, part, quiet = await _held_follower(state, 123_456)
        progress = p.replica_set.followers[FOLLOWER]
        assert progress.caught_up_ms() == 123_456 and progress.log_end_offset == 0
        # the session's later fetches count without looking at the partition
        assert not quiet.split([], set(), False, 200_000)
        assert progress.caught_up_ms() == 200_000
        # once it moves, its last fetch is the last one counted
        p.set_isr(frozenset(p.replica_set.isr))  # an ISR change stirs it
        assert progress.quiet_in is None and progress.caught_up_ms() == 200_000
        assert quiet.candidates() == [part]

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
        parts = [(_answered(p, 0), p) for p in topic.partitions]
        quiet = _session_quiet(Isolation.READ_UNCOMMITTED, [part for part, _ in parts])
        assert not quiet.split(parts, set(), False, 0)
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
        assert list(quiet.quiet.values()) == [topic.partitions[0]]
        assert quiet.candidates() == [parts[1][0]]

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


def _session(parts: list[SessionPartition]) -> FetchSession:
    return FetchSession(1, True, {part.key(False): part for part in parts}, False, 0, 0, 1)


def test_a_quiet_partition_is_not_looked_at_again_until_its_replica_moves(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        topic = await state.metadata.create_topic("t", 3)
        for p in topic.partitions:
            _led_with_follower(p)
        parts = [_answered(p, 0) for p in topic.partitions]
        session = _session(parts)
        quiet = _session_quiet(Isolation.LOG_END, session.partitions.values())
        session.set_watch(quiet)
        assert quiet.candidates() == parts
        assert not quiet.split(list(zip(parts, topic.partitions)), set(), False, 10)
        assert quiet.candidates() == []  # the next fetch looks at none of them
        await state.replicas.append_records([ProduceEntry(topic, 1, _batch())], acks=1, timeout_ms=1000)
        assert quiet.candidates() == [parts[1]]  # the append stirred it
        assert [t.source for t in quiet.woken()] == [parts[1]]
        assert quiet.woken() == []  # told once
        # what the fetcher names is looked at, in the session's order
        session.update({parts[2].key(False): parts[2], parts[0].key(False): parts[0]}, [])
        assert quiet.candidates() == parts
        # a forgotten partition is let go: its replica no longer tells the session
        assert not quiet.split([(parts[0], topic.partitions[0])], set(), False, 20)
        session.update({}, [parts[0].key(False)])
        assert parts[0] not in quiet.quiet and parts[0] not in quiet.active
        topic.partitions[0].set_isr(frozenset(topic.partitions[0].replica_set.isr))
        assert parts[0] not in quiet.active
        # answered with records, a partition moves last
        session.to_end(parts[1].key(False))
        assert quiet.candidates() == [parts[2], parts[1]]

    trio.run(main)


def test_a_closed_session_lets_go_of_its_replicas_and_followers(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        p = (await state.metadata.create_topic("t", 1)).partitions[0]
        _led_with_follower(p)
        part = _answered(p, 0)
        session = _session([part])
        shard = CacheShard(10, 0, random.Random(0))
        shard.sessions[session.id] = session
        quiet = _session_quiet(Isolation.LOG_END, [part])
        session.set_watch(quiet)
        assert not quiet.split([(part, p)], set(), False, 500)
        progress = p.replica_set.followers[FOLLOWER]
        assert progress.quiet_in is quiet
        shard.remove(session)
        assert session.watch is None and not quiet.quiet
        assert progress.quiet_in is None and progress.caught_up_ms() == 500
        p.set_isr(frozenset(p.replica_set.isr))  # nothing is told any more
        assert not quiet.active

    trio.run(main)


def test_a_follower_dropped_from_the_isr_while_quiet_is_read_again(tmp_path: Path) -> None:
    state = _state(tmp_path)

    async def main() -> None:
        p, part, quiet = await _held_follower(state, 0)
        p.set_isr(frozenset({p.replica_set.local_id}))
        assert quiet.candidates() == [part]
        assert quiet.split([(part, p)], set(), False, 1) == [(part, p)]  # read: its fetch lets it rejoin

    trio.run(main)
