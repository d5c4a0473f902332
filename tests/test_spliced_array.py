"""wirekafka/protocol/spliced_array.py: a response encoded around elements encoded before, one
by one, holds exactly the bytes of the response encoded whole by the schema codec, at every
version of Metadata (the answer it serves), with topics and partitions that carry errors, null
names, authorized operations and offline replicas, and with none at all."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.metadata.metadata import MetadataResponse

from wirekafka.broker.handlers.metadata import NOT_REQUESTED
from wirekafka.protocol.spliced_array import encode_element, encode_spliced

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition


def _topics() -> list:
    return [
        _Topic(error_code=0, name="orders", topic_id=uuid.UUID(int=7), is_internal=False,
               partitions=[_Partition(error_code=5 if i == 1 else 0, partition_index=i, leader_id=-1 if i == 1 else i % 3,
                                      leader_epoch=i, replica_nodes=[0, 1, 2], isr_nodes=[0, 2],
                                      offline_replicas=[1] if i == 1 else []) for i in range(4)],
               authorized_operations=NOT_REQUESTED),
        _Topic(error_code=29, name="secret", topic_id=uuid.UUID(int=0), is_internal=False, partitions=[],
               authorized_operations=NOT_REQUESTED),
        _Topic(error_code=100, name=None, topic_id=uuid.UUID(int=9), is_internal=False, partitions=[],
               authorized_operations=NOT_REQUESTED),
        _Topic(error_code=0, name="__consumer_offsets", topic_id=uuid.UUID(int=11), is_internal=True,
               partitions=[_Partition(error_code=0, partition_index=0, leader_id=2, leader_epoch=3, replica_nodes=[2],
                                      isr_nodes=[2], offline_replicas=[])],
               authorized_operations={3, 4}),
    ]


def _response(version: int, topics: list) -> MetadataResponse:
    return MetadataResponse(
        version=version, throttle_time_ms=250,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9092 + n,
                                                         rack="r1" if n else None) for n in range(3)],
        cluster_id="cluster-1", controller_id=1, topics=topics, authorized_operations={2}, error_code=0)


@pytest.mark.parametrize("version", range(MetadataResponse.min_version, MetadataResponse.max_version + 1))
@pytest.mark.parametrize("how_many", [0, 1, 4])
def test_spliced_bytes_are_the_codecs(version: int, how_many: int) -> None:
    topics = _topics()[:how_many]
    if version < 12:  # a null name is only encodable from v12 (flexible nullable strings)
        topics = [t for t in topics if t.name is not None]
    whole = _response(version, topics).encode(version=version)
    elements = [encode_element(MetadataResponse, "topics", t, version) for t in topics]
    # the message's own topics are not read: the elements stand for them
    spliced = encode_spliced(_response(version, []), version, "topics", elements)
    assert spliced == bytes(whole)
    assert MetadataResponse.decode(spliced, version=version) == MetadataResponse.decode(bytes(whole), version=version)
