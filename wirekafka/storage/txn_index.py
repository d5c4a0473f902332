"""Kafka's transaction index (`%020d.txnindex`): the aborted transactions whose abort marker lies
in a segment, in Kafka's file format, so that a read_committed fetch can tell the consumer which
producers' records to drop without the broker reading a single record.

Entry (34 bytes, big-endian): version i16 (0), producer id i64, first offset i64, last offset i64
(the abort marker's offset), last stable offset i64 (the LSO right after the abort was written:
every aborted transaction an upper bound at or below it can need is in this segment or an earlier
one, which lets a search stop). Like Kafka, the file exists only once a segment holds an abort;
entries are kept in memory too (aborts are rare)."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

_ENTRY = struct.Struct(">hqqqq")
_VERSION = 0


@dataclass(slots=True, frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.entries: list[AbortedTxn] = []
        if path.exists():
            fd = self._open()
            data = os.pread(fd, os.fstat(fd).st_size, 0)
            whole = len(data) - len(data) % _ENTRY.size
            if whole != len(data):  # a torn trailing entry from a crash
                os.ftruncate(fd, whole)
            for version, pid, first, last, lso in _ENTRY.iter_unpack(data[:whole]):
                if version != _VERSION:
                    raise ValueError(f"{path}: unknown transaction index entry version {version}")
                self.entries.append(AbortedTxn(pid, first, last, lso))

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def append(self, txn: AbortedTxn) -> None:
        """Kafka refuses entries whose last offset does not move forward; so do we."""
        if self.entries and txn.last_offset < self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {txn.last_offset} appended after one ending at "
                             f"{self.entries[-1].last_offset} in {self.path}")
        os.write(self._open(), _ENTRY.pack(_VERSION, txn.producer_id, txn.first_offset, txn.last_offset,
                                           txn.last_stable_offset))
        self.entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), and whether the search
        is complete (an entry's last stable offset reached upper_bound: later segments cannot
        hold one that overlaps)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def reset(self) -> None:
        """Forget every entry (the segment is being recovered and its aborts found again)."""
        self.entries = []
        if self._fd is not None or self.path.exists():
            os.ftruncate(self._open(), 0)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
