"""The log cleaner bounds `__consumer_offsets` holding transactional offset commits, and the group
coordinator reloads exactly the committed offsets from what it left — on wirekafka and on
Apache Kafka 4.3.1, which calibrates every expected answer.

The broker runs with a small offsets.topic.segment.bytes (16 KiB; the broker key that sizes the
internal topic is not checked against Kafka's 1 MiB topic minimum), three partitions of
`__consumer_offsets` (so each rolls many times), a 100 ms cleaner backoff and a short
log.cleaner.delete.retention.ms (so markers become removable within the test). Three
confluent-kafka (librdkafka) transactional producers send offsets to transactions
(InitProducerId, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) for four groups over many rounds; a
third of the transactions abort; every round one group gets a plain (non-transactional) commit,
and every other round a plain commit to the very partitions of an open transaction lands between
its TxnOffsetCommit and its EndTxn. Kafka's rule for that mix (OffsetMetadataManager
.replayEndTransactionMarker, GroupMetadata.completePendingTxnOffsetCommit before it): a committed
transaction's offset takes effect only if its record is later in the log than the offset in
place, so the plain commit written after the transactional record wins even though the COMMIT
marker comes after both. The cleaner keeps the latest record of a key by log position; a
coordinator that materialised by marker order would answer differently before and after
cleaning. Then one group is deleted (tombstones). Checks:

- OffsetFetch (require_stable) answers each group's expected offsets: the model applies plain
  commits and committed transactions' records by log position; aborted ones never count;
- once the cleaner caught up, the segments on disk are far below the raw volume;
- in the cleaned part of every partition, no batch of an aborted transaction keeps a record, and
  every transactional record left has its COMMIT marker after it (read from the segment files);
- after delete.retention.ms and another cleaning pass, the markers left with a record are about
  those of transactions that still have records (empty markers are removed later, not at once);
- after a kill -9 and a restart the same OffsetFetch answers come back from the cleaned log.

The Kafka variant runs fewer rounds (a JVM start and restart cost most of its time)."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.protocol.consumer.group import OffsetFetchRequest

from conformance.harness.wire import Connection, create_topic, ensure_group_coordinator, retry_transient
from scripts import realkafka
from testsupport.broker_process import BrokerProcess
from wirekafka.protocol import records
from wirekafka.storage import batch_filter
from wirekafka.storage.checkpoint import read_offsets
from wirekafka.storage.segment import iter_batches

log = logging.getLogger(__name__)

pytestmark = pytest.mark.timeout(240)

GROUPS = [f"offclean-txn-{i}" for i in range(4)]
DELETED = GROUPS[3]
PRODUCERS = [f"offclean-txn-producer-{i}" for i in range(3)]
DELETE_RETENTION_MS = 3000


@dataclass(frozen=True)
class Scenario:
    """The sizes of one run: offsets per commit (topic partitions), the internal topic's segment
    size and partition count, rounds of transactions."""

    partitions: int
    segment_bytes: int
    offsets_partitions: int
    rounds: int

    def broker(self) -> dict[str, str]:
        return {"offsets.topic.segment.bytes": str(self.segment_bytes),
                "offsets.topic.num.partitions": str(self.offsets_partitions),
                "log.cleaner.backoff.ms": "100",
                "log.cleaner.delete.retention.ms": str(DELETE_RETENTION_MS),
                "group.initial.rebalance.delay.ms": "0"}


# wirekafka: 16 KiB segments, commits of about 1.5 KB: each of 3 partitions rolls about 10 times.
WIREKAFKA = Scenario(partitions=20, segment_bytes=16384, offsets_partitions=3, rounds=60)
# Kafka 4.3.1 refuses to create __consumer_offsets with segments under 1 MiB (INVALID_CONFIG when
# the coordinator auto-creates it): one partition, commits of about 15 KB, a few rolls.
KAFKA = Scenario(partitions=200, segment_bytes=1048576, offsets_partitions=1, rounds=30)
UNSTABLE_OFFSET_COMMIT = 88


@dataclass
class Expected:
    """Kafka's rule for the offsets a group ends with, by log position: a plain commit takes effect
    at once; a transactional record when its transaction commits, and then only if it is later in
    the log than the offset in place. Positions are issue order: every request is answered
    before the next is sent, and a group's records all go to one partition."""

    partitions: int
    position: int = 0
    offsets: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)  # (group, p) -> (pos, offset)
    pending: dict[str, list[tuple[str, int, int, int]]] = field(default_factory=dict)  # txn id -> (g, p, pos, off)

    def plain(self, group: str, values: dict[int, int]) -> None:
        for p, offset in values.items():
            self.position += 1
            self.offsets[(group, p)] = (self.position, offset)

    def txn(self, producer: str, group: str, values: dict[int, int]) -> None:
        for p, offset in values.items():
            self.position += 1
            self.pending.setdefault(producer, []).append((group, p, self.position, offset))

    def end(self, producer: str, commit: bool) -> None:
        for group, p, pos, offset in self.pending.pop(producer, []):
            if commit and ((group, p) not in self.offsets or self.offsets[(group, p)][0] < pos):
                self.offsets[(group, p)] = (pos, offset)

    def delete(self, group: str) -> None:
        self.offsets = {k: v for k, v in self.offsets.items() if k[0] != group}

    def of(self, group: str) -> dict[int, int]:
        return {p: self.offsets[(group, p)][1] if (group, p) in self.offsets else -1 for p in range(self.partitions)}


