"""Divergent logs between a leader and its follower (issue 34, holes 1 and 4): the follower's
truncation is repeated until the epochs agree (KIP-279, Kafka's
AbstractFetcherThread.getOffsetTruncationState) and never applied once the partition left the
role and epoch it asked in; the leader answers a fetch whose last fetched epoch parts from its log
with a diverging epoch, and does not count that follower's position (Partition.readRecords)."""

from __future__ import annotations

import struct
from pathlib import Path

import trio
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replica.replica_manager import FetchParams, FetchTarget
from wirekafka.broker.replica.divergence import TruncationStep, diverging_epoch, truncation_step
from wirekafka.broker.replication.fetcher import LeaderFetcher
from wirekafka.broker.replication.peer_client import PeerSecurity
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

NOW = 1_700_000_000_000
LEADER = 2


def _follower(directory: Path, epoch: int) -> Partition:
    plog = PartitionLog(directory, LogConfig(), clean_shutdown=True)
    p = Partition("t", 0, plog, LeaderEpochCache(directory / "leader-epoch-checkpoint"), node_id=1, lead=False)
    p.make_follower(epoch, LEADER, (LEADER, 1), frozenset((LEADER, 1)))
    return p


def _replicate(p: Partition, base: int, count: int, epoch: int) -> None:
    """The leader's batch of count records at base, written in epoch (one record per batch)."""
    for offset in range(base, base + count):
        batch = bytearray(records.build_batch([(None, b"v%d" % offset, NOW)], base_offset=offset))
        struct.pack_into(">i", batch, 12, epoch)  # partitionLeaderEpoch: not covered by the CRC
        p.append_replicated(bytes(batch), records.check_integrity(bytes(batch)))


def _kip279_follower(tmp_path: Path) -> Partition:
    """Epochs [0@0, 2@100], log end 150, now following in epoch 4."""
    p = _follower(tmp_path / "t-0", 4)
    _replicate(p, 0, 100, 0)
    _replicate(p, 100, 50, 2)
    return p


def test_an_epoch_the_follower_lacks_truncates_in_rounds_until_the_epochs_agree(tmp_path: Path):
    """KIP-279's case: the follower has [0@0, 2@100], the leader [0@0, 1@80, 3@120]. Asked about
    epoch 2 the leader answers epoch 1, ending at 120; the follower has no epoch 1, so it cuts
    where its epoch 0 ends (100) and asks again: epoch 0 ends at 80 on the leader. Keeping
    80-99 (one round, the old rule) would keep records the leader never had."""
    p = _kip279_follower(tmp_path)
    assert p.epochs.latest_epoch == 2 and p.log_end_offset == 150
    first = truncation_step(p, 1, 120)
    assert first == TruncationStep(100, False)
    assert p.truncate_to(first.offset, 4) == []
    assert (p.log_end_offset, p.epochs.latest_epoch) == (100, 0)
    assert truncation_step(p, 0, 80) == TruncationStep(80, True)


def test_an_agreeing_epoch_truncates_to_the_lower_end(tmp_path: Path):
    p = _kip279_follower(tmp_path)
    assert truncation_step(p, 2, 130) == TruncationStep(130, True)
    assert truncation_step(p, 2, 400) == TruncationStep(150, True)  # never past our own end
    assert truncation_step(p, 0, 90) == TruncationStep(90, True)  # the leader's epoch 0 ends first
    assert truncation_step(p, 0, 140) == TruncationStep(100, True)  # ours does


def test_a_leader_without_epochs_means_the_high_watermark(tmp_path: Path):
    p = _kip279_follower(tmp_path)
    p.set_follower_high_watermark(60)
    assert truncation_step(p, -1, -1) == TruncationStep(60, True)


def test_truncation_under_another_leader_epoch_or_as_leader_is_refused(tmp_path: Path):
    p = _kip279_follower(tmp_path)
    assert p.truncate_to(10, 3) is None  # asked in epoch 3, the partition is in 4
    p.make_leader(5, (1, LEADER), frozenset((1,)))
    assert p.truncate_to(10, 5) is None  # it leads now
    assert p.log_end_offset == 150


class _HeldAnswer:
    """A leader whose OffsetForLeaderEpoch answer waits until released (the request sat in a
    paused leader's socket buffer)."""

    def __init__(self, answer: OffsetForLeaderEpochResponse) -> None:
        self.answer = answer
        self.asked = trio.Event()
        self.release = trio.Event()

    async def send(self, request, timeout_s=None):
        self.asked.set()
        await self.release.wait()
        return self.answer


