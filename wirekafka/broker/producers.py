"""Idempotent producer state for one partition: epoch and the last five batches per producer id.

Kafka's rules: a retried batch that matches one of the producer's last five (same epoch, same
first and last sequence) is a duplicate and is answered with its original offset; an older epoch
is INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0; otherwise the first sequence
must follow the last one (wrapping at 2^31-1), or it is OUT_OF_ORDER_SEQUENCE_NUMBER."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.records import BatchHeader

RETAINED_BATCHES = 5
INT32_MAX = 2**31 - 1


@dataclass(slots=True, frozen=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    append_time: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a producer batch before append. Returns the original batch's metadata if
        this is a duplicate (nothing to append), None if it may be appended; raises otherwise."""
        entry = self.entries.get(header.producer_id)
        if entry is None:
            return None
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
        elif entry.batches and not _in_sequence(entry.last_seq, header.base_sequence):
            raise KafkaApiError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"out of order sequence number {header.base_sequence}, expected {entry.last_seq + 1}",
            )
        return None

    def record(self, header: BatchHeader, append_time: int) -> None:
        """Remember an appended batch (header already carries its assigned offsets)."""
        entry = self.entries.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = ProducerEntry(header.producer_epoch)
            self.entries[header.producer_id] = entry
        entry.batches.append(
            BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset, header.last_offset, append_time)
        )
        entry.last_timestamp = header.max_timestamp

    def forget_all(self) -> None:
        self.entries.clear()
