"""FileRegion: a byte range of a segment file, to be sent to a socket without entering Python.

A fetch answer carries regions instead of record bytes; the connection hands each to
`os.sendfile` (the seeds' zero-copy transfer from page cache to socket). The region owns a
duplicate of the segment's file descriptor, so retention or a topic deletion closing the segment
while the response is still being sent cannot make it read from a reused descriptor."""

from __future__ import annotations

import os


class FileRegion:
    __slots__ = ("fd", "position", "length", "segment_base")

    def __init__(self, fd: int, position: int, length: int, segment_base: int = 0) -> None:
        self.fd = os.dup(fd)
        self.position = position
        self.length = length
        self.segment_base = segment_base  # base offset of the segment it was cut from

    def __len__(self) -> int:
        return self.length

    def warm(self) -> None:
        """Bring the range into the page cache without copying it to user space (worker thread):
        sendfile to /dev/null reads the pages and discards them, so the sendfile to the client
        that follows on the event loop does not wait for the disk."""
        sink = os.open(os.devnull, os.O_WRONLY)
        try:
            position, remaining = self.position, self.length
            while remaining > 0:
                sent = os.sendfile(sink, self.fd, position, remaining)
                if sent <= 0:
                    return
                position += sent
                remaining -= sent
        finally:
            os.close(sink)

    def read(self) -> bytes:
        """The bytes themselves, for callers that cannot send a file (tests, TLS, coordinators)."""
        return os.pread(self.fd, self.length, self.position)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a region dropped unsent must not leak its descriptor
        self.close()
