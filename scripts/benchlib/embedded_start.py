"""Embedded start: how long `wirekafka.embedded.Broker().start()` takes until the broker answers
an ApiVersions request over TCP, wirekafka only (issue 37: at most 0.5 s).

- in a warm process: the median (and worst) of N starts and stops of fresh brokers, one after
  another in this process, once wirekafka's modules are imported (an unmeasured first start
  imports them);
- cold: a new `python -c` that imports wirekafka.embedded, starts a Broker and exchanges
  ApiVersions: wall time from spawning the interpreter to the answer (interpreter start and
  imports included), the median of a few runs.

For scale, testcontainers' Kafka and Redpanda modules start a broker container in about 5 to
15 s (and need Docker): a figure quoted from their users' reports, not measured here."""

from __future__ import annotations

import logging
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

from scripts.benchlib.brokers import REPO
from scripts.benchlib.netprobe import api_versions_frame, read_api_versions_response
from scripts.benchlib.report import Report

log = logging.getLogger(__name__)

QUOTED_CONTAINER_START = "~5–15 s (quoted: testcontainers Kafka/Redpanda, needs Docker; not measured)"

_COLD = """
import socket, sys, time
from wirekafka.embedded import Broker
from scripts.benchlib.netprobe import api_versions_frame, read_api_versions_response
with Broker() as broker:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(api_versions_frame(1))
        read_api_versions_response(sock, 1)
    sys.stdout.write("answered\\n")
    sys.stdout.flush()
"""


@dataclass(frozen=True)
class EmbeddedStart:
    warm_median_s: float    # starts in a process that has imported wirekafka's modules
    warm_max_s: float
    warm_starts: int
    cold_median_s: float    # `python -c` import + start + answer, from spawn
    cold_runs: int


def _answered(bootstrap: str) -> None:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(api_versions_frame(1))
        read_api_versions_response(sock, 1)


def _one_start() -> float:
    from wirekafka.embedded import Broker

    t0 = time.perf_counter()
    broker = Broker().start()
    try:
        _answered(broker.bootstrap_servers)
        return time.perf_counter() - t0
    finally:
        broker.stop()


def _cold_start(python: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen([python, "-c", _COLD], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    if proc.wait(60) != 0 or line.strip() != "answered":
        raise RuntimeError(f"the cold start exited {proc.returncode} without an answer")
    return elapsed


def run(starts: int = 20, cold_runs: int = 3, python: str = sys.executable) -> EmbeddedStart:
    _one_start()  # imports the broker's modules
    warm = [_one_start() for _ in range(starts)]
    cold = [_cold_start(python) for _ in range(cold_runs)]
    log.info("embedded start: warm median %.3f s, cold median %.3f s", statistics.median(warm),
             statistics.median(cold))
    return EmbeddedStart(statistics.median(warm), max(warm), starts, statistics.median(cold), cold_runs)


def report_rows(report: Report, figures: EmbeddedStart, reference: str | None) -> None:
    """The figures under wirekafka; testcontainers' quoted start time in the reference column
    (marked as quoted: nothing is measured there) and in the notes."""
    workload = "embedded broker: Broker().start() -> ApiVersions answered"
    report.set(workload, f"in a warm process, median of {figures.warm_starts}, s", "wirekafka",
               figures.warm_median_s, "lower", 3)
    report.set(workload, f"in a warm process, worst of {figures.warm_starts}, s", "wirekafka",
               figures.warm_max_s, "lower", 3)
    report.set(workload, f"cold `python -c`: interpreter + import + start, median of {figures.cold_runs}, s",
               "wirekafka", figures.cold_median_s, "lower", 2)
    if reference is not None:
        report.set(workload, "for scale: a broker container's start", reference, QUOTED_CONTAINER_START, "", 0)
    report.note(f"embedded start: for scale, {QUOTED_CONTAINER_START}.")
