"""Kafka's producer-state snapshots (`%020d.snapshot`): the idempotent and transactional producer
state of a partition as it stood at an offset, so that a restart replays only the log after it
instead of every batch header since the log start.

File format (Kafka's ProducerStateManager.writeSnapshot/readSnapshot over the generated
`ProducerSnapshot` message, storage/src/main/resources/message/ProducerSnapshot.json, version 1,
not flexible), big-endian:

    version  i16   1
    crc      u32   CRC-32C of every byte after this field
    count    i32   number of entries
    entry × count (46 bytes each):
        producer id i64, epoch i16, last sequence i32, last offset i64, offset delta i32,
        timestamp i64, coordinator epoch i32, current txn first offset i64

An entry holds only the producer's *last* batch (last sequence and offset, and offset delta =
last offset - first offset of that batch, from which Kafka derives its first sequence and first
offset); a producer with no batch has last sequence -1, last offset -1, delta 0. The timestamp is
the producer's last timestamp (of its last batch, or of a later marker); current txn first offset
is -1 when no transaction is open. The file is named after the offset it covers: the state of
every batch below it. Kafka writes the entries in its HashMap's order; wirekafka sorts them by
producer id (readers do not depend on the order).

Kafka treats a file whose version is not 1, that does not parse, or whose CRC does not match as
corrupt: it logs, deletes it, and falls back to the next older snapshot. So does `latest`.

Threading: files are written to a temporary name, fsynced and renamed (Kafka writes in place and
fsyncs later; a torn file would fail its CRC either way), in a worker thread (or at start-up and
shutdown). A truncation on the event loop may make a snapshot not yet written
meaningless, and a topic deletion removes the directory: a write holds the directory's lock and
is skipped when `retain` (which bumps a generation) or `close` came first, so a stale snapshot
never lands after a truncation cleaned up, nor a file in a directory being removed. A failed
write is logged and skipped: a missing snapshot only means a longer replay at the next start."""

from __future__ import annotations

import logging
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import crc32c

log = logging.getLogger(__name__)

SUFFIX = ".snapshot"
VERSION = 1
_HEAD = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6  # the CRC covers everything after version and crc


