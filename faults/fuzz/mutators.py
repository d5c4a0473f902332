"""Hostile variants of valid request frames, deterministic from a seed.

A frame is a valid request (frame_builder) with at most one mutation: a field replaced by a
hostile encoding of the same field (boundary integers, huge or negative array counts and lengths,
long strings, invalid UTF-8, null where the schema does not allow it, bogus tagged fields), a
header lie, or a byte-level change (bit flips, truncation, extension, overwrites), or a size
prefix that does not match the bytes sent. Which one is picked comes from ``random.Random(seed)``
only, so a finding is replayed by its seed and frame number."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from faults.fuzz.frame_builder import DELAY_FIELDS, FIXED, Encoded, Span, encode_header, uvarint, valid_batch

INT32_MAX = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class FuzzFrame:
    """One request as sent: its payload (without the size prefix), what was done to it, and the
    size prefix announced (None: the payload's true size)."""
    api_key: int
    version: int
    mutation: str  # "valid", "field:<kind>:<how>", "header:<how>", "bytes:<how>", "size:<how>"
    path: str
    payload: bytes
    announced_size: int | None = None
    codec_ok: bool = True  # the broker's own codec decodes it (else a close is the expected answer)
    reason: str = ""  # why the codec refuses it
    silent_ok: bool = False  # a Produce with acks=0: no answer, or a close on error, is Kafka's way

    def prefix(self) -> bytes:
        size = len(self.payload) if self.announced_size is None else self.announced_size
        return struct.pack(">i", size)


def _boundaries(kind: str, name: str) -> list[int | float]:
    if kind == "float64":
        return [float("nan"), float("inf"), -1.0, 1e308]
    if kind == "bool":
        return [2, 255]  # written as raw bytes, not Python bools
    width = FIXED[kind].size * 8
    if kind.startswith("u"):
        values: list[int | float] = [0, 1, (1 << width) - 1]
    else:
        values = [-1, 0, 1, -(1 << (width - 1)), (1 << (width - 1)) - 1]
    if name.endswith(DELAY_FIELDS):  # a long timeout is a legitimate wait, not a finding
        values = [v for v in values if v <= 1]
    return values


class Mutator:
    """Picks and applies one mutation per frame from its own random stream."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def field(self, encoded: Encoded, flexible: bool) -> tuple[str, str, bytes]:
        """One span replaced by a hostile encoding: (mutation, path, new body)."""
        span = self.rng.choice(encoded.spans)
        body = encoded.body
        how, data = self._replacement(span, flexible, len(body) - span.end)
        return f"field:{span.kind}:{how}", span.path, body[:span.start] + data + body[span.end:]

    def _replacement(self, span: Span, flexible: bool, rest: int) -> tuple[str, bytes]:
        rng = self.rng
        kind = span.kind
        if kind in FIXED:
            value = rng.choice(_boundaries(kind, span.field_name))
            if kind == "bool":
                return f"bool={value}", bytes([int(value)])
            return f"{value}", FIXED[kind].pack(value)
        if kind == "uuid":
            return rng.choice([("zero", bytes(16)), ("random", rng.randbytes(16))])
        if kind == "count":
            return self._count(span, flexible, rest)
        if kind == "tags":
            return self._tags(rest)
        return self._sized(span, flexible, rest)

    def _count(self, span: Span, flexible: bool, rest: int) -> tuple[str, bytes]:
        choices = ["huge", "null", "negative", "past-end", "zero"]
        how = self.rng.choice(choices)
        if flexible:
            value = {"huge": INT32_MAX, "null": 0, "negative": 0xFFFFFFFF, "past-end": rest + 2, "zero": 1}[how]
            return f"count-{how}", uvarint(value)
        value = {"huge": INT32_MAX, "null": -1, "negative": -2, "past-end": rest + 1, "zero": 0}[how]
        return f"count-{how}", FIXED["int32"].pack(value)

    def _tags(self, rest: int) -> tuple[str, bytes]:
        rng = self.rng
        how = rng.choice(["unknown-tag", "size-past-end", "huge-count", "duplicate", "out-of-order", "huge-tag"])
        data = rng.randbytes(3)
        if how == "unknown-tag":
            return how, uvarint(1) + uvarint(9999) + uvarint(3) + data
        if how == "size-past-end":
            return how, uvarint(1) + uvarint(7777) + uvarint(rest + 50)
        if how == "huge-count":
            return how, uvarint(INT32_MAX)
        if how == "duplicate":
            return how, uvarint(2) + (uvarint(9000) + uvarint(3) + data) * 2
        if how == "out-of-order":
            return how, uvarint(2) + uvarint(9001) + uvarint(1) + b"x" + uvarint(9000) + uvarint(1) + b"y"
        return how, uvarint(1) + uvarint(0xFFFFFFFF) + uvarint(1) + b"z"

    def _sized(self, span: Span, flexible: bool, rest: int) -> tuple[str, bytes]:
        """A string, bytes or records value: its length or its content."""
        rng = self.rng
        width = 2 if span.kind == "string" else 4
        hows = ["negative-length", "length-past-end", "long", "invalid-utf8", "null", "empty", "huge-length"]
        if span.kind == "records":
            hows += ["corrupt-batch", "batch-length-lie", "record-count-lie", "garbage-records"]
        how = rng.choice(hows)

        def sized(data: bytes | None, length: int | None = None) -> bytes:
            n = (-1 if data is None else len(data)) if length is None else length
            if flexible:
                return uvarint(n + 1 if n >= 0 else (0 if n == -1 else 0xFFFFFFFF)) + (data or b"")
            return (FIXED["int16"] if width == 2 else FIXED["int32"]).pack(n) + (data or b"")

        if how == "negative-length":
            return how, sized(None, -2 if not flexible else -3)
        if how == "length-past-end":
            return how, sized(b"", rest + 5)
        if how == "huge-length":
            return how, sized(b"", INT32_MAX if width == 4 or flexible else 0x7FFF)
        if how == "long":
            n = rng.choice([250, 256, 1000, 40000]) if width == 4 or flexible else rng.choice([250, 256, 1000, 32767])
            return f"long-{n}", sized(b"x" * n)
        if how == "invalid-utf8":
            return how, sized(rng.choice([b"\xff\xfe", b"\xc3\x28", b"fuzz\xed\xa0\x80", b"\x00\x00"]))
        if how == "null":
            return ("null" if span.nullable else "null-not-nullable"), sized(None)
        if how == "empty":
            return how, sized(b"")
        return how, sized(self._bad_batch(how))

    def _bad_batch(self, how: str) -> bytes:
        batch = bytearray(valid_batch())
        if how == "corrupt-batch":  # a byte after the CRC changed: the CRC no longer matches
            batch[self.rng.randrange(21, len(batch))] ^= 0x40
        elif how == "batch-length-lie":  # batchLength (bytes 8-12)
            struct.pack_into(">i", batch, 8, self.rng.choice([-1, 0, 5, INT32_MAX, len(batch) * 2]))
        elif how == "record-count-lie":  # recordCount (bytes 57-61), CRC left stale
            struct.pack_into(">i", batch, 57, self.rng.choice([-1, 0, 3, INT32_MAX]))
        else:
            batch = bytearray(self.rng.randbytes(self.rng.randrange(1, 120)))
        return bytes(batch)

    def header(self, key: int, version: int, corr: int, body: bytes, flexible: bool) -> tuple[str, bytes]:
        rng = self.rng
        how = rng.choice(["unknown-api", "version-too-high", "negative-version", "client-id-past-end",
                          "client-id-negative", "header-tags-junk", "short-header", "client-id-invalid-utf8"])
        if how == "unknown-api":
            return how, encode_header(rng.choice([-1, 99, 1000, 32767]), version, corr, "fuzz", flexible) + body
        if how == "version-too-high":
            return how, encode_header(key, rng.choice([version + 40, 32767]), corr, "fuzz", flexible) + body
        if how == "negative-version":
            return how, encode_header(key, -1, corr, "fuzz", flexible) + body
        head = struct.pack(">hhi", key, version, corr)
        if how == "client-id-past-end":
            return how, head + struct.pack(">h", len(body) + 10) + b"fuzz"
        if how == "client-id-negative":
            return how, head + struct.pack(">h", -5) + body
        if how == "header-tags-junk" and flexible:
            return how, head + struct.pack(">h", 4) + b"fuzz" + uvarint(1) + uvarint(5) + uvarint(200) + body
        if how == "client-id-invalid-utf8":
            return how, head + struct.pack(">h", 2) + b"\xff\xfe" + (b"\x00" if flexible else b"") + body
        return "short-header", head[:rng.randrange(0, 9)]

    def bytes_level(self, payload: bytes) -> tuple[str, bytes]:
        rng = self.rng
        how = rng.choice(["flip", "truncate", "extend", "overwrite"])
        data = bytearray(payload)
        if how == "flip":
            n = rng.randint(1, 8)
            for _ in range(n):
                i = rng.randrange(8, len(data)) if len(data) > 8 else rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
            return f"flip-{n}", bytes(data)
        if how == "truncate":
            return how, bytes(data[:rng.randrange(0, len(data))])
        if how == "extend":
            return how, bytes(data) + rng.randbytes(rng.randint(1, 64))
        start = rng.randrange(len(data))
        run = rng.randbytes(rng.randint(1, 16))
        data[start:start + len(run)] = run
        return "overwrite", bytes(data)

    def size_lie(self, payload_len: int) -> tuple[str, int]:
        how = self.rng.choice(["shorter", "longer", "zero", "negative", "over-max"])
        value = {"shorter": max(0, payload_len - self.rng.randint(1, 8)), "longer": payload_len + self.rng.randint(1, 64),
                 "zero": 0, "negative": -self.rng.randint(1, 1 << 20), "over-max": 200 * 1024 * 1024}[how]
        return how, value
