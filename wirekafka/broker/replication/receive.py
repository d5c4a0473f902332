"""Reading from a trio stream that is either plain TCP or TLS over it: the broker's connections
and its connections to other brokers both receive large frames into a preallocated buffer."""

from __future__ import annotations

import trio


async def receive_into(stream: trio.abc.Stream, view: memoryview) -> int:
    """Receive up to len(view) bytes into view; 0 at end of stream. Plain TCP receives straight
    into the buffer (one copy, from the kernel); TLS decrypts into bytes that are copied in."""
    if isinstance(stream, trio.SocketStream):
        return await stream.socket.recv_into(view)
    data = await stream.receive_some(len(view))
    view[:len(data)] = data
    return len(data)
