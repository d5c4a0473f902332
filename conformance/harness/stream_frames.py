"""Reading size-prefixed Kafka frames from a trio stream (the proxy's and the replayer's only
framing need: one whole frame at a time, EOF between frames is a clean close)."""

from __future__ import annotations

import struct

import trio

_SIZE = struct.Struct(">i")
MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default


class FrameStream:
    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buf = bytearray()

    async def _fill(self, n: int) -> bool:
        """At least n bytes buffered (True), or EOF first (False)."""
        while len(self._buf) < n:
            chunk = await self._stream.receive_some(max(65536, n - len(self._buf)))
            if not chunk:
                return False
            self._buf += chunk
        return True

    async def next_frame(self) -> bytes | None:
        """The next frame without its size prefix; None at a clean EOF. A frame cut short by
        EOF, or a size no Kafka peer would send, raises ConnectionError."""
        if not await self._fill(4):
            if self._buf:
                raise ConnectionError("connection closed inside a frame size")
            return None
        (size,) = _SIZE.unpack_from(self._buf, 0)
        if not 0 <= size <= MAX_FRAME:
            raise ConnectionError(f"bad frame size {size}")
        if not await self._fill(4 + size):
            raise ConnectionError("connection closed inside a frame")
        frame = bytes(self._buf[4:4 + size])
        del self._buf[:4 + size]
        return frame
