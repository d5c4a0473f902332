"""ListOffsets: earliest, latest, max timestamp and by timestamp (ties, out-of-order timestamps
inside a batch and across batches, before the first and after the last record)."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from conformance.harness.scenarios import batch, list_offsets, produce
from conformance.harness.wire import Connection, create_topic, unique

T0 = 1_700_000_000_000


def _topic_with_timestamps(conn) -> str:
    name = unique()
    create_topic(conn, name)
    produce(conn, name, batch([b"a", b"b", b"c"], timestamps=[T0 + 10, T0 + 30, T0 + 20]))   # offsets 0-2
    produce(conn, name, batch([b"d", b"e"], timestamps=[T0 + 20, T0 + 20]))                  # offsets 3-4
    produce(conn, name, batch([b"f", b"g", b"h"], timestamps=[T0 + 50, T0 + 40, T0 + 50]))   # offsets 5-7
    produce(conn, name, batch([b"i"], timestamps=[T0 + 5]))                                  # offset 8
    return name


@pytest.mark.parametrize("version", range(1, 12))
def test_earliest_and_latest(target, version):
    with Connection(target.bootstrap) as conn:
        name = _topic_with_timestamps(conn)
        latest = list_offsets(conn, name, -1, version=version)
        earliest = list_offsets(conn, name, -2, version=version)
    assert (latest.error_code, latest.offset, latest.timestamp) == (0, 9, -1)
    assert (earliest.error_code, earliest.offset, earliest.timestamp) == (0, 0, -1)
    if version >= 4:
        assert latest.leader_epoch == earliest.leader_epoch >= 0


@pytest.mark.parametrize("ts,expected", [
    (T0, (T0 + 10, 0)),          # before everything: the first record
    (T0 + 10, (T0 + 10, 0)),     # exact match on the first record
    (T0 + 11, (T0 + 30, 1)),     # the first record at or after it, by offset
    (T0 + 20, (T0 + 30, 1)),     # ties: the first offset whose timestamp >= target
    (T0 + 31, (T0 + 50, 5)),     # skips batches whose max timestamp is lower
    (T0 + 45, (T0 + 50, 5)),
    (T0 + 50, (T0 + 50, 5)),
    (T0 + 51, (-1, -1)),         # after the last: no offset
])
def test_by_timestamp(target, ts, expected):
    with Connection(target.bootstrap) as conn:
        name = _topic_with_timestamps(conn)
        res = list_offsets(conn, name, ts)
    assert res.error_code == 0 and (res.timestamp, res.offset) == expected


@pytest.mark.parametrize("version", range(7, 12))
def test_max_timestamp(target, version):
    with Connection(target.bootstrap) as conn:
        name = _topic_with_timestamps(conn)
        res = list_offsets(conn, name, -3, version=version)
    assert res.error_code == 0 and (res.timestamp, res.offset) == (T0 + 50, 5)


def test_empty_partition(target):
    with Connection(target.bootstrap) as conn:
        name = unique()
        create_topic(conn, name)
        assert (list_offsets(conn, name, -1).offset, list_offsets(conn, name, -2).offset) == (0, 0)
        res = list_offsets(conn, name, T0)
        assert (res.error_code, res.offset, res.timestamp) == (0, -1, -1)
        res = list_offsets(conn, name, -3)
        assert (res.error_code, res.offset, res.timestamp) == (0, -1, -1)


def test_unknown_partition(target):
    with Connection(target.bootstrap) as conn:
        name = unique()
        create_topic(conn, name)
        assert list_offsets(conn, name, -1, partition=3).error_code == 3


def test_answers_are_grouped_by_topic_in_kafkas_hash_order(target):
    """Kafka keeps one answer per partition in a hash map and groups it by topic: a topic named
    twice is answered once (its partition named twice gets INVALID_REQUEST), an unknown topic among
    them, topics and partitions in the order of its hash maps."""
    T = ListOffsetsRequest.ListOffsetsTopic
    P = T.ListOffsetsPartition
    a, b, missing = unique(), unique(), unique("miss")
    with Connection(target.bootstrap) as conn:
        create_topic(conn, a, 2)
        create_topic(conn, b, 6)
        mixed = conn.call(ListOffsetsRequest(replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
            T(name=a, partitions=[P(partition_index=1, current_leader_epoch=-1, timestamp=-1),
                                  P(partition_index=0, current_leader_epoch=-1, timestamp=-2),
                                  P(partition_index=5, current_leader_epoch=-1, timestamp=-1)]),
            T(name=missing, partitions=[P(partition_index=0, current_leader_epoch=-1, timestamp=-1)]),
            T(name=a, partitions=[P(partition_index=1, current_leader_epoch=-1, timestamp=-2)])]), 8)
        many = conn.call(ListOffsetsRequest(replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
            T(name=b, partitions=[P(partition_index=i, current_leader_epoch=-1, timestamp=-1) for i in range(6)]),
            T(name=a, partitions=[P(partition_index=i, current_leader_epoch=-1, timestamp=-2) for i in (1, 0)])]), 9)
    answered = {t.name: {p.partition_index: p.error_code for p in t.partitions} for t in mixed.topics}
    assert len(mixed.topics) == 2 and answered == {a: {1: 42, 0: 0, 5: 3}, missing: {0: 3}}
    assert sorted(p.partition_index for t in many.topics if t.name == b for p in t.partitions) == list(range(6))
