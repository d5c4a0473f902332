"""CoordinatorRuntime: what a coordinator whose state lives in an internal topic needs.

Kafka's coordinators (groups, transactions) are state machines over a compacted internal topic:
they load a partition's state by replaying it when this broker becomes its leader, and every
change is a record batch appended through the replica manager, answered once it is replicated
(like an acks=all write). This runtime gives them exactly that — the topic's partitions (created
on first use with the coordinator's configs), writes, waiting, replay in a worker thread — so a
coordinator depends on neither the broker state nor the storage layer."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

import trio

from wirekafka.broker.metadata.cluster_metadata import ClusterMetadata
from wirekafka.broker.replica.partition import AppendResult, Partition
from wirekafka.broker.replica.replica_manager import ReplicaManager
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.storage import batch_filter

log = logging.getLogger(__name__)

Entry = tuple[bytes, bytes | None]
# The replication factor settings of the internal topics: in a cluster, as in Kafka 3.9, creating
# them fails (COORDINATOR_NOT_AVAILABLE) until that many brokers are registered; one node ignores them.
REPLICATION_FACTOR_KEYS = {"__consumer_offsets": "offsets.topic.replication.factor",
                           "__transaction_state": "transaction.state.log.replication.factor"}


class CoordinatorRuntime:
    def __init__(self, metadata: ClusterMetadata, replicas: ReplicaManager, config: BrokerConfig,
                 now_ms: Callable[[], int]) -> None:
        self.metadata = metadata
        self.replicas = replicas
        self.config = config
        self.now_ms = now_ms
        self._create_lock = trio.Lock()

    def partitions(self, topic: str) -> list[Partition]:
        """The internal topic's partitions this broker leads (all of them on one node)."""
        t = self.metadata.topic(topic)
        return [p for p in t.local_partitions() if p.is_leader] if t is not None else []

    async def ensure_topic(self, topic: str, num_partitions: int, configs: dict[str, str]) -> None:
        """Create the internal topic on first use (FindCoordinator does this, as in Kafka);
        concurrent callers wait for the one creation. In a cluster another broker may be creating
        it at the same moment: until it is visible here, COORDINATOR_NOT_AVAILABLE (clients retry)."""
        async with self._create_lock:
            if self.metadata.topic(topic) is None:
                try:
                    await self.metadata.create_topic(topic, num_partitions, configs,
                                                     self.config.int(REPLICATION_FACTOR_KEYS[topic]))
                except KafkaApiError as exc:
                    if self.metadata.topic(topic) is None:
                        log.info("%s is not available yet: %s", topic, exc.message or exc.code.name)
                        raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None

    def partition(self, topic: str, index: int) -> Partition:
        """One partition of the internal topic; NOT_COORDINATOR while the topic does not exist
        (a client must find its coordinator first, which creates it)."""
        t = self.metadata.topic(topic)
        p = t.partitions[index] if t is not None and 0 <= index < len(t.partitions) else None
        if p is None or not p.is_leader:
            raise KafkaApiError(ErrorCode.NOT_COORDINATOR)
        return p

    def write(self, partition: Partition, entries: list[Entry], producer: tuple[int, int] | None = None,
              compression: int = 0) -> AppendResult:
        """Append key/value records as one batch now (stamped with the broker's time), compressed
        with the codec id given (the group coordinator's offsets.topic.compression.codec); with
        producer (id, epoch), as part of that producer's transaction (TxnOffsetCommit): the
        records count only once its COMMIT marker follows."""
        now_ms = self.now_ms()
        entries_ts: list[tuple[bytes | None, bytes | None, int]] = [(k, v, now_ms) for k, v in entries]
        if producer is None:
            batch = records.build_batch(entries_ts)
        else:
            batch = records.build_batch(entries_ts, producer_id=producer[0], producer_epoch=producer[1],
                                        transactional=True)
        if compression:  # always, as Kafka writes it (kafka-python leaves out a codec that gains nothing)
            batch = batch_filter.compress(batch, records.parse_header(batch), compression)
        return self.replicas.append_coordinator_records(partition, batch)

    async def write_and_wait(self, partition: Partition, entries: list[Entry], timeout_ms: int,
                             producer: tuple[int, int] | None = None, compression: int = 0) -> AppendResult:
        """write(), then wait until the batch is replicated; REQUEST_TIMED_OUT otherwise (the
        records stay in the log, as in Kafka, and are applied on the next load). Returns where
        the batch went: entry i is the record at base_offset + i."""
        result = self.write(partition, entries, producer, compression)
        deadline = trio.current_time() + timeout_ms / 1000
        if not await self.replicas.wait_for_high_watermark(partition, result.last_offset + 1, deadline):
            raise KafkaApiError(ErrorCode.REQUEST_TIMED_OUT)
        return result

    async def read_entries(self, partition: Partition) -> Replay:
        """Every keyed record of a partition up to its log end, read in a worker thread (the loop
        keeps serving; the segment list is copy-on-write): records of committed transactions
        where their COMMIT marker is, aborted ones dropped, open ones apart. To the log end, as
        Kafka's coordinators load: a new leader's log is what its followers will be cut to, while
        its high watermark may still lag the commits its predecessor acknowledged."""
        end = partition.log_end_offset
        start = partition.log_start_offset
        return await trio.to_thread.run_sync(_read_entries, partition, start, end)


@dataclass
class Replay:
    entries: list[Entry] = field(default_factory=list)  # in the order they take effect
    # entries[i]'s offset in the log and whether it is a committed transaction's record (taking
    # effect at its marker, later than where it is): the group coordinator keeps, of a plain and
    # a transactional offset, the one later in the log, as Kafka's does
    sources: list[tuple[int, bool]] = field(default_factory=list)
    # producer id -> (offset, key, value) of its transaction still open at the log end
    open_transactions: dict[int, list[tuple[int, bytes, bytes | None]]] = field(default_factory=dict)


def _read_entries(partition: Partition, start: int, end: int) -> Replay:
    replay = Replay()
    for header, read in partition.files.iter_batches(start):
        if header.base_offset >= end:
            break
        if header.is_control:
            try:
                marker = records.parse_marker(read())
            except records.InvalidBatch:
                continue
            pending = replay.open_transactions.pop(header.producer_id, [])
            if marker.commit:
                replay.entries.extend((key, value) for _, key, value in pending)
                replay.sources.extend((offset, True) for offset, _, _ in pending)
            continue
        keyed: list[tuple[int, bytes, bytes | None]] = [
            (offset, key, value) for offset, key, value in batch_filter.read_records(read(), header)
            if key is not None and start <= offset < end]
        if header.is_transactional:
            replay.open_transactions.setdefault(header.producer_id, []).extend(keyed)
        else:
            replay.entries.extend((key, value) for _, key, value in keyed)
            replay.sources.extend((offset, False) for offset, _, _ in keyed)
    return replay
