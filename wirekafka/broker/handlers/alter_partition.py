"""AlterPartition (key 56), v0-3: a partition leader asks the controller to record a new ISR.

Served only in ZooKeeper mode, as by Kafka 3.9's ZooKeeper-mode brokers (a KRaft broker, like the
single node, does not serve it), and answered as Kafka 3.9's ZooKeeper controller answers it
(ActiveController.alter_partitions): NOT_CONTROLLER from any broker but the controller, STALE_BROKER_EPOCH
for a requester whose registration is not the one it names, else an answer per partition. Topics
are named up to v2 and by id from v2; from v3 the ISR comes with broker epochs, which a ZooKeeper
controller does not check. Only a broker may send it: CLUSTER_ACTION on the cluster, else
CLUSTER_AUTHORIZATION_FAILED for the request. Answers are exempt from quotas."""

from __future__ import annotations

import uuid
from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.zk.controller import AlterTopic, IsrAnswer, IsrProposal
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.protocol.inter_broker import AlterPartitionRequest, AlterPartitionResponse

_Topic = AlterPartitionResponse.TopicData
_Part = _Topic.PartitionData


def proposals(request: AlterPartitionRequest, version: int) -> list[AlterTopic]:
    """The request's partitions as the controller judges them."""
    topics = []
    for t in request.topics:
        answers = []
        for p in t.partitions:
            isr = tuple(b.broker_id for b in p.new_isr_with_epochs) if version >= 3 else tuple(p.new_isr)
            recovery = p.leader_recovery_state if version >= 1 else 0
            answers.append(IsrAnswer(p.partition_index, IsrProposal(request.broker_id, p.leader_epoch, isr, recovery,
                                                                    p.partition_epoch)))
        topics.append(AlterTopic(t.topic_id if version >= 2 else t.topic_name, answers))
    return topics


def response(version: int, error: ErrorCode, topics: list[AlterTopic]) -> AlterPartitionResponse:
    """A partition with an error carries only its index and the code, as in Kafka's answer."""
    answered = []
    for t in topics:
        parts = []
        for a in t.partitions:
            if a.error != ErrorCode.NONE or a.state is None:
                parts.append(_Part(partition_index=a.index, error_code=a.error))
            else:
                parts.append(_Part(partition_index=a.index, error_code=ErrorCode.NONE, leader_id=a.state.leader,
                                   leader_epoch=a.state.leader_epoch, isr=list(a.state.isr),
                                   leader_recovery_state=a.state.leader_recovery_state,
                                   partition_epoch=a.partition_epoch))
        key = t.name_or_id  # a topic id from v2, as the request gave it
        answered.append(_Topic(topic_id=key, partitions=parts) if isinstance(key, uuid.UUID)
                        else _Topic(topic_name=key, partitions=parts))
    return AlterPartitionResponse(version=version, throttle_time_ms=0, error_code=error, topics=answered)


async def handle(ctx: RequestContext, request: AlterPartitionRequest) -> AlterPartitionResponse:
    if not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
        raise KafkaApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = ctx.state.controller
    if controller is None:  # registered only in ZooKeeper mode (dispatch)
        raise KafkaApiError(ErrorCode.UNSUPPORTED_VERSION)
    error, topics = await controller.alter_partitions(
        request.broker_id, request.broker_epoch, proposals(request, ctx.version), ctx.version)
    return response(ctx.version, error, topics)
