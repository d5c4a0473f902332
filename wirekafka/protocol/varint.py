"""Unsigned varints as Kafka's flexible versions write them (lengths and counts plus one)."""

from __future__ import annotations


def encode_uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
