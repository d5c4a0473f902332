"""A fuzzing campaign against one live `wirekafka serve` (issue 36, "Hostile input").

The broker has a PLAINTEXT listener and a SASL_PLAINTEXT (PLAIN) one; frames go to three listener
states in turn, a chunk at a time: plaintext, SASL before authentication, SASL after logging in.
After every chunk the broker must still be running and answer ApiVersions on a fresh connection.
The broker's resident memory is read before (after a warm-up round in which every served
(API, version) has been decoded once on every listener state, so that lazily built codecs are not
counted as growth) and after; its log is scanned for tracebacks and ERROR lines, which count as
findings even when the frame was answered.

Broker settings keep a valid request from waiting or piling up state: no automatic topic
creation, no initial rebalance delay, short group session timeouts allowed."""

from __future__ import annotations

import logging
import re
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from testsupport.broker_process import BrokerProcess, api_versions_ok, free_port
from wirekafka.protocol import served_versions

from faults.fuzz.frame_builder import Targets, encode_body, encode_header
from faults.fuzz.frame_source import FrameSource, served_pairs
from faults.fuzz.wire_driver import Connection, Driver, Listener, Stats

log = logging.getLogger(__name__)

TOPIC = "fuzz-topic"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="fuzzer" '
        'password="fuzzer-secret" user_fuzzer="fuzzer-secret";')
BROKER_LOG_FINDING = re.compile(r"\] (ERROR|CRITICAL) ")
NOISE = re.compile(r"correlation -?\d+ |from 127\.0\.0\.1:\d+ ")


@dataclass
class Report:
    seed: int
    stats: Stats
    seconds: float = 0.0
    rss_start_kb: int = 0
    rss_before_kb: int = 0  # after the warm-up round (after the last restart's, if the broker crashed)
    rss_after_kb: int = 0
    crashes: list[str] = field(default_factory=list)  # how the broker died, each time it did
    probes: int = 0
    probes_failed: int = 0
    log_findings: list[str] = field(default_factory=list)

    @property
    def rss_growth(self) -> float:
        return (self.rss_after_kb - self.rss_before_kb) / self.rss_before_kb if self.rss_before_kb else 0.0


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start_broker(workdir: Path) -> tuple[BrokerProcess, int]:
    """The broker under test, and its SASL_PLAINTEXT port."""
    plaintext, sasl = free_port(), free_port()
    broker = BrokerProcess(workdir / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1", "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "1",
        # Kafka's 100 ms pause before closing a failed login would hold the pre-authentication
        # frames (nearly all of which fail it) to 10 a second
        "connection.failed.authentication.delay.ms": "0"}, port=plaintext, log_path=workdir / "broker.log")
    broker.start()
    return broker, sasl


def send_request(port: int, cls: type, version: int, body: bytes) -> bytes:
    conn = Connection(port, 30.0)
    try:
        flexible = served_versions.request_header_is_flexible(cls.API_KEY, version)
        payload = encode_header(cls.API_KEY, version, 7, "fuzz-setup", flexible) + body
        conn.send(struct.pack(">i", len(payload)) + payload)
        answer = conn.read_frame()
        if answer is None:
            raise RuntimeError(f"the broker closed the connection on setup request {cls.name}")
        return answer[4 + flexible:]
    finally:
        conn.close()


def create_topic(port: int) -> Targets:
    """The campaign's topic (two partitions), and its id for the requests that name topics by id."""
    targets = Targets(TOPIC, bytes(16))
    request = CreateTopicsRequest.decode(encode_body(CreateTopicsRequest, 7, targets).body, version=7)
    request._header = None  # decode leaves it unset; encode reads it
    request.validate_only = False
    request.topics[0].num_partitions, request.topics[0].replication_factor = 2, 1
    request.topics[0].assignments, request.topics[0].configs = [], []
    body = bytes(request.encode(version=7))
    created = CreateTopicsResponse.decode(send_request(port, CreateTopicsRequest, 7, body), version=7)
    if created.topics[0].error_code != 0:
        raise RuntimeError(f"cannot create the campaign's topic: error {created.topics[0].error_code}")
    metadata = MetadataResponse.decode(send_request(port, MetadataRequest, 12, encode_body(MetadataRequest, 12, targets).body),
                                       version=12)
    topic = metadata.topics[0]
    if topic.error_code != 0:
        raise RuntimeError(f"the campaign's topic is not there: error {topic.error_code}")
    targets.topic_id = topic.topic_id.bytes if hasattr(topic.topic_id, "bytes") else bytes(topic.topic_id)
    return targets


