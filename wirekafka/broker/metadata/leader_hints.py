"""Where a partition's leader is, for answers that tell a client it asked the wrong broker (KIP-951).

Why: a Produce (v10+) answered NOT_LEADER_OR_FOLLOWER, or a Fetch (v16+) answered that or
FENCED_LEADER_EPOCH, carries the leader this broker knows (id and epoch) and that leader's
endpoint, so a client can go there without waiting for a metadata refresh. As Kafka's
getCurrentLeader: the leader a local replica follows, else the one the cluster metadata records;
the endpoint is the leader's on the listener the request came in on, when that broker is alive."""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, ClusterMetadata, Topic


@dataclass(frozen=True, slots=True)
class LeaderHint:
    leader_id: int
    leader_epoch: int
    node: BrokerInfo | None  # the leader as reached on the request's listener; None if not alive


def leader_hint(metadata: ClusterMetadata, topic: Topic | None, index: int, listener: str) -> LeaderHint:
    leader, epoch = -1, -1
    if topic is not None and 0 <= index < len(topic.partitions):
        local = topic.partitions[index]
        if local is not None and local.online:
            leader, epoch = local.replica_set.leader, local.leader_epoch
        else:
            view = metadata.partition_view(topic, index)
            leader, epoch = view.leader, view.leader_epoch
    node = next((b for b in metadata.brokers(listener) if b.node_id == leader), None) if leader >= 0 else None
    return LeaderHint(leader, epoch, node)
