"""Opening a partition directory's segments (Kafka's LogLoader): what a crash, a deletion or an
interrupted cleaning left behind is settled before the log serves anything."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from wirekafka.storage.cleaner import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from wirekafka.storage.segment import LogSegment, file_paths, segment_name

log = logging.getLogger(__name__)


def load_segments(directory: Path, index_interval_bytes: int, recovery_point: int, clean_shutdown: bool,
                  now_ms: int) -> list[LogSegment]:
    """The segments of a partition directory, in offset order, as a log opens them: strays of a
    crash removed, an interrupted cleaner swap finished, and every segment from the recovery
    point on (all of them after an unclean shutdown) recovered: its batches re-validated and the
    log truncated after the last valid one. The others (all of them after a clean shutdown) are
    trusted as Kafka trusts them: opened from their indexes without reading record data, and
    recovered only when an index is missing or fails Kafka's sanity check. Never empty: an
    empty directory gets segment 0."""
    names = _settle_strays(directory, os.listdir(directory))
    swapped: set[int] = set()
    if any(name.endswith(SWAP_SUFFIX) for name in names):
        swapped = _finish_interrupted_cleaning(directory, index_interval_bytes)
        names = os.listdir(directory)
    bases = sorted(int(name[:-4]) for name in names if name.endswith(".log") and name[:-4].isdigit())
    _delete_orphaned_indexes(directory, names, set(bases))
    present = set(names)
    segments = []
    for i, base in enumerate(bases):
        # Kafka rebuilds the indexes of a segment whose offset index file is missing; so do we
        # when its time index is missing (see LogSegment.load)
        indexed = all(f"{segment_name(base)}{kind}" in present for kind in (".index", ".timeindex"))
        seg = LogSegment(directory, base, index_interval_bytes)
        segments.append(seg)
        # below the recovery point means wholly below it: the segment holding it is recovered too
        below_recovery_point = i + 1 < len(bases) and bases[i + 1] <= recovery_point
        if (clean_shutdown or below_recovery_point) and base not in swapped:
            if not indexed and seg.size:
                log.warning("rebuilding the indexes of %s: an index file is missing", seg.log_path)
            elif seg.load():
                continue
        if seg.recover():
            # Invalid data mid-log: everything after it is unreachable, as in Kafka.
            for later in bases[i + 1:]:
                log.warning("deleting segment %d of %s after a truncated segment", later, directory)
                LogSegment(directory, later, index_interval_bytes).delete()
            break
    # A segment whose offsets no longer follow the previous segment's end is garbage from a
    # crash: drop it. (An empty segment is legitimate: the cleaner leaves one where every
    # record of a group was superseded, as Kafka's does.)
    kept: list[LogSegment] = []
    for seg in segments:
        if kept and seg.base_offset < kept[-1].next_offset:
            log.warning("removing segment %s left inconsistent by a crash", seg.log_path)
            seg.delete()
            continue
        kept.append(seg)
    if not kept:
        kept.append(LogSegment(directory, 0, index_interval_bytes))
    for seg in kept[:-1]:  # recovery rebuilt their indexes: only the active one is appended to again
        seg.index.release()
        seg.time_index.release()
    for seg in kept:
        seg.created_ms = now_ms
    return kept

def _settle_strays(directory: Path, names: list[str]) -> list[str]:
    """Remove what a crash left that no log keeps (`.tmp` files, an unfinished `.cleaned`
    segment, `.deleted` files); returns the names that remain."""
    kept = []
    for name in names:
        if name.endswith((".tmp", CLEANED_SUFFIX, DELETED_SUFFIX)):
            (directory / name).unlink()
        else:
            kept.append(name)
    return kept


def _delete_orphaned_indexes(directory: Path, names: list[str], bases: set[int]) -> None:
    """Index files whose log file is gone (a crash while a segment was being deleted) are
    deleted, as Kafka's loader does: a later segment at that base must not inherit them."""
    for name in names:
        stem, _, kind = name.partition(".")
        if kind in ("index", "timeindex", "txnindex") and stem.isdigit() and int(stem) not in bases:
            log.warning("deleting orphaned index file %s (no log file)", directory / name)
            (directory / name).unlink()


def _finish_interrupted_cleaning(directory: Path, index_interval_bytes: int) -> set[int]:
    """Kafka's rules for a cleaner interrupted by a crash (an unfinished `.cleaned` segment
    and anything `.deleted` are already gone, see _settle_strays): a `.swap` segment
    was complete when the swap was decided, so the swap is completed: the segments it
    replaces are deleted and it takes its final name. Returns the base offsets of the
    segments swapped in, which are recovered (indexes rebuilt, aborts re-indexed)."""
    swap_logs = sorted(directory.glob("*.log" + SWAP_SUFFIX))
    for path in directory.glob("*" + SWAP_SUFFIX):
        if not path.name.endswith(".log" + SWAP_SUFFIX):
            path.unlink()  # indexes are rebuilt from the swapped log
    swapped: set[int] = set()
    for path in swap_logs:
        base = int(path.name.split(".")[0])
        seg = LogSegment(directory, base, index_interval_bytes, SWAP_SUFFIX)
        seg.recover()
        end = seg.next_offset
        for old in directory.glob("*.log"):
            if old.stem.isdigit() and base <= int(old.stem) < max(end, base + 1):
                log.info("completing an interrupted swap in %s: deleting segment %s", directory, old.name)
                for stale in file_paths(directory, int(old.stem)):
                    stale.unlink(missing_ok=True)
        seg.rename_files("")
        seg.close()
        swapped.add(base)
    return swapped
