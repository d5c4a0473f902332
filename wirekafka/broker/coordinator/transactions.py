"""TransactionCoordinator: Kafka's transaction coordinator over the `__transaction_state` topic.

Each transactional id has one record of state in the topic's partition its id hashes to
(Kafka's key/value formats, `txn_records.py`); every transition is written there and waited for
before it takes effect, so a restart resumes every transaction where its last record left it.
A commit or abort goes Ongoing -> PrepareCommit/PrepareAbort (the decision, durable) -> a
COMMIT/ABORT marker in every partition of the transaction -> CompleteCommit/CompleteAbort. A
coordinator that loads a Prepare* state finishes the markers, so a crash at any step ends in the
decided outcome on every partition.

Kafka's rules kept here (TransactionCoordinator / TransactionMetadata):
- InitProducerId bumps the epoch (a new producer id once the epoch is exhausted), which fences
  the older producer; an open transaction is aborted first and the caller told
  CONCURRENT_TRANSACTIONS, so its retry gets the epoch after the abort.
- While a transition is being written, or markers are pending, requests for the id get
  CONCURRENT_TRANSACTIONS; a producer id that is not the id's is INVALID_PRODUCER_ID_MAPPING,
  an older epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for the request versions before
  KIP-588, mapped by the handlers).
- Transactions open longer than their timeout are aborted by the coordinator, with an epoch bump
  that fences their producer.

Transaction version 2 (KIP-890 part 2) as Kafka 4.3.1 serves it: a partition leader adds a
partition to the transaction when a Produce v12+ batch of it arrives (add_partitions), every
EndTxn v5 bumps the epoch, and an exhausted epoch moves the producer to a new id when its
transaction completes (txn_metadata.py holds the state and EndTxn's rules). Version 1 clients
(AddPartitionsToTxn, EndTxn before v5) are served on the same transactions."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any, Awaitable, Callable, Iterable

import trio

from wirekafka.broker.coordinator import txn_records as tr
from wirekafka.broker.coordinator.runtime import CoordinatorRuntime
from wirekafka.broker.replica.partition import Partition
from wirekafka.broker.coordinator.txn_metadata import (MAX_EPOCH, NO_EPOCH, NO_PRODUCER_ID, TV2, TopicPartition,
                                                        TransactionMetadata, completed, end_txn_goes_ahead)
from wirekafka.broker.coordinator.txn_records import TxnState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

log = logging.getLogger(__name__)

TXN_TOPIC = "__transaction_state"
# how often markers that could not be written are tried again (Kafka's marker channel resends on
# its next poll, after retry.backoff.ms; a second here keeps a leaderless partition from spinning)
MARKER_RETRY_S = 1.0


# writes one transaction's markers (partitions, producer id, producer epoch, coordinator epoch,
# commit) all at once; each partition's answer: NONE once its marker is written (or it needs none)
MarkerWriter = Callable[[list[TopicPartition], int, int, int, bool], Awaitable[dict[TopicPartition, ErrorCode]]]


class TransactionCoordinator:
    def __init__(self, runtime: CoordinatorRuntime, write_marker: MarkerWriter,
                 allocate_producer_id: Callable[[], Awaitable[int]]) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self._write_marker = write_marker
        self._allocate_producer_id = allocate_producer_id
        self.num_partitions = self.config.int("transaction.state.log.num.partitions")
        self.transactions: dict[str, TransactionMetadata] = {}
        self.loading: set[int] = set()
        self._by_producer: dict[int, str] = {}

    # ---- the topic -------------------------------------------------------------------------
    def partition_of(self, transactional_id: str) -> int:
        return tr.partition_for(transactional_id, self.num_partitions)

    async def ensure_topic(self) -> None:
        """Create __transaction_state on first use (FindCoordinator key type 1), with Kafka's
        settings for it."""
        await self.runtime.ensure_topic(TXN_TOPIC, self.num_partitions, {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(self.config.int("transaction.state.log.min.isr")),
            "segment.bytes": str(self.config.int("transaction.state.log.segment.bytes")),
            "unclean.leader.election.enable": "false",
        })

    def _check_available(self, transactional_id: str) -> Partition:
        if not transactional_id:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "transactional id must not be empty")
        index = self.partition_of(transactional_id)
        if index in self.loading:
            raise KafkaApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return self.runtime.partition(TXN_TOPIC, index)  # NOT_COORDINATOR until the topic exists

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The epoch this coordinator's markers for transactional_id carry: the leader epoch of
        its transaction state partition here (Kafka's coordinatorEpoch, taken when the partition
        is loaded on becoming its leader). A partition's producer state refuses a marker with an
        older one (TRANSACTION_COORDINATOR_FENCED): a stalled former coordinator's late marker
        cannot complete the next transaction of the same producer."""
        return self._check_available(transactional_id).leader_epoch

    async def _persist(self, meta: TransactionMetadata, new: TransactionMetadata) -> None:
        """Write new as meta's next state and adopt it once replicated; meanwhile the id is
        pending (CONCURRENT_TRANSACTIONS). A failed write leaves meta as it was."""
        partition = self._check_available(meta.transactional_id)
        meta.pending = True
        try:
            await self.runtime.write_and_wait(
                partition, [(tr.encode_key(meta.transactional_id), tr.encode_value(new.to_record()))],
                self.config.int("offsets.commit.timeout.ms"))
        finally:
            meta.pending = False
        self._adopt(new)

    def _adopt(self, new: TransactionMetadata) -> None:
        old = self.transactions.get(new.transactional_id)
        if old is not None and old.producer_id != new.producer_id:
            self._by_producer.pop(old.producer_id, None)
        new.pending = False
        self.transactions[new.transactional_id] = new
        self._by_producer[new.producer_id] = new.transactional_id

    def _now(self) -> int:
        return self.runtime.now_ms()

    # ---- loading ---------------------------------------------------------------------------
    async def load(self) -> None:
        """Replay __transaction_state, then finish every transaction whose decision was written
        but whose markers may not all be (a crash between PrepareCommit and CompleteCommit)."""
        partitions = self.runtime.partitions(TXN_TOPIC)
        self.loading = {p.index for p in partitions}
        for partition in partitions:
            await self._replay_partition(partition)
        log.info("loaded %d transactional ids from %s", len(self.transactions), TXN_TOPIC)
        await self._finish_decided(list(self.transactions.values()))

    async def _replay_partition(self, partition: "Partition") -> None:
        self.loading.add(partition.index)
        try:
            for key, value in (await self.runtime.read_entries(partition)).entries:
                self._replay_record(key, value)
        finally:
            self.loading.discard(partition.index)
        await trio.lowlevel.checkpoint()

    async def load_partition(self, partition: "Partition") -> None:
        """Replay one partition of __transaction_state (this broker became its leader) and
        finish its transactions whose decision was written but not all of their markers."""
        await self._replay_partition(partition)
        await self._finish_decided([m for m in self.transactions.values()
                                    if self.partition_of(m.transactional_id) == partition.index])

    async def _finish_decided(self, loaded: list[TransactionMetadata]) -> None:
        """Complete the loaded transactions left in PrepareCommit or PrepareAbort: their decision
        is durable, their markers may not all be written (what fails now is retried later)."""
        for meta in loaded:
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                await self._try_complete(meta)

    def unload_partition(self, index: int) -> None:
        """This broker no longer leads the partition: forget its transactional ids."""
        for tid in [t for t in self.transactions if self.partition_of(t) == index]:
            old = self.transactions.pop(tid)
            self._by_producer.pop(old.producer_id, None)

    def _replay_record(self, key: bytes, value: bytes | None) -> None:
        """One record of the log; records Kafka 4.3.1 would skip (another key type, an
        unknown value version) are skipped here too."""
        try:
            decoded_key = tr.decode_key(key)
            decoded = tr.decode_value(value)
        except ValueError as exc:
            log.warning("skipping unreadable %s record: %s", TXN_TOPIC, exc)
            return
        if decoded_key is not None:
            self._replay(decoded_key.transactional_id, decoded)

    def _replay(self, transactional_id: str, value: tr.TransactionLogValue | None) -> None:
        if value is None:
            old = self.transactions.pop(transactional_id, None)
            if old is not None:
                self._by_producer.pop(old.producer_id, None)
            return
        self._adopt(TransactionMetadata(
            transactional_id, value.producer_id, value.producer_epoch, value.timeout_ms, value.state,
            {(p.topic, i) for p in value.partitions for i in p.partition_ids}, value.start_timestamp_ms,
            value.last_update_timestamp_ms, value.previous_producer_id,
            client_transaction_version=value.client_transaction_version, next_producer_id=value.next_producer_id))

    # ---- InitProducerId --------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> tuple[int, int]:
        """The producer id and epoch for a transactional producer (re)starting; raises
        KafkaApiError (CONCURRENT_TRANSACTIONS while an open transaction is being aborted)."""
        self._check_available(transactional_id)
        if timeout_ms <= 0 or timeout_ms > self.config.int("transaction.max.timeout.ms"):
            raise KafkaApiError(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(transactional_id, await self._allocate_producer_id(), NO_EPOCH, timeout_ms,
                                       TxnState.EMPTY, update_ms=self._now())
            if transactional_id in self.transactions:  # created by a concurrent request meanwhile
                meta = self.transactions[transactional_id]
            else:
                self.transactions[transactional_id] = meta
        if meta.pending:
            raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if producer_id != NO_PRODUCER_ID and not self._is_valid_producer(meta, producer_id, producer_epoch):
            raise KafkaApiError(ErrorCode.PRODUCER_FENCED)
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state is TxnState.ONGOING:
            # Fence the producer (epoch + 1) and abort its transaction; the retry bumps again.
            fenced = self._copy(meta, producer_epoch=meta.producer_epoch + 1, last_producer_epoch=meta.producer_epoch)
            await self._end(meta, fenced, commit=False)
            raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
        now = self._now()
        if meta.producer_epoch >= MAX_EPOCH - 1:  # exhausted: a new producer id starts at epoch 0
            new = self._copy(meta, producer_id=await self._allocate_producer_id(), producer_epoch=0,
                             previous_producer_id=meta.producer_id, last_producer_epoch=NO_EPOCH)
        elif producer_id == NO_PRODUCER_ID or producer_epoch in (NO_EPOCH, meta.producer_epoch):
            # Kafka records the id itself as the previous producer id on an epoch bump.
            new = self._copy(meta, producer_epoch=meta.producer_epoch + 1, last_producer_epoch=meta.producer_epoch,
                             previous_producer_id=meta.producer_id)
        elif producer_epoch == meta.last_producer_epoch:  # a retry whose answer was lost: no second bump
            new = self._copy(meta)
        else:
            raise KafkaApiError(ErrorCode.PRODUCER_FENCED)
        new.timeout_ms, new.state, new.partitions, new.start_ms, new.update_ms = timeout_ms, TxnState.EMPTY, set(), -1, now
        await self._persist(meta, new)
        return new.producer_id, new.producer_epoch

    @staticmethod
    def _is_valid_producer(meta: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
        """KIP-360: a producer that offers its id and epoch keeps them unless another producer
        took the transactional id over since (a retry after an epoch bump is accepted)."""
        return (meta.producer_epoch == NO_EPOCH or producer_id == meta.producer_id
                or (producer_id == meta.previous_producer_id and producer_epoch >= MAX_EPOCH - 1))

    @staticmethod
    def _copy(meta: TransactionMetadata, **changes: Any) -> TransactionMetadata:
        """The next state of a transactional id: its own set of partitions, no transition pending."""
        fields: dict[str, Any] = {"partitions": set(meta.partitions), "pending": False}
        fields.update(changes)
        return replace(meta, **fields)

    # ---- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------
    def _checked(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 pending_refused: bool = True) -> TransactionMetadata:
        self._check_available(transactional_id)
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise KafkaApiError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if meta.producer_epoch != producer_epoch:
            raise KafkaApiError(ErrorCode.PRODUCER_FENCED)
        if (meta.pending and pending_refused) or meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
        return meta

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Iterable[TopicPartition], client_transaction_version: int = 0) -> None:
        """Open the transaction (or extend it) with partitions; nothing is written when they
        are all in it already. client_transaction_version is 2 when a partition leader adds
        them for a Produce v12+ batch (transaction version 2), as Kafka records it."""
        meta = self._checked(transactional_id, producer_id, producer_epoch)
        wanted = set(partitions)
        if meta.state is TxnState.ONGOING and wanted <= meta.partitions:
            return
        now = self._now()
        new = self._copy(meta, state=TxnState.ONGOING, partitions=meta.partitions | wanted, update_ms=now,
                         start_ms=meta.start_ms if meta.state is TxnState.ONGOING else now,
                         client_transaction_version=client_transaction_version)
        await self._persist(meta, new)

    def verify_only(self, transactional_id: str, producer_id: int, producer_epoch: int,
                    partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ verify_only: is each partition in the open transaction?
        Kafka answers TRANSACTION_ABORTABLE (KIP-890) for one that is not. A transition being
        written is no reason to refuse, as Kafka does not check a pending state here: the
        partitions already in the transaction are, whatever is being added."""
        meta = self._checked(transactional_id, producer_id, producer_epoch, pending_refused=False)
        return {tp: ErrorCode.NONE if meta.state is TxnState.ONGOING and tp in meta.partitions
                else ErrorCode.TRANSACTION_ABORTABLE for tp in partitions}

    def knows_producer(self, producer_id: int) -> bool:
        """Whether this coordinator holds the transactional id of producer_id."""
        return producer_id in self._by_producer

    def verify_produce(self, producer_id: int, producer_epoch: int, topic: str, partition: int) -> ErrorCode:
        """Produce-side verification (KIP-890): may this producer write transactional data to
        the partition now? A producer fenced by a newer epoch is INVALID_PRODUCER_EPOCH (fatal
        in clients); a partition outside its open transaction is INVALID_TXN_STATE."""
        tid = self._by_producer.get(producer_id)
        meta = self.transactions.get(tid) if tid is not None else None
        if meta is not None and meta.producer_id == producer_id and producer_epoch < meta.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if (meta is not None and meta.producer_id == producer_id and meta.producer_epoch == producer_epoch
                and meta.state is TxnState.ONGOING and (topic, partition) in meta.partitions):
            return ErrorCode.NONE
        return ErrorCode.INVALID_TXN_STATE

    # ---- EndTxn --------------------------------------------------------------------------------
    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      bump_epoch: bool = False) -> tuple[int, int]:
        """Commit or abort; the producer id and epoch to use from now on. bump_epoch (EndTxn v5,
        transaction version 2, KIP-890): the decision, the markers and the producer move to the
        next epoch (a new producer id once it is exhausted), so a late write of the finished
        transaction is fenced; such a producer may also abort a transaction it never wrote to."""
        self._check_available(transactional_id)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            raise KafkaApiError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not end_txn_goes_ahead(meta, producer_id, producer_epoch, commit, bump_epoch):
            return meta.producer_id, meta.producer_epoch  # a retry of an EndTxn that completed
        base = self._copy(meta, client_transaction_version=TV2 if bump_epoch else 0)
        if meta.state is not TxnState.ONGOING:  # version 2's abort of an empty transaction
            base.start_ms, base.partitions = self._now(), set()
        if bump_epoch:
            if meta.epoch_exhausted:
                base.next_producer_id = await self._allocate_producer_id()
                if self.transactions.get(transactional_id) is not meta or meta.pending:  # changed meanwhile
                    raise KafkaApiError(ErrorCode.CONCURRENT_TRANSACTIONS)
            base.producer_epoch, base.last_producer_epoch = meta.producer_epoch + 1, meta.producer_epoch
        await self._end(meta, base, commit)
        if base.next_producer_id != NO_PRODUCER_ID:
            return base.next_producer_id, 0
        return base.producer_id, base.producer_epoch

    async def _end(self, meta: TransactionMetadata, base: TransactionMetadata, commit: bool) -> None:
        """Write the decision (PrepareCommit/PrepareAbort), then the markers and the completion.
        Once the decision is durable the transaction will end that way, so, as Kafka answers
        EndTxn then, markers that cannot all be written now are left to complete_decided."""
        base.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        base.update_ms = self._now()
        await self._persist(meta, base)
        await self._try_complete(self.transactions[meta.transactional_id])

    async def _try_complete(self, meta: TransactionMetadata) -> None:
        try:
            await self._complete(meta, meta.state is TxnState.PREPARE_COMMIT)
        except KafkaApiError as exc:
            log.info("transaction of %s: %d marker(s) left to retry (%s)", meta.transactional_id,
                     len(meta.partitions), exc.code.name)

    async def complete_decided(self) -> None:
        """Kafka's marker channel retrying: every transaction of this coordinator whose decision
        is written and whose markers are not all, tried again (the partitions done are dropped
        from it, as Kafka's removePartition does, so none gets a second marker)."""
        for meta in list(self.transactions.values()):
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT) and not meta.pending \
                    and self.partition_of(meta.transactional_id) not in self.loading:
                await self._try_complete(meta)

    async def _complete(self, meta: TransactionMetadata, commit: bool) -> None:
        """Markers to every partition of the transaction left, all at once (one WriteTxnMarkers
        per leader, as Kafka's marker channel batches them per destination broker), then
        CompleteCommit/CompleteAbort; KafkaApiError with the first failure when some are left."""
        meta.pending = True
        try:
            epoch = self.coordinator_epoch(meta.transactional_id)
            answers = await self._write_marker(sorted(meta.partitions), meta.producer_id, meta.producer_epoch,
                                               epoch, commit)
            failed = []
            for tp, code in sorted(answers.items()):
                if code is ErrorCode.NONE:
                    meta.partitions.discard(tp)
                else:
                    failed.append(code)
        finally:
            meta.pending = False
        if failed:
            raise KafkaApiError(failed[0], f"{len(failed)} transaction marker(s) not written")
        await self._persist(meta, completed(meta, self._now()))

    # ---- timeouts and expiry ----------------------------------------------------------------------
    async def abort_timed_out(self) -> None:
        """Abort transactions open longer than their timeout, fencing their producer (Kafka
        bumps the epoch so the zombie's next request is refused)."""
        now = self._now()
        for meta in list(self.transactions.values()):
            if meta.state is TxnState.ONGOING and not meta.pending and now - meta.start_ms > meta.timeout_ms \
                    and self.partition_of(meta.transactional_id) not in self.loading:
                if meta.producer_epoch >= MAX_EPOCH:  # Kafka's prepareFenceProducerEpoch refuses too
                    log.error("cannot abort the timed-out transaction of %s: producer %d's epoch %d cannot be "
                              "bumped to fence it", meta.transactional_id, meta.producer_id, meta.producer_epoch)
                    continue
                log.info("aborting transaction of %s open for %d ms (timeout %d ms)", meta.transactional_id,
                         now - meta.start_ms, meta.timeout_ms)
                fenced = self._copy(meta, producer_epoch=meta.producer_epoch + 1,
                                    last_producer_epoch=meta.producer_epoch)
                try:
                    await self._end(meta, fenced, commit=False)
                except KafkaApiError as exc:
                    log.warning("abort of timed-out transaction %s failed: %s", meta.transactional_id, exc.code.name)

    async def expire_transactional_ids(self) -> None:
        """Forget ids idle past transactional.id.expiration.ms (a tombstone in the log)."""
        now = self._now()
        expiry = self.config.int("transactional.id.expiration.ms")
        for meta in list(self.transactions.values()):
            if meta.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT) \
                    and not meta.pending and now - meta.update_ms > expiry \
                    and self.partition_of(meta.transactional_id) not in self.loading:
                partition = self._check_available(meta.transactional_id)
                meta.pending = True
                try:
                    await self.runtime.write_and_wait(partition, [(tr.encode_key(meta.transactional_id), None)],
                                                      self.config.int("offsets.commit.timeout.ms"))
                finally:
                    meta.pending = False
                self._replay(meta.transactional_id, None)
                log.info("expired transactional id %s", meta.transactional_id)

    async def run_timers(self, *, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        abort_every = self.config.int("transaction.abort.timed.out.transaction.cleanup.interval.ms") / 1000
        expire_every = self.config.int("transaction.remove.expired.transaction.cleanup.interval.ms") / 1000
        async with trio.open_nursery() as timers:
            timers.start_soon(_every, abort_every, self.abort_timed_out)
            timers.start_soon(_every, expire_every, self.expire_transactional_ids)
            timers.start_soon(_every, MARKER_RETRY_S, self.complete_decided)

    # ---- describe / list --------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> TransactionMetadata:
        self._check_available(transactional_id)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            raise KafkaApiError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return meta

    def list(self, states: set[str], producer_ids: set[int], min_duration_ms: int,
             id_pattern: str | None) -> list[TransactionMetadata]:
        """ListTransactions' filters: states by Kafka's names, producer ids, a duration (v1),
        transactional ids matching a regular expression (v2).

        The duration filter keeps ids whose last transaction started more than min_duration_ms
        ago, whatever their state, as Kafka's TransactionStateManager does: a completed
        transaction keeps its start time, and an id that never began one (start -1) always
        passes (what `kafka-transactions.sh list --duration-filter` shows)."""
        regex = re.compile(id_pattern) if id_pattern else None
        now = self._now()
        out = []
        for meta in self.transactions.values():
            if states and meta.state.kafka_name not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and now - meta.start_ms <= min_duration_ms:
                continue
            if regex is not None and not regex.fullmatch(meta.transactional_id):
                continue
            out.append(meta)
        return out


def fenced_error(code: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """KIP-588: request versions before first_fenced_version know INVALID_PRODUCER_EPOCH only."""
    if code is ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code



async def _every(interval_s: float, job: Callable[[], Awaitable[None]]) -> None:
    while True:
        await trio.sleep(interval_s)
        await job()
