"""The ProduceResponse fast path writes exactly what the schema codec writes, at every served
Produce version, for the answers wirekafka gives (several topics and partitions, errors with and
without messages, per-record errors (v8+), LogAppendTime, topic ids)."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.producer.produce import ProduceResponse

from wirekafka.protocol import served_versions as api_versions, codec
from wirekafka.protocol.produce_response import FastProduceResponse, PartitionAnswer, TopicAnswer

PRODUCE = 0
_T = ProduceResponse.TopicProduceResponse
_P = _T.PartitionProduceResponse

ANSWERS = [
    TopicAnswer("orders", uuid.UUID(int=0x1234), [
        PartitionAnswer(0, 0, 42, -1, 0),
        PartitionAnswer(7, 0, 2**40, 1_700_000_000_123, 17),
        PartitionAnswer(3, 10, -1, -1, 5, "the record batch of 2000 bytes exceeds max.message.bytes=1000"),
    ]),
    TopicAnswer("ünïcode-topic", uuid.UUID(int=7), [PartitionAnswer(1, 3, -1, -1, -1, None)]),
    TopicAnswer("empty", uuid.UUID(int=9), []),
]
# what Kafka's log validator rejects: the summary and each record's index and message
RECORD_ERRORS = [
    TopicAnswer("compacted", uuid.UUID(int=11), [
        PartitionAnswer(0, 87, -1, -1, 3, "One or more records have been rejected due to 2 record errors ...",
                        ((1, "Compacted topic cannot accept message without key in topic partition compacted-0"),
                         (4, "Compacted topic cannot accept message without key in topic partition compacted-0"))),
        PartitionAnswer(1, 0, 7, -1, 0),
        PartitionAnswer(2, 32, -1, -1, 0, "One or more records have been rejected due to invalid timestamp",
                        ((0, "Timestamp 5 of message with offset 0 is out of range. ünï"), (300, None),
                         (2**31 - 1, ""))),
    ]),
    TopicAnswer("plain", uuid.UUID(int=12), [PartitionAnswer(0, 0, 1, -1, 0)]),
]


def _schema(version: int, topics: list[TopicAnswer], throttle: int) -> ProduceResponse:
    return ProduceResponse(version=version, throttle_time_ms=throttle, node_endpoints=[], responses=[
        _T(name=t.name, topic_id=t.topic_id, partition_responses=[
            _P(index=p.index, error_code=p.error_code, base_offset=p.base_offset,
               log_append_time_ms=p.log_append_time_ms, log_start_offset=p.log_start_offset,
               record_errors=[_P.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                              for i, m in p.record_errors],
               error_message=p.error_message) for p in t.partitions])
        for t in topics])


@pytest.mark.parametrize("version", range(api_versions.SERVED[PRODUCE][0], api_versions.SERVED[PRODUCE][1] + 1))
@pytest.mark.parametrize("topics", [ANSWERS, ANSWERS[:1], [], RECORD_ERRORS, RECORD_ERRORS + ANSWERS],
                         ids=["several", "one", "none", "record-errors", "mixed"])
def test_fast_produce_response_is_byte_identical(version: int, topics: list[TopicAnswer]) -> None:
    fast = FastProduceResponse(topics, throttle_time_ms=25)
    assert fast.flexible_version_q(version) == ProduceResponse.flexible_version_q(version)
    assert bytes(fast.encode(version)) == bytes(_schema(version, topics, 25).encode(version=version))
    # framed by the same codec function as every response
    assert codec.encode_response(PRODUCE, version, 9, fast) == \
        codec.encode_response(PRODUCE, version, 9, _schema(version, topics, 25))


@pytest.mark.parametrize("version", [8, 9, 13])
def test_record_errors_decode_as_written(version: int) -> None:
    """What a client reads back: each record's index and message, and the summary."""
    body = FastProduceResponse(RECORD_ERRORS).encode(version)
    decoded = ProduceResponse.decode(body, version=version)
    part = decoded.responses[0].partition_responses[2]
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == \
        [(0, "Timestamp 5 of message with offset 0 is out of range. ünï"), (300, None), (2**31 - 1, "")]
    assert part.error_message == "One or more records have been rejected due to invalid timestamp"
    assert decoded.responses[0].partition_responses[1].record_errors == []
