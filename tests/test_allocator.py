"""The broker's heap policy: a stream of ~1 MB request buffers stops faulting in fresh pages.

Each case runs in its own interpreter, since the policy is process-wide and the count is the
process's minor page faults."""

from __future__ import annotations

import subprocess
import sys

CHURN = """
import resource, sys
from wirekafka.server.allocator import keep_freed_buffers
if sys.argv[1] == "tuned":
    assert keep_freed_buffers()

def churn():
    # what one produce request allocates: its frame, and the records the decoder copies out
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(REQUESTS):
        frame = bytearray(1_000_000)
        records = bytes(memoryview(frame)[64:])
        del frame, records
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

churn()  # the heap grows once
print(churn())
"""
REQUESTS = 200
PAGES_PER_REQUEST = 2 * 1_000_000 // 4096


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", CHURN.replace("REQUESTS", str(REQUESTS)), mode],
                         check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1])


def test_default_heap_faults_in_every_request_buffer() -> None:
    """The cost the policy removes (glibc's defaults): fresh pages for most of every request."""
    assert _faults("default") > REQUESTS * PAGES_PER_REQUEST // 4


def test_tuned_heap_reuses_request_buffers() -> None:
    assert _faults("tuned") < REQUESTS * PAGES_PER_REQUEST // 100
