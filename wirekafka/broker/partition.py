"""Partition: the leader's view of one partition on a single-node broker.

With one replica the in-sync set is just this node, so the high watermark is the log end
offset as soon as a batch is written, and acks=all needs no waiting. Without transactions
the last stable offset equals the high watermark."""

from __future__ import annotations

from dataclasses import dataclass

import trio

from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.records import BatchHeader
from wirekafka.broker.producers import ProducerStateTable
from wirekafka.storage.log import PartitionLog


@dataclass(slots=True)
class AppendResult:
    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    duplicate: bool = False


class Partition:
    def __init__(self, topic: str, index: int, log: PartitionLog, leader_epoch: int = 0) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.leader_epoch = leader_epoch
        self.producers = ProducerStateTable()
        self._waiters: set[trio.Event] = set()

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    # ---- appends ---------------------------------------------------------------------------
    def append(self, batch: bytes, header: BatchHeader, log_append_time_ms: int | None) -> AppendResult:
        """Assign offsets to one validated batch and append it. log_append_time_ms is set for
        LogAppendTime topics. Raises KafkaApiError for producer-state violations."""
        if header.has_producer_id and header.base_sequence >= 0:
            dup = self.producers.check(header)
            if dup is not None:
                return AppendResult(dup.first_offset, dup.append_time, duplicate=True)
        buf = bytearray(batch)
        records.assign_offsets(buf, self.log.log_end_offset, self.leader_epoch)
        if log_append_time_ms is not None:
            records.set_log_append_time(buf, log_append_time_ms)
        assigned = records.parse_header(buf)
        self.log.append(buf, assigned)
        append_time = -1 if log_append_time_ms is None else log_append_time_ms
        if assigned.has_producer_id:
            self.producers.record(assigned, append_time)
        self.notify()
        return AppendResult(assigned.base_offset, append_time)

    def rebuild_producer_state(self) -> None:
        """Replay batch headers from the log start to restore idempotent producer state."""
        self.producers.forget_all()
        for _seg, _pos, header in self.log.iter_batch_headers(self.log.log_start_offset):
            if header.has_producer_id and not header.is_control:
                self.producers.record(header, header.max_timestamp if header.is_log_append_time else -1)

    # ---- waiting for data --------------------------------------------------------------------
    def add_waiter(self, event: trio.Event) -> None:
        self._waiters.add(event)

    def remove_waiter(self, event: trio.Event) -> None:
        self._waiters.discard(event)

    def notify(self) -> None:
        for event in self._waiters:
            event.set()
        self._waiters.clear()

    # ---- reads -------------------------------------------------------------------------------
    def check_fetch_offset(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self.high_watermark:
            raise KafkaApiError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside [{self.log_start_offset}, {self.high_watermark}]",
            )

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing: a client epoch below ours is stale, above ours is from the future."""
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaApiError(ErrorCode.FENCED_LEADER_EPOCH)
        raise KafkaApiError(ErrorCode.UNKNOWN_LEADER_EPOCH)
