"""What a broker does as a member of a cluster, beside answering from its metadata: the seams
`BrokerState` talks through when a cluster backend is configured (ZooKeeper mode), so that it
never asks which backend it has. The single node has none of them (`BrokerState.cluster` and
`BrokerState.controller` are None there).

- `ClusterMembership`: join (connect, learn the cluster id), run (register, follow the cluster's
  state, apply this broker's roles), hand leaderships over before stopping, leave.
- `ControllerRequests`: what the controller serves to the other brokers (AlterPartition,
  ControlledShutdown); any broker may be asked and answers NOT_CONTROLLER-like errors when it is
  not the controller.
- `RoleChange`: what the broker must do after the cluster's state was applied (the replica
  fetchers follow or stop, coordinators load or unload)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import trio

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo
from wirekafka.broker.metadata.zk.controller import AlterTopic
from wirekafka.broker.replica.partition import Partition
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.acl.authorizer import Authorizer
from wirekafka.security.acl.store import AclStore


@dataclass
class RoleChange:
    """What the broker must do after a reconcile: partitions to follow (with their leader) or
    not to fetch any more, and leaderships gained and lost (coordinators load and unload)."""

    follow: list[tuple[Partition, BrokerInfo]] = field(default_factory=list)
    stop_fetching: list[Partition] = field(default_factory=list)
    became_leader: list[Partition] = field(default_factory=list)
    resigned: list[Partition] = field(default_factory=list)

    def size(self) -> int:
        """How many partitions' roles it moves (one counted once per list it is in)."""
        return len(self.follow) + len(self.stop_fetching) + len(self.became_leader) + len(self.resigned)


class ClusterMembership(Protocol):
    """A broker's life in a cluster, from joining to leaving."""

    async def connect(self) -> str:
        """Reach the cluster's store and return the cluster id (before the log dir is opened)."""
        ...

    def acl_store(self, authorizer: Authorizer) -> AclStore:
        """Where CreateAcls/DeleteAcls persist in this cluster; loaded into `authorizer` by start()."""
        ...

    async def start(self) -> None:
        """Register this broker and apply the cluster's state once, before the broker serves."""
        ...

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Follow the cluster's state until cancelled."""
        ...

    async def controlled_shutdown(self, retries: int, backoff_s: float) -> bool:
        """Stop following and ask the controller to move this broker's leaderships away; True when done."""
        ...

    async def leave(self) -> None:
        """End the session with the cluster (this broker's registration goes at once)."""
        ...

    def report_log_dir_failure(self) -> None:
        """A log dir went offline: tell the controller, which moves its replicas' roles away."""
        ...

    def check_controller_request(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """Whether a controller's request to this broker is current (NONE) or stale (its error)."""
        ...


class ControllerRequests(Protocol):
    """The requests the controller answers for the other brokers."""

    async def alter_partitions(self, broker_id: int, broker_epoch: int, topics: list[AlterTopic],
                               request_version: int) -> tuple[ErrorCode, list[AlterTopic]]: ...

    async def shut_down_broker(self, broker_id: int, broker_epoch: int
                               ) -> tuple[ErrorCode, list[tuple[str, int]]]: ...
