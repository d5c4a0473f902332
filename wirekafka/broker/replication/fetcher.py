"""Replica fetchers: a follower's copies of its leaders' partitions, kept up with Fetch requests.

One fetcher per leader broker (Kafka's num.replica.fetchers = 1) fetches all the partitions this
broker follows on that leader in one Fetch (replica_id = this broker, read up to the leader's log
end), in an incremental fetch session as Kafka's followers do (replication/fetch_session_handler.py):
a partition the answer leaves out has no news. Each response's batches are checked (size, magic, CRC) and appended as they are, offsets
and leader epochs unchanged; the follower's high watermark becomes the leader's, capped at its
own log end. The next fetch offset — the follower's log end — is what tells the leader how far
this replica is (that is how the ISR and the leader's high watermark move). A replica behind the
leader's high watermark of a partition under a follower replication throttle is left out of the
fetch while the throttle's rate is exceeded (broker/replication_quota.py).

Before a partition's first fetch from a new leader, the follower truncates a tail the leader
does not have, as Kafka does since KIP-101/279: it asks the leader (OffsetForLeaderEpoch) where
the follower's latest leader epoch ends on the leader, and cuts its log there (or at its own end
for that epoch, whichever is lower); an answer naming an epoch the follower lacks is one round of
several, repeated until the epochs agree (KIP-279). An answer (to either request, and to the
ListOffsets asked when out of range) that arrives after the partition changed role or epoch is
dropped. Without any epoch to ask about, it truncates to its high
watermark. Each fetch carries the epoch of the follower's last batch (Fetch v12's
last_fetched_epoch); a leader whose log parted from it there answers a diverging epoch instead of
records, and the follower truncates by it the same way. Fetch errors: a stale or future epoch (the metadata has moved on), a leader that no
longer leads — the partition sits out replica.fetch.backoff.ms (or until the next reconcile hands
it over in a new epoch) while the others are fetched; OFFSET_OUT_OF_RANGE
means this replica is ahead of the leader (truncate to the leader's end) or behind its log start
(start over from it)."""

from __future__ import annotations

import logging
import trio
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replica.divergence import TruncationStep, truncation_step
from wirekafka.broker.replica.log_dir_failure import LogDirFailureChannel
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.replication.fetch_plan import FetchPlan, Followed
from wirekafka.broker.replication.fetch_session_handler import FetchSessionHandler
from wirekafka.broker.replication.peer_client import PeerClient, PeerSecurity, PeerUnavailable, SetupTimeout, answer_of
from wirekafka.broker.quotas.replication_quota import ReplicationQuotas
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # topic names, replica_id in the body, flexible
EPOCH_VERSION = 4
LIST_OFFSETS_VERSION = 7
EARLIEST = -2
# partitions of one answer handled, or of one request built, between two turns of the loop: a
# restarted follower's first answers carry every partition it follows from this leader (1,500 at
# 3,000 partitions on three brokers: a step of 70-120 ms of CPU before, measured with a trio
# instrument), and its first request names them all (60-230 ms of CPU at 10,000 partitions)
ANSWER_CHUNK = 200
# partitions one OffsetForLeaderEpoch request asks about: a restarted follower truncates every
# partition it follows (3,333 from a leader at 10,000 partitions: one request of them all took
# 130 ms of CPU to build here, and as long to answer and encode on the leader)
EPOCH_CHUNK = 500
_F = FetchRequest.FetchTopic
_E = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
_L = ListOffsetsRequest.ListOffsetsTopic


