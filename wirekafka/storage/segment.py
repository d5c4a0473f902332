"""LogSegment: one `%020d.log` file of record batches plus its `.index`, `.timeindex` and
`.txnindex` (the last only once the segment holds an aborted transaction's marker).

Batches are appended as the producer sent them (offsets already assigned) with one write call,
so a reader never sees half a batch and a killed process loses nothing the OS accepted."""

from __future__ import annotations

import errno
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence, Union

Buffer = Union[bytes, bytearray, memoryview]

from wirekafka.protocol import records
from wirekafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from wirekafka.storage.index import CorruptIndex, OffsetIndex, TimeIndex
from wirekafka.storage.region import FileRegion
from wirekafka.storage.txn_index import TransactionIndex

log = logging.getLogger(__name__)

_SCAN_CHUNK = 1 << 20
NO_TIMESTAMP = -1
_nowait_supported = hasattr(os, "RWF_NOWAIT")


class ColdData(Exception):
    """A read on the event loop would have waited for the disk (see LogSegment._read_head)."""


def _disable_nowait() -> None:
    global _nowait_supported
    _nowait_supported = False


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(slots=True)
class TimestampOffset:
    timestamp: int
    offset: int


_FILE_KINDS = (".log", ".index", ".timeindex", ".txnindex")


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int, suffix: str = "") -> None:
        """Open (or create) the segment's files; suffix is the cleaner's `.cleaned` or `.swap`
        for a segment that is not (yet) part of the log under its own name."""
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        name = segment_name(base_offset)
        self.suffix = suffix
        self.log_path = directory / f"{name}.log{suffix}"
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.index = OffsetIndex(directory / f"{name}.index{suffix}", base_offset)
        self.time_index = TimeIndex(directory / f"{name}.timeindex{suffix}", base_offset)
        self.txn_index = TransactionIndex(directory / f"{name}.txnindex{suffix}")
        self.recovered = False  # its batches were re-validated at open: its aborts must be found again
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP  # largest batch max timestamp: drives time retention
        self.offset_of_max_timestamp = -1  # last offset of the first batch holding it
        self.first_batch_timestamp: int | None = None
        self.created_ms: int | None = None
        # how much sooner than segment.ms this segment rolls (segment.jitter.ms), drawn once
        self.roll_jitter_ms: int | None = None
        self._bytes_since_index_entry = 0
        self.closed = False  # close requested: no new readers
        self._pins = 0  # worker-thread readers holding the descriptors open
        self._pin_lock = threading.Lock()

    @classmethod
    def create_fresh(cls, directory: Path, base_offset: int, index_interval_bytes: int, suffix: str) -> "LogSegment":
        """A new empty segment under suffix, replacing files a crashed attempt left behind."""
        for path in file_paths(directory, base_offset, suffix):
            path.unlink(missing_ok=True)
        return cls(directory, base_offset, index_interval_bytes, suffix)

    def _paths(self) -> list[Path]:
        return [self.log_path, self.index.path, self.time_index.path, self.txn_index.path]

    def rename_files(self, suffix: str) -> None:
        """Give the segment's files another suffix (the cleaner's swap); descriptors stay open.
        Serialised with delete, so a concurrent deletion unlinks whichever names are current.
        The log file names the segment's state for recovery, so it is renamed first when a suffix
        is added and last when one is removed: a crash in between never leaves a final `.log`
        whose indexes still carry the suffix (recovery deletes those)."""
        with self._pin_lock, self.index.lock, self.time_index.lock:  # the indexes open their files by name
            if self.closed:
                return
            paths = self._paths()
            for path in paths if suffix else paths[1:] + paths[:1]:
                target = path.with_name(path.name[: len(path.name) - len(self.suffix)] + suffix)
                if path.exists():
                    os.replace(path, target)
            self.log_path, self.index.path, self.time_index.path, self.txn_index.path = (
                p.with_name(p.name[: len(p.name) - len(self.suffix)] + suffix) for p in self._paths())
            self.suffix = suffix

    # ---- writes ---------------------------------------------------------------------------
    def append(self, parts: Sequence[Buffer], header: BatchHeader) -> int:
        """Append one offset-assigned batch, given as consecutive buffers (a patched header and
        the producer's bytes, so the records are never copied in Python); one writev call, so a
        reader never sees half a batch. Returns its file position. On an I/O error (a full disk:
        a short write, then ENOSPC or EFBIG) whatever part of the batch was written is cut off
        again before the OSError goes up, so the file ends where the segment says it does."""
        position = self.size
        try:
            written = os.writev(self._fd, parts)
            if written != header.size:
                raise OSError(errno.ENOSPC, f"short write of {written} of {header.size} bytes to {self.log_path}")
        except OSError:
            try:
                os.ftruncate(self._fd, position)
            except OSError as exc:  # recovery at the next start cuts it then
                log.error("could not cut a partial batch off %s: %s", self.log_path, exc)
            raise
        self.size += written
        self._track(header, position)
        return position

    def _note(self, header: BatchHeader) -> None:
        """Account for a batch in the segment's in-memory summary (offsets and timestamps)."""
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        self.next_offset = header.next_offset

    def _track(self, header: BatchHeader, position: int) -> None:
        """Kafka's rule (LogSegment.append/recover): a batch gets index entries when the bytes
        appended since the last entry, *before* it, exceed index.interval.bytes; the time entry
        is the max timestamp so far, this batch included. Same input, same index files as Kafka."""
        self._note(header)
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += header.size

    def seal(self) -> None:
        """Called when the segment stops being active: the final time index entry, and the
        indexes give back the descriptors they held for appending."""
        if self.max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.index.release()
        self.time_index.release()

    def flush(self) -> None:
        os.fsync(self._fd)
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    # ---- reads ----------------------------------------------------------------------------
    def read_at(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def iter_headers(self, position: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch from position; reads in large chunks."""
        end = self.size if end is None else end
        while position + HEADER_SIZE <= end:
            chunk = os.pread(self._fd, min(_SCAN_CHUNK, end - position), position)
            pos = 0
            while pos + HEADER_SIZE <= len(chunk):
                header = records.parse_header(chunk, pos)
                if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + pos + header.size > end:
                    return
                yield position + pos, header
                pos += header.size
            if pos == 0:  # one batch larger than the chunk: read its header alone
                header = records.parse_header(os.pread(self._fd, HEADER_SIZE, position))
                if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
                    return
                yield position, header
                pos = header.size
            position += pos

    def iter_batches(self, position: int = 0) -> Iterator[tuple[int, BatchHeader, memoryview]]:
        return iter_batches(self._fd, position, self.size)

    def _read_head(self, position: int, size: int, nowait: bool) -> bytes | bytearray:
        """size bytes at position. With nowait, only from the page cache: ColdData if the bytes
        would have to come from disk (the caller retries in a worker thread)."""
        if nowait and _nowait_supported:
            buf = bytearray(size)
            try:
                n = os.preadv(self._fd, [buf], position, os.RWF_NOWAIT)
            except BlockingIOError:
                raise ColdData(self.log_path) from None
            except OSError:  # a file system without RWF_NOWAIT: read as Kafka does
                _disable_nowait()
                return os.pread(self._fd, size, position)
            if n == size:
                return buf
            raise ColdData(self.log_path)  # partly cached: let a worker read it
        return os.pread(self._fd, size, position)

    def _header_at(self, position: int) -> BatchHeader:
        return records.parse_header(self._read_head(position, HEADER_SIZE, nowait=False))

    def _bounds_at(self, position: int, nowait: bool) -> tuple[int, int, int]:
        """(base offset, size, last offset) of the batch at position, from its first 27 bytes:
        all the fetch path needs to find batch boundaries."""
        return records.batch_bounds(self._read_head(position, records.BOUNDS_SIZE, nowait))

    def iter_headers_sparse(self, position: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """Like iter_headers, but reads only each batch's 61-byte header: the read path uses it
        to find batch boundaries without pulling record bytes into Python."""
        end = self.size if end is None else end
        while position + HEADER_SIZE <= end:
            header = self._header_at(position)
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
                return
            yield position, header
            position += header.size

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= offset."""
        _, start = self.index.lookup(offset)
        for position, header in self.iter_headers_sparse(start):
            if header.last_offset >= offset:
                return position, header
        return None

    def locate(self, offset: int, max_bytes: int, max_offset: int, min_one: bool,
               nowait: bool = False) -> tuple[int, int] | None:
        """(position, length) of whole batches starting with the one holding offset, below
        max_offset, within max_bytes; with min_one, the first batch even when it alone exceeds
        max_bytes. None when there is nothing to read. Reads 27 bytes of each batch it passes,
        but jumps over the batches the offset index already places inside both limits (with the
        default index.interval.bytes every batch over 4 KB has an entry); nowait: see
        _read_head. Kafka's slice would also carry the first bytes of the batch that does not
        fit, which clients discard: a deliberate difference, see conformance/deviations.toml."""
        end = self.size
        _, position = self.index.lookup(offset)
        batch = self._batch_at(position, end, nowait)
        while batch is not None and batch[2] < offset:  # skip to the batch holding offset
            position += batch[1]
            batch = self._batch_at(position, end, nowait)
        if batch is None:
            return None
        start, total = position, 0
        jump = self.index.last_entry_within(start + max_bytes, max_offset)
        if jump is not None and start < jump[1] <= end:
            # every batch from start to this indexed one fits: count them without reading them
            position, total = jump[1], jump[1] - start
            batch = self._batch_at(position, end, nowait)
        while batch is not None and batch[0] < max_offset and (
                total + batch[1] <= max_bytes or (min_one and total == 0)):
            total += batch[1]
            position += batch[1]
            if total >= max_bytes:
                break
            batch = self._batch_at(position, end, nowait)
        return (start, total) if total else None

    def _batch_at(self, position: int, end: int, nowait: bool) -> tuple[int, int, int] | None:
        """_bounds_at of a whole batch that ends by end; None past end or at a torn header."""
        if position + HEADER_SIZE > end:
            return None
        bounds = self._bounds_at(position, nowait)
        return bounds if HEADER_SIZE <= bounds[1] and position + bounds[1] <= end else None

    def region(self, position: int, length: int) -> FileRegion:
        return FileRegion(self._fd, position, length, self.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= offset (Kafka's LogSegment.truncateTo cuts at
        the batch that contains it). The batches are not re-validated (they were when appended
        or recovered): the scan starts at the last offset index entry before offset, so a
        truncation reads the headers of at most about index.interval.bytes of batches, never the
        whole segment (a follower truncates on the event loop). The indexes keep their entries
        before the cut; the time index, as in Kafka, those naming an offset before it, so the
        segment's max timestamp is the kept time entries' and the scanned batches' greatest."""
        indexed = self.index.count_below(offset)
        start = self.index.position_of(indexed - 1) if indexed else 0
        self.index.keep_first(indexed)
        cut, last = self.size, None
        scanned = []
        for position, header in self.iter_headers_sparse(start):
            if header.last_offset >= offset:
                cut = position
                break
            scanned.append(header)
            last = header
        new_next = last.next_offset if last is not None else self.base_offset
        self.time_index.keep_first(self.time_index.count_below(new_next))
        kept_aborts = [txn for txn in self.txn_index.entries if txn.last_offset < offset]
        self.txn_index.reset()
        for txn in kept_aborts:  # their markers are still in the log
            self.txn_index.append(txn)
        os.ftruncate(self._fd, cut)
        self.size = cut
        self.next_offset = new_next
        kept_time = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = kept_time if kept_time else (NO_TIMESTAMP, -1)
        for header in scanned:
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        if cut == 0:
            self.first_batch_timestamp = None
        self._bytes_since_index_entry = cut - start

    def find_timestamp(self, timestamp: int, starting_offset: int = 0) -> tuple[int, BatchHeader] | None:
        """First batch (position, header) whose max timestamp is >= timestamp and which ends at
        or past starting_offset (the log start). As Kafka's LogSegment.findOffsetByTimestamp, the
        scan starts where the time index and the offset index of starting_offset both allow, so
        batches below the log start are jumped over, not read."""
        _, start = self.index.lookup(max(self.time_index.lookup(timestamp), starting_offset))
        for position, header in self.iter_headers_sparse(start):
            if header.max_timestamp >= timestamp and header.last_offset >= starting_offset:
                return position, header
        return None

    # ---- recovery -------------------------------------------------------------------------
    def recover(self) -> int:
        """Validate every batch (size bounds, magic, CRC-32C), truncate at the first invalid
        one, and rebuild the offset and time indexes. The transaction index is emptied: which
        transactions a marker aborted is producer state, so the partition finds them again when
        it replays the log (`recovered`). Returns the number of bytes truncated."""
        self.index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self.recovered = True
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp = None
        self._bytes_since_index_entry = 0
        file_size = os.fstat(self._fd).st_size
        position = 0
        while position + LOG_OVERHEAD <= file_size:
            _, length = records.peek_offset_and_length(os.pread(self._fd, LOG_OVERHEAD, position))
            end = position + LOG_OVERHEAD + length
            if length < HEADER_SIZE - LOG_OVERHEAD or end > file_size:
                break
            batch = os.pread(self._fd, end - position, position)
            try:
                header = records.check_integrity(batch)
            except records.InvalidBatch:
                break
            if header.base_offset < self.next_offset and position > 0:
                break  # offsets must increase: anything else is garbage past the valid tail
            self._track(header, position)
            position = end
        truncated = file_size - position
        if truncated:
            log.warning("truncating %d invalid bytes at position %d of %s", truncated, position, self.log_path)
            os.ftruncate(self._fd, position)
        self.size = position
        return truncated

    def load(self) -> bool:
        """Open a cleanly shut down segment as Kafka does, reading no record data: the indexes
        must pass Kafka's sanity check; the batch headers from the last offset index entry on
        (about index.interval.bytes of batches at most) give the segment's end, and with the time
        index's last entry its max timestamp; the first batch's header its first timestamp
        (time-based rolling). False when the indexes cannot be trusted (a failed check, an entry
        that is not where its batch is): the caller recovers the segment, which rebuilds them.
        The caller checks first that the index files exist (it lists the directory anyway)."""
        self.next_offset = self.base_offset
        self._bytes_since_index_entry = 0
        if not self.size:
            return True
        try:
            self.index.sanity_check()
            self.time_index.sanity_check()
            last = self.index.last_entry()
            start = last[1] if last is not None else 0
            if start and self.size < start + HEADER_SIZE:
                raise CorruptIndex(f"the last entry's position {start} is past the log's end {self.size}")
            timed = self.time_index.last_entry()
            self.max_timestamp, self.offset_of_max_timestamp = timed if timed is not None else (NO_TIMESTAMP, -1)
            self.first_batch_timestamp = self._header_at(0).max_timestamp if start else None
            end = start
            for position, header in self.iter_headers_sparse(start):
                if position == start and last is not None and header.last_offset != last[0]:
                    raise CorruptIndex(f"the entry for offset {last[0]} points at a batch ending at "
                                       f"{header.last_offset}")
                self._note(header)
                end = position + header.size
            if end != self.size:
                raise CorruptIndex(f"the batches from the last index entry end at {end}, not at {self.size}")
        except CorruptIndex as exc:
            log.warning("rebuilding the indexes of %s: %s", self.log_path, exc)
            self.next_offset, self.max_timestamp, self.offset_of_max_timestamp = self.base_offset, NO_TIMESTAMP, -1
            self.first_batch_timestamp = None
            return False
        return True

    def scan(self) -> None:
        """Rebuild the in-memory summary from a header scan of the whole segment, trusting its
        batches (no CRC checks) and leaving the indexes as they are."""
        self.next_offset = self.base_offset
        self._bytes_since_index_entry = 0
        for _position, header in self.iter_headers(0):
            self._note(header)

    # ---- lifecycle ------------------------------------------------------------------------
    def pin(self) -> bool:
        """Keep the descriptors open for a reader in a worker thread; False if already closed.
        A close requested meanwhile (retention, topic deletion) waits for unpin."""
        with self._pin_lock:
            if self.closed:
                return False
            self._pins += 1
            return True

    def unpin(self) -> None:
        with self._pin_lock:
            self._pins -= 1
            close_now = self._pins == 0 and self.closed
        if close_now:
            self._close_files()

    def close(self) -> None:
        with self._pin_lock:
            if self.closed:
                return
            self.closed = True
            if self._pins:
                return  # the last reader closes
        self._close_files()

    def _close_files(self) -> None:
        os.close(self._fd)
        self.index.close()
        self.time_index.close()
        self.txn_index.close()

    def delete(self) -> None:
        self.close()
        with self._pin_lock:
            if self._pins:  # readers still on it look entries up after the index files are gone
                self.index.read_entries()
                self.time_index.read_entries()
            for path in self._paths():
                path.unlink(missing_ok=True)


def file_paths(directory: Path, base_offset: int, suffix: str = "") -> list[Path]:
    """The paths a segment's files have under suffix."""
    name = segment_name(base_offset)
    return [directory / f"{name}{kind}{suffix}" for kind in _FILE_KINDS]


def iter_batches(fd: int, position: int, end: int) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """(position, header, bytes) of each whole batch of a log file from position up to end, read
    in large chunks: for the cleaner, which looks inside every batch."""
    while position + HEADER_SIZE <= end:
        chunk = memoryview(os.pread(fd, min(_SCAN_CHUNK, end - position), position))
        pos = 0
        while pos + HEADER_SIZE <= len(chunk):
            header = records.parse_header(chunk, pos)
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + pos + header.size > end:
                return
            if pos + header.size > len(chunk):
                break
            yield position + pos, header, chunk[pos:pos + header.size]
            pos += header.size
        if pos == 0:  # one batch larger than the chunk: read it alone
            header = records.parse_header(os.pread(fd, HEADER_SIZE, position))
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
                return
            yield position, header, memoryview(os.pread(fd, header.size, position))
            pos = header.size
        position += pos
