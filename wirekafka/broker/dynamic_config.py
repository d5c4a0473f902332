"""Dynamic broker configs: the replication throttles an admin sets on a running cluster.

Kafka lets IncrementalAlterConfigs / AlterConfigs change some broker configs at runtime, per
broker (resource name "<id>") or as a cluster-wide default (resource name ""). wirekafka supports
the three replication quotas among them — leader.replication.throttled.rate,
follower.replication.throttled.rate and replica.alter.log.dirs.io.max.bytes.per.second — because
`kafka-reassign-partitions --throttle` sets the first two on every broker a move touches, and
`--verify` removes them. Other broker keys stay static (refused with Kafka's message for a key
that cannot change at runtime).

Where they live is Kafka's: a single node keeps them with its topics (the KRaft metadata log's
role), a ZooKeeper-mode cluster in /config/brokers/<id> and /config/brokers/<default> as Kafka 3.9
does. A broker's effective value is its own setting, else the cluster default, else unlimited
(Kafka's QUOTA_BYTES_PER_SECOND_DEFAULT, Long.MAX_VALUE)."""

from __future__ import annotations

from typing import Mapping

from wirekafka.config import LONG_MAX
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

DEFAULT_ENTITY = "<default>"  # the cluster-wide default's entity name, as Kafka writes it in ZooKeeper
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
DYNAMIC_KEYS = (LEADER_RATE, FOLLOWER_RATE, ALTER_LOG_DIRS_RATE)
UNLIMITED = LONG_MAX


def entity_of(resource_name: str) -> str:
    """The stored entity a BROKER resource names: "" is the cluster default."""
    return resource_name if resource_name else DEFAULT_ENTITY


def check_value(key: str, value: str) -> None:
    """Kafka's checks of a throttle value (a LONG, at least 0): INVALID_REQUEST with its text
    (Kafka 4.3.1 and 3.9.1 answer both with that code)."""
    not_long = f"Invalid value {value} for configuration {key}: Not a number of type LONG"
    try:
        number = int(value.strip())
    except ValueError:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, not_long) from None
    if not -2**63 <= number <= LONG_MAX:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, not_long)
    if number < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                            f"Invalid value {number} for configuration {key}: Value must be at least 0")


class DynamicBrokerConfigs:
    """The dynamic configs this broker sees: its own entity's and the cluster default's."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self._entities: dict[str, dict[str, str]] = {}

    def of(self, entity: str) -> dict[str, str]:
        """A copy of one entity's settings ({} when it has none)."""
        return dict(self._entities.get(entity, {}))

    def replace(self, entity: str, configs: Mapping[str, str]) -> None:
        if configs:
            self._entities[entity] = dict(configs)
        else:
            self._entities.pop(entity, None)

    def snapshot(self) -> dict[str, dict[str, str]]:
        """Every entity's settings, for persisting them."""
        return {e: dict(c) for e, c in self._entities.items()}

    @property
    def own(self) -> dict[str, str]:
        return self._entities.get(str(self.node_id), {})

    @property
    def defaults(self) -> dict[str, str]:
        return self._entities.get(DEFAULT_ENTITY, {})

    def rate(self, key: str) -> int:
        """A throttle's effective bound in bytes/s: this broker's, else the default, else unlimited."""
        value = self.own.get(key, self.defaults.get(key))
        return UNLIMITED if value is None else int(value.strip())
