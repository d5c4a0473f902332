"""ListPartitionReassignments (key 46), v0: the reassignments in progress (kafka-reassign-partitions
--verify / --list), with each partition's replicas, adding and removing replicas. Null topics
means all; partitions with no reassignment in progress are left out, as Kafka does.
Authorization, as Kafka's controller checks it: DESCRIBE on the cluster, else
CLUSTER_AUTHORIZATION_FAILED with a message, and each requested partition listed with empty
replica lists (Kafka's error answer to the whole request)."""

from __future__ import annotations

from kafka.protocol.admin.topics import ListPartitionReassignmentsResponse
from kafka.protocol.admin.topics import ListPartitionReassignmentsRequest

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

_Topic = ListPartitionReassignmentsResponse.OngoingTopicReassignment
_Part = _Topic.OngoingPartitionReassignment


def _refused(ctx: RequestContext, requested: list | None) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(
        version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        error_message="Cluster authorization failed.", topics=[_Topic(name=t.name, partitions=[
            _Part(partition_index=p, replicas=[], adding_replicas=[], removing_replicas=[])
            for p in t.partition_indexes]) for t in requested or []])


def handle(ctx: RequestContext, request: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    requested = request.topics
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        return _refused(ctx, requested)
    wanted = None if requested is None else [(t.name, p) for t in requested for p in t.partition_indexes]
    by_topic: dict[str, list[_Part]] = {}
    for topic, index, replicas, adding, removing in ctx.state.metadata.list_reassignments(wanted):
        by_topic.setdefault(topic, []).append(_Part(partition_index=index, replicas=list(replicas),
                                                    adding_replicas=list(adding), removing_replicas=list(removing)))
    return ListPartitionReassignmentsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                              error_message=None,
                                              topics=[_Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
