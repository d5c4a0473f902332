"""Checker: every replica's log holds the same bytes up to the high watermark.

Followers store the leader's batches as they are (offsets, leader epochs and CRCs included), so
once the faults healed and the followers caught up, the committed part of every replica's log is
byte for byte the same, wherever each broker happened to roll its segments. A replica that kept
a divergent tail below the high watermark, or truncated committed data, differs. Read from the
partition directories on disk (a running broker's files, read-only), in Kafka's segment format
for both broker kinds."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Iterator, Mapping

from wirekafka.protocol.records import BatchHeader, parse_header, split_batches

# a batch's writer: its producer id and producer epoch (-1, -1 for a batch without a producer)
Writer = tuple[int, int]


def _committed_batches(partition_dir: Path, high_watermark: int) -> Iterator[tuple[bytes, int, int, BatchHeader]]:
    """(segment data, start, end, header) of each batch wholly below high_watermark, segment
    after segment, up to the first batch that is not (or a segment's truncated tail)."""
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        end = 0
        for start, end in split_batches(data):
            header = parse_header(data, start)
            if header.base_offset + header.last_offset_delta >= high_watermark:
                return
            yield data, start, end, header
        if end < len(data):
            return


def committed_bytes(partition_dir: Path, high_watermark: int) -> tuple[bytes, int]:
    """The bytes of the batches wholly below high_watermark, segment after segment, and the next
    offset they reach (equal to high_watermark once the replica has all of it)."""
    out = bytearray()
    reached = 0
    for data, start, end, header in _committed_batches(partition_dir, high_watermark):
        out += data[start:end]
        reached = header.base_offset + header.last_offset_delta + 1
    return bytes(out), reached


def writers(partition_dir: Path, high_watermark: int) -> dict[int, Writer]:
    """The writer of each committed offset of one replica, from its batches' headers: the
    producer id and epoch under which the offset's record was appended. An idempotent producer
    is deduplicated per (id, epoch) only, so a value stored twice by two writers was sent twice
    by its client (after an epoch bump), and one stored twice by one writer was not deduplicated
    by the broker."""
    found: dict[int, Writer] = {}
    for _, _, _, header in _committed_batches(partition_dir, high_watermark):
        for offset in range(header.base_offset, header.base_offset + header.last_offset_delta + 1):
            found[offset] = (header.producer_id, header.producer_epoch)
    return found


def divergent_replicas(dirs: Mapping[int, Path], high_watermark: int, timeout: float = 60.0) -> list[str]:
    """Differences between the replicas' committed bytes, waiting up to timeout for every replica
    to hold all of them; [] when they are identical."""
    deadline = time.monotonic() + timeout
    while True:
        held = {node: committed_bytes(d, high_watermark) for node, d in dirs.items()}
        behind = {node: reached for node, (_, reached) in held.items() if reached < high_watermark}
        if not behind:
            break
        if time.monotonic() > deadline:
            return [f"node {node} holds offsets below {reached} of {high_watermark} committed"
                    for node, reached in sorted(behind.items())]
        time.sleep(0.5)
    digests = {node: hashlib.sha256(data).hexdigest()[:16] for node, (data, _) in held.items()}
    if len(set(digests.values())) == 1:
        return []
    return [f"{dirs[next(iter(dirs))].name}: committed bytes differ by node: {digests}"]
