"""ReplicaManager: where appends and fetches meet the partitions, and where waiting lives.

- `append_records(entries, acks, timeout_ms)`: validate client batches (once-per-topic settings),
  append them, and for acks=all wait as a delayed produce until every appended partition's high
  watermark covers the batch (the in-sync replicas have it) or the timeout passes
  (REQUEST_TIMED_OUT). acks=all with fewer in-sync replicas than min.insync.replicas is refused
  before appending (NOT_ENOUGH_REPLICAS), as Kafka does.
- `fetch(params, targets)`: read every partition (file regions, no record bytes in Python) and,
  while fewer than min_bytes are available, wait as a delayed fetch for a high-watermark move on
  any of them, up to max_wait_ms. Waiting is on events the partitions set: never polling.
- `append_coordinator_records` / `wait_for_high_watermark`: coordinators write their internal
  topics through the same path and wait like an acks=all write.
- flush.messages reached by an append: the fsync runs in a worker thread before the producer is
  answered; other connections are not held up."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Mapping, Protocol, TypeAlias, TypeVar

import trio

from wirekafka.broker.replica.batch_validation import (
    AppendPolicy,
    InvalidRecords,
    RefusedBeforeLog,
    TransactionNotVerified,
    check_client_batch,
    inspect_records,
    needs_inspection,
)
from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.broker.metadata.cluster_metadata import ClusterMetadata, Topic
from wirekafka.broker.replica.divergence import diverging_epoch
from wirekafka.broker.replica.log_dir_failure import LogDirFailureChannel
from wirekafka.broker.replica.partition import AppendOrigin, AppendResult, Isolation, Partition, ReadResult
from wirekafka.broker.replica.replica_selector import NO_PREFERENCE, preferred_read_replica
from wirekafka.broker.quotas.replication_quota import ReplicationQuotas
from wirekafka.broker.metrics.histogram import Histogram
from wirekafka.broker.metrics.topic_metrics import TopicMetrics
from wirekafka.config.broker_keys import RACK_AWARE_SELECTOR
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage.epoch_cache import EpochCheckpointWork
from wirekafka.storage.partition_metadata import PartitionMetadataFile
from wirekafka.storage.log import FlushWork

log = logging.getLogger(__name__)

ADMIN_CLIENT_ID = "__admin_client"  # Kafka lets only this client id write internal topics


@dataclass(slots=True)
class ProduceEntry:
    """One partition's records in a produce request; topic None when it does not exist."""

    topic: Topic | None
    index: int
    records: bytes | memoryview | None
    unknown: ErrorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@dataclass(slots=True)
class ProduceOutcome:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    # (index in the batch, message): the records Kafka's log validator rejected (Produce v8+)
    record_errors: tuple[tuple[int, str], ...] = ()


@dataclass(slots=True)
class FetchTarget:
    partition: Partition | None  # None: a partition of a known topic this broker holds no replica of
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # a follower's own log start, as its fetch reports it
    last_fetched_epoch: int = -1  # the epoch of the fetcher's last batch (Fetch v12+), -1 if not sent
    source: Any = None  # the caller's own record of what this target answers (the fetch session's partition)


class IdleTargets(Protocol):
    """Partitions a fetch skipped as having nothing to read (quiet_partitions.py), which a long
    poll still waits on."""

    def waits(self) -> bool:
        """Whether there are any: a long poll waits on them."""
        ...

    def add_waiter(self, event: trio.Event) -> None:
        """Set event when one of them moves."""
        ...

    def remove_waiter(self, event: trio.Event) -> None: ...

    def woken(self) -> list[FetchTarget]:
        """After a wait: the targets that are to be read from now on."""
        ...