def _exits_within(broker: BrokerProcess, seconds: float) -> bool:
    """Whether the broker process is gone, or goes within seconds (a dying process still holds
    its pid while it writes its last traceback)."""
    assert broker.proc is not None
    try:
        broker.proc.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def _crash(broker: BrokerProcess, since: int) -> str:
    """The exit code and the last traceback the broker logged before it died."""
    assert broker.proc is not None
    with open(broker.log_path, "rb") as f:
        f.seek(since)
        lines = f.read().decode("utf-8", "replace").splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback" in line]
    tail = lines[starts[-1]:] if starts else lines[-20:]
    return f"exit code {broker.proc.returncode}:\n" + "\n".join(tail[-40:])


def scan_log(path: Path, since: int) -> list[str]:
    """What the broker logged at ERROR or CRITICAL after byte offset since, one entry each: the
    message (peer and correlation id left out, so that entries group) and, under a traceback,
    the exception it ends with."""
    with open(path, "rb") as f:
        f.seek(since)
        lines = f.read().decode("utf-8", "replace").splitlines()
    entries: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            head = NOISE.sub("", current[0].split("] ", 1)[-1])
            tail = current[-1].strip() if len(current) > 1 else ""
            entries.append(f"{head} -> {tail}" if tail else head)
            current.clear()

    for line in lines:
        if line.startswith("["):
            flush()
            if BROKER_LOG_FINDING.search(line):
                current.append(line)
        elif current:
            current.append(line)
        elif "Traceback" in line:  # a traceback with no log line of its own (a dying process)
            current.append(line)
    flush()
    return entries


def run_campaign(workdir: Path, seed: int, frames: int, chunk: int = 1500, time_limit_s: float | None = None,
                 progress: Callable[[Report], None] | None = None) -> Report:
    """Send ``frames`` frames (fewer if time_limit_s runs out first) and report what happened."""
    workdir.mkdir(parents=True, exist_ok=True)
    broker, sasl_port = start_broker(workdir)
    stats = Stats()
    report = Report(seed, stats)
    try:
        assert broker.proc is not None
        pid = broker.proc.pid
        targets = create_topic(broker.port)
        log_start = broker.log_path.stat().st_size
        report.rss_start_kb = rss_kb(pid)
        listeners = [Listener("plaintext", broker.port), Listener("sasl-preauth", sasl_port, sasl=True),
                     Listener("sasl-authenticated", sasl_port, authenticate=True, sasl=True)]
        drivers = [Driver(lst, targets, stats) for lst in listeners]
        sources = [iter(FrameSource(seed * 3 + i, targets)) for i in range(len(listeners))]
        warmup = len(served_pairs())  # one round of every (API, version) per listener state
        started = time.monotonic()
        turn = 0
        baseline_turn = len(drivers)  # RSS "before" is read once every listener state had its warm-up
        while stats.frames < frames:
            if time_limit_s is not None and time.monotonic() - started > time_limit_s:
                break
            size = warmup if turn < len(drivers) else min(chunk, max(1, frames - stats.frames))
            i = turn % len(drivers)
            log_mark = broker.log_path.stat().st_size
            try:
                drivers[i].run(sources[i], size)
            except OSError as exc:  # refused or reset while connecting: is the broker dying?
                if not _exits_within(broker, 10.0):
                    raise
                log.warning("connection to the broker failed: %s", exc)
            turn += 1
            if turn == baseline_turn:
                report.rss_before_kb = rss_kb(pid)
            if not broker.alive():
                report.crashes.append(_crash(broker, log_mark))
                drivers[i].pending.clear()  # the frames it had were never processed
                broker.start()
                pid = broker.proc.pid
                baseline_turn = turn + len(drivers)  # RSS is compared within one process
                continue
            report.probes += 1
            if not api_versions_ok("127.0.0.1", broker.port, timeout=5.0):
                report.probes_failed += 1
            if progress is not None:
                report.seconds = time.monotonic() - started
                progress(report)
        report.seconds = time.monotonic() - started
        if broker.alive():
            report.rss_after_kb = rss_kb(pid)
        report.log_findings = scan_log(broker.log_path, log_start)
    finally:
        if broker.alive():
            broker.stop()
    return report
