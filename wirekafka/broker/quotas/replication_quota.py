"""Replication throttles: Kafka's leader and follower ReplicationQuotaManagers.

Two things make a partition's replication traffic throttled on this broker, as in Kafka:
- the topic config leader.replication.throttled.replicas (or follower.…) lists "<partition>:<this
  broker>", or is "*";
- the broker's leader.replication.throttled.rate (or follower.…) is finite
  (broker/dynamic_config.py).

Every throttled partition's replicated bytes count towards a byte rate measured the way Kafka's
SimpleRate does (replication.quota.window.num samples of replication.quota.window.size.seconds:
the bytes of the live samples over the time since the oldest one began, at least one window).
While that rate is above the bound, a replica that is not in sync gets nothing for a throttled
partition: the leader answers its fetch with no records (the fetch offset stays where it was)
and the follower leaves the partition out of its next fetch. In-sync replicas are never held
back (that would shrink the ISR), but their bytes count too, as Kafka counts them."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Callable

from wirekafka.config.dynamic import FOLLOWER_RATE, LEADER_RATE, UNLIMITED
from wirekafka.broker.quotas.stats import SimpleRate
from wirekafka.config.broker_config import BrokerConfig

if TYPE_CHECKING:
    from wirekafka.broker.metadata.cluster_metadata import ClusterMetadata

ALL = None  # a throttled-replicas value of "*": every partition of the topic
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


@functools.lru_cache(maxsize=1024)
def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | None:
    """The partitions a throttled-replicas config ("0:1,1:2" or "*") lists for broker_id; ALL for
    "*". The value was validated when it was set."""
    value = value.strip()
    if value == "*":
        return ALL
    out = set()
    for item in value.split(","):
        partition, _, broker = item.strip().partition(":")
        if partition and broker and int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)


def lists_partition(value: str | None, broker_id: int, partition: int) -> bool:
    """Whether a throttled-replicas config names this partition on this broker."""
    if not value:
        return False
    listed = throttled_partitions(value, broker_id)
    return listed is None or partition in listed  # None: ALL


class ReplicationQuota:
    """One direction's quota (leader or follower): the bound comes from the dynamic config."""

    def __init__(self, bound: Callable[[], int], samples: int, window_s: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._bound = bound
        self._rate = SimpleRate(samples, window_s * 1000)
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def record(self, nbytes: int) -> None:
        self._rate.record(float(nbytes), self._now_ms())

    def exceeded(self) -> bool:
        bound = self._bound()
        return bound != UNLIMITED and self._rate.measure(self._now_ms()) > bound


class ReplicationQuotas:
    """This broker's leader and follower quotas, and which partitions they throttle (read from
    the topics' configs when asked, so a config change applies at once)."""

    def __init__(self, metadata: ClusterMetadata, config: BrokerConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._metadata = metadata
        self._node_id = config.node_id
        samples, window_s = config.int("replication.quota.window.num"), config.int("replication.quota.window.size.seconds")
        dynamic = metadata.broker_configs
        self.leader = ReplicationQuota(lambda: dynamic.rate(LEADER_RATE), samples, window_s, clock)
        self.follower = ReplicationQuota(lambda: dynamic.rate(FOLLOWER_RATE), samples, window_s, clock)

    def _listed(self, key: str, topic: str, partition: int) -> bool:
        t = self._metadata.topic(topic)
        return t is not None and lists_partition(t.configs.get(key), self._node_id, partition)

    def leader_throttled(self, topic: str, partition: int) -> bool:
        """This broker's copy of the partition is listed in leader.replication.throttled.replicas."""
        return self._listed(LEADER_REPLICAS, topic, partition)

    def follower_throttled(self, topic: str, partition: int) -> bool:
        """This broker's copy of the partition is listed in follower.replication.throttled.replicas."""
        return self._listed(FOLLOWER_REPLICAS, topic, partition)