def fetching_replica(request: object) -> int:
    """The broker id of the follower a Fetch request comes from (replica_id up to v14,
    replica_state from v15), -1 for a consumer."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return state.replica_id
    rid = getattr(request, "replica_id", -1)
    return -1 if rid is None else rid


@dataclass(slots=True)
class FetchParams:
    max_bytes: int
    min_bytes: int
    max_wait_ms: int
    isolation: Isolation = Isolation.READ_UNCOMMITTED
    replica_id: int = -1  # a follower broker's id: it reads up to the log end and reports its progress
    # a consumer's rack (Fetch v11+, "" when it has none): such a fetch may be served by a follower,
    # and the leader may point it at one (KIP-392); None before v11: leaders only
    client_rack: str | None = None
    # the listener the fetch came in on: a preferred read replica must be reachable there
    listener: str = ""


@dataclass(slots=True)
class FetchOutcome:
    error: ErrorCode
    read: ReadResult | None = None
    preferred_read_replica: int = NO_PREFERENCE
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) where the fetcher diverged


# (producer id, producer epoch, topic, partition) -> NONE if that partition is in the producer's
# open transaction, else the error to answer: given by the transaction coordinator (Kafka's
# produce-side verification, KIP-890).
TransactionVerifier = Callable[[int, int, str, int], ErrorCode]


# A partition's batch once checked: the bytes to append and their header, or the error to answer
_Checked: TypeAlias = "tuple[bytes | memoryview, records.BatchHeader] | KafkaApiError"

_T = TypeVar("_T")

# CPU time all inspections together may hold the event loop before other tasks get a turn
_SLICE_SECONDS = 0.002
# partitions one fetch reads between two turns of the loop: a restarted follower's first fetch
# names every partition it follows here (1,500 at 3,000 partitions, a step of 40-180 ms of CPU
# before; about 50 us a partition)
READ_CHUNK = 200
# partitions whose leader-epoch checkpoint is looked at between two turns of the loop (a few us
# each; a broker of a 10,000-partition cluster looks at all of them every second)
CHECK_CHUNK = 500


class _Slicer:
    """Runs inspections (generators of slices) on the event loop, sharing one time slice between
    those under way: each runs for _SLICE_SECONDS divided by their number, then lets every other
    task run (a trio checkpoint). So however many connections send bombs at once, a bystander
    waits for about one slice per turn of the loop, not one per bomb."""

    def __init__(self) -> None:
        self.running = 0

    async def run(self, steps: Generator[None, None, _T]) -> _T:
        """The generator's return value."""
        self.running += 1
        try:
            deadline = time.perf_counter() + _SLICE_SECONDS / self.running
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    return done.value
                if time.perf_counter() >= deadline:
                    await trio.lowlevel.checkpoint()
                    deadline = time.perf_counter() + _SLICE_SECONDS / self.running
        finally:
            self.running -= 1


