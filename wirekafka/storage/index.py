"""Kafka's sparse segment indexes, in Kafka's file formats, held in memory as compact arrays.

OffsetIndex: 8-byte entries (relative offset i32, file position i32). An entry (o, p) says the
batch starting at byte p ends at offset o, so a read for offset >= o may start scanning at p.
TimeIndex: 12-byte entries (timestamp i64, relative offset i32), timestamps strictly increasing:
every batch at or after that offset's batch has max timestamp >= the entry's, so a look-up for a
target timestamp starts from the greatest entry <= target.

Memory, as Kafka's mapped index files: an entry costs 8 bytes in the offset index (two `array`
columns of 32-bit ints) and 8 in the time index while its timestamps span less than 2^31 ms
(32-bit deltas from the first one; 12 bytes otherwise), not the ~80 bytes of Python ints in
lists. Like Kafka's LazyIndex, an index reads its entries only when first looked up: opening a
segment reads just the file's first and last entries (Kafka's sanity check and the segment's
end), so a clean start costs a few small reads per segment, however large the log.

Descriptors: an index holds its file open only while it is being appended to, from its first
entry until its segment is sealed (`release`), as Kafka keeps no channel open to a mapped index.
Any other access (a first look-up, a truncation, a flush) opens the file for that call alone, so a
partition's rolled segments cost one descriptor each (their log), not three."""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import sys
import threading
from array import array
from itertools import repeat
from operator import sub
from pathlib import Path
from typing import Iterator

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_I32_MAX = 2**31 - 1
_LITTLE_ENDIAN = sys.byteorder == "little"


class CorruptIndex(Exception):
    """An index fails Kafka's sanity check: the loader rebuilds its segment's indexes."""


def _big_endian_i32(data: bytes) -> array[int]:
    """The file's big-endian 32-bit ints as a native array, converted in C."""
    values = array("i")
    values.frombytes(data)
    if _LITTLE_ENDIAN:
        values.byteswap()
    return values


class _IndexFile:
    """An index file appended as entries come, its entries materialised on first use.

    Subclasses hold two columns: `_keys` (searched) and `_values`, each an `array`."""

    entry: struct.Struct
    _keys: array[int]
    _values: array[int]

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd: int | None = None  # open while appended to (see the module docstring)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            size = os.fstat(fd).st_size
            whole = size - size % self.entry.size
            self.torn = whole != size  # a torn trailing entry from a crash: Kafka calls the file corrupt
            if self.torn:
                os.ftruncate(fd, whole)
            self._count = whole // self.entry.size
            self._first: tuple[int, int] | None = (
                self.entry.unpack(os.pread(fd, self.entry.size, 0)) if whole else None)
            self._last: tuple[int, int] | None = (
                self.entry.unpack(os.pread(fd, self.entry.size, whole - self.entry.size)) if whole else None)
        finally:
            os.close(fd)
        self._loaded = False
        # a worker's first look-up or flush against the loop's appends, and the segment's
        # renames (the file is opened by name); reentrant, as the descriptor is taken under it
        # by methods that already hold it
        self.lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        raise NotImplementedError

    def _decode(self, data: bytes) -> None:
        """Fill the columns from whole entries of the file."""
        raise NotImplementedError

    def _push(self, a: int, b: int, /) -> None:
        """Add one entry, as the file holds it, to the columns."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _descriptor(self) -> Iterator[int]:
        """The file's descriptor: the one held while appending, else one opened for this use."""
        with self.lock:
            if self._fd is not None:
                yield self._fd
                return
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
            try:
                yield fd
            finally:
                os.close(fd)

    def _ensure(self) -> None:
        if self._loaded:
            return
        with self.lock:
            if not self._loaded:
                with self._descriptor() as fd:
                    self._decode(os.pread(fd, self._count * self.entry.size, 0))
                self._loaded = True

    def _write(self, a: int, b: int) -> None:
        with self.lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
            os.write(self._fd, self.entry.pack(a, b))
            if self._loaded:
                self._push(a, b)
            if self._first is None:
                self._first = (a, b)
            self._count += 1
            self._last = (a, b)

    def __len__(self) -> int:
        return self._count

    def memory_bytes(self) -> int:
        """Bytes the materialised columns take (0 until the first look-up)."""
        cols = (self._keys, self._values)
        return sum(c.itemsize * len(c) for c in cols)

    def sanity_check(self) -> None:
        """Kafka's check common to both indexes, a whole number of entries (the subclasses add
        theirs); CorruptIndex otherwise."""
        if self.torn:
            raise CorruptIndex(f"{self.path} held a torn trailing entry")

    def reset(self) -> None:
        with self.lock, self._descriptor() as fd:
            os.ftruncate(fd, 0)
            self._clear()
            self._count, self._first, self._last, self._loaded, self.torn = 0, None, None, True, False

    def keep_first(self, count: int) -> None:
        """Drop every entry after the first count (the segment was truncated)."""
        if count < self._count:
            self._ensure()
            with self.lock, self._descriptor() as fd:
                os.ftruncate(fd, count * self.entry.size)
                del self._keys[count:]
                del self._values[count:]
                self._count = count
                self._last = self.entry.unpack(os.pread(fd, self.entry.size, (count - 1) * self.entry.size)) \
                    if count else None
                if not count:
                    self._first = None

    def flush(self) -> None:
        try:
            with self._descriptor() as fd:  # fsync through any descriptor writes the file's pages
                os.fsync(fd)
        except FileNotFoundError:  # deleted while its segment was pinned for this flush: nothing to keep
            pass

    def read_entries(self) -> None:
        """Read the entries now if not yet read (before the file goes, for readers still on it)."""
        self._ensure()

    def release(self) -> None:
        """Close the descriptor held for appending (the segment was sealed); a later use opens
        the file again."""
        with self.lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def close(self) -> None:
        self.release()


