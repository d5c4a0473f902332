"""The campaign's stream of frames: every served (API, version) in turn, each valid or mutated,
deterministic from a seed.

Each frame carries the verdict of the broker's own codec on it (wirekafka.protocol.codec), taken
here before it is sent: a frame the codec refuses is malformed and a close is its expected answer;
a frame the codec accepts must be answered (or, for a Produce with acks=0, may go unanswered).
A mutation that leaves a request asking the broker to wait long (a Fetch max wait, a group's
rebalance timeout found by a bit flip) is drawn again: a long wait there is Kafka's behaviour,
not a hang, and it would hide real hangs behind it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from wirekafka.protocol import codec, served_versions

from faults.fuzz.frame_builder import Encoded, Targets, encode_body, encode_header
from faults.fuzz.mutators import FuzzFrame, Mutator

DELAY_ATTRS = ("max_wait_ms", "timeout_ms", "rebalance_timeout_ms", "session_timeout_ms")
MAX_DELAY_MS = 1000
PRODUCE = 0


def served_pairs() -> list[tuple[int, int]]:
    """Every (API key, version) the broker accepts on the wire."""
    return [(key, v) for key, (lo, hi) in sorted(served_versions.SERVED.items()) for v in range(lo, hi + 1)]


def codec_verdict(payload: bytes) -> tuple[bool, str, Any]:
    """(accepted, why not, decoded body) as the broker's codec sees the payload."""
    try:
        header = codec.parse_header(payload)
    except codec.ProtocolError as exc:
        return False, f"header: {exc}", None
    if not served_versions.is_served(header.api_key, header.api_version):
        if header.api_key == codec.API_VERSIONS_KEY:
            return True, "", None  # answered with UNSUPPORTED_VERSION at v0 (KIP-511)
        return False, "unsupported api/version", None
    try:
        return True, "", codec.decode_body(header, payload)
    except codec.ProtocolError as exc:
        return False, f"body: {str(exc)[:120]}", None


def _long_delay(body: Any) -> bool:
    for attr in DELAY_ATTRS:
        value = getattr(body, attr, None)
        if isinstance(value, int) and value > MAX_DELAY_MS:
            return True
    return False


class FrameSource:
    """Frames for one listener state. Weights: valid 10 %, field 55 %, header 5 %, bytes 29.5 %,
    size-prefix lies 0.5 % (each ends its connection)."""

    def __init__(self, seed: int, targets: Targets, pairs: list[tuple[int, int]] | None = None) -> None:
        self.rng = random.Random(seed)
        self.mutator = Mutator(self.rng)
        self.targets = targets
        self.pairs = list(pairs or served_pairs())
        self.rng.shuffle(self.pairs)
        self._bodies: dict[tuple[int, int], Encoded] = {}
        self.index = 0

    def _encoded(self, key: int, version: int) -> Encoded:
        cached = self._bodies.get((key, version))
        if cached is None:
            cached = self._bodies[(key, version)] = encode_body(served_versions.request_class(key), version, self.targets)
        return cached

    def __iter__(self) -> Iterator[FuzzFrame]:
        while True:
            yield self.next_frame()

    def next_frame(self) -> FuzzFrame:
        key, version = self.pairs[self.index % len(self.pairs)]
        corr = self.index & 0x7FFFFFFF
        self.index += 1
        for _ in range(8):
            frame = self._draw(key, version, corr)
            ok, reason, body = codec_verdict(frame.payload)
            if ok and _long_delay(body):
                continue
            silent = ok and body is not None and key == PRODUCE and getattr(body, "acks", None) == 0
            return FuzzFrame(frame.api_key, frame.version, frame.mutation, frame.path, frame.payload,
                             frame.announced_size, ok, reason, silent)
        return self._valid(key, version, corr)

    def _valid(self, key: int, version: int, corr: int) -> FuzzFrame:
        encoded = self._encoded(key, version)
        flexible = served_versions.request_header_is_flexible(key, version)
        return FuzzFrame(key, version, "valid", "", encode_header(key, version, corr, "fuzz", flexible) + encoded.body)

    def _draw(self, key: int, version: int, corr: int) -> FuzzFrame:
        rng = self.rng
        encoded = self._encoded(key, version)
        flexible = served_versions.request_header_is_flexible(key, version)
        header = encode_header(key, version, corr, "fuzz", flexible)
        roll = rng.random()
        if roll < 0.10:
            return FuzzFrame(key, version, "valid", "", header + encoded.body)
        if roll < 0.65 and encoded.spans:  # an empty body (ApiVersions v0) has no field to mutate
            how, path, body = self.mutator.field(encoded, served_versions.request_class(key).flexible_version_q(version))
            return FuzzFrame(key, version, how, path, header + body)
        if roll < 0.70:
            how, payload = self.mutator.header(key, version, corr, encoded.body, flexible)
            return FuzzFrame(key, version, f"header:{how}", "<header>", payload)
        if roll < 0.995:
            how, payload = self.mutator.bytes_level(header + encoded.body)
            return FuzzFrame(key, version, f"bytes:{how}", "", payload)
        payload = header + encoded.body
        how, size = self.mutator.size_lie(len(payload))
        return FuzzFrame(key, version, f"size:{how}", "<size>", payload, size)
