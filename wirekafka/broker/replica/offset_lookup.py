"""ListOffsets' answer for one partition: the special offsets (latest, earliest, ...) and the
search by timestamp, through the time index to a batch and then the records inside it.

The search reads a batch's records as a bounded stream (storage/batch_filter.record_positions)
and is a generator that yields every few records, run by ReplicaManager.run_sliced: a stored
compressed batch can inflate to far more than its size (one that breaks no produce rule is
stored as sent, in Kafka as here), and any client allowed to describe the topic may ask."""

from __future__ import annotations

from typing import Generator

from wirekafka.broker.replica.partition import Partition
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage import batch_filter

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
NOT_FOUND = (-1, -1, -1)


# Records of a found batch read between two turns of the event loop (see _first_record_at)
_RECORDS_PER_STEP = 64


def _first_record_at(partition: Partition, found, predicate) -> Generator[None, None, tuple[int, int, int] | None]:
    """The first record of the found batch at or after the log start whose timestamp satisfies
    predicate. The batch is read as a bounded stream and the search yields every few records: a
    stored compressed batch may inflate to far more than its size, and any client may ask."""
    header, read = found
    for n, (offset, timestamp) in enumerate(batch_filter.record_positions(read(), header), 1):
        if offset >= partition.log_start_offset and predicate(timestamp):
            return timestamp, offset, header.partition_leader_epoch
        if n % _RECORDS_PER_STEP == 0:
            yield
    return None


def lookup(partition: Partition, timestamp: int, read_committed: bool) -> Generator[None, None, tuple[int, int, int]]:
    """(timestamp, offset, leader epoch) answering a ListOffsets query for one partition, as the
    return value of a generator that yields between steps of a search through records (for
    ReplicaManager.run_sliced)."""
    if timestamp == LATEST:
        return -1, partition.last_stable_offset if read_committed else partition.high_watermark, partition.leader_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, partition.log_start_offset, partition.epochs.epoch_for_offset(partition.log_start_offset)
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return NOT_FOUND
    if timestamp == MAX_TIMESTAMP:
        found = partition.files.batch_with_max_timestamp()
        if found is None:
            return NOT_FOUND
        max_ts = found[0].max_timestamp
        return (yield from _first_record_at(partition, found, lambda ts: ts == max_ts)) or NOT_FOUND
    if timestamp < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"invalid timestamp {timestamp}")
    found = partition.files.batch_for_timestamp(timestamp)
    if found is None:
        return NOT_FOUND
    # Usually the first candidate batch answers; one straddling the log start may not.
    for candidate in partition.files.iter_batches(found[0].base_offset):
        if candidate[0].max_timestamp >= timestamp:
            hit = yield from _first_record_at(partition, candidate, lambda ts: ts >= timestamp)
            if hit:
                return hit
    return NOT_FOUND
