"""DescribeCluster (key 60), v0-2.

- The cluster id, this node as controller and as the one broker at its advertised listener
  (no rack, never fenced, so include_fenced_brokers changes nothing).
- endpoint_type (v1+), answered as Kafka's broker listener does: 1 (brokers) describes the
  cluster; 2 (controllers) is MISMATCHED_ENDPOINT_TYPE (wirekafka serves no controller APIs, so a
  client bootstrapping from controllers learns it is talking to a broker); any other value
  UNSUPPORTED_ENDPOINT_TYPE. Error answers carry endpoint type 1, no cluster id, controller -1.
- include_cluster_authorized_operations: the operations the client may do on the cluster (every
  one without an authorizer), none without DESCRIBE on it; otherwise the "not requested" value.
  The request itself needs no rights.
Every field is filled: the Java AdminClient waits on this response."""

from __future__ import annotations

from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.metadata import NOT_REQUESTED, cluster_operations
from wirekafka.protocol.errors import ErrorCode

BROKERS, CONTROLLERS = 1, 2


def _error(ctx: RequestContext, code: ErrorCode, message: str) -> DescribeClusterResponse:
    """Kafka's error answer: endpoint type 1, no cluster id, no controller, no brokers."""
    return DescribeClusterResponse(
        version=ctx.version, throttle_time_ms=0, error_code=code, error_message=message, endpoint_type=BROKERS,
        cluster_id="", controller_id=-1, brokers=[], authorized_operations=NOT_REQUESTED)


def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    """Describe the cluster's live brokers and controller, or refuse an endpoint type as Kafka's broker listener does."""
    state = ctx.state
    endpoint_type = getattr(request, "endpoint_type", BROKERS)
    if endpoint_type == CONTROLLERS:
        return _error(ctx, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                      "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
    if endpoint_type != BROKERS:
        return _error(ctx, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}")
    with_ops = bool(request.include_cluster_authorized_operations)
    return DescribeClusterResponse(
        version=ctx.version,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=endpoint_type,
        cluster_id=state.cluster_id,
        controller_id=state.metadata.controller_id(),
        brokers=[DescribeClusterResponse.DescribeClusterBroker(
            broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack, is_fenced=False)
            for b in state.metadata.brokers(ctx.listener)],
        authorized_operations=cluster_operations(ctx) if with_ops else NOT_REQUESTED,
    )
