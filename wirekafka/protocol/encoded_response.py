"""A response body encoded once by the schema codec and answered many times.

Why: some answers are the same for every asker until the state they describe changes, and
are costly to build and encode: Metadata for all topics is one struct per partition, about
40 ms at 3,000 partitions. Such an answer is encoded once and its bytes reused; each answer
is still its own object, so that a quota's throttle time set on one (the dispatcher sets it
by name) is that answer's alone and re-encodes it."""

from __future__ import annotations

from typing import Any


class EncodedResponse:
    """One answer of an encoded body. `body` is the schema object it was encoded from, for
    what reads an answer (the error counts of the metrics); never changed once encoded.
    `error_counts` holds the body's error codes once counted (code -> occurrences), shared by
    every answer of the body: an all-topics answer of 10,000 partitions took some 10 ms to walk,
    for every answer."""

    __slots__ = ("body", "payload", "version", "throttle_time_ms", "error_counts")

    def __init__(self, body: Any, version: int, payload: bytes | None = None,
                 error_counts: dict[int, int] | None = None) -> None:
        self.body = body
        self.version = version
        self.payload = body.encode(version=version) if payload is None else payload
        self.throttle_time_ms = 0
        self.error_counts = {} if error_counts is None else error_counts

    def again(self) -> EncodedResponse:
        """Another answer with the same bytes (and the same error counts)."""
        return EncodedResponse(self.body, self.version, self.payload, self.error_counts)

    def encode(self, version: int) -> bytes:
        if version != self.version:
            raise ValueError(f"encoded at version {self.version}, asked for {version}")
        if not self.throttle_time_ms:
            return self.payload
        kept = self.body.throttle_time_ms
        self.body.throttle_time_ms = self.throttle_time_ms
        try:
            return self.body.encode(version=version)
        finally:
            self.body.throttle_time_ms = kept

    def flexible_version_q(self, version: int) -> bool:
        return self.body.flexible_version_q(version)
