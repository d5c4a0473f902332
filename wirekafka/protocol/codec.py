"""Request decoding and response encoding through kafka-python's schema classes.

The request header is parsed here by hand (it is fixed and tiny, and the api key/version it
carries pick the schema class for the body); every body goes through the schema-driven codec
generated from Kafka's own JSON message definitions, except Produce, whose records stay in the
frame (protocol/produce_request.py, checked against the schema codec)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_message import ApiMessage

from wirekafka.protocol import field_rules, produce_request, schema_meta, served_versions as api_versions
from wirekafka.protocol.framing import Frame
from wirekafka.protocol.response_parts import Part, RegionResponse, part_size, splice

_HEADER = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
API_VERSIONS_KEY = 18
PRODUCE_KEY = 0


# What decode_body(quick=True) decodes: ~5 ms of the schema decoders' work at most (measured
# ~2.5 us per object, ~0.4 s for a 900 KB request of tiny elements).
QUICK_ELEMENTS = 2000
QUICK_BYTES = 1 << 14


class ProtocolError(Exception):
    """The request cannot be understood; Kafka closes the connection for these."""


class SlowDecode(Exception):
    """decode_body(quick=True) declined: the request is too big to decode within a few ms."""


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


@dataclass(slots=True)
class Request:
    header: RequestHeader
    body: Any

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version


def _read_uvarint(buf: Frame | memoryview, pos: int) -> tuple[int, int]:
    shift = 0
    value = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise ProtocolError("bad unsigned varint in request header")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _skip_tagged_fields(buf: Frame | memoryview, pos: int) -> int:
    count, pos = _read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise ProtocolError("tagged field runs past the end of the request")
    return pos


def parse_header(frame: Frame) -> RequestHeader:
    """Parse request header v1 (or v2 for flexible versions): key, version, correlation, client id;
    or v0 (no client id) for the one request that still uses it, ControlledShutdown v0.

    Raises ProtocolError for a header that is too short or malformed."""
    if len(frame) < 8:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _HEADER.unpack_from(frame, 0)
    if api_version == 0 and not api_versions.request_header_has_client_id(api_key, api_version):
        return RequestHeader(api_key, api_version, correlation_id, None, 8)
    if len(frame) < 10:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a request header")
    (client_len,) = _INT16.unpack_from(frame, 8)
    pos = 10
    client_id: str | None = None
    if client_len >= 0:
        end = pos + client_len
        if end > len(frame):
            raise ProtocolError("client id runs past the end of the request")
        client_id = frame[pos:end].decode("utf-8", "replace")
        pos = end
    elif client_len != -1:
        raise ProtocolError(f"bad client id length {client_len}")
    if api_versions.request_header_is_flexible(api_key, api_version):
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def decode_body(header: RequestHeader, frame: Frame, quick: bool = False) -> Any:
    """Decode the request body with the schema class for (api key, version); a produce request's
    records are left in frame as memoryview slices. quick: raise SlowDecode instead of decoding
    a request that would take more than a few ms (a produce request of more than QUICK_ELEMENTS
    topics and partitions, any other request over QUICK_BYTES), for the caller to decode it away
    from its event loop."""
    body = memoryview(frame)[header.body_offset:]
    request_class = api_versions.request_class(header.api_key)
    request = None
    if header.api_key == PRODUCE_KEY:
        try:
            request = produce_request.decode(body, header.api_version, QUICK_ELEMENTS if quick else None)
        except produce_request.OverBudget as exc:
            raise SlowDecode() from exc
        except produce_request.Malformed as exc:
            raise ProtocolError(f"cannot decode api 0 v{header.api_version}: {exc}") from exc
        except produce_request.Unusual:
            pass
    if request is None:
        if quick and len(body) > QUICK_BYTES:
            raise SlowDecode()
        try:
            request = request_class.decode(body, version=header.api_version)
        except Exception as exc:  # the generated decoder raises assorted errors on bad bytes
            raise ProtocolError(
                f"cannot decode api {header.api_key} v{header.api_version}: {exc!r}"
            ) from exc
    broken = field_rules.broken_rule(request_class, header.api_version, request)
    if broken is not None:  # Kafka's readers refuse it: an invalid request, the connection closes
        raise ProtocolError(f"api {header.api_key} v{header.api_version}: {broken}")
    return request


def _response_header(api_key: int, api_version: int, correlation_id: int, body: ApiMessage) -> bytes:
    flexible_header = api_key != API_VERSIONS_KEY and body.flexible_version_q(api_version)
    return _INT32.pack(correlation_id) + (b"\x00" if flexible_header else b"")


def encode_response(api_key: int, api_version: int, correlation_id: int, body: ApiMessage) -> bytes:
    """A whole response frame: size, response header (v0 or v1) and the body at api_version."""
    payload = body.encode(version=api_version)
    header = _response_header(api_key, api_version, correlation_id, body)
    return _INT32.pack(len(header) + len(payload)) + header + payload


def encode_response_parts(api_key: int, api_version: int, correlation_id: int,
                          response: RegionResponse) -> list[Part]:
    """A whole response frame as parts: encoded bytes with the response's regions between them
    (see response_parts). Joined, the parts are exactly what encode_response would give with
    the regions' bytes inlined."""
    if response.frame is not None:
        return response.frame
    body = response.body
    payload = body.encode(version=api_version)
    parts = splice(payload, body.flexible_version_q(api_version), response.placements)
    header = _response_header(api_key, api_version, correlation_id, body)
    size = len(header) + sum(part_size(p) for p in parts)
    first = parts[0]
    if not isinstance(first, bytes):  # splice starts every frame with the body's leading bytes
        raise TypeError("a spliced response must start with bytes")
    parts[0] = _INT32.pack(size) + header + first
    response.frame = parts
    return parts
