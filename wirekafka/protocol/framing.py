"""Size-prefixed frames: a 4-byte big-endian length, then that many bytes.

Sans-I/O: the caller feeds bytes in and takes whole frames out. The declared size is checked
against the limit before any buffer for the frame is allocated, so a hostile length prefix
cannot make the broker reserve memory (Kafka's `socket.request.max.bytes`).

Large frames (a produce request of many batches) are not accumulated chunk by chunk: once the size
is known the frame gets its own buffer and `large_frame_target()` hands the caller the empty part
of it to receive into directly (socket recv_into), so the bytes are copied once, by the kernel.

A frame of HUGE_FRAME bytes or more is received into an anonymous memory mapping rather than a
bytearray: a bytearray is zero-filled when made, and for 100 MB that is ~200 ms of page faults
and zeroing on the event loop (measured) before a byte is received; a mapping's pages are faulted
in by the kernel as the data arrives, chunk by chunk.

`next_frame_size()` tells the caller how big the next frame is as soon as its length is read and
before its buffer is allocated, so the request memory pool can be asked first (server/memory_pool)."""

from __future__ import annotations

import mmap
import struct

_SIZE = struct.Struct(">i")
LARGE_FRAME = 1 << 16  # frames at least this big are received in place
# frames at least this big are received into a mapping: below it glibc serves (and reuses) the
# buffer from the heap, as server/allocator.py sets its mmap threshold, with no fresh pages
HUGE_FRAME = 16 << 20
Frame = bytes | bytearray | mmap.mmap


class FrameError(Exception):
    """The peer sent a frame that violates the framing rules; the connection must close."""


class FrameReader:
    """Accumulates stream bytes and yields complete frame payloads."""

    def __init__(self, max_frame_size: int, large_frame: int = LARGE_FRAME, huge_frame: int = HUGE_FRAME) -> None:
        self._max = max_frame_size
        self._large_threshold = large_frame
        self._huge_threshold = huge_frame
        self._buf = bytearray()
        self._large: bytearray | mmap.mmap | None = None  # a large frame being received in place
        self._filled = 0

    def feed(self, data: bytes | bytearray) -> None:
        self._buf += data

    def set_max_frame_size(self, size: int) -> None:
        """Change the largest frame accepted from now on (a SASL connection's limit rises once
        it is authenticated)."""
        self._max = size

    def large_frame_target(self) -> memoryview | None:
        """Where the rest of a large frame goes (receive straight into it), or None."""
        return memoryview(self._large)[self._filled:] if self._large is not None else None

    def large_frame_received(self, n: int) -> None:
        self._filled += n

    def next_frame_size(self) -> int | None:
        """The size of the next frame once its length prefix is here (checked against the limit,
        raising FrameError), None before; nothing is allocated for the frame yet."""
        if self._large is not None:
            return len(self._large)
        if len(self._buf) < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buf, 0)
        self._check(size)
        return size

    def _check(self, size: int) -> None:
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > self._max:
            raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes={self._max}")

    def next_frame(self) -> Frame | None:
        """The next whole frame payload, or None until more bytes arrive."""
        if self._large is not None:
            if self._filled < len(self._large):
                return None
            frame, self._large = self._large, None
            return frame
        if len(self._buf) < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buf, 0)
        self._check(size)
        end = 4 + size
        if len(self._buf) < end:
            if size >= self._large_threshold:
                self._large = mmap.mmap(-1, size) if size >= self._huge_threshold else bytearray(size)
                self._filled = len(self._buf) - 4
                self._large[: self._filled] = memoryview(self._buf)[4:]
                self._buf.clear()
            return None
        with memoryview(self._buf) as view:
            frame = bytes(view[4:end])
        del self._buf[:end]
        return frame


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
