"""DescribeCluster (key 60), v0-2.

- The cluster id, this node as controller and as the one broker at its advertised listener
  (no rack, never fenced, so include_fenced_brokers changes nothing).
- endpoint_type (v1+): 1 (brokers) as Kafka; 2 (controllers) answers this node too, because
  wirekafka's one listener plays both roles (Kafka's broker listener answers
  UNSUPPORTED_ENDPOINT_TYPE there; this is a deliberate deviation). Any other value:
  UNSUPPORTED_ENDPOINT_TYPE.
- include_cluster_authorized_operations: there is no authorizer, so every operation Kafka
  defines on the cluster resource; otherwise the "not requested" value.
Every field is filled: the Java AdminClient waits on this response."""

from __future__ import annotations

from kafka.protocol.admin.cluster import DescribeClusterResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.metadata import CLUSTER_OPERATIONS
from wirekafka.protocol.errors import ErrorCode

BROKERS, CONTROLLERS = 1, 2


def handle(ctx: RequestContext, request: object) -> DescribeClusterResponse:
    state = ctx.state
    endpoint_type = getattr(request, "endpoint_type", BROKERS)
    if endpoint_type not in (BROKERS, CONTROLLERS):
        return DescribeClusterResponse(
            version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {endpoint_type}", endpoint_type=BROKERS, cluster_id="",
            controller_id=-1, brokers=[], authorized_operations=None)
    adv = state.config.advertised_listener
    with_ops = bool(request.include_cluster_authorized_operations)  # type: ignore[attr-defined]
    return DescribeClusterResponse(
        version=ctx.version,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=endpoint_type,
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(
            broker_id=state.node_id, host=adv.host, port=adv.port, rack=None, is_fenced=False)],
        authorized_operations=set(CLUSTER_OPERATIONS) if with_ops else None,
    )
