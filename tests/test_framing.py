"""FrameReader: size limits before allocation, small frames from fed chunks, large frames
received in place (the caller writes into the frame's own buffer)."""

from __future__ import annotations

import os
import struct

import pytest

from wirekafka.protocol.framing import FrameError, FrameReader, frame


def test_small_frames_across_chunk_boundaries() -> None:
    reader = FrameReader(1 << 20)
    stream = frame(b"first") + frame(b"") + frame(b"third")
    for i in range(0, len(stream), 3):
        reader.feed(stream[i:i + 3])
    assert [reader.next_frame(), reader.next_frame(), reader.next_frame(), reader.next_frame()] == \
        [b"first", b"", b"third", None]


def test_limits_are_checked_before_allocating() -> None:
    reader = FrameReader(100)
    reader.feed(struct.pack(">i", 101))
    with pytest.raises(FrameError):
        reader.next_frame()
    reader = FrameReader(100)
    reader.feed(struct.pack(">i", -1))
    with pytest.raises(FrameError):
        reader.next_frame()


def test_large_frame_is_received_in_place() -> None:
    payload = os.urandom(300_000)
    wire = frame(payload) + frame(b"next")
    reader = FrameReader(1 << 20, large_frame=1000)
    reader.feed(wire[:5000])  # the size and a first chunk arrive through feed()
    assert reader.next_frame() is None
    pos = 5000
    while (target := reader.large_frame_target()) is not None:
        n = min(len(target), 70_000)
        target[:n] = wire[pos:pos + n]  # what socket.recv_into does
        target.release()
        reader.large_frame_received(n)
        pos += n
        got = reader.next_frame()
        if got is not None:
            assert got == payload
            break
    reader.feed(wire[pos:])
    assert reader.next_frame() == b"next"
