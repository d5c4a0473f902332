"""ListOffsets (key 2), v1-11.

- LATEST (-1): the high watermark, or the last stable offset for read_committed.
- EARLIEST (-2) and EARLIEST_LOCAL (-4, v8+): the log start offset.
- MAX_TIMESTAMP (-3, v7+): the offset and timestamp of the first record holding the largest
  timestamp in the log (KIP-734).
- LATEST_TIERED (-5, v9+) and EARLIEST_PENDING_UPLOAD (-6, v11): no tiered storage, so -1/-1.
- A timestamp >= 0: the first record at or after the log start whose timestamp is >= it, found
  through the time index and then the records of one batch; -1/-1 if there is none.
- Returned timestamps are -1 for the special offsets. The leader epoch, as Kafka gives it: the
  current one for LATEST, the epoch cache's for the log start offset for EARLIEST, the found
  batch's partition leader epoch for a record found by timestamp, -1 when nothing is found.
- Errors: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; a partition
  named more than once in one request is answered once, INVALID_REQUEST, as Kafka answers.
- Authorization: DESCRIBE on each topic (implied by READ, WRITE, DELETE and ALTER), asked once
  per topic; a topic without it answers TOPIC_AUTHORIZATION_FAILED at each of its partitions,
  whether it exists or not, after the authorized topics as Kafka lists them.
- Order, as Kafka's ReplicaManager answers: one entry per partition, grouped by topic (a topic
  named twice is answered once), topics and partitions in the order of its hash maps
  (kafka_grouped); the refused topics follow in the request's order, as given."""

from __future__ import annotations

from collections import Counter

from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.replica.offset_lookup import lookup
from wirekafka.jvm import TopicPartitionKey, kafka_grouped
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_TopicResp = ListOffsetsResponse.ListOffsetsTopicResponse
_PartResp = _TopicResp.ListOffsetsPartitionResponse


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    state = ctx.state
    read_committed = getattr(request, "isolation_level", 0) == 1
    mentions = Counter((rt.name, rp.partition_index) for rt in request.topics
                       for rp in rt.partitions)
    allowed: dict[str, bool] = {}
    answers: dict[TopicPartitionKey, _PartResp] = {}  # Kafka's statusByPartition: one per partition
    refused = []
    for rt in request.topics:
        if rt.name not in allowed:
            allowed[rt.name] = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, rt.name)
        if not allowed[rt.name]:
            refused.append(_TopicResp(name=rt.name, partitions=[_PartResp(
                partition_index=rp.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, timestamp=-1,
                offset=-1, leader_epoch=-1) for rp in rt.partitions]))
            continue
        for rp in rt.partitions:
            try:
                if mentions[(rt.name, rp.partition_index)] > 1:
                    raise KafkaApiError(ErrorCode.INVALID_REQUEST, "partition is duplicated in the request")
                partition = state.metadata.partition(rt.name, rp.partition_index)
                partition.check_leader_epoch(rp.current_leader_epoch)
                ts, offset, epoch = await state.replicas.run_sliced(lookup(partition, rp.timestamp, read_committed))
                answer = _PartResp(partition_index=rp.partition_index, error_code=ErrorCode.NONE,
                                   timestamp=ts, offset=offset, leader_epoch=epoch)
            except KafkaApiError as exc:
                answer = _PartResp(partition_index=rp.partition_index, error_code=exc.code,
                                   timestamp=-1, offset=-1, leader_epoch=-1)
            answers[TopicPartitionKey(rt.name, rp.partition_index)] = answer
    return ListOffsetsResponse(version=ctx.version, throttle_time_ms=0,
                               topics=[_TopicResp(name=name, partitions=parts)
                                       for name, parts in kafka_grouped(answers)] + refused)
