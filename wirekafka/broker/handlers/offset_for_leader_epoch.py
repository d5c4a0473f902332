"""OffsetForLeaderEpoch (key 23), v2-4.

Answered from the partition's leader-epoch cache (leader-epoch-checkpoint), Kafka's rule:
- requested epoch == the latest epoch: (that epoch, log end offset);
- requested epoch above every known epoch, or undefined: (-1, -1);
- otherwise the start offset of the next higher epoch, with the greatest known epoch at or below
  the requested one (the requested epoch itself when it is below every known epoch).
- a partition becomes leader in its epoch at its log end, so the entry exists even for an empty
  log: (0, 0) there, as Kafka answers.
- current_leader_epoch fencing (-1 skips it): FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; unknown
  partitions UNKNOWN_TOPIC_OR_PARTITION. replica_id (v3+) does not change the answer.
- Authorization: CLUSTER_ACTION (a follower's), or else DESCRIBE on each topic (a consumer's,
  KIP-320); a topic without it answers TOPIC_AUTHORIZATION_FAILED at each partition, whether it
  exists or not, listed after the authorized topics as Kafka lists them."""

from __future__ import annotations

from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.loop_turns import LoopTurns
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

UNDEFINED = -1
# partitions answered between two turns of the loop (a restarted follower of a 10,000-partition
# cluster asks about 3,333 at once: one step of 150 ms of CPU, measured)
PARTITION_CHUNK = 250
_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Part = _Topic.EpochEndOffset


def _refused(t: OffsetForLeaderEpochRequest.OffsetForLeaderTopic) -> _Topic:
    return _Topic(topic=t.topic, partitions=[
        _Part(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition, leader_epoch=UNDEFINED,
              end_offset=UNDEFINED) for p in t.partitions])


async def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    """The loop turns every PARTITION_CHUNK partitions answered: a restarted follower asks about
    every partition it follows here at once."""
    topics, refused = [], []
    cluster_action = ctx.authorized_cluster(AclOperation.CLUSTER_ACTION)
    turns = LoopTurns(PARTITION_CHUNK)
    for t in request.topics:
        if not cluster_action and not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic):
            refused.append(_refused(t))
            continue
        parts = []
        for p in t.partitions:
            if turns.due():
                await turns.turn()
            try:
                partition = ctx.state.metadata.partition(t.topic, p.partition)
                partition.check_leader_epoch(p.current_leader_epoch)
                epoch, end = partition.end_offset_for_epoch(p.leader_epoch)
                parts.append(_Part(error_code=ErrorCode.NONE, partition=p.partition, leader_epoch=epoch, end_offset=end))
            except KafkaApiError as exc:
                parts.append(_Part(error_code=exc.code, partition=p.partition, leader_epoch=UNDEFINED,
                                   end_offset=UNDEFINED))
        topics.append(_Topic(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(version=ctx.version, throttle_time_ms=0, topics=topics + refused)
