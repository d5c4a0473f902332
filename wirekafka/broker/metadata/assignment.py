"""Which brokers hold the replicas of a new topic or of a topic's new partitions, decided as a Kafka
3.9 ZooKeeper-mode broker decides (AdminUtils, AdminZkClient, ZkAdminManager), with Kafka's error
codes and messages.

The algorithm spreads leaders round-robin from a start index and places followers at an increasing
shift after the leader, so that the replicas of a broker's partitions land on different brokers;
when every broker has a rack it first interleaves the brokers by rack, so a partition's replicas
also cover as many racks as they can. Kafka draws the start index and the first shift at random;
pass an `rng`, or a `fixed_start_index`, to make it repeatable. Adding partitions is never random:
Kafka continues from where partition 0's leader sits in the broker list.

What a failure looks like on the wire is Kafka's: `KafkaApiError(code, message)`. Where Kafka fails
with an internal exception (AdminOperationException), the code is UNKNOWN_SERVER_ERROR, and Kafka
sends that code without a message."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from wirekafka.jvm import scala_immutable_order, scala_mutable_hashmap_order
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


@dataclass(frozen=True)
class BrokerMetadata:
    id: int
    rack: str | None = None


def assign_replicas_to_brokers(brokers: Sequence[BrokerMetadata], num_partitions: int, replication_factor: int,
                               *, fixed_start_index: int = -1, start_partition_id: int = -1,
                               rng: random.Random | None = None) -> dict[int, list[int]]:
    """Partition id -> replicas (leader first) for `num_partitions` partitions numbered from
    `start_partition_id` (or 0).

    Rack-aware when any broker has a rack (then all must). Without racks the broker order matters
    and is used as given: Kafka's CreateTopics passes the live brokers in its metadata cache's
    order, its CreatePartitions sorts them by id."""
    if num_partitions <= 0:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaApiError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaApiError(ErrorCode.INVALID_REPLICATION_FACTOR, f"Replication factor: {replication_factor} "
                            f"larger than available brokers: {len(brokers)}.")
    if all(b.rack is None for b in brokers):
        return _rack_unaware([b.id for b in brokers], num_partitions, replication_factor,
                             fixed_start_index, start_partition_id, rng)
    return _rack_aware(brokers, num_partitions, replication_factor, fixed_start_index, start_partition_id, rng)


def _start_and_shift(num_brokers: int, fixed_start_index: int, rng: random.Random | None) -> tuple[int, int]:
    """The leader start index and the first follower shift: both the fixed index, or two draws."""
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    draw = rng or random
    start = draw.randrange(num_brokers)
    return start, draw.randrange(num_brokers)


def _replica_index(first_replica_index: int, shift: int, replica: int, num_brokers: int) -> int:
    """The follower positions never wrap onto the leader: a shift of 1..n-1 after it."""
    return (first_replica_index + 1 + (shift + replica) % (num_brokers - 1)) % num_brokers


def _rack_unaware(broker_ids: list[int], num_partitions: int, replication_factor: int, fixed_start_index: int,
                  start_partition_id: int, rng: random.Random | None) -> dict[int, list[int]]:
    n = len(broker_ids)
    start_index, shift = _start_and_shift(n, fixed_start_index, rng)
    assignment: dict[int, list[int]] = {}
    for partition in range(max(0, start_partition_id), max(0, start_partition_id) + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1  # a new round of leaders gets a new follower pattern
        first = (partition + start_index) % n
        assignment[partition] = [broker_ids[first]] + [
            broker_ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
    return assignment


def _rack_aware(brokers: Sequence[BrokerMetadata], num_partitions: int, replication_factor: int,
                fixed_start_index: int, start_partition_id: int, rng: random.Random | None) -> dict[int, list[int]]:
    if any(b.rack is None for b in brokers):
        raise KafkaApiError(ErrorCode.UNKNOWN_SERVER_ERROR,
                            "Not all brokers have rack information for replica rack aware assignment.")
    rack_of = {b.id: b.rack for b in brokers if b.rack is not None}
    num_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)
    n = len(arranged)
    start_index, shift = _start_and_shift(n, fixed_start_index, rng)
    assignment: dict[int, list[int]] = {}
    for partition in range(max(0, start_partition_id), max(0, start_partition_id) + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                k += 1
                # Prefer a rack with no replica yet, then a broker with none, until none is left.
                if ((rack_of[broker] not in racks_used or len(racks_used) == num_racks)
                        and (broker not in replicas or len(replicas) == n)):
                    replicas.append(broker)
                    racks_used.add(rack_of[broker])
                    break
        assignment[partition] = replicas
    return assignment


def rack_alternated_broker_list(rack_of: Mapping[int, str]) -> list[int]:
    """Brokers taken one per rack in turn (racks by name, brokers by id within a rack), e.g. racks
    a: 0,1,2  b: 3,4  c: 5  ->  0,3,5,1,4,2."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker_id)
    queues = {rack: iter(sorted(ids)) for rack, ids in by_rack.items()}
    racks = sorted(queues)
    result: list[int] = []
    turn = 0
    while len(result) < len(rack_of):
        broker_id = next(queues[racks[turn]], None)
        if broker_id is not None:
            result.append(broker_id)
        turn = (turn + 1) % len(racks)
    return result


