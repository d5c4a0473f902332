"""Partition: one partition's replica on this broker, and the only owner of its log.

It holds the log, the idempotent producer state, the leader-epoch cache, the high watermark (stored,
moved only when the in-sync replicas have the data) and the last stable offset. Everything outside
reaches records through it: appends by origin (a client, a coordinator, replication), reads up to
the high watermark or the last stable offset, truncation, retention, DeleteRecords.

Replicas: a `ReplicaSet` says who leads and who is in sync. On a leader the high watermark is the
smallest log end offset over the in-sync replicas (on one node: its own log end, at once), it
never moves back, and it stays put while the in-sync set is smaller than min.insync.replicas
(Kafka 3.7+). On a follower it is the leader's, capped at the local log end. Clients and
coordinators write only to a leader; a follower appends the leader's batches as they are
(`append_replicated`). Readers waiting on the high watermark are woken when it moves; on a leader
with followers every append wakes them too, since a follower's fetch waits on the log end. The
last stable offset is the first
offset of the earliest open transaction, or the high watermark when none is open; a
transaction's COMMIT or ABORT marker is appended by `append_marker` for the transaction
coordinator, and an abort is indexed in the segment's transaction index for read_committed
fetches.

Producer state survives restarts in Kafka's `.snapshot` files (ProducerStateManager's rules): one
is taken at every segment roll (named after the new segment's base offset) and at a clean close
(at the log end); opening loads the newest usable one and replays batch headers only after it.
After a crash, segments recovery re-validated lost their transaction index, so the snapshot must
not lie past the first of them: the replay from there re-indexes their aborts. Snapshots past the
log end or at or below the log start are deleted when the partition is opened or truncated, those
below the log start when it moves, stray ones at open; producers idle for
producer.id.expiration.ms without an open transaction are forgotten (`remove_expired_producers`,
and when a snapshot is loaded).

Threading: every method here runs on the event loop and only changes in-memory state or appends
(page-cache writes); the slow file work (fsync, segment deletion, recovery, snapshot files) is
returned as work for a worker thread (`flush_work`, the segments detached by retention,
`producer_state.work()`) or done at open/close. `truncate_to` (a follower's operation) does its
file work on the caller's thread, as the log's own truncation does."""

from __future__ import annotations

import enum
import functools
import logging
import time
from dataclasses import dataclass
from typing import Callable

from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.records import BatchHeader
from wirekafka.broker.replica.delayed_deletes import DelayedDeletes
from wirekafka.broker.replica.producer_state import ProducerStateTable
from wirekafka.broker.replica.partition_cleaning import PartitionCleaning
from wirekafka.broker.replica.partition_files import PartitionFiles
from wirekafka.broker.replica.producer_state_manager import ProducerStateManager
from wirekafka.broker.replica.read_waiters import ReadWaiters
from wirekafka.broker.replica.replica_set import ReplicaSet
from wirekafka.storage.epoch_cache import LeaderEpochCache
from wirekafka.storage.log import LogConfig, PartitionLog
from wirekafka.storage.partition_metadata import PartitionMetadataFile
from wirekafka.storage.region import FileRegion
from wirekafka.storage.segment import ColdData, LogSegment
from wirekafka.storage.txn_index import AbortedTxn

logger = logging.getLogger(__name__)

PRODUCER_ID_EXPIRATION_MS = 86400000  # Kafka's producer.id.expiration.ms default