def _values(round_no: int, slot: int, partitions: int) -> dict[int, int]:
    """Offsets unique to a round and a writer (slot 0-2 a producer, 5 a plain commit, 7 the
    plain commit inside a transaction), so a wrong answer names its source."""
    return {p: round_no * 1000 + slot * 100 + p for p in range(partitions)}


def _tps(topic: str, values: dict[int, int]) -> list[TopicPartition]:
    return [TopicPartition(topic, p, o) for p, o in values.items()]


def _drive(bootstrap: str, topic: str, rounds: int, partitions: int) -> Expected:
    """The client-visible scenario; returns what OffsetFetch must answer afterwards."""
    lg = logging.getLogger("librdkafka")
    consumers = {g: Consumer({"bootstrap.servers": bootstrap, "group.id": g, "enable.auto.commit": False,
                              "logger": lg}) for g in GROUPS}
    producers = {t: Producer({"bootstrap.servers": bootstrap, "transactional.id": t,
                              "transaction.timeout.ms": 60000, "logger": lg}) for t in PRODUCERS}
    expected = Expected(partitions)
    try:
        for producer in producers.values():
            producer.init_transactions(30)
        for r in range(rounds):
            for i, (txn_id, producer) in enumerate(producers.items()):
                group = GROUPS[(r + i) % len(GROUPS)]
                values = _values(r, i, partitions)
                producer.begin_transaction()
                producer.send_offsets_to_transaction(_tps(topic, values), consumers[group].consumer_group_metadata(), 30)
                expected.txn(txn_id, group, values)
                if i == 1 and r % 2 == 0:  # a plain commit after the transactional record, before its marker
                    inside = _values(r, 7, expected.partitions)
                    consumers[group].commit(offsets=_tps(topic, inside), asynchronous=False)
                    expected.plain(group, inside)
                commit = (r + i) % 3 != 0
                if commit:
                    producer.commit_transaction(30)
                else:
                    producer.abort_transaction(30)
                expected.end(txn_id, commit)
            plain_group = GROUPS[(r + len(PRODUCERS)) % len(GROUPS)]
            plain = _values(r, 5, expected.partitions)
            consumers[plain_group].commit(offsets=_tps(topic, plain), asynchronous=False)
            expected.plain(plain_group, plain)
        _epilogue(topic, rounds, consumers, producers, expected)
    finally:
        for c in consumers.values():
            c.close()
        for producer in producers.values():
            producer.flush(10)
    return expected


def _epilogue(topic: str, r: int, consumers: dict[str, Consumer], producers: dict[str, Producer],
              expected: Expected) -> None:
    """The last word on each live group, one case each: a committed transaction after a plain
    commit (the transaction's offsets); an aborted transaction after a plain commit (the plain
    ones); a plain commit written between a transaction's record and its COMMIT marker (the
    plain ones: its record is the later one)."""
    (t0, p0), (t1, p1), (t2, p2) = producers.items()
    g0, g1, g2 = GROUPS[:3]
    for group, (txn_id, producer), commit, inside in ((g0, (t0, p0), True, False), (g1, (t1, p1), False, False),
                                                     (g2, (t2, p2), True, True)):
        before = _values(r, 5, expected.partitions)
        consumers[group].commit(offsets=_tps(topic, before), asynchronous=False)
        expected.plain(group, before)
        values = _values(r, PRODUCERS.index(txn_id), expected.partitions)
        producer.begin_transaction()
        producer.send_offsets_to_transaction(_tps(topic, values), consumers[group].consumer_group_metadata(), 30)
        expected.txn(txn_id, group, values)
        if inside:
            later = _values(r, 7, expected.partitions)
            consumers[group].commit(offsets=_tps(topic, later), asynchronous=False)
            expected.plain(group, later)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
        expected.end(txn_id, commit)


