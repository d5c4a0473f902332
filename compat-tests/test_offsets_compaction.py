"""The log cleaner bounds `__consumer_offsets`, and the group coordinator reloads from what it left.

A wirekafka process with a small offsets.topic.segment.bytes (16 KiB; Kafka 4.3.1 starts with
such a key but then refuses to create `__consumer_offsets` with it, INVALID_CONFIG under 1 MiB,
where wirekafka creates it: a deviation this test and test_offsets_compaction_txn.py use) and a
small log.cleaner.backoff.ms takes 40,000 offset commits (8 standalone groups, 100 rounds of one
OffsetCommit per group over the 50 partitions of a topic, pipelined on one connection), then
DeleteGroups of two groups (tombstones). Then:

- once the cleaner has caught up, the `__consumer_offsets` segments on disk hold little more than
  one record per live key plus each partition's active segment: far below the raw commit volume;
- after a kill -9 and a restart, OffsetFetch answers every group's last committed offsets
  exactly, the deleted groups have none, and the coordinator's load (logged by the broker) is
  quick: it replays the cleaned log, not the raw commits.

scripts/bench.py's `offsets-compaction` row is the full-size figure (1,000,000 commits) next to
Kafka."""

from __future__ import annotations

import re
import time
from collections import deque
from pathlib import Path

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest

from conformance.harness.wire import Connection, create_topic, ensure_group_coordinator, retry_transient

pytestmark = pytest.mark.timeout(240)

GROUPS = [f"offsets-compaction-{i}" for i in range(8)]
DELETED = GROUPS[-2:]
PARTITIONS = 50
ROUNDS = 100  # 8 groups x 100 rounds x 50 partitions = 40,000 commits
SEGMENT_BYTES = 16384
BROKER = {
    "offsets.topic.segment.bytes": str(SEGMENT_BYTES),
    "log.cleaner.backoff.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
}
COORDINATOR_LOAD_IN_PROGRESS = 14
PIPELINE = 32


def _offset(round_no: int, partition: int) -> int:
    return round_no * 1000 + partition


def _commit(group: str, topic: str, round_no: int) -> OffsetCommitRequest:
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                               topics=[T(name=topic, partitions=[
                                   T.OffsetCommitRequestPartition(partition_index=p,
                                                                  committed_offset=_offset(round_no, p),
                                                                  committed_metadata="")
                                   for p in range(PARTITIONS)])])


def _commit_rounds(conn: Connection, topic: str, rounds: range) -> None:
    """One OffsetCommit per group per round, up to PIPELINE in flight; every partition must be
    answered without error."""
    in_flight: deque[int] = deque()

    def settle_one() -> None:
        resp = conn.receive(OffsetCommitRequest.API_KEY, 8, in_flight.popleft())
        codes = {p.error_code for t in resp.topics for p in t.partitions}
        assert codes == {0}, codes

    for round_no in rounds:
        for group in GROUPS:
            in_flight.append(conn.send(_commit(group, topic, round_no), 8))
            if len(in_flight) >= PIPELINE:
                settle_one()
    while in_flight:
        settle_one()


def _fetch(conn: Connection, group: str, topic: str) -> tuple[int, dict[int, int]]:
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    resp = conn.call(OffsetFetchRequest(require_stable=True, groups=[G(group_id=group, member_id=None, member_epoch=-1,
                                                                       topics=[G.OffsetFetchRequestTopics(
                                                                           name=topic,
                                                                           partition_indexes=list(range(PARTITIONS)))])]),
                     9)
    (g,) = resp.groups
    return g.error_code, {p.partition_index: p.committed_offset for t in g.topics for p in t.partitions}


def _size(path: Path) -> int:
    """A segment file's size, 0 if the cleaner deleted it since it was listed."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _offsets_bytes(data_dir: Path) -> int:
    return sum(_size(f) for f in data_dir.glob("__consumer_offsets-*/*.log"))


def _used_partitions(data_dir: Path) -> int:
    return sum(1 for d in data_dir.glob("__consumer_offsets-*") if sum(_size(f) for f in d.glob("*.log")) > 0)


def _load_lines(log_path: Path, start: int) -> list[tuple[str, str]]:
    """The coordinator's "loaded N consumer groups ... in X ms" lines past byte start of its log."""
    with open(log_path, "rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    return re.findall(r"loaded (\d+) consumer groups from __consumer_offsets in (\d+) ms", text)


def test_cleaner_bounds_consumer_offsets_and_the_coordinator_reloads_it(broker_factory, topic_name):
    broker = broker_factory(BROKER)
    with Connection(broker.bootstrap, timeout=60) as conn:
        create_topic(conn, topic_name, PARTITIONS)
        for group in GROUPS:
            ensure_group_coordinator(conn, group)
        _commit_rounds(conn, topic_name, range(1))
        round_bytes = _offsets_bytes(broker.data_dir)  # one record per key: the live set's size
        started = time.monotonic()
        _commit_rounds(conn, topic_name, range(1, ROUNDS))
        commit_seconds = time.monotonic() - started
        for group in DELETED:
            (result,) = conn.call(DeleteGroupsRequest(groups_names=[group]), 2).results
            assert result.error_code == 0
    raw = round_bytes * ROUNDS

    # The cleaner catches up: what is left is about one record per key and the active segments.
    used = _used_partitions(broker.data_dir)
    bound = 2 * round_bytes + used * SEGMENT_BYTES
    deadline = time.monotonic() + 90
    while (size := _offsets_bytes(broker.data_dir)) > bound and time.monotonic() < deadline:
        time.sleep(0.5)
    print(f"{ROUNDS * len(GROUPS) * PARTITIONS:,} commits in {commit_seconds:.1f} s: {raw / 1e6:.1f} MB raw, "
          f"{size / 1e6:.2f} MB on disk after cleaning ({used} partitions of __consumer_offsets used)")
    assert size <= bound, f"{size} bytes left of {raw}; expected at most {bound}"
    assert size < raw / 10

    broker.kill()
    log_mark = broker.log_path.stat().st_size
    restarted = time.monotonic()
    broker.start()
    with Connection(broker.bootstrap, timeout=60) as conn:
        for group in GROUPS:
            code, offsets = retry_transient(lambda: _fetch(conn, group, topic_name), lambda r: r[0])
            assert code == 0
            if group in DELETED:
                assert set(offsets.values()) == {-1}, group
            else:
                assert offsets == {p: _offset(ROUNDS - 1, p) for p in range(PARTITIONS)}, group
    ready = time.monotonic() - restarted
    # Groups answer as soon as their own partition is loaded: the coordinator's summary line for
    # the whole topic may come a little after the last fetch, so wait for this start's line.
    deadline = time.monotonic() + 30
    while not (loads := _load_lines(broker.log_path, log_mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert loads, "the restarted coordinator never logged its load"
    groups_loaded, load_ms = map(int, loads[-1])
    print(f"after kill -9: offsets fetched {ready:.1f} s after the restart began; coordinator load {load_ms} ms")
    assert groups_loaded == len(GROUPS) - len(DELETED)
    assert load_ms < 10_000  # a sanity bound: it replays about `size` bytes, not `raw`
