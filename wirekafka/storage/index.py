"""Kafka's sparse segment indexes, in Kafka's file formats.

OffsetIndex: 8-byte entries (relative offset i32, file position i32). An entry (o, p) says the
batch starting at byte p ends at offset o, so a read for offset >= o may start scanning at p.
TimeIndex: 12-byte entries (timestamp i64, relative offset i32), timestamps strictly increasing:
every batch at or after that offset's batch has max timestamp >= the entry's, so a look-up for a
target timestamp starts from the greatest entry <= target.
Entries are kept in memory too (they are small and sparse); files are appended as we go."""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _IndexFile:
    entry: struct.Struct

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._keys: list[int] = []
        self._values: list[int] = []
        self._load()

    def _load(self) -> None:
        data = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        whole = len(data) - len(data) % self.entry.size
        if whole != len(data):  # a torn trailing entry from a crash
            os.ftruncate(self._fd, whole)
        for a, b in self.entry.iter_unpack(data[:whole]):
            self._add(a, b)

    def _add(self, a: int, b: int, /) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._keys)

    def reset(self) -> None:
        os.ftruncate(self._fd, 0)
        self._keys.clear()
        self._values.clear()

    def keep_first(self, count: int) -> None:
        """Drop every entry after the first count (the segment was truncated)."""
        if count < len(self._keys):
            os.ftruncate(self._fd, count * self.entry.size)
            del self._keys[count:]
            del self._values[count:]

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


class OffsetIndex(_IndexFile):
    entry = _OFFSET_ENTRY

    def _add(self, relative_offset: int, position: int) -> None:
        self._keys.append(self.base_offset + relative_offset)
        self._values.append(position)

    def append(self, offset: int, position: int) -> None:
        if self._keys and offset <= self._keys[-1]:
            return
        os.write(self._fd, _OFFSET_ENTRY.pack(offset - self.base_offset, position))
        self._add(offset - self.base_offset, position)

    def count_below(self, offset: int) -> int:
        """How many entries name a batch ending before offset."""
        return bisect.bisect_left(self._keys, offset)

    def position_of(self, i: int) -> int:
        return self._values[i]

    def lookup(self, offset: int) -> tuple[int, int]:
        """The greatest entry with entry offset <= offset, else (base offset, 0)."""
        i = bisect.bisect_right(self._keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._values[i]

    def upper_bound_offset(self, position: int) -> int | None:
        """Kafka's fetchUpperBoundOffset: the offset of the first entry at or past position, or
        None. Bounds the aborted transactions a read_committed fetch ending there must report."""
        i = bisect.bisect_left(self._values, position)
        return self._keys[i] if i < len(self._keys) else None

    def last_entry_within(self, position_limit: int, offset_limit: int) -> tuple[int, int] | None:
        """The last entry at a position <= position_limit whose offset (its batch's last) is
        < offset_limit, or None: a batch start the fetch path can jump to, every batch before it
        being inside both limits, instead of reading each batch's header on the way."""
        k = min(bisect.bisect_right(self._values, position_limit), bisect.bisect_left(self._keys, offset_limit)) - 1
        return (self._keys[k], self._values[k]) if k >= 0 else None

    def last_position(self) -> int:
        return self._values[-1] if self._values else 0


class TimeIndex(_IndexFile):
    entry = _TIME_ENTRY

    def _add(self, timestamp: int, relative_offset: int) -> None:
        self._keys.append(timestamp)
        self._values.append(self.base_offset + relative_offset)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append only when the timestamp moves forward, as Kafka's index requires."""
        if self._keys and timestamp <= self._keys[-1]:
            return
        os.write(self._fd, _TIME_ENTRY.pack(timestamp, offset - self.base_offset))
        self._add(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """Offset of the greatest entry with entry timestamp <= timestamp, else the base offset."""
        i = bisect.bisect_right(self._keys, timestamp) - 1
        return self.base_offset if i < 0 else self._values[i]

    def count_below(self, offset: int) -> int:
        """How many leading entries name an offset before offset (a truncation keeps them)."""
        return next((i for i, value in enumerate(self._values) if value >= offset), len(self._values))

    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None
