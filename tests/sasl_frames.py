"""Request frames for an authenticator's step() and decoding of its replies, shared by the SASL
mechanisms' unit tests."""

from __future__ import annotations

import struct


def frame(request, version: int, cid: int = 1) -> bytes:
    """The request as a frame's payload (header and body, no size), at version."""
    request.API_VERSION = version
    request.with_header(correlation_id=cid, client_id="t")
    return bytes(request.encode(header=True))


def answer(reply: bytes, response_class, version: int):
    """The response in a whole reply frame (size, response header, body)."""
    (size,) = struct.unpack_from(">i", reply)
    assert size == len(reply) - 4
    flexible = response_class.flexible_version_q(version)
    return response_class.decode(reply[4 + 4 + (1 if flexible else 0):], version=version)
