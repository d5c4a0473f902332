"""Produce (key 0), v0-13 (v0-2 carry magic-2 batches only, as in Kafka 4).

- Topics by name (v3-12) or topic id (v13+).
- Batch checks (broker/batch_validation.py): one magic-2 batch per partition, max.message.bytes,
  CRC-32C, no client control batches, timestamp bounds, keys on compacted topics.
- LogAppendTime topics get the broker's time stamped into the batch header.
- Idempotent batches go through the partition's producer state (duplicates answered with their
  original offset).
- acks=all waits in the replica manager until the in-sync replicas have the batch (timeout_ms,
  then REQUEST_TIMED_OUT); with fewer in-sync replicas than min.insync.replicas it is
  NOT_ENOUGH_REPLICAS. Internal topics only take writes from Kafka's admin client id
  (INVALID_TOPIC_EXCEPTION otherwise).
- acks=0 gets no response; if any partition failed the connection is closed, as Kafka does.
- Batches are stored as received: no recompression to the topic's compression.type.
- Not implemented: transactional batches (INVALID_TXN_STATE)."""

from __future__ import annotations

from kafka.protocol.producer.produce import ProduceResponse

from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.replica_manager import ProduceEntry
from wirekafka.protocol.errors import ErrorCode

_TopicResp = ProduceResponse.TopicProduceResponse
_PartResp = _TopicResp.PartitionProduceResponse


async def handle(ctx: RequestContext, request: object) -> ProduceResponse | None:
    v = ctx.version
    state = ctx.state
    acks = request.acks  # type: ignore[attr-defined]
    entries: list[ProduceEntry] = []
    shape: list[tuple[object, list[int]]] = []
    for td in request.topic_data:  # type: ignore[attr-defined]
        topic, unknown = state.metadata.resolve(td.name, td.topic_id, by_id=v >= 13)
        shape.append((td, [pd.index for pd in td.partition_data]))
        entries.extend(ProduceEntry(topic, pd.index, pd.records, unknown) for pd in td.partition_data)
    if acks not in (-1, 0, 1):
        outcomes = [None] * len(entries)
    else:
        outcomes = await state.replicas.append_records(entries, acks, request.timeout_ms,  # type: ignore[attr-defined]
                                                       ctx.header.client_id)
    responses = []
    it = iter(outcomes)
    for td, indexes in shape:
        parts = []
        for index in indexes:
            o = next(it)
            if o is None:
                parts.append(_PartResp(index=index, error_code=ErrorCode.INVALID_REQUIRED_ACKS, base_offset=-1,
                                       log_append_time_ms=-1, log_start_offset=-1, record_errors=[],
                                       error_message=None))
            else:
                parts.append(_PartResp(index=index, error_code=o.error, base_offset=o.base_offset,
                                       log_append_time_ms=o.log_append_time, log_start_offset=o.log_start_offset,
                                       record_errors=[], error_message=o.message))
        responses.append(_TopicResp(name=td.name, topic_id=td.topic_id, partition_responses=parts))  # type: ignore[attr-defined]
    if acks == 0:
        if any(p.error_code for t in responses for p in t.partition_responses):
            raise CloseConnection("acks=0 produce failed")
        return None
    return ProduceResponse(version=v, responses=responses, throttle_time_ms=0, node_endpoints=[])
