"""Where a follower's log parts from its leader's, by leader epochs: the leader's rule (a Fetch
whose last fetched epoch does not continue on its log gets a diverging epoch, Fetch v12+) and
the follower's (where to cut for an answer, and whether to ask again, KIP-279). Both sides read
the same epoch caches, so one module holds both rules."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.broker.replica.partition import Partition
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

UNDEFINED = -1


def diverging_epoch(leader: Partition, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
    """Kafka's Partition.readRecords for a fetch that names the epoch of its last batch: None
    when the fetch position continues the leader's log, else (the leader's largest epoch <= it,
    where that epoch ends on the leader) for the fetcher to truncate by. OFFSET_OUT_OF_RANGE when
    the leader cannot place that epoch or the offset is below its log start."""
    epoch, end = leader.end_offset_for_epoch(last_fetched_epoch)
    if epoch == UNDEFINED or end == UNDEFINED or fetch_offset < leader.log_start_offset:
        raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE)
    if epoch < last_fetched_epoch or end < fetch_offset:
        return epoch, end
    return None


@dataclass(frozen=True)
class TruncationStep:
    """Where to cut a follower's log, and whether the epochs then agree (else ask again)."""

    offset: int
    done: bool


def truncation_step(follower: Partition, leader_epoch: int, leader_end: int) -> TruncationStep:
    """Kafka's AbstractFetcherThread.getOffsetTruncationState for the leader's answer about the
    follower's latest epoch, (the leader's largest epoch <= it, where it ends on the leader):
    - the leader knows no such epoch: the follower's high watermark;
    - the follower does not have that epoch: cut where its own older epochs end, ask again;
    - else the lower of the two ends of that epoch (never past the follower's own end)."""
    end = follower.log_end_offset
    if leader_end == UNDEFINED:
        return TruncationStep(min(follower.high_watermark, end), True)
    if leader_epoch == UNDEFINED:
        return TruncationStep(min(leader_end, end), True)
    own_epoch, own_end = follower.end_offset_for_epoch(leader_epoch)
    if own_epoch == UNDEFINED:
        return TruncationStep(min(leader_end, end), True)
    if own_epoch != leader_epoch:
        return TruncationStep(min(own_end, end), False)
    return TruncationStep(min(own_end, leader_end, end), True)
