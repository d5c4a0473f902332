"""Producer state for one partition: per producer id its epoch, its last five batches, and its
open transaction; across producers, the open transactions ordered by first offset, which give the
partition its last stable offset.

Kafka's rules: a retried batch that matches one of the producer's last five (same epoch, same
first and last sequence) is a duplicate and is answered with its original offset; an older epoch
is INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0; otherwise the first sequence
must follow the last one (wrapping at 2^31-1), or it is OUT_OF_ORDER_SEQUENCE_NUMBER.

Transactions (Kafka's ProducerAppendInfo): a transactional batch opens the producer's transaction
at its base offset unless one is open; a non-transactional batch while one is open is
INVALID_TXN_STATE; a COMMIT or ABORT marker from the transaction coordinator closes it (an older
producer epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED) and yields the completed transaction.

Snapshots (Kafka's ProducerStateEntry as ProducerStateManager writes it): a snapshot keeps each
producer's epoch, coordinator epoch, last timestamp, open transaction and only its *last* batch,
so after a restart from a snapshot duplicates are detected against that one batch, as in Kafka.
Expiry (Kafka's removeExpiredProducers): a producer without an open transaction whose last
timestamp is producer.id.expiration.ms old or older is forgotten."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.records import BatchHeader
from wirekafka.storage.producer_snapshot import SnapshotEntry

RETAINED_BATCHES = 5
NO_PRODUCER_EPOCH = -1
INT32_MAX = 2**31 - 1


@dataclass(slots=True, frozen=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    # The appended batch's max timestamp (the broker's clock on LogAppendTime topics): Kafka
    # answers a duplicate with it as log_append_time_ms, whatever the topic's timestamp type.
    max_timestamp: int


@dataclass(slots=True, frozen=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))
    last_timestamp: int = -1
    current_txn_first_offset: int = -1  # first offset of the open transaction, -1 if none
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's DefaultRecordBatch.decrementSequence: sequences wrap at 2^31-1 back to 0."""
    return INT32_MAX - (decrement - sequence) + 1 if sequence < decrement else sequence - decrement


