"""AlterPartitionReassignments (key 45), v0-1: move partitions to other brokers (kafka-reassign-partitions).

- Each partition names its target replicas, or null to cancel the reassignment in progress.
- In a cluster the move is Kafka's (KIP-455): the topic's assignment becomes the target replicas
  followed by the leaving ones, with adding/removing replicas recorded in /brokers/topics/<t>;
  the new replicas catch up as followers, and once all target replicas are in sync the controller
  moves the leadership if it is leaving, shrinks the ISR and the assignment to the target, and
  the leaving brokers delete their copies.
- Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty list,
  repeated broker, a broker that is not live), NO_REASSIGNMENT_IN_PROGRESS for a cancel with
  nothing to cancel. One node: only this node is a valid target, and nothing is ever in progress.
- Authorization, as Kafka's controller checks it: ALTER on the cluster, else
  CLUSTER_AUTHORIZATION_FAILED with a message for the request and for each partition."""

from __future__ import annotations

from kafka.protocol.admin.topics import AlterPartitionReassignmentsResponse
from kafka.protocol.admin.topics import AlterPartitionReassignmentsRequest

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

_Topic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
_Part = _Topic.ReassignablePartitionResponse


def _refused(ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
    """Kafka's answer to a request it refuses as a whole: the error everywhere."""
    code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return AlterPartitionReassignmentsResponse(
        version=ctx.version, throttle_time_ms=0, allow_replication_factor_change=True, error_code=code,
        error_message=message, responses=[_Topic(name=t.name, partitions=[
            _Part(partition_index=p.partition_index, error_code=code, error_message=message) for p in t.partitions])
            for t in request.topics])


async def handle(ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _refused(ctx, request)
    if ctx.state.metadata.controller_id() != ctx.state.node_id:
        # decided by the controller alone, which knows the brokers in controlled shutdown (Kafka
        # 3.9's KafkaController answers NOT_CONTROLLER when not active; admin clients ask it)
        return AlterPartitionReassignmentsResponse(
            version=ctx.version, throttle_time_ms=0, allow_replication_factor_change=True,
            error_code=ErrorCode.NOT_CONTROLLER, error_message=None, responses=[])
    changes = [(t.name, p.partition_index, None if p.replicas is None else list(p.replicas))
               for t in request.topics for p in t.partitions]
    answers = await ctx.state.metadata.alter_reassignments(changes)
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            code, message = answers[(t.name, p.partition_index)]
            parts.append(_Part(partition_index=p.partition_index, error_code=code,
                               error_message=None if code == ErrorCode.NONE else message))
        topics.append(_Topic(name=t.name, partitions=parts))
    return AlterPartitionReassignmentsResponse(version=ctx.version, throttle_time_ms=0,
                                               allow_replication_factor_change=True, error_code=ErrorCode.NONE,
                                               error_message=None, responses=topics)
