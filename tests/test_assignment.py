"""Kafka 3.9's replica assignment: expected results worked out by hand from AdminUtils (and the
examples in its Javadoc), Kafka's error codes and exact messages."""

from __future__ import annotations

import random
from collections import Counter
from contextlib import contextmanager
from typing import Iterator

import pytest

from wirekafka.broker.metadata.assignment import (
    BrokerMetadata,
    assign_new_partitions,
    assign_replicas_to_brokers,
    rack_alternated_broker_list,
    validate_topic_assignment,
)
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def brokers(*ids: int) -> list[BrokerMetadata]:
    return [BrokerMetadata(i) for i in ids]


def racked(rack_of: dict[int, str]) -> list[BrokerMetadata]:
    return [BrokerMetadata(i, r) for i, r in rack_of.items()]


@contextmanager
def raises(code: ErrorCode, message: str) -> Iterator[None]:
    """Kafka's error code and its exact message."""
    with pytest.raises(KafkaApiError) as info:
        yield
    assert (info.value.code, info.value.message) == (code, message)


# ---- rack-unaware ------------------------------------------------------------------------------
def test_rack_unaware_matches_the_javadoc_table() -> None:
    """5 brokers, 10 partitions, 3 replicas, start 0: leaders round-robin, followers shifted, and a
    bigger shift for the second round of leaders (p5 on 0 then 2, 3 rather than 1, 2)."""
    assert assign_replicas_to_brokers(brokers(0, 1, 2, 3, 4), 10, 3, fixed_start_index=0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_rack_unaware_six_brokers_start_index_2() -> None:
    # leader index 2+p; followers at 1 + (2 + j) % 5 after it.
    assert assign_replicas_to_brokers(brokers(*range(6)), 3, 3, fixed_start_index=2) == {
        0: [2, 5, 0], 1: [3, 0, 1], 2: [4, 1, 2]}


def test_rack_unaware_uses_the_broker_order_given() -> None:
    assert assign_replicas_to_brokers(brokers(3, 1, 2), 3, 2, fixed_start_index=0) == {0: [3, 1], 1: [1, 2], 2: [2, 3]}


def test_start_partition_id_continues_the_pattern() -> None:
    tail = assign_replicas_to_brokers(brokers(0, 1, 2, 3, 4), 5, 3, fixed_start_index=0, start_partition_id=5)
    assert tail == {5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_random_start_is_repeatable_with_an_rng_and_keeps_the_shape() -> None:
    first = assign_replicas_to_brokers(brokers(*range(6)), 12, 3, rng=random.Random(42))
    assert first == assign_replicas_to_brokers(brokers(*range(6)), 12, 3, rng=random.Random(42))
    for p in range(12):
        assert len(set(first[p])) == 3
        assert first[(p + 1) % 12][0] == (first[p][0] + 1) % 6  # leaders round-robin
    assert Counter(r[0] for r in first.values()) == {b: 2 for b in range(6)}
    seen = {tuple(assign_replicas_to_brokers(brokers(*range(6)), 1, 1)[0]) for _ in range(200)}
    assert len(seen) > 1  # without an rng or a fixed index, the start is random


# ---- rack-aware --------------------------------------------------------------------------------
JAVADOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_broker_list() -> None:
    assert rack_alternated_broker_list(JAVADOC_RACKS) == [0, 3, 1, 5, 4, 2]
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    assert rack_alternated_broker_list({5: "a", 1: "a", 2: "a", 3: "b", 4: "c"}) == [1, 3, 4, 2, 5]


def test_rack_aware_matches_the_javadoc_example() -> None:
    assert assign_replicas_to_brokers(racked(JAVADOC_RACKS), 7, 3, fixed_start_index=0) == {
        0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3],
        6: [0, 4, 2]}  # partition 6 starts the shifted round instead of repeating 0, 3, 1


@pytest.mark.parametrize("seed", range(5))
def test_rack_aware_spreads_each_partition_over_racks(seed: int) -> None:
    rack_of = {b: "abc"[b % 3] for b in range(6)}
    full = assign_replicas_to_brokers(racked(rack_of), 12, 3, rng=random.Random(seed))
    assert all({rack_of[b] for b in replicas} == {"a", "b", "c"} for replicas in full.values())
    assert Counter(r[0] for r in full.values()) == {b: 2 for b in range(6)}
    two = assign_replicas_to_brokers(racked(rack_of), 12, 2, rng=random.Random(seed))
    assert all(len({rack_of[b] for b in replicas}) == 2 for replicas in two.values())
    # More replicas than racks: every rack first, then distinct brokers.
    four = assign_replicas_to_brokers(racked(rack_of), 6, 4, rng=random.Random(seed))
    assert all({rack_of[b] for b in r} == {"a", "b", "c"} and len(set(r)) == 4 for r in four.values())


# ---- errors ------------------------------------------------------------------------------------
def test_assignment_errors() -> None:
    with raises(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."):
        assign_replicas_to_brokers(brokers(0), 0, 1)
    with raises(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."):
        assign_replicas_to_brokers(brokers(0), 1, 0)
    with raises(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor: 4 larger than available brokers: 3."):
        assign_replicas_to_brokers(brokers(0, 1, 2), 3, 4)
    with raises(ErrorCode.UNKNOWN_SERVER_ERROR,
                "Not all brokers have rack information for replica rack aware assignment."):
        assign_replicas_to_brokers([BrokerMetadata(0, "a"), BrokerMetadata(1)], 1, 1)


# ---- CreateTopics with explicit assignments ----------------------------------------------------
def test_explicit_topic_assignment_accepted() -> None:
    validate_topic_assignment({1: [2, 0], 0: [0, 1], 2: [1, 2]})
    validate_topic_assignment({0: [99]})  # Kafka (ZooKeeper mode) does not check the brokers exist
    validate_topic_assignment({1: [0], 2: [1], -3: [2]})  # nor more than the sum of the ids


def test_explicit_topic_assignment_errors() -> None:
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"):
        validate_topic_assignment({0: [0, 1], 1: [1]})
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate replica assignment found: HashMap(0 -> ArrayBuffer(1, 1), 1 -> ArrayBuffer(2, 3))"):
        validate_topic_assignment({1: [2, 3], 0: [1, 1]})
    # Kafka's HashMap folds 16 into slot 0, ahead of 1.
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate replica assignment found: HashMap(16 -> ArrayBuffer(6, 7), 1 -> ArrayBuffer(5, 5))"):
        validate_topic_assignment({1: [5, 5], 16: [6, 7]})
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"):
        validate_topic_assignment({0: [0], 2: [1]})


# ---- CreatePartitions --------------------------------------------------------------------------
EXISTING = {0: [1, 2], 1: [2, 0], 2: [0, 1]}


def test_added_partitions_continue_from_partition_0s_leader() -> None:
    # Brokers sorted by id; partition 0's leader 1 is at index 1, so start index 1 from partition 3.
    assert assign_new_partitions("t", EXISTING, brokers(2, 0, 1), 5) == {3: [1, 2], 4: [2, 0]}


def test_added_partitions_rack_aware() -> None:
    rack_of = {0: "a", 1: "b", 2: "a", 3: "b"}
    existing = {0: [2, 1], 1: [3, 0]}
    assert assign_new_partitions("t", existing, racked(rack_of), 4) == {2: [0, 3], 3: [1, 0]}


def test_added_partitions_explicit() -> None:
    assert assign_new_partitions("t", EXISTING, brokers(0, 1, 2), 5, [[0, 2], [2, 1]]) == {3: [0, 2], 4: [2, 1]}


def test_added_partitions_errors() -> None:
    b3 = brokers(0, 1, 2)
    with raises(ErrorCode.INVALID_PARTITIONS,
                "Topic currently has 3 partitions, which is higher than the requested 2."):
        assign_new_partitions("t", EXISTING, b3, 2)
    with raises(ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions."):
        assign_new_partitions("t", EXISTING, b3, 3)
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 9, 7."):
        assign_new_partitions("t", EXISTING, b3, 5, [[9, 1], [7, 9]])
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Increasing the number of partitions by 2 but 1 assignments provided."):
        assign_new_partitions("t", EXISTING, b3, 5, [[0, 1]])
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Cannot have replication factor of 0 for partition id 3."):
        assign_new_partitions("t", EXISTING, b3, 4, [[]])
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 4."):
        assign_new_partitions("t", EXISTING, b3, 5, [[0, 1], [1, 1]])
    with raises(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [3, 5] "
                "have replication factors [1, 1], respectively."):
        assign_new_partitions("t", EXISTING, b3, 6, [[0], [1, 2], [0]])
    with raises(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor: 2 larger than available brokers: 1."):
        assign_new_partitions("t", EXISTING, brokers(0), 4)
    with raises(ErrorCode.UNKNOWN_SERVER_ERROR, "Not all brokers have rack information. Add --disable-rack-aware in "
                "command line to make replica assignment without rack information."):
        assign_new_partitions("t", EXISTING, [BrokerMetadata(0, "a"), BrokerMetadata(1)], 4)
    with pytest.raises(KafkaApiError) as info:
        assign_new_partitions("t", {1: [0]}, b3, 3)
    assert info.value.code == ErrorCode.UNKNOWN_SERVER_ERROR and "partition id 0 is missing" in info.value.message
