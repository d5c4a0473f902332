"""LeaderAndIsr (key 4), v0-7: the controller's request to a broker, served only in ZooKeeper mode,
as by Kafka 3.9's ZooKeeper-mode brokers.

wirekafka's controller sends it after a log dir event notification, to learn which of the
broker's replicas sit on a failed log dir (metadata/zk/offline_replicas.py). The roles themselves
reach every wirekafka broker through ZooKeeper's state znodes, so the states in the request are
not applied here: the answer is what counts. Each partition named is answered
KAFKA_STORAGE_ERROR when this broker's replica of it is on a failed log dir, NONE otherwise.
Before that, as Kafka's broker checks it: only a broker may send it (CLUSTER_ACTION on the
cluster, else CLUSTER_AUTHORIZATION_FAILED); a broker epoch below this broker's registration is
STALE_BROKER_EPOCH and a controller epoch below the one it knows STALE_CONTROLLER_EPOCH, each
answered for every partition named too (Kafka's getErrorResponse)."""

from __future__ import annotations

import uuid

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.inter_broker import LeaderAndIsrRequest, LeaderAndIsrResponse
from wirekafka.security.acl.authorizer import AclOperation

def _named(request: LeaderAndIsrRequest, version: int) -> list[tuple[str, uuid.UUID | None, int]]:
    """Every partition the request names: (topic, topic id or None, index)."""
    if version < 2:
        return [(s.topic_name, None, s.partition_index) for s in request.ungrouped_partition_states]
    return [(t.topic_name, t.topic_id if version >= 5 else None, s.partition_index)
            for t in request.topic_states for s in t.partition_states]


async def handle(ctx: RequestContext, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    if not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
        raise KafkaApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    cluster = ctx.state.cluster
    if cluster is None:  # registered only in ZooKeeper mode (dispatch)
        raise KafkaApiError(ErrorCode.UNSUPPORTED_VERSION)
    version = ctx.version
    error = cluster.check_controller_request(request.controller_epoch,
                                             request.broker_epoch if version >= 2 else -1)
    answers: list[tuple[str, uuid.UUID | None, int, ErrorCode]] = []
    for name, topic_id, index in _named(request, version):
        code = error
        if error == ErrorCode.NONE:
            topic = ctx.state.metadata.topic(name)
            local = topic.partitions[index] if topic is not None and 0 <= index < len(topic.partitions) else None
            failed = local is not None and not local.online and local.offline_error == ErrorCode.KAFKA_STORAGE_ERROR
            code = ErrorCode.KAFKA_STORAGE_ERROR if failed else ErrorCode.NONE
        answers.append((name, topic_id, index, code))
    if version < 5:
        return LeaderAndIsrResponse(version=version, error_code=error, partition_errors=[
            LeaderAndIsrResponse.LeaderAndIsrPartitionError(topic_name=name, partition_index=index, error_code=code)
            for name, _, index, code in answers])
    topic_error = LeaderAndIsrResponse.LeaderAndIsrTopicError  # its partitions: the common struct, nested
    by_topic: dict[uuid.UUID, list[LeaderAndIsrResponse.LeaderAndIsrTopicError.LeaderAndIsrPartitionError]] = {}
    for _, topic_id, index, code in answers:
        by_topic.setdefault(topic_id or uuid.UUID(int=0), []).append(
            topic_error.LeaderAndIsrPartitionError(partition_index=index, error_code=code))
    return LeaderAndIsrResponse(version=version, error_code=error, topics=[
        topic_error(topic_id=topic_id, partition_errors=errors)
        for topic_id, errors in by_topic.items()])