def _delete_group(bootstrap: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka")})
    admin.delete_consumer_groups([group], request_timeout=30)[group].result(30)


def _fetch(conn: Connection, group: str, topic: str, partitions: int) -> tuple[int, dict[int, int], set[int]]:
    """(group error, partition -> committed offset, partition error codes) of OffsetFetch v9."""
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    resp = conn.call(OffsetFetchRequest(require_stable=True, groups=[G(
        group_id=group, member_id=None, member_epoch=-1,
        topics=[G.OffsetFetchRequestTopics(name=topic, partition_indexes=list(range(partitions)))])]), 9)
    (g,) = resp.groups
    return (g.error_code, {p.partition_index: p.committed_offset for t in g.topics for p in t.partitions},
            {p.error_code for t in g.topics for p in t.partitions})


def _check_offsets(bootstrap: str, topic: str, expected: Expected, when: str) -> None:
    """Every group's OffsetFetch answer is the model's, once no transaction is pending (a marker
    is written a moment after EndTxn is answered: UNSTABLE_OFFSET_COMMIT until then)."""
    with Connection(bootstrap, timeout=60) as conn:
        for group in GROUPS:
            ensure_group_coordinator(conn, group)
            code, offsets, errors = retry_transient(
                lambda: _fetch(conn, group, topic, expected.partitions),
                lambda r: 14 if r[0] == 0 and UNSTABLE_OFFSET_COMMIT in r[2] else r[0])
            assert (code, errors) == (0, {0}), (when, group, code, errors)
            assert offsets == expected.of(group), (when, group, _diff(offsets, expected.of(group)))


def _diff(got: dict[int, int], want: dict[int, int]) -> dict[int, tuple[int | None, int]]:
    return {p: (got.get(p), v) for p, v in want.items() if got.get(p) != v}


# ---- the log on disk -------------------------------------------------------------------------
def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _offsets_dirs(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("__consumer_offsets-*"))


def _offsets_bytes(data_dir: Path) -> int:
    return sum(_size(f) for d in _offsets_dirs(data_dir) for f in d.glob("*.log"))


def _batches(partition_dir: Path) -> Iterator[tuple[records.BatchHeader, bytes]]:
    """Every batch of a partition's segment files, in offset order (files cleaned or deleted
    while read are skipped: the caller looks again until a stable answer)."""
    for path in sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            for _pos, header, batch in iter_batches(fd, 0, os.fstat(fd).st_size):
                yield header, bytes(batch)
        finally:
            os.close(fd)


@dataclass
class LogAudit:
    """What the segment files of `__consumer_offsets` hold, below each partition's cleaner
    checkpoint (the cleaned part) and in all."""

    aborted_records_cleaned: int = 0  # records of aborted transactions below the checkpoint
    orphan_txn_records: int = 0  # transactional records with no COMMIT after them (anywhere)
    txn_batches_with_records: int = 0
    markers_with_records_cleaned: int = 0
    markers: int = 0


def _audit(data_dir: Path) -> LogAudit:
    """Read every partition of `__consumer_offsets` as the coordinator would, and judge the
    cleaner's transactional rules on it."""
    checkpoints = read_offsets(data_dir / "cleaner-offset-checkpoint")
    audit = LogAudit()
    for d in _offsets_dirs(data_dir):
        cleaned_to = checkpoints.get(("__consumer_offsets", int(d.name.rsplit("-", 1)[1])), 0)
        open_batches: dict[int, list[records.BatchHeader]] = {}
        for header, batch in _batches(d):
            if header.is_control:
                audit.markers += 1
                if header.records_count and header.last_offset < cleaned_to:
                    audit.markers_with_records_cleaned += 1
                pending = open_batches.pop(header.producer_id, [])
                if header.records_count and not records.parse_marker(batch).commit:
                    audit.aborted_records_cleaned += sum(h.records_count for h in pending if h.last_offset < cleaned_to)
            elif header.is_transactional and header.records_count:
                audit.txn_batches_with_records += 1
                open_batches.setdefault(header.producer_id, []).append(header)
        audit.orphan_txn_records += sum(h.records_count for hs in open_batches.values() for h in hs)
    return audit


def _wait(what: str, condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.5)


# ---- the scenario on one broker ----------------------------------------------------------------
@dataclass
class Node:
    """A broker under test, wirekafka or Kafka: where its data is, how to crash and restart it."""

    bootstrap: Callable[[], str]
    data_dir: Path
    kill: Callable[[], None]
    start: Callable[[], None]


def _run(node: Node, topic: str, scenario: Scenario) -> None:
    rounds, partitions = scenario.rounds, scenario.partitions
    with Connection(node.bootstrap(), timeout=60) as conn:
        create_topic(conn, topic, partitions)
    started = time.monotonic()
    expected = _drive(node.bootstrap(), topic, rounds, partitions)
    transactions = rounds * len(PRODUCERS)
    log.info("%d transactions and %d plain commits in %.1f s", transactions, rounds + rounds // 2,
             time.monotonic() - started)
    _check_offsets(node.bootstrap(), topic, expected, "before deleting")
    _delete_group(node.bootstrap(), DELETED)
    expected.delete(DELETED)
    _check_offsets(node.bootstrap(), topic, expected, "online")

    # One commit batch is about `partitions` records: the raw volume, and the live set (one record
    # per key and, at most, a marker per producer and group) it must shrink to.
    record = 70
    raw = (transactions + rounds + rounds // 2) * partitions * record
    live = len(GROUPS) * partitions * record * 2
    bound = live + scenario.offsets_partitions * scenario.segment_bytes
    _wait("the cleaner shrinks __consumer_offsets", lambda: _offsets_bytes(node.data_dir) <= bound, 60)
    audit = _audit(node.data_dir)
    log.info("%.2f MB raw, %.3f MB on disk after cleaning; %s", raw / 1e6, _offsets_bytes(node.data_dir) / 1e6, audit)
    assert audit.aborted_records_cleaned == 0, audit
    assert audit.orphan_txn_records == 0, audit

    # Kafka's rules take three passes to remove a marker: one drops its transaction's records, the
    # next finds nothing of it left and stamps the marker's delete horizon (delete.retention.ms
    # ahead), a pass after that removes it. More commits make those passes happen.
    dirt = f"{topic}-dirt"
    with Connection(node.bootstrap(), timeout=60) as conn:
        create_topic(conn, dirt, partitions)
    # What stays, in Kafka too: markers of transactions with records left, and after each
    # producer's last batch in a partition (kept, emptied, for its sequence) the marker that
    # batch keeps.
    deadline = time.monotonic() + 50
    burst = 0
    while True:
        audit = _audit(node.data_dir)
        kept = audit.txn_batches_with_records + len(PRODUCERS) * len(_offsets_dirs(node.data_dir))
        if audit.markers_with_records_cleaned <= kept:
            break
        assert time.monotonic() < deadline, f"markers left past their delete horizon: {audit}"
        _drive_plain(node.bootstrap(), dirt, partitions, rounds=10, base=burst * 10)
        burst += 1
        time.sleep(1.5)
    log.info("after the delete horizon: %s", audit)
    assert audit.aborted_records_cleaned == 0 and audit.orphan_txn_records == 0, audit
    _check_offsets(node.bootstrap(), topic, expected, "after cleaning")

    node.kill()
    node.start()
    _check_offsets(node.bootstrap(), topic, expected, "after kill -9 and restart")


def _drive_plain(bootstrap: str, topic: str, partitions: int, rounds: int, base: int) -> None:
    """Plain commits of the live groups for another topic (keys the checks do not read, in the
    same partitions of `__consumer_offsets`): dirt that makes the cleaner pass over the log again."""
    for group in GROUPS:
        if group == DELETED:
            continue
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                      "logger": logging.getLogger("librdkafka")})
        try:
            for r in range(base, base + rounds):
                c.commit(offsets=_tps(topic, _values(r, 5, partitions)), asynchronous=False)
        finally:
            c.close()


def test_cleaning_transactional_offset_commits_wirekafka(broker_factory, topic_name):
    broker: BrokerProcess = broker_factory(WIREKAFKA.broker())
    _run(Node(lambda: broker.bootstrap, broker.data_dir, broker.kill, lambda: broker.start() and None),
         topic_name, WIREKAFKA)


@pytest.mark.realkafka
def test_cleaning_transactional_offset_commits_kafka(tmp_path, topic_name):
    kafka = realkafka.RealKafka(tmp_path / "kafka", overrides=KAFKA.broker())
    kafka.start()
    try:
        _run(Node(lambda: kafka.bootstrap, kafka.data_dir, kafka.kill, lambda: kafka.start() and None),
             topic_name, KAFKA)
    finally:
        kafka.stop()
