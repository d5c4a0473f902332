"""When a log rolls a new segment (Kafka's LogSegment.shouldRoll): the active segment is full,
or older than segment.ms less its own random jitter. Apart from the log so that the rule reads
in one place."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from wirekafka.protocol.records import BatchHeader
from wirekafka.storage.segment import LogSegment

if TYPE_CHECKING:  # the log imports this module
    from wirekafka.storage.log import LogConfig


def should_roll(active: LogSegment, header: BatchHeader, config: LogConfig, now_ms: int) -> bool:
    """Whether the batch must go to a new segment. By size: it would not fit in segment.bytes.
    By age, Kafka's rule: with record timestamps, the incoming batch's max timestamp minus the
    segment's first batch timestamp; without them, wall time since creation. The segment rolls
    its own random jitter sooner, so that segments made together (a broker's partitions, created
    at once) do not all roll at once; the jitter is drawn at the segment's first check."""
    if active.size == 0:
        return False
    if active.size + header.size > config.segment_bytes:
        return True
    if active.roll_jitter_ms is None:
        active.roll_jitter_ms = random_jitter(config)
    limit = config.segment_ms - active.roll_jitter_ms
    first = active.first_batch_timestamp
    if first is not None and first >= 0:
        return header.max_timestamp - first > limit
    created = active.created_ms if active.created_ms is not None else now_ms
    return now_ms - created > limit


def random_jitter(config: LogConfig) -> int:
    """Kafka's randomSegmentJitter: uniform below the smaller of segment.jitter.ms and segment.ms."""
    bound = min(config.segment_jitter_ms, config.segment_ms)
    return random.randrange(bound) if bound > 0 else 0
