"""DescribeCluster (key 60), v0-2.

- The cluster id, this node as controller and as the one broker (at its advertised listener,
  no rack, never fenced), for either endpoint type (brokers or controllers: this node is both).
- Cluster authorized operations when asked for: no authorizer, so every cluster operation.
Every field is filled: the Java AdminClient waits on this response."""

from __future__ import annotations

from kafka.protocol.admin.cluster import DescribeClusterResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.metadata import CLUSTER_OPERATIONS
from wirekafka.protocol.errors import ErrorCode


def handle(ctx: RequestContext, request: object) -> DescribeClusterResponse:
    state = ctx.state
    adv = state.config.advertised_listener
    with_ops = bool(request.include_cluster_authorized_operations)  # type: ignore[attr-defined]
    return DescribeClusterResponse(
        version=ctx.version,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=getattr(request, "endpoint_type", 1),
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(
            broker_id=state.node_id, host=adv.host, port=adv.port, rack=None, is_fenced=False)],
        authorized_operations=CLUSTER_OPERATIONS if with_ops else None,
    )
