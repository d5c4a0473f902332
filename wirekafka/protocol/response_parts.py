"""Responses whose `records` fields are file regions, encoded as a list of parts.

The schema codec encodes the whole response as usual, with a 16-byte placeholder token in each
`records` field; the tokens (and their length prefixes) are then cut out and replaced by the real
length prefix and the region itself. The result, sent in order, is byte for byte what the codec
would produce with the records inlined (tests check it), but the record bytes never pass through
Python: the connection sends each region with sendfile. Every other field stays schema-encoded.

Records sit in Kafka's schemas as a plain field (never inside a tagged field, and no enclosing
structure carries a byte size), so replacing one field's bytes changes nothing else but the
frame's size, which the caller computes from the parts."""

from __future__ import annotations

import secrets
import struct
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar, Union

from kafka.protocol.api_message import ApiMessage

from wirekafka.protocol.varint import encode_uvarint

TOKEN_SIZE = 16
_INT32 = struct.Struct(">i")
_PROCESS_PREFIX = secrets.token_bytes(TOKEN_SIZE - 4)  # makes a token impossible to forge or collide
_COMPACT_TOKEN_PREFIX = bytes([TOKEN_SIZE + 1])  # uvarint(length + 1) of a 16-byte compact field
_TOKEN_PREFIX = _INT32.pack(TOKEN_SIZE)


class Region(Protocol):
    """A byte range of an open file that the connection sends (storage's FileRegion): with
    sendfile from fd at position on a plaintext socket, else read as bytes; closed once sent."""

    fd: int
    position: int
    length: int

    def read(self) -> bytes: ...

    def close(self) -> None: ...


Part = Union[bytes, Region]


B = TypeVar("B", bound="ApiMessage")  # a string: the class itself is falsy (its metaclass has __len__)


@dataclass
class RegionResponse(Generic[B]):
    """A response body plus the regions its placeholder tokens stand for, in encoding order."""

    body: B
    placements: list[tuple[bytes, Region]] = field(default_factory=list)
    # the encoded frame, once made (codec.encode_response_parts): a handler that must know the
    # answer's size (a fetch charged to a byte quota) and the connection share one encoding;
    # changing the body afterwards must drop it
    frame: list[Part] | None = None

    def placeholder(self, region: Region) -> bytes:
        """A token to put in a records field; it will be replaced by region's bytes."""
        token = _PROCESS_PREFIX + struct.pack(">I", len(self.placements))
        self.placements.append((token, region))
        return token

    def regions(self) -> list[Region]:
        return [region for _, region in self.placements]


def splice(payload: bytes | bytearray, flexible: bool, placements: list[tuple[bytes, Region]]) -> list[Part]:
    """Cut each token (with its length prefix) out of an encoded body and put the region there."""
    parts: list[Part] = []
    prefix = _COMPACT_TOKEN_PREFIX if flexible else _TOKEN_PREFIX
    pos = 0
    for token, region in placements:
        at = payload.find(token, pos)
        if at < 0 or payload[at - len(prefix):at] != prefix:
            raise ValueError("placeholder token missing from the encoded response")
        parts.append(bytes(payload[pos:at - len(prefix)]))
        parts.append(encode_uvarint(region.length + 1) if flexible else _INT32.pack(region.length))
        parts.append(region)
        pos = at + TOKEN_SIZE
    parts.append(bytes(payload[pos:]))
    return parts


def part_size(part: Part) -> int:
    return len(part) if isinstance(part, (bytes, bytearray)) else part.length