def _answer(epoch: int, end: int) -> OffsetForLeaderEpochResponse:
    R = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
    return OffsetForLeaderEpochResponse(version=4, throttle_time_ms=0, topics=[R(topic="t", partitions=[
        R.EpochEndOffset(error_code=0, partition=0, leader_epoch=epoch, end_offset=end)])])


def _fetcher(tmp_path: Path) -> LeaderFetcher:
    config = build_config({"log.dirs": str(tmp_path / "logs"), "node.id": "1"})
    state = BrokerState(config)
    return LeaderFetcher(BrokerInfo(LEADER, "127.0.0.1", 1), config, state.quotas, PeerSecurity.of(config),
                         state.log_dir_failures)


def _stale_answer_applied(tmp_path: Path, change_role) -> Partition:
    p = _kip279_follower(tmp_path)
    fetcher = _fetcher(tmp_path)
    held = _HeldAnswer(_answer(0, 10))  # would cut the log to 10
    fetcher.client = held  # type: ignore[assignment]
    fetcher.add(p)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetcher._truncate_new)
            await held.asked.wait()
            change_role(fetcher, p)
            held.release.set()

    trio.run(main)
    return p


def test_an_answer_that_arrives_after_the_partition_took_the_lead_is_dropped(tmp_path: Path):
    """Hole 1: the follower asked its leader (epoch 4), the leader paused, this replica was
    elected (epoch 5) and took acknowledged writes; the old leader's answer then arrives. Applying
    it would cut the new leader's log below what it acknowledged."""
    def elected(fetcher: LeaderFetcher, p: Partition) -> None:
        fetcher.remove(p)
        p.make_leader(5, (1, LEADER), frozenset((1, LEADER)))

    p = _stale_answer_applied(tmp_path, elected)
    assert p.log_end_offset == 150


def test_an_answer_asked_in_an_older_epoch_of_the_same_leader_is_dropped(tmp_path: Path):
    def new_epoch(fetcher: LeaderFetcher, p: Partition) -> None:
        p.make_follower(6, LEADER, (LEADER, 1), frozenset((LEADER, 1)))
        fetcher.add(p)  # handed over again in the new epoch: truncates again, in that epoch

    p = _stale_answer_applied(tmp_path, new_epoch)
    assert p.log_end_offset == 150


# ---- the leader's side: Fetch v12's last_fetched_epoch ------------------------------------------
def _leader_with_epochs(tmp_path: Path) -> Partition:
    """A leader whose log holds epochs [0@0, 1@80, 3@120] and ends at 150, followed by broker 2."""
    p = _follower(tmp_path / "t-0", 3)
    _replicate(p, 0, 80, 0)
    _replicate(p, 80, 40, 1)
    _replicate(p, 120, 30, 3)
    p.make_leader(3, (1, LEADER), frozenset((1, LEADER)))
    return p


def test_the_leader_names_where_a_fetchers_log_diverged(tmp_path: Path):
    p = _leader_with_epochs(tmp_path)
    assert diverging_epoch(p, 2, 100) == (1, 120)  # it never had epoch 2: epoch 1 ends at 120
    assert diverging_epoch(p, 0, 100) == (0, 80)  # epoch 0 ended at 80 here, the fetcher is past it
    assert diverging_epoch(p, 0, 70) is None
    assert diverging_epoch(p, 3, 150) is None
    assert diverging_epoch(p, 3, 160) == (3, 150)  # ahead of the leader in its own epoch
    for epoch, offset in ((4, 150),):  # an epoch newer than any here cannot be placed
        try:
            diverging_epoch(p, epoch, offset)
        except KafkaApiError as exc:
            assert exc.code == ErrorCode.OFFSET_OUT_OF_RANGE
        else:
            raise AssertionError("expected OFFSET_OUT_OF_RANGE")


def test_a_diverged_follower_gets_no_records_and_does_not_move_the_high_watermark(tmp_path: Path):
    """Hole 4's other half: a follower at 100 whose last batch is of epoch 2 (which the leader
    never had) must not count toward the high watermark as if it held 0-99 of this log."""
    p = _leader_with_epochs(tmp_path)
    config = build_config({"log.dirs": str(tmp_path / "logs")})
    state = BrokerState(config)
    params = FetchParams(max_bytes=10**6, min_bytes=0, max_wait_ms=0, replica_id=LEADER)

    async def fetch(offset: int, last_epoch: int):
        [out] = await state.replicas.fetch(params, [FetchTarget(p, offset, 10**6, 3, 0, last_epoch)])
        return out

    async def main() -> None:
        diverged = await fetch(100, 2)
        assert diverged.error == ErrorCode.NONE and diverged.diverging_epoch == (1, 120)
        assert diverged.read is not None and diverged.read.region is None
        assert p.high_watermark == 0  # the follower's 100 was not taken as its position
        agreed = await fetch(100, 1)
        assert agreed.diverging_epoch is None and agreed.read is not None and agreed.read.size > 0
        agreed.read.region.close()
        assert p.high_watermark == 100

    trio.run(main)


