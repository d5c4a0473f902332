"""A partition's files as work for worker threads and record decoders (Kafka's UnifiedLog's flush,
close and delete, and its batch reads): what may block on the disk, handed the log's own objects.
The Partition keeps every decision about its state; this is its file half."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Callable, Iterator

import trio

from wirekafka.broker.replica.delayed_deletes import DelayedDeletes, delete_directory_name
from wirekafka.broker.replica.producer_state_manager import ProducerStateManager
from wirekafka.protocol.records import BatchHeader
from wirekafka.storage.log import FlushWork, PartitionLog
from wirekafka.storage.segment import LogSegment


class PartitionFiles:
    def __init__(self, topic: str, index: int, log: PartitionLog, producer_state: ProducerStateManager,
                 deletes: DelayedDeletes) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.producer_state = producer_state
        self.deletes = deletes
        # the log dir holding the partition's directory (one of log.dirs), made and hashed once,
        # here, where the partition is opened (a worker thread): the checkpoint snapshot and the
        # log-dir reports group every partition by it on the loop, and a new Path's parent made
        # and hashed per partition was most of a 10,000-partition snapshot's 140 ms (measured)
        self.log_dir = log.dir.parent
        hash(self.log_dir)  # a Path keeps its hash once computed

    @property
    def directory(self) -> Path:
        """The partition's directory (in one of log.dirs)."""
        return self.log.dir

    def flush_work(self) -> FlushWork:
        """Taken on the loop; run() it in a worker thread, then call flushed(work.end)."""
        return self.log.flush_work()

    def rolled_flush_work(self) -> FlushWork | None:
        """The flush due since the last segment roll, if any; taken and run like flush_work."""
        return self.log.rolled_flush_work()

    def flushed(self, end: int) -> None:
        self.log.flushed(end)

    def flush(self) -> None:
        """fsync now, on the caller's thread (shutdown)."""
        self.log.flush()

    def close(self) -> None:
        """Clean shutdown (worker thread, the loop no longer running): the pending snapshot work,
        then a snapshot at the log end so that the next start replays nothing, as Kafka's
        UnifiedLog.close does; then the log."""
        self.producer_state.take_snapshot(self.log.log_end_offset)
        work = self.producer_state.work()
        if work is not None:
            work.run()
        self.log.close()

    def abandon(self) -> None:
        """Close the files without writing anything more (the log directory failed)."""
        self.log.abandon()

    async def delete_segments(self, segments: list[LogSegment]) -> None:
        """Delete segments detached by retention, DeleteRecords or truncation, as Kafka does:
        renamed `.deleted` now (worker thread), unlinked file.delete.delay.ms later."""
        await trio.to_thread.run_sync(PartitionLog.retire_segments, segments)
        self.schedule_deletion(segments)

    def schedule_deletion(self, retired: list[LogSegment]) -> None:
        self.deletes.schedule(self.log.config.file_delete_delay_ms,
                              functools.partial(PartitionLog.delete_segments, retired))

    async def delete_files(self) -> None:
        """The partition's directory goes (after take_offline), as Kafka deletes a replica: renamed
        `<topic>-<p>.<uuid>-delete` now (worker thread), removed after log.segment.delete.delay.ms."""
        retired = await trio.to_thread.run_sync(self.retire_files)
        self.deletes.schedule_directory(retired)

    def retire_files(self) -> Path:
        """Close the partition's files and rename its directory for deletion (worker thread)."""
        self.producer_state.close()
        self.log.close()
        return self.log.retire_directory(delete_directory_name(self.topic, self.index, uuid.uuid4().hex))

    def iter_batches(self, start_offset: int) -> Iterator[tuple[BatchHeader, Callable[[], bytes]]]:
        """Each batch header from start_offset with a function reading the batch's bytes: for
        readers that decode records (ListOffsets by time, coordinator loading)."""
        for seg, pos, header in self.log.iter_batch_headers(start_offset):
            yield header, _batch_reader(self.log, seg, pos, header)

    def batch_for_timestamp(self, timestamp: int) -> tuple[BatchHeader, Callable[[], bytes]] | None:
        found = self.log.find_timestamp(timestamp)
        return None if found is None else (found[2], _batch_reader(self.log, *found))

    def batch_with_max_timestamp(self) -> tuple[BatchHeader, Callable[[], bytes]] | None:
        found = self.log.max_timestamp_batch()
        return None if found is None else (found[2], _batch_reader(self.log, *found))


def _batch_reader(plog: PartitionLog, seg: LogSegment, pos: int, header: BatchHeader) -> Callable[[], bytes]:
    return lambda: plog.read_batch(seg, pos, header)
