"""Size-prefixed frames: a 4-byte big-endian length, then that many bytes.

Sans-I/O: the caller feeds bytes in and takes whole frames out. The declared size is checked
against the limit before any buffer for the frame is allocated, so a hostile length prefix
cannot make the broker reserve memory (Kafka's `socket.request.max.bytes`)."""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The peer sent a frame that violates the framing rules; the connection must close."""


class FrameReader:
    """Accumulates stream bytes and yields complete frame payloads."""

    def __init__(self, max_frame_size: int) -> None:
        self._max = max_frame_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self) -> bytes | None:
        """The next whole frame payload, or None until more bytes arrive."""
        if len(self._buf) < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buf, 0)
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > self._max:
            raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes={self._max}")
        end = 4 + size
        if len(self._buf) < end:
            return None
        frame = bytes(self._buf[4:end])
        del self._buf[:end]
        return frame

    @property
    def pending(self) -> int:
        return len(self._buf)


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