class CorruptSnapshot(Exception):
    """A snapshot file Kafka would refuse: unknown version, truncated, or a CRC mismatch."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def encode(entries: Iterable[SnapshotEntry]) -> bytes:
    """The bytes of a snapshot file holding entries (sorted by producer id)."""
    ordered = sorted(entries, key=lambda e: e.producer_id)
    body = bytearray(_HEAD.pack(VERSION, 0, len(ordered)))
    for e in ordered:
        body += _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                            e.coordinator_epoch, e.current_txn_first_offset)
    struct.pack_into(">I", body, 2, crc32c.crc32c(memoryview(body)[_CRC_START:]))
    return bytes(body)


def decode(data: bytes) -> list[SnapshotEntry]:
    """The entries of a snapshot file's bytes; CorruptSnapshot when Kafka would refuse them.
    Bytes after the last entry are ignored, as Kafka's reader does (the CRC still covers them)."""
    if len(data) < _HEAD.size:
        raise CorruptSnapshot(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc, count = _HEAD.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshot(f"snapshot contained an unknown file version {version}")
    if count < 0 or _HEAD.size + count * _ENTRY.size > len(data):
        raise CorruptSnapshot(f"snapshot failed schema validation: {count} entries in {len(data)} bytes")
    computed = crc32c.crc32c(memoryview(data)[_CRC_START:])
    if computed != crc:
        raise CorruptSnapshot(f"snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                              f"Computed crc: {computed}")
    return [SnapshotEntry(*fields) for fields in
            _ENTRY.iter_unpack(memoryview(data)[_HEAD.size:_HEAD.size + count * _ENTRY.size])]


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def read_snapshot(path: Path) -> list[SnapshotEntry]:
    return decode(path.read_bytes())


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the snapshot files in a partition directory, ascending (Kafka's
    listSnapshotFiles: regular files named `<offset>.snapshot`)."""
    offsets = []
    for path in directory.glob(f"*{SUFFIX}"):
        stem = path.name[: -len(SUFFIX)]
        if stem.isdigit() and path.is_file():
            offsets.append(int(stem))
    return sorted(offsets)


class ProducerSnapshots:
    """The snapshot files of one partition directory. Methods are called from one thread at a
    time except `write` (a worker) against `retain` (the owner): see the module docstring."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.generation = 0
        self._closed = False
        self._lock = threading.Lock()

    def offsets(self) -> list[int]:
        return snapshot_offsets(self.dir)

    def write(self, offset: int, entries: Iterable[SnapshotEntry], generation: int) -> bool:
        """Write the snapshot at offset atomically (temporary file, fsync, rename: a crash leaves
        no half-written snapshot) unless a `retain` since generation was taken made it stale.
        Returns whether it was written."""
        path = snapshot_path(self.dir, offset)
        tmp = path.with_name(path.name + ".tmp")
        data = encode(entries)
        with self._lock:
            if self._closed or generation != self.generation:
                return False
            try:
                _write_synced(tmp, data)
                os.replace(tmp, path)
            except OSError as exc:
                log.warning("producer snapshot %s not written: %s", path, exc)
                tmp.unlink(missing_ok=True)
                return False
        log.debug("wrote producer snapshot %s", path)
        return True

    def latest(self, upper: int) -> tuple[int, list[SnapshotEntry]] | None:
        """The newest readable snapshot at or below upper, as (offset, entries). Corrupt files
        on the way are deleted, as Kafka's loadFromSnapshot does."""
        for offset in reversed(self.offsets()):
            if offset > upper:
                continue
            path = snapshot_path(self.dir, offset)
            try:
                return offset, read_snapshot(path)
            except CorruptSnapshot as exc:
                log.warning("failed to load producer snapshot from %s: %s; deleting it", path, exc)
                path.unlink(missing_ok=True)
        return None

    def retain(self, log_start: int, log_end: int) -> None:
        """Kafka's truncateAndReload: delete snapshots past the log end (their offsets are gone or
        hold other data) and at or below the log start; writes in flight become stale."""
        with self._lock:
            self.generation += 1
            for offset in self.offsets():
                if offset > log_end or offset <= log_start:
                    self._delete(offset, "outside the log")

    def remove_strays(self, segment_bases: Iterable[int]) -> None:
        """Kafka's removeStraySnapshots (at load): a snapshot not at a segment's base offset is
        kept only if it is the newest such and lies past every segment base (the snapshot a clean
        shutdown wrote at the log end)."""
        bases = set(segment_bases)
        strays = [o for o in self.offsets() if o not in bases]
        if not strays:
            return
        for offset in strays[:-1]:
            self._delete(offset, "stray")
        if bases and strays[-1] < max(bases):
            self._delete(strays[-1], "stray")

    def close(self) -> None:
        """The directory is about to be removed: no more writes."""
        with self._lock:
            self._closed = True

    def delete_below(self, offset: int) -> None:
        """Delete the snapshots below offset (the log start moved past them)."""
        for o in self.offsets():
            if o >= offset:
                break
            self._delete(o, "below the log start")

    def _delete(self, offset: int, reason: str) -> None:
        path = snapshot_path(self.dir, offset)
        log.debug("deleting producer snapshot %s (%s)", path, reason)
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class SnapshotWork:
    """Snapshot file work a partition handed over on its owner's thread (entries already
    copied): run() it in a worker thread."""

    snapshots: ProducerSnapshots
    writes: tuple[tuple[int, tuple[SnapshotEntry, ...]], ...]
    delete_below: int | None
    generation: int

    def run(self) -> None:
        for offset, entries in self.writes:
            self.snapshots.write(offset, entries, self.generation)
        if self.delete_below is not None:
            self.snapshots.delete_below(self.delete_below)