def _expired(entry: ProducerEntry, now_ms: int, expiration_ms: int) -> bool:
    return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= expiration_ms


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        # completed transactions whose marker the high watermark has not passed yet (Kafka's
        # unreplicatedTxns): a failover could still lose the marker and reopen them
        self.unreplicated: list[CompletedTxn] = []
        # per producer, when its last marker was appended (a count over the table): a
        # verification made before an await holds only if no marker of that producer came
        # meanwhile (Kafka's VerificationGuard, kept per producer and cleared when its transaction
        # ends; other producers' markers leave it alone). _stamp_floor rises when the state is
        # dropped, so a verification made before that never holds.
        self._marker_stamps: dict[int, int] = {}
        self._stamp = 0
        self._stamp_floor = 0

    def marker_stamp(self, producer_id: int) -> int:
        """What a verification of producer_id's batch remembers, to hold only while equal."""
        return max(self._marker_stamps.get(producer_id, 0), self._stamp_floor)

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether the producer, at this epoch, has a transaction open on this partition: its
        first batch was appended (and verified then), so later ones need no verification."""
        entry = self.entries.get(producer_id)
        return entry is not None and entry.epoch == producer_epoch and entry.current_txn_first_offset >= 0

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """First offset of the earliest transaction that is open, or completed with its marker not
        yet below the high watermark: the last stable offset cannot pass it, so it never goes back
        after a failover (Kafka's firstUnstableOffset)."""
        self.drop_replicated(high_watermark)
        if not self.unreplicated:  # the usual case, asked on every read: no list made
            return min(self.ongoing.values()) if self.ongoing else None
        firsts = [t.first_offset for t in self.unreplicated]
        firsts.extend(self.ongoing.values())
        return min(firsts)

    def drop_replicated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below the high watermark (Kafka's
        onHighWatermarkUpdated)."""
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """Kafka's lastStableOffset(completedTxn): the first offset of the earliest transaction
        still open by another producer, else the offset after the marker."""
        others = [first for pid, first in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a producer batch before append. Returns the original batch's metadata if
        this is a duplicate (nothing to append), None if it may be appended; raises otherwise."""
        entry = self.entries.get(header.producer_id)
        if entry is None:
            return None
        if entry.current_txn_first_offset >= 0 and not header.is_transactional:
            raise KafkaApiError(
                ErrorCode.INVALID_TXN_STATE,
                f"expected a transactional write from producer {header.producer_id}: its transaction is open",
            )
        if header.producer_epoch == entry.epoch:
            for meta in entry.batches:
                if meta.first_seq == header.base_sequence and meta.last_seq == header.last_sequence:
                    return meta
        if header.producer_epoch < entry.epoch:
            raise KafkaApiError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"epoch {header.producer_epoch} is older than current epoch {entry.epoch}",
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise KafkaApiError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"invalid sequence number {header.base_sequence} for new epoch {header.producer_epoch}",
                )
        elif entry.epoch != NO_PRODUCER_EPOCH and not _in_sequence(entry.last_seq, header.base_sequence):
            # an epoch with no batch yet (a transaction version 2 marker moved the producer to it)
            # starts at sequence 0; Kafka accepts any sequence only from a producer of no epoch
            raise KafkaApiError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"out of order sequence number {header.base_sequence}, expected {entry.last_seq + 1}",
            )
        return None

    def older_epoch(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether this partition knows the producer at a newer epoch (a marker of transaction
        version 2 moves it on): a batch of the older one is fenced before anything else."""
        entry = self.entries.get(producer_id)
        return entry is not None and producer_epoch < entry.epoch

    def record(self, header: BatchHeader) -> None:
        """Remember an appended data batch (header already carries its assigned offsets and, on
        LogAppendTime topics, the append time as max timestamp)."""
        entry = self._entry_for_epoch(header.producer_id, header.producer_epoch)
        entry.batches.append(
            BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset, header.last_offset,
                          header.max_timestamp)
        )
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
            self.ongoing[header.producer_id] = header.base_offset

    def _entry_for_epoch(self, producer_id: int, epoch: int) -> ProducerEntry:
        """The producer's entry at epoch: a new epoch forgets the sequences of the old one but
        keeps its open transaction and coordinator epoch (the coordinator closes it)."""
        entry = self.entries.get(producer_id)
        if entry is None:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        elif epoch != entry.epoch:
            entry = self.entries[producer_id] = ProducerEntry(
                epoch, current_txn_first_offset=entry.current_txn_first_offset,
                coordinator_epoch=entry.coordinator_epoch, last_timestamp=entry.last_timestamp)
        return entry

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Validate a transaction marker before it is appended (Kafka's fencing rules)."""
        entry = self.entries.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise KafkaApiError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                f"marker epoch {producer_epoch} is older than current epoch {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaApiError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                                f"coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}")

    def complete(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, marker_offset: int,
                 timestamp: int, aborted: bool) -> CompletedTxn:
        """A COMMIT or ABORT marker was appended at marker_offset: close the producer's
        transaction (a marker with none open completes an empty one at its own offset)."""
        entry = self._entry_for_epoch(producer_id, producer_epoch)
        first = entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else marker_offset
        completed = CompletedTxn(producer_id, first, marker_offset, aborted)
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        self._stamp += 1
        self._marker_stamps[producer_id] = self._stamp
        return completed

    def close_transaction(self, completed: CompletedTxn, high_watermark: int) -> None:
        """The completed transaction holds the last stable offset back only until the high
        watermark passes its marker."""
        self.ongoing.pop(completed.producer_id, None)
        self.unreplicated.append(completed)
        self.drop_replicated(high_watermark)

    def forget_all(self) -> None:
        self.entries.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        self._marker_stamps.clear()
        self._stamp += 1
        self._stamp_floor = self._stamp

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for expiration_ms (never one with an open transaction); returns
        their ids."""
        gone = [pid for pid, entry in self.entries.items() if _expired(entry, now_ms, expiration_ms)]
        for pid in gone:
            del self.entries[pid]
            self._marker_stamps.pop(pid, None)
        return gone

    def snapshot_entries(self) -> tuple[SnapshotEntry, ...]:
        """An immutable copy of the state as Kafka snapshots it (last batch only), for a worker
        thread to write."""
        out = []
        for pid, entry in self.entries.items():
            last = entry.batches[-1] if entry.batches else None
            out.append(SnapshotEntry(
                pid, entry.epoch,
                -1 if last is None else last.last_seq,
                -1 if last is None else last.last_offset,
                0 if last is None else last.last_offset - last.first_offset,
                entry.last_timestamp, entry.coordinator_epoch, entry.current_txn_first_offset))
        return tuple(out)

    def restore(self, entries: list[SnapshotEntry], now_ms: int, expiration_ms: int) -> None:
        """Replace the state with a snapshot's, leaving out producers already expired (Kafka's
        loadFromSnapshot). The entry's timestamp is its last batch's max timestamp, which a
        duplicate of that batch reports as its append time."""
        self.forget_all()
        for e in entries:
            entry = ProducerEntry(e.epoch, last_timestamp=e.timestamp,
                                  current_txn_first_offset=e.current_txn_first_offset,
                                  coordinator_epoch=e.coordinator_epoch)
            if _expired(entry, now_ms, expiration_ms):
                continue
            if e.last_offset >= 0:
                entry.batches.append(BatchMetadata(
                    _decrement_sequence(e.last_sequence, e.offset_delta), e.last_sequence,
                    e.last_offset - e.offset_delta, e.last_offset, e.timestamp))
            self.entries[e.producer_id] = entry
            if e.current_txn_first_offset >= 0:
                self.ongoing[e.producer_id] = e.current_txn_first_offset