class OffsetIndex(_IndexFile):
    """Columns: relative offsets and positions, both 32-bit (the file's own widths)."""

    entry = _OFFSET_ENTRY

    def _clear(self) -> None:
        self._keys = array("i")
        self._values = array("i")

    def _decode(self, data: bytes) -> None:
        both = _big_endian_i32(data)
        self._keys, self._values = both[0::2], both[1::2]

    def _push(self, relative_offset: int, position: int) -> None:
        self._keys.append(relative_offset)
        self._values.append(position)

    def sanity_check(self) -> None:
        super().sanity_check()
        if self._last is not None and self._last[0] < 0:
            raise CorruptIndex(f"{self.path}: last offset {self.base_offset + self._last[0]} is below the base "
                               f"offset {self.base_offset}")

    def append(self, offset: int, position: int) -> None:
        if self._last is not None and offset - self.base_offset <= self._last[0]:
            return
        self._write(offset - self.base_offset, position)

    def last_entry(self) -> tuple[int, int] | None:
        """(offset, position) of the last entry, read at open: no look-up needed."""
        return (self.base_offset + self._last[0], self._last[1]) if self._last is not None else None

    def count_below(self, offset: int) -> int:
        """How many entries name a batch ending before offset."""
        self._ensure()
        return bisect.bisect_left(self._keys, offset - self.base_offset)

    def position_of(self, i: int) -> int:
        self._ensure()
        return self._values[i]

    def lookup(self, offset: int) -> tuple[int, int]:
        """The greatest entry with entry offset <= offset, else (base offset, 0)."""
        self._ensure()
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def upper_bound_offset(self, position: int) -> int | None:
        """Kafka's fetchUpperBoundOffset: the offset of the first entry at or past position, or
        None. Bounds the aborted transactions a read_committed fetch ending there must report."""
        self._ensure()
        i = bisect.bisect_left(self._values, position)
        return self.base_offset + self._keys[i] if i < len(self._keys) else None

    def last_entry_within(self, position_limit: int, offset_limit: int) -> tuple[int, int] | None:
        """The last entry at a position <= position_limit whose offset (its batch's last) is
        < offset_limit, or None: a batch start the fetch path can jump to, every batch before it
        being inside both limits, instead of reading each batch's header on the way."""
        self._ensure()
        k = min(bisect.bisect_right(self._values, position_limit),
                bisect.bisect_left(self._keys, offset_limit - self.base_offset)) - 1
        return (self.base_offset + self._keys[k], self._values[k]) if k >= 0 else None

    def last_position(self) -> int:
        return self._last[1] if self._last is not None else 0


class TimeIndex(_IndexFile):
    """Columns: timestamps (32-bit deltas from `_origin`, the first timestamp, while they fit;
    64-bit from origin 0 once one does not) and 32-bit relative offsets."""

    entry = _TIME_ENTRY

    def _clear(self) -> None:
        self._keys = array("i")
        self._values = array("i")
        self._origin = 0

    def _decode(self, data: bytes) -> None:
        triples = _big_endian_i32(data)  # (high word, low word, relative offset) per entry
        self._values = triples[2::3]
        if _LITTLE_ENDIAN:
            words = array("i", bytes(8 * len(self._values)))
            words[0::2], words[1::2] = triples[1::3], triples[0::3]
            stamps = array("q")
            stamps.frombytes(words.tobytes())
        else:
            stamps = array("q", (t for t, _ in _TIME_ENTRY.iter_unpack(data)))
        if stamps and stamps[-1] - stamps[0] <= _I32_MAX:
            self._origin = stamps[0]
            # from a list, the array is allocated to size (from an iterator it grows by 1/16ths)
            self._keys = array("i", list(map(sub, stamps, repeat(self._origin))))
        else:
            self._origin, self._keys = 0, stamps

    def _push(self, timestamp: int, relative_offset: int) -> None:
        if not self._keys:
            self._origin = timestamp if self._keys.typecode == "i" else 0
        elif self._keys.typecode == "i" and timestamp - self._origin > _I32_MAX:
            self._keys = array("q", (k + self._origin for k in self._keys))
            self._origin = 0
        self._keys.append(timestamp - self._origin)
        self._values.append(relative_offset)

    def sanity_check(self) -> None:
        """Kafka's TimeIndex checks: the last timestamp not below the first, the last offset
        not below the base offset."""
        super().sanity_check()
        if self._last is None:
            return
        first = self._first[0] if self._first is not None else self._last[0]
        if self._last[0] < first:
            raise CorruptIndex(f"{self.path}: last timestamp {self._last[0]} is below the first {first}")
        if self._last[1] < 0:
            raise CorruptIndex(f"{self.path}: last offset {self.base_offset + self._last[1]} is below the base "
                               f"offset {self.base_offset}")

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append only when the timestamp moves forward, as Kafka's index requires."""
        if self._last is not None and timestamp <= self._last[0]:
            return
        self._write(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """Offset of the greatest entry with entry timestamp <= timestamp, else the base offset."""
        self._ensure()
        i = bisect.bisect_right(self._keys, timestamp - self._origin) - 1
        return self.base_offset if i < 0 else self.base_offset + self._values[i]

    def count_below(self, offset: int) -> int:
        """How many leading entries name an offset before offset (a truncation keeps them);
        the offsets of a time index never decrease."""
        self._ensure()
        return bisect.bisect_left(self._values, offset - self.base_offset)

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, read at open: no look-up needed."""
        return (self._last[0], self.base_offset + self._last[1]) if self._last is not None else None
