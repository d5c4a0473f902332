"""A cleaning round of one partition run to the end on the caller's thread: the steps the broker's
LogCleaner takes (plan on the loop, round in a cleaner process, swaps), without a loop or a
process, for unit tests that need a log cleaned at a known moment."""

from __future__ import annotations

from wirekafka.broker.replica.partition import Partition
from wirekafka.storage.cleaner import run_round
from wirekafka.storage.log import PartitionLog


def clean_partition(p: Partition, now_ms: int, checkpoint: int | None = None, map_bytes: int = 10**7) -> int:
    """Clean p as of now_ms from checkpoint (its first dirty offset); returns the next one."""
    cleanable = p.cleaning.cleanable_range(checkpoint, now_ms)
    plan, segments = p.cleaning.cleaning_plan(cleanable, map_bytes, 0.9, float("inf"), now_ms)
    result = run_round(plan)
    for group in result.groups:
        cleaned = p.cleaning.open_cleaned(group.base_offset)
        sources = [segments[base] for base in group.sources]
        assert p.cleaning.swap_cleaned(cleaned, sources), "the log changed under the round"
        PartitionLog.finish_swap(cleaned, sources)
        PartitionLog.delete_segments(sources)  # at once: no delete delay in these tests
    return result.end_offset