def validate_topic_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """Kafka's checks of a new topic's assignment (CreateTopics with explicit assignments), in its
    order. Like Kafka in ZooKeeper mode, it does not check that the brokers exist, and its
    "consecutive" test only compares the sum of the non-negative ids with 0+1+..+(n-1)."""
    if len({len(replicas) for replicas in assignment.values()}) != 1:
        raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            "All partitions should have the same number of replicas")
    if any(len(set(replicas)) != len(replicas) for replicas in assignment.values()):
        raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"Duplicate replica assignment found: {_scala_request_assignment(assignment)}")
    n = len(assignment)
    if sum(p for p in assignment if p >= 0) != n * (n - 1) // 2:
        raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            "partitions should be a consecutive 0-based integer sequence")


def _scala_request_assignment(assignment: Mapping[int, Sequence[int]]) -> str:
    """How Kafka prints the assignment it built from a CreateTopics request (a mutable.HashMap of
    ArrayBuffers)."""
    entries = (f"{p} -> ArrayBuffer({_join(assignment[p])})" for p in scala_mutable_hashmap_order(assignment))
    return f"HashMap({', '.join(entries)})"


def _join(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in values)


def assign_new_partitions(topic: str, existing: Mapping[int, Sequence[int]], brokers: Iterable[BrokerMetadata],
                          total_partitions: int, manual: Sequence[Sequence[int]] | None = None) -> dict[int, list[int]]:
    """The replicas of the partitions CreatePartitions adds to `topic` (new partition id ->
    replicas), checked as Kafka checks them, in its order.

    `existing` is the topic's current assignment, `brokers` every registered broker, `manual` the
    request's assignments for the new partitions, if any. The caller has already answered a topic
    that does not exist, or one being reassigned."""
    registered = _registered_brokers(brokers)
    current = len(existing)
    to_add = total_partitions - current
    if to_add < 0:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {current} partitions, "
                            f"which is higher than the requested {total_partitions}.")
    if to_add == 0:
        raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    registered_ids = {b.id for b in registered}
    if manual is not None:
        named = scala_immutable_order(b for replicas in manual for b in replicas)
        unknown = [b for b in named if b not in registered_ids]
        if unknown:
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"Unknown broker(s) in replica assignment: {_join(unknown)}.")
        if len(manual) != to_add:
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Increasing the number of partitions by "
                                f"{to_add} but {len(manual)} assignments provided.")
    if 0 not in existing:
        raise KafkaApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unexpected existing replica assignment for topic "
                            f"'{topic}', partition id 0 is missing. Assignment: {dict(existing)}")
    replication_factor = len(existing[0])
    if manual is None:
        # Continue the round-robin from partition 0's leader, so the new partitions extend the
        # existing pattern rather than start a new one.
        start = next((i for i, b in enumerate(registered) if b.id >= existing[0][0]), 0)
        return assign_replicas_to_brokers(registered, to_add, replication_factor,
                                          fixed_start_index=start, start_partition_id=current)
    proposed = {current + i: list(replicas) for i, replicas in enumerate(manual)}
    _validate_added_replicas(proposed, replication_factor)
    return proposed


def _registered_brokers(brokers: Iterable[BrokerMetadata]) -> list[BrokerMetadata]:
    """All registered brokers sorted by id; racks must be all set or all absent."""
    ordered = sorted(brokers, key=lambda b: b.id)
    with_rack = sum(1 for b in ordered if b.rack is not None)
    if 0 < with_rack < len(ordered):
        # Kafka fails the whole CreatePartitions request here, before looking at any topic.
        raise KafkaApiError(ErrorCode.UNKNOWN_SERVER_ERROR, "Not all brokers have rack information. Add "
                            "--disable-rack-aware in command line to make replica assignment without rack information.")
    return ordered


def _validate_added_replicas(proposed: Mapping[int, Sequence[int]], replication_factor: int) -> None:
    """Per new partition (in the order Kafka's immutable Map visits them): no empty or duplicate
    replica list; then every partition at partition 0's replication factor. (Kafka also checks the
    brokers are available here, which the unknown-broker check before has already settled.)"""
    for partition in scala_immutable_order(proposed):
        replicas = proposed[partition]
        if not replicas:
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Duplicate brokers not allowed in replica "
                                f"assignment: {_join(replicas)} for partition id {partition}.")
    bad = sorted(p for p, replicas in proposed.items() if len(replicas) != replication_factor)
    if bad:
        raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Inconsistent replication factor between "
                            f"partitions, partition 0 has {replication_factor} while partitions [{_join(bad)}] "
                            f"have replication factors [{_join(len(proposed[p]) for p in bad)}], respectively.")