class AppendOrigin(enum.Enum):
    """Who writes: clients get producer-state checks; coordinators write their own records;
    replication copies a leader's batches with their offsets unchanged."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


class Isolation(enum.IntEnum):
    """How far a read may go (Kafka's FetchIsolation): the wire's two isolation levels, and the
    log end for follower replicas."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1
    LOG_END = 2


@dataclass(slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime; a duplicate: its batch's max timestamp
    duplicate: bool = False
    flush_due: bool = False  # flush.messages reached: the caller fsyncs in a worker before answering


@dataclass(slots=True)
class ReadResult:
    """What a fetch of one partition returns: batches as a file region (or None) and the offsets
    the response reports, all taken at the same moment."""

    region: FileRegion | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    cold: Callable[[], FileRegion | None] | None = None  # run in a worker, it gives the region
    aborted: list[AbortedTxn] | None = None  # read_committed: aborted transactions in the region

    @property
    def size(self) -> int:
        return self.region.length if self.region is not None else 0


class Partition:
    def __init__(self, topic: str, index: int, log: PartitionLog, epoch_cache: LeaderEpochCache,
                 leader_epoch: int = 0, clock: Callable[[], float] = time.time,
                 producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS, node_id: int = 1,
                 lead: bool = True, deletes: DelayedDeletes | None = None,
                 metadata_file: PartitionMetadataFile | None = None) -> None:
        """Open the partition over a loaded log: producer state from the newest usable snapshot
        plus a replay after it, a snapshot at the log end if that replayed anything. File work:
        it runs in a worker thread. lead: one node's partition, its own leader at once; in a
        cluster it has no role until the cluster metadata gives it one. deletes: the broker's
        delayed file deletion (a partition opened alone, in tests or tools, gets its own).
        metadata_file: its partition.metadata, still to write (one opened alone writes none)."""
        self.topic = topic
        self.deletes = deletes if deletes is not None else DelayedDeletes(lambda: log.config.file_delete_delay_ms)
        self.index = index
        self._log = log
        self.epochs = epoch_cache
        self.metadata_file = metadata_file
        self.leader_epoch = leader_epoch
        self.clock = clock
        self.producer_state = ProducerStateManager(log.dir, producer_id_expiration_ms, log.log_start_offset)
        self.online, self.offline_error = True, ErrorCode.NOT_LEADER_OR_FOLLOWER  # the error once offline
        self.replica_set = ReplicaSet.single(node_id)
        self.min_insync_replicas = 1
        self._high_watermark = 0
        self.waiters = ReadWaiters()  # long polls, acks=all produces and fetch sessions' quiet partitions
        self.cleaning = PartitionCleaning(self, log)
        self.files = PartitionFiles(topic, index, log, self.producer_state, self.deletes)
        self.producer_state.remove_strays(s.base_offset for s in log.segments)
        self._load_producer_state()
        if (work := self.producer_state.work()) is not None:
            work.run()
        if lead:
            self.become_leader(leader_epoch)
        else:  # no role until the cluster metadata gives it one
            self.replica_set.follow(-1, (), frozenset())

    # ---- offsets ------------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producers.first_unstable_offset(self._high_watermark)
        if first_unstable is None:
            return self._high_watermark
        # Kafka's maybeIncrementFirstUnstableOffset: an open transaction whose first batches
        # retention or DeleteRecords removed is unstable from the log start on, not below it.
        return min(max(first_unstable, self._log.log_start_offset), self._high_watermark)

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def size_bytes(self) -> int:
        """The bytes of the log's segments as they are now (Kafka's log.size)."""
        return self._log.size_bytes

    @property
    def in_sync_replica_count(self) -> int:
        return len(self.replica_set.isr)

    @property
    def is_leader(self) -> bool:
        return self.replica_set.is_leader

    @property
    def changes(self) -> int:
        """Moves when what a read finds may have (quiet_partitions.py, the follower's fetcher)."""
        return self.waiters.changes

    @property
    def recovery_point(self) -> int:
        return self._log.recovery_point

    def _maybe_advance_high_watermark(self) -> None:
        """Leader: the smallest log end among the in-sync replicas, once they are at least
        min.insync.replicas; it never moves back."""
        rs = self.replica_set
        if not rs.is_leader or len(rs.isr) < rs.effective_min_isr(self.min_insync_replicas):
            return
        new = rs.min_in_sync_end(self._log.log_end_offset)
        if new is not None and new > self._high_watermark:
            self._high_watermark = new
            self.waiters.wake(self)

    # ---- leadership ---------------------------------------------------------------------------
    def become_leader(self, leader_epoch: int) -> None:
        """One node's leadership: the whole replica set."""
        me = self.replica_set.local_id
        self.make_leader(leader_epoch, (me,), frozenset((me,)))

    def make_leader(self, leader_epoch: int, replicas: tuple[int, ...], isr: frozenset[int]) -> None:
        """Kafka's makeLeader: the new epoch starts at the log end; followers are tracked afresh."""
        self.leader_epoch = leader_epoch
        self.epochs.assign(leader_epoch, self._log.log_end_offset)
        self.replica_set.lead(replicas, isr, self._now_ms())
        self._maybe_advance_high_watermark()
        self.waiters.wake(self)  # waiting fetches and produces see the new role

    def make_follower(self, leader_epoch: int, leader: int, replicas: tuple[int, ...], isr: frozenset[int]) -> None:
        """Kafka's makeFollower: epochs come with the leader's batches; the fetcher truncates."""
        self.leader_epoch = leader_epoch
        self.replica_set.follow(leader, replicas, isr)
        self.waiters.wake(self)

    def set_isr(self, isr: frozenset[int]) -> None:
        """The in-sync set as the cluster metadata now records it."""
        self.replica_set.set_isr(isr)
        self.waiters.stir(self)  # a quiet follower dropped from the ISR must be read to rejoin it
        self._maybe_advance_high_watermark()

    def propose_isr(self, isr: frozenset[int]) -> None:
        """A new in-sync set was sent to the controller: until it answers, the high watermark
        waits for the members of both sets (ReplicaSet.maximal_isr)."""
        self.replica_set.pending_isr = isr

    def settle_isr(self, isr: frozenset[int] | None) -> None:
        """The controller answered the proposal: the in-sync set it recorded, or None when it
        refused (the recorded set stays)."""
        self.replica_set.pending_isr = None
        if isr is not None:
            self.replica_set.set_isr(isr)
            self.waiters.stir(self)
        self._maybe_advance_high_watermark()

    def record_follower_fetch(self, replica_id: int, fetch_offset: int, log_start_offset: int = -1) -> bool:
        """A follower's fetch: its progress, the high watermark, an ISR notice; False if it follows not here."""
        rs = self.replica_set
        if not rs.record_fetch(replica_id, fetch_offset, self._log.log_end_offset, self._now_ms(), log_start_offset):
            return False
        self._maybe_advance_high_watermark()
        rs.note_if_rejoining(replica_id, self.isr_expansion)
        return True

    def isr_expansion(self) -> frozenset[int]:
        """Followers out of the in-sync set that caught up (to be recorded, then set_isr)."""
        return self.replica_set.caught_up(self._high_watermark, self.epochs.latest_start_offset)

    def isr_shrink(self, lag_ms: int) -> frozenset[int]:
        """In-sync followers lagging more than lag_ms (to be recorded, then set_isr)."""
        return self.replica_set.out_of_sync(self._now_ms(), lag_ms, self._log.log_end_offset)

    def append_replicated(self, batch: bytes | memoryview, header: BatchHeader) -> None:
        """A follower's copy of one of its leader's batches, offsets and epoch as they are."""
        if self.replica_set.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.append(batch, header, AppendOrigin.REPLICATION)
        if header.is_control and header.has_producer_id:
            self._apply_marker(header, bytes(batch), self._log.active)
            self.waiters.wake(self)

    def restore_high_watermark(self, checkpointed: int) -> None:
        """The high watermark from replication-offset-checkpoint, at start-up (capped at the log end)."""
        self._high_watermark = min(max(checkpointed, self._high_watermark), self._log.log_end_offset)

    def set_follower_high_watermark(self, leader_high_watermark: int) -> None:
        """A follower's high watermark: the leader's, capped at what this replica has."""
        new = min(leader_high_watermark, self._log.log_end_offset)
        if new != self._high_watermark:
            self._high_watermark = new
            self.waiters.wake(self)

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing: a client epoch below ours is stale, above ours is from the future."""
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaApiError(ErrorCode.FENCED_LEADER_EPOCH)
        raise KafkaApiError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        return self.epochs.end_offset_for(requested_epoch, self._log.log_end_offset)

    # ---- appends ------------------------------------------------------------------------------
    def append(self, batch: bytes | bytearray | memoryview, header: BatchHeader, origin: AppendOrigin,
               log_append_time_ms: int | None = None) -> AppendResult:
        """Append one validated batch. Client and coordinator batches get offsets and the leader
        epoch assigned here in a 61-byte copy of the header, the rest written from the request's
        buffer; replicated batches keep theirs. log_append_time_ms is set for LogAppendTime
        topics. Raises KafkaApiError for producer-state violations."""
        if not self.online or (origin is not AppendOrigin.REPLICATION and not self.replica_set.is_leader):
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER if self.online else self.offline_error)
        if origin is AppendOrigin.CLIENT and header.has_producer_id and header.base_sequence >= 0:
            dup = self.producers.check(header)
            if dup is not None:
                return AppendResult(dup.first_offset, dup.last_offset, dup.max_timestamp, duplicate=True)
        parts: tuple[bytes | bytearray | memoryview, ...]
        if origin is AppendOrigin.REPLICATION:
            parts, assigned = (batch,), header
        elif log_append_time_ms is not None:  # the timestamp is CRC'd: patch a copy, re-CRC
            buf = bytearray(batch)
            records.assign_offsets(buf, self._log.log_end_offset, self.leader_epoch)
            records.set_log_append_time(buf, log_append_time_ms)
            parts, assigned = (buf,), records.parse_header(buf)
        else:  # offset and epoch sit in the header, outside the CRC: patch a copy of the header
            head = bytearray(batch[:records.HEADER_SIZE])
            records.assign_offsets(head, self._log.log_end_offset, self.leader_epoch)
            parts = (head, memoryview(batch)[records.HEADER_SIZE:])
            assigned = records.parse_header(head)
        self.epochs.assign(assigned.partition_leader_epoch, assigned.base_offset)
        active = self._log.active
        flush_due = self._log.append(parts, assigned)
        if self._log.active is not active:  # rolled: the state so far covers exactly the old segments
            self.producer_state.take_snapshot(assigned.base_offset)
        append_time = -1 if log_append_time_ms is None else log_append_time_ms
        if assigned.has_producer_id and not assigned.is_control:  # markers: see append_marker
            self.producers.record(assigned)
        self._maybe_advance_high_watermark()
        self.waiters.wake(self)  # followers' fetches wait on the log end
        return AppendResult(assigned.base_offset, assigned.last_offset, append_time, flush_due=flush_due)

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                      timestamp_ms: int) -> AppendResult:
        """Write a transaction's COMMIT or ABORT marker (for the transaction coordinator) and close
        the producer's transaction: the last stable offset moves past it, and an abort goes into
        the active segment's transaction index. Raises KafkaApiError when the marker is fenced."""
        if not self.online:
            raise KafkaApiError(self.offline_error)
        self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = records.build_marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, timestamp_ms)
        result = self.append(batch, records.parse_header(batch), AppendOrigin.COORDINATOR)
        self._complete_transaction(producer_id, producer_epoch, coordinator_epoch, result.base_offset, timestamp_ms,
                                   not commit, self._log.active)
        self.waiters.wake(self)  # read_committed fetches wait on the last stable offset too
        return result

    def _apply_marker(self, header: BatchHeader, batch: bytes, index_in: LogSegment | None) -> None:
        """A transaction marker read back (replay, replication): close the producer's
        transaction; an abort goes into index_in's transaction index when given."""
        try:
            marker = records.parse_marker(batch)
        except records.InvalidBatch:
            return  # a control batch that is not a transaction marker
        self._complete_transaction(header.producer_id, header.producer_epoch, marker.coordinator_epoch,
                                   header.base_offset, header.max_timestamp, not marker.commit, index_in)

    def _complete_transaction(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, marker_offset: int,
                              timestamp_ms: int, aborted: bool, index_in: LogSegment | None) -> None:
        """Close the producer's transaction at its marker; an abort goes into index_in's
        transaction index when given, with the last stable offset after it (Kafka's
        completeTxn and its AbortedTxn's lastStableOffset)."""
        completed = self.producers.complete(producer_id, producer_epoch, coordinator_epoch, marker_offset,
                                            timestamp_ms, aborted=aborted)
        if index_in is not None and completed.aborted:
            index_in.txn_index.append(AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset,
                                                 self.producers.stable_offset_after(completed)))
        self.producers.close_transaction(completed, self._high_watermark)

    # ---- producer state and its snapshots ------------------------------------------------------
    @property
    def producers(self) -> ProducerStateTable:
        return self.producer_state.table

    def _load_producer_state(self) -> None:
        """Kafka's rebuildProducerState: producer state from the newest snapshot at or below the
        first segment recovery re-validated (else the log end), the batch headers after it
        replayed, and a snapshot at the log end if the replay went past it."""
        end = self._log.log_end_offset
        upper = next((seg.base_offset for seg in self._log.segments if seg.recovered), end)
        self._replay_producer_state(self.producer_state.load(self._log.log_start_offset, end, upper, self._now_ms()))
        self.producer_state.take_snapshot(end)

    def remove_expired_producers(self) -> None:
        """Kafka's periodic producer expiration: forget producers idle for
        producer.id.expiration.ms that have no open transaction."""
        gone = self.producer_state.remove_expired(self._now_ms())
        if gone:
            logger.info("%s-%d: expired producer ids %s", self.topic, self.index, gone)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _replay_producer_state(self, start: int) -> None:
        """Replay batch headers from start into producer state and open transactions; the
        markers of segments recovery re-validated (their transaction index was emptied) put their
        aborts back into it."""
        for seg, pos, header in self._log.iter_batch_headers(start):
            if not header.has_producer_id:
                continue
            if not header.is_control:
                self.producers.record(header)
                continue
            self._apply_marker(header, self._log.read_batch(seg, pos, header), seg if seg.recovered else None)
        self._log.rebuilt_transaction_indexes()

    # ---- reads --------------------------------------------------------------------------------
    def check_fetch_offset(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self._log.log_end_offset:
            raise KafkaApiError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside [{self.log_start_offset}, {self._log.log_end_offset}]",
            )

    def read(self, offset: int, max_bytes: int, isolation: Isolation, min_one: bool) -> ReadResult:
        """Whole batches from the one holding offset, up to the high watermark (or the last stable
        offset for read_committed), within max_bytes unless min_one lets the first batch through.
        Only page-cache reads happen here; data that would need the disk comes back as `cold`,
        a read to run in a worker thread."""
        if not self.online:
            raise KafkaApiError(self.offline_error)
        self.check_fetch_offset(offset)
        stable = self.last_stable_offset
        if isolation is Isolation.LOG_END:
            limit = self._log.log_end_offset
        else:
            limit = stable if isolation is Isolation.READ_COMMITTED else self._high_watermark
        region = None
        cold = None
        if offset < limit and (max_bytes > 0 or min_one):
            try:
                region = self._log.read_region(offset, max(max_bytes, 0), limit, min_one, nowait=True)
            except ColdData:  # not in the page cache: the replica manager reads it in a worker
                cold = functools.partial(self._log.read_region_cold, offset, max(max_bytes, 0), limit, min_one)
        result = ReadResult(region, self._high_watermark, stable, self.log_start_offset, cold)
        if isolation is Isolation.READ_COMMITTED:
            result.aborted = self.aborted_transactions(offset, region)
        return result

    def aborted_transactions(self, offset: int, region: FileRegion | None) -> list[AbortedTxn]:
        """The aborted transactions a read_committed reader of region (read from offset) must be
        told about; none when nothing was read."""
        return [] if region is None else self._log.aborted_transactions(offset, region)

    # ---- waiting for data ---------------------------------------------------------------------
    # ---- log surgery --------------------------------------------------------------------------
    def truncate_to(self, offset: int, leader_epoch: int) -> list[LogSegment] | None:
        """Cut a follower's divergent tail (epochs, producer state, high watermark follow); the segments
        to delete. None, nothing cut, if decided in another epoch or the replica now leads."""
        if leader_epoch != self.leader_epoch or self.is_leader:
            return None
        cut, doomed = offset < self._log.log_end_offset, self._log.truncate_to(offset)
        self.epochs.truncate_from_end(self._log.log_end_offset)  # even with nothing cut (Kafka's truncateTo)
        if cut:
            self._load_producer_state()
            self._high_watermark = min(self._high_watermark, self._log.log_end_offset)
        return doomed

    def restart_at(self, offset: int) -> list[LogSegment]:
        """A follower behind its leader's log start: empty the log, go on from offset; old segments."""
        doomed = self._log.restart_at(offset)
        self.epochs.clear()
        self._load_producer_state()
        self._high_watermark = offset
        return doomed

    def delete_records_before(self, offset: int) -> list[LogSegment]:
        """DeleteRecords: move the log start offset; returns segments now wholly below it."""
        before = self._log.log_start_offset
        doomed = self._log.advance_log_start(offset)
        self.epochs.truncate_from_start(self._log.log_start_offset)
        self._log_start_moved(before)
        return doomed

    def apply_retention(self, delete_policy: bool = True) -> list[LogSegment]:
        """Kafka's deleteOldSegments up to the high watermark (delete_policy: the topic's
        cleanup.policy has "delete"; compact-only topics lose only what lies below the log start).
        When the whole log expires, the log rolls a new active segment at the log end first: as at
        any roll, a producer snapshot is taken there. Producer state itself stays (Kafka keeps it
        when retention removes a producer's batches, so its next sequence is still checked, and a
        retried batch still answered as a duplicate); epochs start at the new log start. Returns
        the detached segments, whose files are deleted in a worker thread."""
        before = self._log.log_start_offset
        active = self._log.active
        doomed = self._log.apply_retention(self._high_watermark, delete_policy)
        if self._log.active is not active:
            self.producer_state.take_snapshot(self._log.active.base_offset)
        if doomed:
            self.epochs.truncate_from_start(self._log.log_start_offset)
        self._log_start_moved(before)
        return doomed

    def _log_start_moved(self, before: int) -> None:
        """Snapshots below the new log start describe data that is gone: producer_state.work()
        deletes them."""
        self.waiters.stir(self)  # a read may find less
        if self._log.log_start_offset > before:
            self.producer_state.delete_below(self._log.log_start_offset)

    @property
    def log_config(self) -> LogConfig:
        return self._log.config

    def set_log_config(self, config: LogConfig) -> None:
        self._log.config = config

    def take_offline(self, error: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> None:
        """Refuse appends and reads with error, wake waiters: topic deleted, or log dir failed."""
        self.online = False
        self.offline_error = error
        self.waiters.wake(self)
