"""The broker process's heap policy: freed request buffers stay in the heap for the next request.

A produce request of about 1 MB is received into a buffer of its size, and the schema decoder
copies its records out into a new bytes object of about the same size. With glibc's defaults both
are served by mmap, or trimmed off the top of the heap once freed, so every request faults in
about 2 MB of fresh zeroed pages: measured, ~200,000 minor page faults and ~1 s of kernel CPU per
500 MB produced, a third of the broker's CPU. On a virtual machine whose host takes freed guest
memory back (free page reporting), each of those faults also costs the host a fault, and produce
throughput halved whenever the memory had been idle for a second. With the mmap and trim
thresholds raised, those buffers come from, and return to, the heap: ~500 faults per 500 MB.

Apache Kafka keeps its buffers in a JVM heap sized at start, so this is the same trade: a few
tens of MB held after a burst (bounded by the trim threshold) for no page faults per request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
_M_MMAP_THRESHOLD = -3

# Allocations below this come from the heap (glibc caps it at 32 MiB on 64-bit). It covers every
# request up to message.max.bytes' default many times over; only rare huge frames are mmapped.
MMAP_THRESHOLD = 16 << 20
# Free memory at the top of the heap is given back to the system only beyond this: room for the
# buffers of several connections' requests in flight at once.
TRIM_THRESHOLD = 64 << 20


def keep_freed_buffers() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; False where there is no glibc
    mallopt (another C library), which leaves the defaults in place."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        log.debug("no mallopt in %s: the C library's heap defaults stay", name)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if not ok:
        log.warning("mallopt refused the heap thresholds: each large request faults in fresh pages")
    return ok
