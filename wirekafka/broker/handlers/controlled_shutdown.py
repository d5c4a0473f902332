"""ControlledShutdown (key 7), v0-3: a broker that is stopping asks the controller to move its
leaderships away.

Served only in ZooKeeper mode, as by Kafka 3.9's ZooKeeper-mode brokers, and answered as Kafka
3.9's ZooKeeper controller answers it (ActiveController.shut_down_broker): an error for the request,
or NONE with the partitions the broker still leads. The broker epoch comes from v2 (-1 before:
not checked). Only a broker may send it: CLUSTER_ACTION on the cluster, else
CLUSTER_AUTHORIZATION_FAILED. Answers are exempt from quotas."""

from __future__ import annotations

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.inter_broker import ControlledShutdownRequest, ControlledShutdownResponse


async def handle(ctx: RequestContext, request: ControlledShutdownRequest) -> ControlledShutdownResponse:
    if not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
        raise KafkaApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    epoch = request.broker_epoch if ctx.version >= 2 else -1
    controller = ctx.state.controller
    if controller is None:  # registered only in ZooKeeper mode (dispatch)
        raise KafkaApiError(ErrorCode.UNSUPPORTED_VERSION)
    error, remaining = await controller.shut_down_broker(request.broker_id, epoch)
    return ControlledShutdownResponse(
        version=ctx.version, error_code=error,
        remaining_partitions=[ControlledShutdownResponse.RemainingPartition(topic_name=t, partition_index=p)
                              for t, p in remaining])
