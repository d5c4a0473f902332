"""Fetching from the closest replica (KIP-392): which replica a consumer should read from.

With replica.selector.class set to Kafka's RackAwareReplicaSelector (config.RACK_AWARE_SELECTOR), a partition leader answers a
consumer's fetch (Fetch v11+, which carries the client's rack) with a preferred read replica when
an in-sync follower sits in the consumer's rack and the leader does not: that fetch returns no
records, and the consumer fetches from the follower from then on (followers serve v11+ consumer
fetches up to their own high watermark). The choice is Kafka's: candidates are the leader and the
in-sync followers holding the fetch offset; a replica in the client's rack wins, the leader first,
else the follower with the highest log end offset (then the one caught up most recently)."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.replica.partition import Partition
NO_PREFERENCE = -1  # the leader serves: the response carries preferred_read_replica -1


@dataclass(frozen=True)
class ReplicaView:
    node_id: int
    rack: str | None
    log_end_offset: int
    since_caught_up_ms: int


def rack_aware_choice(client_rack: str, leader: ReplicaView, candidates: list[ReplicaView]) -> ReplicaView:
    """Kafka's RackAwareReplicaSelector.select over the candidates (the leader among them)."""
    if not client_rack:
        return leader
    same_rack = [r for r in candidates if r.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.since_caught_up_ms, -r.node_id))


def preferred_read_replica(partition: Partition, brokers: list[BrokerInfo], client_rack: str, fetch_offset: int,
                           now_ms: int) -> int:
    """The follower a consumer in client_rack should fetch `partition` from at fetch_offset, or
    NO_PREFERENCE when the leader (this broker) should serve it. Followers that are not in
    sync, lack the offset or are not registered (no endpoint to send the client to) do not count."""
    live = {b.node_id: b for b in brokers}
    rs = partition.replica_set
    me = live.get(rs.local_id)
    leader = ReplicaView(rs.local_id, me.rack if me else None, partition.log_end_offset, 0)
    candidates = [leader]
    for node, progress in rs.followers.items():
        if node in rs.isr and node in live and progress.log_end_offset >= fetch_offset \
                and progress.log_start_offset <= fetch_offset:
            candidates.append(ReplicaView(node, live[node].rack, progress.log_end_offset,
                                          now_ms - progress.caught_up_ms()))
    chosen = rack_aware_choice(client_rack, leader, candidates)
    return NO_PREFERENCE if chosen is leader else chosen.node_id
