"""Codec round trips for every served API and version, through our header parser and the
schema classes, both directions: what a client encodes we decode; what we encode a client
decodes."""

from __future__ import annotations

import struct

import pytest

from tests.schema_samples import sample_message
from wirekafka.protocol import served_versions as api_versions, codec

CASES = [(key, v) for key, (lo, hi) in sorted(api_versions.SERVED.items()) for v in range(lo, hi + 1)]


def test_produce_v0_to_v2_are_advertised_but_not_served() -> None:
    """As Kafka 4.3.1: listed in ApiVersions for librdkafka, refused (connection closed) on the wire."""
    assert api_versions.SUPPORTED[0] == (0, 13) and api_versions.SERVED[0] == (3, 13)
    assert not api_versions.is_served(0, 2) and api_versions.is_served(0, 3)
    assert {k: r for k, r in api_versions.SERVED.items() if r != api_versions.SUPPORTED[k]} == {0: (3, 13)}


@pytest.mark.parametrize("api_key,version", CASES)
def test_request_round_trip(api_key: int, version: int) -> None:
    request = sample_message(api_versions.request_class(api_key), version)
    request.with_header(correlation_id=4242, client_id="client-ä")
    frame = bytes(request.encode(header=True))
    header = codec.parse_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        api_key, version, 4242, "client-ä")
    body = codec.decode_body(header, frame)
    body.with_header(correlation_id=4242)  # decoded messages lack the header kafka-python's encode expects
    assert bytes(body.encode()) == frame[header.body_offset:]


@pytest.mark.parametrize("api_key,version", CASES)
def test_response_round_trip(api_key: int, version: int) -> None:
    cls = api_versions.response_class(api_key)
    response = sample_message(cls, version)
    if api_key == 18:
        response.error_code = 0  # a non-zero ApiVersions error code means "decode as v0" (KIP-511)
    framed = codec.encode_response(api_key, version, 99, response)
    (size,) = struct.unpack(">i", framed[:4])
    assert size == len(framed) - 4
    (correlation_id,) = struct.unpack(">i", framed[4:8])
    assert correlation_id == 99
    flexible_header = api_key != 18 and cls.flexible_version_q(version)
    body = framed[8 + flexible_header:]
    if flexible_header:
        assert framed[8] == 0  # no tagged fields in the response header
    decoded = cls.decode(body, version=version)
    decoded.with_header(correlation_id=99)
    assert bytes(decoded.encode()) == bytes(response.encode(version=version))
    assert framed.endswith(bytes(response.encode(version=version)))


def test_header_too_short_is_protocol_error() -> None:
    with pytest.raises(codec.ProtocolError):
        codec.parse_header(b"\x00\x03\x00")


def test_client_id_past_end_is_protocol_error() -> None:
    frame = struct.pack(">hhih", 3, 1, 7, 50) + b"abc"
    with pytest.raises(codec.ProtocolError):
        codec.parse_header(frame)


def test_truncated_body_is_protocol_error() -> None:
    request = sample_message(api_versions.request_class(0), 9)
    request.with_header(correlation_id=1, client_id="c")
    frame = bytes(request.encode(header=True))
    header = codec.parse_header(frame[:-5])
    with pytest.raises(codec.ProtocolError):
        codec.decode_body(header, frame[:-5])


def test_null_client_id() -> None:
    frame = struct.pack(">hhih", 18, 0, 5, -1)
    header = codec.parse_header(frame)
    assert header.client_id is None and header.body_offset == 10
