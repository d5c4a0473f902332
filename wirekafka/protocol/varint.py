"""Varints as Kafka writes them: unsigned (flexible versions' lengths and counts plus one) and
zigzag (a record's fields), one home for the record readers and writers."""

from __future__ import annotations


class VarintTooLong(ValueError):
    """More than 10 bytes: no long is that long (Kafka's readers refuse it)."""


def encode_uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """A zigzag varint (a record's fields)."""
    return encode_uvarint((value << 1) ^ (value >> 63))


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zigzag varint at pos: (value, position after it). IndexError when it runs off buf,
    VarintTooLong past 10 bytes. A one-byte varint (most record fields) takes the short way."""
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise VarintTooLong("a varint longer than 10 bytes")
