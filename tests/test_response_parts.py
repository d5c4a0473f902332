"""Fetch responses with file regions: the parts, joined with the regions' bytes, must be byte for
byte what the schema codec encodes with the records inlined, at every served Fetch version."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from kafka.protocol.consumer.fetch import FetchResponse

from wirekafka.protocol import served_versions as api_versions, codec
from wirekafka.protocol.response_parts import RegionResponse
from wirekafka.storage.region import FileRegion

_Topic = FetchResponse.FetchableTopicResponse
_Part = _Topic.PartitionData
FETCH = 1


def _partition(index: int, records: bytes | None) -> _Part:
    return _Part(partition_index=index, error_code=0, high_watermark=100 + index, last_stable_offset=100,
                 log_start_offset=3, aborted_transactions=None, preferred_read_replica=-1, records=records)


def _body(version: int, records: list[bytes | None]) -> FetchResponse:
    parts = [_partition(i, r) for i, r in enumerate(records)]
    return FetchResponse(version=version, throttle_time_ms=0, error_code=0, session_id=0, node_endpoints=[],
                         responses=[_Topic(topic="t", topic_id=uuid.UUID(int=7), partitions=parts)])


def _join(parts: list) -> bytes:
    return b"".join(p if isinstance(p, (bytes, bytearray)) else p.read() for p in parts)


@pytest.mark.parametrize("version", range(api_versions.SUPPORTED[FETCH][0], api_versions.SUPPORTED[FETCH][1] + 1))
def test_spliced_fetch_equals_schema_encoding(tmp_path: Path, version: int) -> None:
    path = tmp_path / "segment.log"
    payloads = [os.urandom(300), os.urandom(1), os.urandom(70_000)]  # 70 KB: a multi-byte varint prefix
    path.write_bytes(b"".join(payloads))
    fd = os.open(path, os.O_RDONLY)
    try:
        response = RegionResponse(_body(version, []))
        position = 0
        inlined: list[bytes | None] = []
        for i, data in enumerate(payloads + [b""]):
            if data:
                region = FileRegion(fd, position, len(data))
                position += len(data)
                records: bytes = response.placeholder(region)
            else:
                records = b""  # a partition with nothing to return keeps inline empty records
            response.body.responses[0].partitions.append(_partition(i, records))
            inlined.append(data)
        parts = codec.encode_response_parts(FETCH, version, 42, response)
        expected = codec.encode_response(FETCH, version, 42, _body(version, inlined))
        assert _join(parts) == expected
        assert sum(len(p) for p in parts) == len(expected)
        for region in response.regions():
            region.close()
    finally:
        os.close(fd)


def test_missing_placeholder_is_a_bug_not_garbage() -> None:
    response = RegionResponse(_body(12, [b"x" * 16]))
    fd = os.open(os.devnull, os.O_RDONLY)
    response.placements.append((b"\x00" * 16, FileRegion(fd, 0, 0)))
    os.close(fd)
    with pytest.raises(ValueError):
        codec.encode_response_parts(FETCH, 12, 1, response)
    response.regions()[0].close()