def test_a_former_leader_that_appended_nothing_in_its_epoch_follows_again(tmp_path: Path):
    """Found by the nemesis suite's replica checker: a replica made leader (epoch 1, its cache
    [0@0, 1@25]) and paused before it appended anything comes back as a follower in epoch 2. Its
    fetches name epoch 1 as the last fetched one; the leader answers that it diverged where epoch 0
    ends (25), which is its log end. Nothing to cut in the log, but the epoch entry at the end
    must go (Kafka's UnifiedLog.truncateTo), or every fetch gets the same answer and no record."""
    follower = _follower(tmp_path / "f" / "t-0", 0)
    _replicate(follower, 0, 25, 0)
    follower.make_leader(1, (1, LEADER), frozenset((1, LEADER)))
    follower.make_follower(2, LEADER, (LEADER, 1), frozenset((LEADER,)))
    leader = _follower(tmp_path / "l" / "t-0", 0)
    _replicate(leader, 0, 25, 0)
    _replicate(leader, 25, 10, 2)
    leader.make_leader(2, (LEADER, 1), frozenset((LEADER,)))
    diverged = diverging_epoch(leader, follower.epochs.latest_epoch, follower.log_end_offset)
    assert diverged == (0, 25)
    fetcher = _fetcher(tmp_path)
    fetcher.add(follower)
    trio.run(fetcher._truncate, fetcher.partitions[("t", 0)], truncation_step(follower, *diverged))
    assert follower.log_end_offset == 25 and follower.epochs.entries == [(0, 0)]
    assert diverging_epoch(leader, follower.epochs.latest_epoch, follower.log_end_offset) is None  # it fetches on


# ---- a fetch answer that arrives after the partition changed role --------------------------------
class _HeldFetch:
    """A leader whose Fetch answer (records from offset 150, epoch 4) waits until released."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.release = trio.Event()

    async def send(self, request, timeout_s=None):
        self.asked.set()
        await self.release.wait()
        batch = bytearray(records.build_batch([(None, b"late", NOW)], base_offset=150))
        struct.pack_into(">i", batch, 12, 4)
        topic = FetchResponse.FetchableTopicResponse
        return FetchResponse(version=12, throttle_time_ms=0, error_code=0, session_id=0, node_endpoints=[], responses=[
            topic(topic="t", topic_id=None, partitions=[topic.PartitionData(
                partition_index=0, error_code=0, high_watermark=151, last_stable_offset=151, log_start_offset=0,
                aborted_transactions=None, preferred_read_replica=-1, records=bytes(batch))])])


def _late_fetch_answer(tmp_path: Path, change_role) -> Partition:
    """Fetch in epoch 4; change_role runs while the answer is on its way; then the answer lands."""
    p = _kip279_follower(tmp_path)
    fetcher = _fetcher(tmp_path)
    held = _HeldFetch()
    fetcher.client = held  # type: ignore[assignment]
    fetcher.add(p)
    fetcher.partitions[("t", 0)].needs_truncation = False

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetcher._fetch_once)
            await held.asked.wait()
            change_role(fetcher, p)
            held.release.set()

    trio.run(main)
    return p


def test_a_fetch_answer_for_a_partition_elected_meanwhile_is_dropped(tmp_path: Path):
    """Seen in a rolling restart: the controller moved a leadership to this replica while its
    fetch from the old leader was in flight. Appending the answer to the new leader was refused
    with NOT_LEADER_OR_FOLLOWER, which escaped the fetcher and stopped the broker."""
    p = _late_fetch_answer(tmp_path, lambda fetcher, p: p.make_leader(5, (1, LEADER), frozenset((1, LEADER))))
    assert p.is_leader and p.log_end_offset == 150


def test_a_fetch_answer_asked_in_an_older_epoch_is_dropped(tmp_path: Path):
    def new_epoch(fetcher: LeaderFetcher, p: Partition) -> None:
        p.make_follower(6, LEADER, (LEADER, 1), frozenset((LEADER, 1)))

    p = _late_fetch_answer(tmp_path, new_epoch)
    assert p.log_end_offset == 150


def test_a_fetch_answer_in_the_current_epoch_is_appended(tmp_path: Path):
    p = _late_fetch_answer(tmp_path, lambda fetcher, p: None)
    assert p.log_end_offset == 151 and p.high_watermark == 151