class LeaderFetcher:
    """Fetches every partition this broker follows on one leader."""

    def __init__(self, leader: BrokerInfo, config: BrokerConfig, quotas: ReplicationQuotas,
                 security: PeerSecurity, log_dir_failures: LogDirFailureChannel) -> None:
        self.leader = leader
        self.log_dir_failures = log_dir_failures
        self.config = config
        self.quotas = quotas
        self.node_id = config.node_id
        self.partitions: dict[tuple[str, int], Followed] = {}
        self.client = PeerClient(leader.host, leader.port, f"broker-{self.node_id}-fetcher-0",
                                 connect_timeout=SetupTimeout.of(config),
                                 request_timeout_s=config.int("replica.socket.timeout.ms") / 1000
                                 + config.int("replica.fetch.wait.max.ms") / 1000,
                                 receive_buffer=config.int_if_set("replica.socket.receive.buffer.bytes"),
                                 security=security)
        self._backoff_s = config.int("replica.fetch.backoff.ms") / 1000
        self.session = FetchSessionHandler()  # one incremental fetch session with the leader
        self.plan = FetchPlan()  # what the next fetch asks for, kept by change
        self._wake = trio.Event()
        self.cancel_scope = trio.CancelScope()

    def add(self, partition: Partition) -> None:
        key = (partition.topic, partition.index)
        current = self.partitions.get(key)
        if current is None or current.partition is not partition or current.leader_epoch != partition.leader_epoch:
            self.partitions[key] = added = Followed(partition, partition.leader_epoch)
            self.plan.mark(added)
            if current is not None:
                self.plan.forget(current)
                self.session.restart()
            self._wake.set()

    def remove(self, partition: Partition) -> None:
        current = self.partitions.get((partition.topic, partition.index))
        if current is not None and current.partition is partition:
            del self.partitions[(partition.topic, partition.index)]
            self.plan.forget(current)

    async def run(self) -> None:
        with self.cancel_scope:
            try:
                while True:
                    if not self.partitions:
                        self._wake = trio.Event()
                        await self._wake.wait()
                        continue
                    try:
                        await self._truncate_new()
                        await self._fetch_once()
                    except PeerUnavailable as exc:
                        log.info("fetching from broker %d: %s; retrying in %.1fs", self.leader.node_id, exc,
                                 self._backoff_s)
                        await trio.sleep(self._backoff_s)
            finally:
                await self.client.aclose()

    # ---- truncation --------------------------------------------------------------------------
    async def _truncate_new(self) -> None:
        """One round of truncation for the partitions that need it. A partition whose answer
        names an epoch it does not have is cut to where its own older epochs end and asks again
        at the next round, until the epochs agree (KIP-279)."""
        todo = [f for f in self.partitions.values() if f.needs_truncation]
        if not todo:
            return
        with_epoch = [f for f in todo if f.partition.epochs.latest_epoch >= 0]
        for f in todo:
            if f.partition.epochs.latest_epoch < 0:
                await self._truncate(f, TruncationStep(f.partition.high_watermark, True))
        for start in range(0, len(with_epoch), EPOCH_CHUNK):
            await self._truncate_by_epochs(with_epoch[start:start + EPOCH_CHUNK])

    async def _truncate_by_epochs(self, with_epoch: list[Followed]) -> None:
        """Ask the leader where each partition's latest epoch ends, and truncate there."""
        by_topic: dict[str, list[Followed]] = {}
        for f in with_epoch:
            by_topic.setdefault(f.partition.topic, []).append(f)
        request = OffsetForLeaderEpochRequest(version=EPOCH_VERSION, replica_id=self.node_id, topics=[
            _E(topic=t, partitions=[_E.OffsetForLeaderPartition(
                partition=f.partition.index, current_leader_epoch=f.leader_epoch,
                leader_epoch=f.partition.epochs.latest_epoch) for f in fs]) for t, fs in by_topic.items()])
        response = answer_of(await self.client.send(request), OffsetForLeaderEpochResponse)
        answers = {(t.topic, p.partition): p for t in response.topics for p in t.partitions}
        for f in with_epoch:
            p = f.partition
            a = answers.get((p.topic, p.index))
            if a is None or a.error_code != ErrorCode.NONE:
                continue  # retried at the next round (the epochs may not agree yet)
            if self.partitions.get((p.topic, p.index)) is not f:
                continue  # no longer fetched from this leader: the answer is for a role it left
            await self._truncate(f, truncation_step(p, a.leader_epoch, a.end_offset))

    async def _truncate(self, f: Followed, step: TruncationStep) -> None:
        """Apply one truncation step decided in the epoch f follows in (f.leader_epoch). A step
        at or past the log end still truncates the epochs from the log end, as Kafka's
        UnifiedLog.truncateTo does: this replica may have led in an epoch it appended nothing
        in, and an entry for that epoch at the log end would name it as the last fetched epoch
        of every fetch, each answered with the same diverging epoch: a follower stuck forever."""
        p, asked_under = f.partition, f.leader_epoch
        if step.offset < p.log_end_offset:
            log.info("%s-%d: truncating from %d to %d (leader %d, epoch %d)", p.topic, p.index, p.log_end_offset,
                     step.offset, self.leader.node_id, asked_under)
        doomed = p.truncate_to(step.offset, asked_under)
        f.asked = None  # the log end may have moved
        self.plan.mark(f)
        if doomed is None:
            log.info("%s-%d: truncation decided in leader epoch %d dropped: the partition is now in epoch %d%s",
                     p.topic, p.index, asked_under, p.leader_epoch, " and leads" if p.is_leader else "")
            return
        if doomed:
            await p.files.delete_segments(doomed)
        f.needs_truncation = not step.done

    # ---- fetching ----------------------------------------------------------------------------
    async def _fetch_once(self) -> None:
        cfg = self.config
        plan = self.plan
        plan.refresh(self.partitions, cfg.int("replica.fetch.max.bytes"), self.quotas.follower.exceeded(),
                     self._held_back, trio.current_time())
        if not plan.wanted:
            await trio.sleep(0.05)
            return
        round_ = plan.round
        nxt = self.session.build(plan.wanted, plan.take_changed())
        by_topic: dict[str, list[_F.FetchPartition]] = {}
        turns = LoopTurns(ANSWER_CHUNK)  # a full request names every partition followed here
        for (topic, index), want in nxt.to_send.items():
            if turns.due():
                await turns.turn()
            by_topic.setdefault(topic, []).append(_F.FetchPartition(
                partition=index, current_leader_epoch=want.current_leader_epoch, fetch_offset=want.fetch_offset,
                last_fetched_epoch=want.last_fetched_epoch, log_start_offset=want.log_start_offset,
                partition_max_bytes=want.max_bytes))
        forgotten: dict[str, list[int]] = {}
        for topic, index in nxt.forgotten:
            forgotten.setdefault(topic, []).append(index)
        request = FetchRequest(
            version=FETCH_VERSION, replica_id=self.node_id, max_wait_ms=cfg.int("replica.fetch.wait.max.ms"),
            min_bytes=cfg.int("replica.fetch.min.bytes"), max_bytes=cfg.int("replica.fetch.response.max.bytes"),
            isolation_level=0, session_id=nxt.session_id, session_epoch=nxt.epoch, rack_id="",
            forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=t, partitions=ps)
                                   for t, ps in forgotten.items()],
            topics=[_F(topic=t, partitions=ps) for t, ps in by_topic.items()])
        try:
            response = answer_of(await self.client.send(request), FetchResponse)
        except PeerUnavailable:
            self.session.restart()
            raise
        self.session.handle_response(response.error_code, response.session_id)
        if response.error_code != ErrorCode.NONE:
            log.info("fetch from broker %d failed: %s", self.leader.node_id, ErrorCode(response.error_code).name)
            await trio.sleep(0.1)
            return
        turns = LoopTurns(ANSWER_CHUNK)
        for t in response.responses:
            for pd in t.partitions:
                if turns.due():
                    await turns.turn()
                f = self.partitions.get((t.topic, pd.partition_index))
                if f is None or not plan.asked_for(f, round_) or not self._still_follows(f):
                    continue  # removed, replaced or elected while the fetch (or an earlier answer's handling) waited
                await self._handle(f, pd)

    def _still_follows(self, f: Followed) -> bool:
        """Whether f is still fetched from this leader in the epoch it was handed over in. An
        answer to a request sent before the partition changed role or epoch is dropped (Kafka's
        fetcher checks the partition's current leader epoch against the request's): appended to
        a partition that leads now, it would be refused, and applied to one in a newer epoch it
        could carry records the new leader does not have."""
        p = f.partition
        return (self.partitions.get((p.topic, p.index)) is f and not p.is_leader
                and p.leader_epoch == f.leader_epoch)

    async def _handle(self, f: Followed, pd) -> None:
        p = f.partition
        code = pd.error_code
        diverging = pd.diverging_epoch
        if code == ErrorCode.NONE and diverging is not None and diverging.epoch >= 0:
            # our log parted from the leader's: truncate as an OffsetForLeaderEpoch answer says
            # (Kafka's truncation on fetch, KIP-595 style), then fetch from there
            # (an epoch we lack leaves needs_truncation set: the next round asks OffsetForLeaderEpoch)
            await self._truncate(f, truncation_step(p, diverging.epoch, diverging.end_offset))
            return
        if code == ErrorCode.NONE:
            data = pd.records or b""
            if data:
                self._append(p, memoryview(data))
                if self.quotas.follower_throttled(p.topic, p.index):
                    self.quotas.follower.record(len(data))
            f.lag = max(0, pd.high_watermark - p.log_end_offset)
            p.set_follower_high_watermark(pd.high_watermark)
            return
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._out_of_range(f)
            return
        # FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, ...: the metadata moves
        # on (the next reconcile re-adds the partition in its new epoch, asked for at once). Until
        # then the partition sits out replica.fetch.backoff.ms, as Kafka's fetcher delays it, and
        # the rest of the answer and the next fetches go on: a pause here per partition held the
        # whole fetcher, 50 ms for each of the 3,300 partitions an epoch bump left in error at
        # 10,000 partitions, and their high watermarks with it, for minutes.
        log.debug("%s-%d: fetch from %d answered %s", p.topic, p.index, self.leader.node_id, ErrorCode(code).name)
        self.plan.delay(f, trio.current_time() + self._backoff_s)

    def _held_back(self, f: Followed) -> bool:
        """Kafka's shouldFollowerThrottle: a replica not in sync, of a throttled partition, while
        the follower quota is exceeded, is left out of the next fetch."""
        p = f.partition
        return not f.in_sync and self.quotas.follower_throttled(p.topic, p.index) and self.quotas.follower.exceeded()

    def _append(self, p: Partition, data: memoryview) -> None:
        for start, end in records.split_batches(data):
            batch = data[start:end]
            try:
                header = records.check_integrity(batch)
            except records.InvalidBatch as exc:
                log.warning("%s-%d: corrupt batch from leader %d: %s", p.topic, p.index, self.leader.node_id, exc)
                return
            if header.last_offset < p.log_end_offset:
                continue  # already have it (a fetch raced with a truncation)
            try:
                p.append_replicated(batch, header)
            except OSError as exc:
                self.log_dir_failures.fail(f"appending to {p.topic}-{p.index} as a follower", exc, p.files.directory)
                return

    async def _out_of_range(self, f: Followed) -> None:
        """The leader does not have our fetch offset: we are past its end (truncate to it) or
        before its log start (start over there)."""
        p = f.partition
        T = _L
        request = ListOffsetsRequest(version=LIST_OFFSETS_VERSION, replica_id=self.node_id, isolation_level=0,
                                     topics=[T(name=p.topic, partitions=[T.ListOffsetsPartition(
                                         partition_index=p.index, current_leader_epoch=p.leader_epoch,
                                         timestamp=EARLIEST)])])
        response = answer_of(await self.client.send(request), ListOffsetsResponse)
        earliest = response.topics[0].partitions[0]
        if earliest.error_code != ErrorCode.NONE or not self._still_follows(f):
            return
        if p.log_end_offset < earliest.offset:
            log.info("%s-%d: leader starts at %d, past our end %d: starting over", p.topic, p.index,
                     earliest.offset, p.log_end_offset)
            doomed = p.restart_at(earliest.offset)
            f.asked = None
            self.plan.mark(f)
            if doomed:
                await p.files.delete_segments(doomed)
        else:
            f.needs_truncation = True  # ahead of the leader: ask it where our epoch ends
            self.plan.mark(f)


class ReplicaFetchers:
    """The fetchers of this broker, one per leader it follows."""

    def __init__(self, config: BrokerConfig, quotas: ReplicationQuotas, security: PeerSecurity,
                 log_dir_failures: LogDirFailureChannel) -> None:
        self.config = config
        self.quotas = quotas
        self.security = security
        self.log_dir_failures = log_dir_failures
        self._fetchers: dict[int, LeaderFetcher] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def follow(self, partition: Partition, leader: BrokerInfo) -> None:
        for node, fetcher in list(self._fetchers.items()):
            if node != leader.node_id:
                fetcher.remove(partition)
        fetcher = self._fetchers.get(leader.node_id)
        if fetcher is not None and (fetcher.leader.host, fetcher.leader.port) != (leader.host, leader.port):
            fetcher.cancel_scope.cancel()
            fetcher = None
        if fetcher is None:
            fetcher = LeaderFetcher(leader, self.config, self.quotas, self.security, self.log_dir_failures)
            self._fetchers[leader.node_id] = fetcher
            assert self._nursery is not None
            self._nursery.start_soon(fetcher.run)
        fetcher.add(partition)

    def stop_following(self, partition: Partition) -> None:
        for fetcher in self._fetchers.values():
            fetcher.remove(partition)