class ReplicaManager:
    def __init__(self, metadata: ClusterMetadata, now_ms: Callable[[], int], quotas: ReplicationQuotas,
                 log_dir_failures: LogDirFailureChannel, replica_selector: object = None,
                 topic_metrics: TopicMetrics | None = None) -> None:
        self.metadata = metadata
        self.topic_metrics = topic_metrics  # None: metrics are off
        self.flush_times = Histogram()  # Kafka's LogFlushStats LogFlushRateAndTimeMs
        self.log_dir_failures = log_dir_failures
        self.now_ms = now_ms
        self.quotas = quotas
        self.rack_aware_reads = replica_selector == RACK_AWARE_SELECTOR  # the only one there is (config.py checks)
        self.verify_transaction: TransactionVerifier = lambda _pid, _epoch, _topic, _partition: ErrorCode.INVALID_TXN_STATE
        # topic id -> (the config overrides it was computed from, the dynamic broker configs'
        # version, policy): overrides are replaced as a whole when altered, so an identity check
        # and a version compare keep this current without per-batch look-ups.
        self._policies: dict[object, tuple[dict[str, str], int, AppendPolicy]] = {}
        self._slicer = _Slicer()
        # (broker-config version, transaction.partition.verification.enable) as last read
        self._verify_setting: tuple[int, bool] = (-1, True)

    async def run_sliced(self, steps: Generator[None, None, _T]) -> _T:
        """A generator's return value, run on the event loop in slices shared with the produce
        path's inspections: work over a batch's records (which may inflate to far more than the
        batch) never holds the loop for longer than one slice."""
        return await self._slicer.run(steps)

    # ---- produce -----------------------------------------------------------------------------
    async def append_records(self, entries: list[ProduceEntry], acks: int, timeout_ms: int,
                             client_id: str | None = None,
                             verdicts: Mapping[int, tuple[ErrorCode, int]] | None = None) -> list[ProduceOutcome]:
        """verdicts: entry index -> (the answer of a transaction coordinator on another broker
        about the entry's partition, the producer's marker stamp there when it was asked); a
        marker of that producer since voids it (INVALID_TXN_STATE), as a Kafka leader's
        verification guard is cleared."""
        outcomes: list[ProduceOutcome] = []
        waits: list[tuple[int, Partition, int, int]] = []
        flushes: list[Partition] = []
        now = self.now_ms()
        inspected = await self._inspect(entries, now, client_id)
        for i, entry in enumerate(entries):
            topic = entry.topic
            if topic is None or not 0 <= entry.index < len(topic.partitions):
                outcomes.append(ProduceOutcome(entry.unknown))
                continue
            partition = topic.partitions[entry.index]
            if partition is None or not partition.online:  # Kafka checks an offline replica first
                outcomes.append(ProduceOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER if partition is None
                                               else partition.offline_error))
                continue
            policy, checked = inspected.get(i) or (self._policy(topic), None)  # as checked above
            try:
                if topic.is_internal and client_id != ADMIN_CLIENT_ID:
                    raise RefusedBeforeLog(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                        f"Cannot append to internal topic {topic.name}")
                if isinstance(checked, KafkaApiError):
                    raise checked
                batch, header = checked or check_client_batch(entry.records, policy)
                if header.is_transactional and self.verifies_transactions():
                    verdict = verdicts.get(i) if verdicts else None
                    if verdict is None:
                        code = self.verify_transaction(header.producer_id, header.producer_epoch, topic.name,
                                                       entry.index)
                    else:
                        code = verdict[0] if partition.producers.marker_stamp(header.producer_id) == verdict[1] else \
                            ErrorCode.INVALID_TXN_STATE
                    if code == ErrorCode.INVALID_TXN_STATE:
                        raise TransactionNotVerified(code, f"{topic.name}-{entry.index} is not part of the "
                                                           f"producer's ongoing transaction")
                    if code != ErrorCode.NONE:
                        raise RefusedBeforeLog(code)
                if not partition.is_leader:  # Kafka checks leadership before the ISR size
                    raise RefusedBeforeLog(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                min_isr = partition.replica_set.effective_min_isr(policy.min_insync_replicas)
                if acks == -1 and partition.in_sync_replica_count < min_isr:
                    raise KafkaApiError(
                        ErrorCode.NOT_ENOUGH_REPLICAS,
                        f"The size of the current ISR {partition.in_sync_replica_count} is insufficient to "
                        f"satisfy the min.isr requirement of {min_isr} for partition {topic.name}-{entry.index}")
                result = partition.append(batch, header, AppendOrigin.CLIENT,
                                          now if policy.log_append_time else None)
            except RefusedBeforeLog as exc:
                outcomes.append(ProduceOutcome(exc.code, exc.message if exc.explained else None))
                continue
            except InvalidRecords as exc:  # Kafka explains only what its log validator rejects
                outcomes.append(ProduceOutcome(exc.code, exc.message, log_start_offset=partition.log_start_offset,
                                               record_errors=tuple(exc.record_errors)))
                continue
            except KafkaApiError as exc:
                outcomes.append(ProduceOutcome(exc.code, log_start_offset=partition.log_start_offset))
                continue
            except OSError as exc:  # not acknowledged: the directory goes offline, the broker stops
                self.log_dir_failures.fail(f"appending to {topic.name}-{entry.index}", exc, partition.files.directory)
                outcomes.append(ProduceOutcome(ErrorCode.KAFKA_STORAGE_ERROR))
                continue
            if self.topic_metrics is not None:
                self.topic_metrics.appended(topic.name, header.records_count, len(batch))
            if result.flush_due:
                flushes.append(partition)
            if acks == -1:
                waits.append((len(outcomes), partition, result.last_offset + 1, min_isr))
            outcomes.append(ProduceOutcome(base_offset=result.base_offset, log_append_time=result.log_append_time,
                                           log_start_offset=partition.log_start_offset))
        for partition in flushes:
            await self.flush(partition)
        if waits:
            deadline = trio.current_time() + max(timeout_ms, 0) / 1000
            for i, partition, offset, min_isr in waits:
                code = await self.replication_outcome(partition, offset, deadline, min_isr)
                if code != ErrorCode.NONE:
                    outcomes[i] = ProduceOutcome(code, log_start_offset=partition.log_start_offset)
        return outcomes

    async def _inspect(self, entries: list[ProduceEntry], now: int, client_id: str | None
                       ) -> dict[int, tuple[AppendPolicy, _Checked]]:
        """Check each partition's batch before any is appended: entry index -> (the topic
        settings it is judged by, then the batch to append and its header, or the error to
        answer). The records of a batch the broker must look inside (a compacted topic, a
        timestamp out of range, a conversion to the topic's codec) are read here; a compressed
        batch may inflate without end, so it is streamed (batch_validation.inspect_records) a
        slice at a time, and the event loop serves other connections between slices (`_Slicer`).
        The appends then run without an await, on state read after the last one."""
        found: dict[int, tuple[AppendPolicy, _Checked]] = {}
        for i, entry in enumerate(entries):
            topic = entry.topic
            if topic is None or not 0 <= entry.index < len(topic.partitions) or topic.partitions[entry.index] is None \
                    or (topic.is_internal and client_id != ADMIN_CLIENT_ID):
                continue  # refused by the append loop before its batch is looked at
            policy = self._policy(topic)
            try:
                batch, header = check_client_batch(entry.records, policy)
                if needs_inspection(header, policy, now):
                    converted = await self._slicer.run(
                        inspect_records(batch, header, policy, now, topic.name, entry.index))
                    if converted is not None:
                        batch, header = converted, records.parse_header(converted)
                found[i] = (policy, (batch, header))
            except KafkaApiError as exc:
                found[i] = (policy, exc)
        return found

    def verifies_transactions(self) -> bool:
        """transaction.partition.verification.enable: a transactional batch must belong to the
        producer's ongoing transaction (KIP-890); off, it is appended unchecked as before KIP-890."""
        settings = self.metadata.broker_configs
        if self._verify_setting[0] != settings.version:
            self._verify_setting = (settings.version,
                                    bool(settings.current("transaction.partition.verification.enable")))
        return self._verify_setting[1]

    def _policy(self, topic: Topic) -> AppendPolicy:
        cached = self._policies.get(topic.topic_id)
        version = self.metadata.broker_configs.version
        if cached is not None and cached[0] is topic.configs and cached[1] == version:
            return cached[2]
        policy = AppendPolicy.from_values(lambda name: self.metadata.topic_config_value(topic, name))
        self._policies[topic.topic_id] = (topic.configs, version, policy)
        return policy

    def append_coordinator_records(self, partition: Partition, batch: bytes) -> AppendResult:
        """A coordinator's own batch (offset commits, group metadata): no producer checks."""
        try:
            return partition.append(batch, records.validate_batch(batch), AppendOrigin.COORDINATOR)
        except OSError as exc:
            self.log_dir_failures.fail(f"appending to {partition.topic}-{partition.index}", exc, partition.files.directory)
            raise KafkaApiError(ErrorCode.KAFKA_STORAGE_ERROR) from exc

    async def write_txn_marker(self, topic: str, index: int, producer_id: int, producer_epoch: int,
                               coordinator_epoch: int, commit: bool, timeout_ms: int) -> ErrorCode:
        """Write a transaction marker (for the transaction coordinator, or WriteTxnMarkers) and
        wait until it is replicated; the error a marker request reports for the partition."""
        t = self.metadata.topic(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partition = t.partitions[index]
        if partition is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        try:
            result = partition.append_marker(producer_id, producer_epoch, coordinator_epoch, commit, self.now_ms())
        except KafkaApiError as exc:
            return exc.code
        except OSError as exc:
            self.log_dir_failures.fail(f"writing a transaction marker to {topic}-{index}", exc, partition.files.directory)
            return ErrorCode.KAFKA_STORAGE_ERROR
        deadline = trio.current_time() + timeout_ms / 1000
        if not await self.wait_for_high_watermark(partition, result.last_offset + 1, deadline):
            return ErrorCode.REQUEST_TIMED_OUT
        return ErrorCode.NONE

    async def wait_for_high_watermark(self, partition: Partition, offset: int, deadline: float) -> bool:
        """Delayed produce: wait until the partition's high watermark reaches offset (the in-sync
        replicas have everything below it). False on timeout, if the partition went offline or
        this broker stopped leading it."""
        return await self.replication_outcome(partition, offset, deadline) == ErrorCode.NONE

    async def replication_outcome(self, partition: Partition, offset: int, deadline: float,
                                  min_isr: int = 0) -> ErrorCode:
        """Kafka's DelayedProduce for one partition: NONE once the high watermark reaches offset
        with at least min_isr in-sync replicas (else NOT_ENOUGH_REPLICAS_AFTER_APPEND: the ISR
        shrank meanwhile), NOT_LEADER_OR_FOLLOWER if this broker stopped leading the partition
        (a new epoch of the same leader is fine, as in Kafka), REQUEST_TIMED_OUT at the deadline."""
        while partition.high_watermark < offset:
            if not partition.online:
                return partition.offline_error
            if not partition.is_leader:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if trio.current_time() >= deadline:
                return ErrorCode.REQUEST_TIMED_OUT
            await _wait_for_data([partition], deadline, None)
        if partition.in_sync_replica_count < min_isr:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    async def flush(self, partition: Partition) -> None:
        """fsync a partition in a worker thread, then move its recovery point."""
        await self._flush(partition, partition.files.flush_work())

    async def flush_rolled(self, partition: Partition) -> None:
        """fsync the segments a roll closed, in a worker thread, then move the recovery point."""
        work = partition.files.rolled_flush_work()
        if work is not None:
            await self._flush(partition, work)

    async def _flush(self, partition: Partition, work: FlushWork) -> None:
        """The leader-epoch checkpoint is written first (see storage/epoch_cache.py): data below
        the recovery point is never re-read at recovery, so its epochs must be on disk before the
        point moves past it. A failing write or fsync takes the log directory offline (Kafka's
        UnifiedLog.flush reports an IOException to the LogDirFailureChannel); the point stays."""
        epochs = partition.epochs.unwritten_work()
        started = time.perf_counter()
        try:
            await trio.to_thread.run_sync(_write_then_flush, partition.metadata_file, epochs, work)
        except OSError as exc:
            self.log_dir_failures.fail(f"flushing {partition.topic}-{partition.index}", exc, partition.files.directory)
            return
        self.flush_times.observe((time.perf_counter() - started) * 1000)
        partition.files.flushed(work.end)

    async def write_epoch_checkpoints(self, partitions: Iterable[Partition]) -> None:
        """The leader-epoch checkpoints changed since the last call, and the partition.metadata
        files not written yet (storage/partition_metadata.py), in one worker thread. The loop
        gets a turn every CHECK_CHUNK partitions looked at."""
        works: list[EpochCheckpointWork | PartitionMetadataFile] = []
        turns = LoopTurns(CHECK_CHUNK)
        for p in partitions:
            if turns.due():
                await turns.turn()
            if p.metadata_file is not None and p.metadata_file.pending:
                works.append(p.metadata_file)
            if (work := p.epochs.checkpoint_work()) is not None:
                works.append(work)
        if not works:
            return
        for path, exc in await trio.to_thread.run_sync(_run_all, works):
            self.log_dir_failures.fail("writing leader-epoch checkpoints and partition.metadata", exc, path)

    async def delete_records(self, partition: Partition, offset: int) -> None:
        """DeleteRecords: move the log start offset now; the segments below it are deleted in a
        worker thread."""
        doomed = partition.delete_records_before(offset)
        if doomed:
            await partition.files.delete_segments(doomed)

    # ---- fetch -------------------------------------------------------------------------------
    async def fetch(self, params: FetchParams, targets: list[FetchTarget],
                    idle: IdleTargets | None = None) -> list[FetchOutcome]:
        """Read every target; wait (delayed fetch) while fewer than min_bytes are available,
        on the idle partitions too, whose woken ones are appended to `targets` (the outcomes
        follow that list). The caller owns the regions of the returned reads and must close them."""
        deadline = trio.current_time() + max(params.max_wait_ms, 0) / 1000
        while True:
            outcomes, total, answer_now = await self._read_all(params, targets)
            waiting = targets or (idle is not None and idle.waits())
            if total >= params.min_bytes or answer_now or not waiting or trio.current_time() >= deadline:
                if params.replica_id >= 0:
                    self._count_throttled(targets, outcomes)
                elif self.topic_metrics is not None:
                    self._count_bytes_out(self.topic_metrics, targets, outcomes)
                return outcomes
            _close_regions(outcomes)
            await _wait_for_data([t.partition for t in targets if t.partition is not None], deadline, idle)
            if idle is not None:
                targets.extend(idle.woken())

    async def _read_all(self, params: FetchParams, targets: list[FetchTarget]) -> tuple[list[FetchOutcome], int, bool]:
        """Every target's read, the bytes read, and whether to answer at once without waiting
        for min_bytes (an error, or a consumer sent to another replica, as Kafka does)."""
        remaining = params.max_bytes
        total = 0
        answer_now = False
        outcomes = []
        brokers = None  # the live brokers, read once if a consumer is to be sent to one
        turns = LoopTurns(READ_CHUNK)  # shielded: a cancellation never leaves the regions read so far unowned
        for t in targets:
            if turns.due():
                await turns.turn()
            p = t.partition
            if p is None or not p.online:
                outcomes.append(FetchOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER if p is None else p.offline_error))
                answer_now = True
                continue
            try:
                p.check_leader_epoch(t.current_leader_epoch)
                if not p.is_leader and (params.replica_id >= 0 or params.client_rack is None):
                    raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                if params.client_rack and self.rack_aware_reads and p.is_leader:
                    brokers = brokers if brokers is not None else self.metadata.brokers(params.listener)
                    preferred = preferred_read_replica(p, brokers, params.client_rack, t.fetch_offset, self.now_ms())
                    if preferred != NO_PREFERENCE:  # no read: the consumer goes to that replica
                        outcomes.append(FetchOutcome(ErrorCode.NONE, ReadResult(
                            None, p.high_watermark, p.last_stable_offset, p.log_start_offset), preferred))
                        answer_now = True
                        continue
                if t.last_fetched_epoch >= 0:
                    diverging = diverging_epoch(p, t.last_fetched_epoch, t.fetch_offset)
                    if diverging is not None:  # no read, and a follower's position is not counted
                        outcomes.append(FetchOutcome(ErrorCode.NONE, ReadResult(
                            None, p.high_watermark, p.last_stable_offset, p.log_start_offset),
                            diverging_epoch=diverging))
                        answer_now = True
                        continue
                isolation = params.isolation
                budget = min(t.max_bytes, remaining)
                min_one = total == 0
                if params.replica_id >= 0:
                    p.record_follower_fetch(params.replica_id, t.fetch_offset, t.log_start_offset)
                    isolation = Isolation.LOG_END
                    if self._holds_back(p, params.replica_id):
                        budget, min_one = 0, False  # throttled: no records, the watermarks only
                result = p.read(t.fetch_offset, max(budget, 0), isolation, min_one=min_one)
                if result.cold is not None:  # data not in the page cache: read it off the loop
                    result.region = await trio.to_thread.run_sync(result.cold)
                    result.cold = None
                    if result.aborted is not None:
                        result.aborted = p.aborted_transactions(t.fetch_offset, result.region)
            except KafkaApiError as exc:
                outcomes.append(FetchOutcome(exc.code))
                answer_now = True
                continue
            total += result.size
            remaining -= result.size
            outcomes.append(FetchOutcome(ErrorCode.NONE, result))
        return outcomes, total, answer_now

    def _holds_back(self, p: Partition, replica_id: int) -> bool:
        """Kafka's shouldLeaderThrottle: a replica out of the ISR, fetching a throttled partition,
        while the leader quota is exceeded."""
        q = self.quotas
        return replica_id not in p.replica_set.isr and q.leader_throttled(p.topic, p.index) and q.leader.exceeded()

    @staticmethod
    def _count_bytes_out(metrics: TopicMetrics, targets: list[FetchTarget], outcomes: list[FetchOutcome]) -> None:
        """A consumer's fetch as Kafka's BytesOutPerSec counts it: the bytes read per partition."""
        for t, o in zip(targets, outcomes):
            if t.partition is not None:
                metrics.fetched(t.partition.topic, o.read.size if o.read is not None else 0)

    def _count_throttled(self, targets: list[FetchTarget], outcomes: list[FetchOutcome]) -> None:
        """Count the replicated bytes of throttled partitions against the leader quota, whoever
        fetched them (in-sync replicas' too, as Kafka counts them)."""
        for t, o in zip(targets, outcomes):
            if o.read is not None and o.read.size and t.partition is not None \
                    and self.quotas.leader_throttled(t.partition.topic, t.partition.index):
                self.quotas.leader.record(o.read.size)


async def _wait_for_data(partitions: list[Partition], deadline: float, idle: IdleTargets | None) -> None:
    """Sleep until any of the partitions' high watermark moves (or it goes offline), one of the
    idle ones moves, or deadline."""
    woken = trio.Event()
    for p in partitions:
        p.waiters.add(woken)
    if idle is not None:
        idle.add_waiter(woken)
    try:
        with trio.move_on_at(deadline):
            await woken.wait()
    finally:
        for p in partitions:
            p.waiters.discard(woken)
        if idle is not None:
            idle.remove_waiter(woken)


def _close_regions(outcomes: list[FetchOutcome]) -> None:
    for o in outcomes:
        if o.read is not None and o.read.region is not None:
            o.read.region.close()


def _write_then_flush(metadata_file: PartitionMetadataFile | None, epochs: EpochCheckpointWork | None,
                      work: FlushWork) -> None:
    if metadata_file is not None:
        metadata_file.run()
    if epochs is not None:
        epochs.run()
    work.run()


def _run_all(works: list[EpochCheckpointWork | PartitionMetadataFile]) -> list[tuple[Path, OSError]]:
    """Write every file; the file and error of each that failed (its log directory goes offline)."""
    failed = []
    for work in works:
        try:
            work.run()
        except OSError as exc:
            failed.append((work.path, exc))
    return failed
