"""A follower handles a fetch answer of many partitions in chunks of ANSWER_CHUNK, each chunk in a
task step of its own: a restarted follower's first answers carry every partition it follows from
that leader (1,500 at 3,000 partitions on three brokers, a step of 70-120 ms of CPU before,
measured with a trio instrument in the cluster-scale bench). Every partition is still handled.
Its truncation asks the leader about EPOCH_CHUNK partitions a request."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replication import fetcher as fetcher_module
from wirekafka.broker.replication.fetcher import FETCH_VERSION, LeaderFetcher
from wirekafka.broker.replication.peer_client import PeerSecurity
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog

LEADER = 2
PARTITIONS = 25


class TaskSteps(trio.abc.Instrument):
    """Counts task steps: two partitions handled in one step saw the same count."""

    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


class _Leader:
    """A leader answering one fetch: every partition asked for, without records, high watermark 0."""

    def __init__(self) -> None:
        self.answered = trio.Event()

    async def send(self, request, timeout_s=None) -> FetchResponse:
        R = FetchResponse.FetchableTopicResponse
        self.answered.set()
        return FetchResponse(version=FETCH_VERSION, throttle_time_ms=0, error_code=0, session_id=0, responses=[
            R(topic=t.topic, partitions=[R.PartitionData(
                partition_index=p.partition, error_code=0, high_watermark=0, last_stable_offset=0,
                log_start_offset=0, aborted_transactions=[], preferred_read_replica=-1, records=b"")
                for p in t.partitions])
            for t in request.topics])


def _following(tmp_path: Path, leader: object, with_epoch: bool) -> LeaderFetcher:
    """A fetcher from LEADER (answered by `leader`) following PARTITIONS new replicas of topic t;
    with_epoch: each replica has leader epoch 0 from offset 0, so its truncation asks the leader."""
    config = build_config({"log.dirs": str(tmp_path / "logs"), "node.id": "1"})
    state = BrokerState(config)
    fetcher = LeaderFetcher(BrokerInfo(LEADER, "127.0.0.1", 1), config, state.quotas, PeerSecurity.of(config),
                            state.log_dir_failures)
    fetcher.client = leader  # type: ignore[assignment]
    for i in range(PARTITIONS):
        d = tmp_path / f"t-{i}"
        epochs = LeaderEpochCache(d / "leader-epoch-checkpoint")
        if with_epoch:
            epochs.assign(0, 0)
        p = Partition("t", i, PartitionLog(d, LogConfig()), epochs, node_id=1, lead=False)
        p.make_follower(1 if with_epoch else 0, LEADER, (LEADER, 1), frozenset((LEADER, 1)))
        fetcher.add(p)
    return fetcher


def test_an_answer_of_many_partitions_is_handled_a_chunk_per_step(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetcher_module, "ANSWER_CHUNK", 10)
    leader = _Leader()
    fetcher = _following(tmp_path, leader, with_epoch=False)
    steps = TaskSteps()
    handled: list[tuple[int, int]] = []
    set_high_watermark = Partition.set_follower_high_watermark

    def noted(self: Partition, high_watermark: int) -> None:
        handled.append((self.index, steps.count))
        set_high_watermark(self, high_watermark)

    monkeypatch.setattr(Partition, "set_follower_high_watermark", noted)

    async def main() -> None:
        await fetcher._truncate_new()  # new replicas without epochs: to their high watermark, no request
        trio.lowlevel.add_instrument(steps)
        await fetcher._fetch_once()

    trio.run(main)
    assert sorted(index for index, _ in handled) == list(range(PARTITIONS))
    seen = [step for _, step in handled]
    # 25 partitions: three steps of 10, 10 and 5
    assert [len(set(seen[i:i + 10])) for i in range(0, PARTITIONS, 10)] == [1, 1, 1]
    assert len(set(seen)) == 3


class _EpochLeader:
    """A leader answering OffsetForLeaderEpoch: each partition's epoch ends at offset 0."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    async def send(self, request, timeout_s=None) -> OffsetForLeaderEpochResponse:
        T = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
        self.asked.append(sorted(p.partition for t in request.topics for p in t.partitions))
        return OffsetForLeaderEpochResponse(version=request.API_VERSION, throttle_time_ms=0, topics=[
            T(topic=t.topic, partitions=[T.EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=p.leader_epoch,
                                                          end_offset=0) for p in t.partitions])
            for t in request.topics])


def test_truncation_asks_about_a_chunk_of_partitions_a_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetcher_module, "EPOCH_CHUNK", 10)
    leader = _EpochLeader()
    fetcher = _following(tmp_path, leader, with_epoch=True)
    trio.run(fetcher._truncate_new)
    assert leader.asked == [list(range(0, 10)), list(range(10, 20)), list(range(20, 25))]
    assert not any(f.needs_truncation for f in fetcher.partitions.values())


class _EpochBumpLeader:
    """A leader that answers UNKNOWN_LEADER_EPOCH for the partitions in `behind` (it has not
    applied the epoch the follower fetches in yet) and an empty answer for the others; it notes
    which partitions each request asked for."""

    def __init__(self, behind: set[int]) -> None:
        self.behind = behind
        self.asked: list[list[int]] = []

    async def send(self, request, timeout_s=None) -> FetchResponse:
        R = FetchResponse.FetchableTopicResponse
        self.asked.append(sorted(p.partition for t in request.topics for p in t.partitions))
        return FetchResponse(version=FETCH_VERSION, throttle_time_ms=0, error_code=0, session_id=0, responses=[
            R(topic=t.topic, partitions=[R.PartitionData(
                partition_index=p.partition, error_code=56 if p.partition in self.behind else 0,  # UNKNOWN_LEADER_EPOCH
                high_watermark=0, last_stable_offset=0, log_start_offset=0, aborted_transactions=[],
                preferred_read_replica=-1, records=b"")
                for p in t.partitions])
            for t in request.topics])


def test_partitions_answered_in_error_sit_out_the_backoff_while_the_others_are_fetched(tmp_path: Path) -> None:
    """Kafka's fetcher delays a partition whose answer was an error by replica.fetch.backoff.ms and
    goes on with the others. Handling the answer itself waits for nothing: a pause per partition
    in error (an epoch bump leaves thousands so at once) held every partition of the leader."""
    behind = set(range(0, PARTITIONS, 2))
    leader = _EpochBumpLeader(behind)
    fetcher = _following(tmp_path, leader, with_epoch=False)
    others = sorted(set(range(PARTITIONS)) - behind)
    clock = trio.testing.MockClock(autojump_threshold=0)  # a pause would pass in virtual time

    async def main() -> None:
        await fetcher._truncate_new()
        start = trio.current_time()
        await fetcher._fetch_once()
        assert trio.current_time() == start  # the answer was handled without waiting
        assert leader.asked == [list(range(PARTITIONS))]
        clock.jump(0.5)
        await fetcher._fetch_once()
        assert leader.asked[-1] == others  # those in error sit out the backoff (1 s by default)
        clock.jump(0.6)
        leader.behind = set()
        await fetcher._fetch_once()
        assert leader.asked[-1] == list(range(PARTITIONS))  # back once it has passed
        # a partition handed over again in a new epoch is asked for at once, delayed or not
        leader.behind = {1}
        await fetcher._fetch_once()
        p1 = fetcher.partitions[("t", 1)].partition
        p1.make_follower(2, LEADER, (LEADER, 1), frozenset((LEADER, 1)))
        fetcher.add(p1)
        await fetcher._truncate_new()
        await fetcher._fetch_once()
        assert 1 in leader.asked[-1]

    trio.run(main, clock=clock)
