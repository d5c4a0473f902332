"""EncodedResponse: a cached answer is the schema codec's bytes, and a throttle time set on one
answer is that answer's alone."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.metadata import MetadataResponse

from wirekafka.broker.dispatch import set_throttle
from wirekafka.broker.metrics.error_counts import count_errors
from wirekafka.protocol import codec
from wirekafka.protocol.encoded_response import EncodedResponse

_T = MetadataResponse.MetadataResponseTopic
_P = _T.MetadataResponsePartition


def _metadata(version: int) -> MetadataResponse:
    partition = _P(error_code=5, partition_index=0, leader_id=-1, leader_epoch=3, replica_nodes=[1, 2],
                   isr_nodes=[1], offline_replicas=[2])
    topic = _T(error_code=0, name="t", topic_id=None, is_internal=False, partitions=[partition],
               authorized_operations=None)
    return MetadataResponse(version=version, throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1,
                            topics=[topic], authorized_operations=None, error_code=0)


@pytest.mark.parametrize("version", [1, 9, 12])
def test_an_encoded_answer_is_the_codecs_frame_and_a_throttle_stays_its_own(version: int) -> None:
    body = _metadata(version)
    expected = codec.encode_response(3, version, 7, body)
    cached = EncodedResponse(body, version)
    assert codec.encode_response(3, version, 7, cached.again()) == expected
    throttled = cached.again()
    set_throttle(throttled, 250)
    if version >= 3:  # the field exists from v3
        body.throttle_time_ms = 250
        assert codec.encode_response(3, version, 7, throttled) == codec.encode_response(3, version, 7, body)
        body.throttle_time_ms = 0
    assert codec.encode_response(3, version, 7, cached.again()) == expected  # the next answer is not throttled
    with pytest.raises(ValueError):
        cached.encode(version + 1)


def test_the_error_counts_of_an_encoded_answer_are_its_bodys() -> None:
    counts: dict[int, int] = {}
    cached = EncodedResponse(_metadata(12), 12)
    count_errors(cached, counts)
    assert counts == {0: 2, 5: 1}  # the response, the topic, the partition
    answer = cached.again()
    answer.body = None  # the counts come with the answer: its body is not walked again
    count_errors(answer, counts)
    assert counts == {0: 4, 5: 2}
