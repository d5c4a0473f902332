"""Start-up at scale: many partitions on one node, and what a big log costs to open.

Two measurements (issue 38):

- ``run_partitions`` (both brokers): a fresh broker, N partitions (topics of 1,000), one record
  produced to each, then a clean stop (SIGTERM) and a restart, then a SIGKILL and a restart: the
  seconds until ApiVersions is answered and until ListOffsets answers every partition, and the RSS
  once ready.
- ``run_log_open`` (wirekafka only, in-process on the storage classes): a log of ``log_bytes`` in
  1 GiB segments of ~4 KB batches (an index entry each, as near Kafka's 4 KiB spacing as batches
  get), then the seconds to open it after a clean shutdown, after a crash with the recovery
  point at the active segment's base (what a kill -9 leaves), and with every segment to recover;
  and the memory of its offset and time indexes once every entry has been read (tracemalloc),
  per GiB of log.
"""

from __future__ import annotations

import logging
import shutil
import signal
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from scripts.benchlib.brokers import Broker, rss_mb
from scripts.benchlib.report import Report
from scripts.benchlib.workloads import create_topic, new_topic_name
from wirekafka.protocol import records
from wirekafka.protocol.records import build_batch, parse_header
from wirekafka.storage.log import LogConfig, PartitionLog

log = logging.getLogger(__name__)

GIB = 1 << 30
TOPIC_PARTITIONS = 1000  # partitions per CreateTopics: 10,000 in one request outlast the client's timeout


@dataclass(frozen=True)
class PartitionsResult:
    broker: str
    partitions: int
    shutdown_seconds: float               # SIGTERM -> exited (a clean shutdown)
    clean_api_seconds: float
    clean_ready_seconds: float | None     # clean restart -> every partition's ListOffsets answered
    clean_rss_mb: float | None
    killed_api_seconds: float
    killed_ready_seconds: float | None    # kill -9, restart -> the same
    killed_rss_mb: float | None


def run_partitions(make_broker: Callable[[], Broker], partitions: int, timeout: float) -> PartitionsResult:
    """N partitions (in topics of TOPIC_PARTITIONS) with a record each; clean restart, then
    kill -9 and restart, each timed."""
    broker = make_broker()
    broker.start()
    try:
        placed = []
        for first in range(0, partitions, TOPIC_PARTITIONS):
            topic, count = new_topic_name("startup"), min(TOPIC_PARTITIONS, partitions - first)
            create_topic(broker.bootstrap, topic, count, timeout=timeout)
            placed += [TopicPartition(topic, p) for p in range(count)]
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50, "log_level": 3})
        for tp in placed:
            producer.produce(tp.topic, b"v" * 100, partition=tp.partition)
            producer.poll(0)
        if producer.flush(timeout) != 0:
            raise RuntimeError("records to every partition not acknowledged in time")
        figures: list[tuple[float, float | None, float | None]] = []
        shutdown = 0.0
        for how in ("clean", "killed"):
            if how == "clean":
                shutdown = _stop_patiently(broker, timeout)
            else:
                broker.kill()
            t0 = time.monotonic()
            broker.restart()
            api = time.monotonic() - t0
            ready_ok = _wait_all_readable(broker.bootstrap, placed, t0 + timeout)
            ready = time.monotonic() - t0 if ready_ok else None
            rss = rss_mb(broker.pid)
            log.info("%s: %d partitions, %s restart: ApiVersions %.2fs, all readable %s s, RSS %s MB",
                     broker.name, partitions, how, api, "> timeout" if ready is None else f"{ready:.2f}", rss)
            figures.append((api, ready, rss))
        (c_api, c_ready, c_rss), (k_api, k_ready, k_rss) = figures
        return PartitionsResult(broker.name, partitions, shutdown, c_api, c_ready, c_rss, k_api, k_ready, k_rss)
    finally:
        broker.stop()


def _stop_patiently(broker: Broker, timeout: float) -> float:
    """SIGTERM and wait up to timeout for the exit (Broker.stop kills after 30 s, which thousands
    of partitions' checkpoints can outlast: the restart would then be a crash's); the seconds."""
    t0 = time.monotonic()
    proc = getattr(broker, "proc", None) or getattr(getattr(broker, "kafka", None), "proc", None)
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout)
    seconds = time.monotonic() - t0
    broker.stop()  # closes its log; the process has exited
    log.info("%s: clean shutdown took %.2fs", broker.name, seconds)
    return seconds


def _wait_all_readable(bootstrap: str, placed: list[TopicPartition], deadline: float) -> bool:
    """True once one ListOffsets (latest) round answers every partition without an error."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50})
    wanted = {tp: OffsetSpec.latest() for tp in placed}
    while time.monotonic() < deadline:
        try:
            futures = admin.list_offsets(wanted, request_timeout=max(1.0, min(30.0, deadline - time.monotonic())))
            if all(f.result().offset >= 1 for f in futures.values()):
                return True
        except KafkaException:
            pass
        time.sleep(0.05)
    return False


@dataclass(frozen=True)
class LogOpenResult:
    log_bytes: int
    segments: int
    index_entries: int
    clean_seconds: float
    crashed_seconds: float        # recovery point at the active segment's base (kill -9)
    full_recovery_seconds: float  # recovery point 0: every segment re-validated
    index_mib_per_gib: float      # offset + time index columns, every entry read, per GiB of log


def run_log_open(workdir: Path, log_bytes: int, segment_bytes: int = GIB) -> LogOpenResult:
    """Write the log, then open it three ways (see the module docstring); the directory is
    removed afterwards."""
    directory = workdir / "startup-log-0"
    shutil.rmtree(directory, ignore_errors=True)
    config = LogConfig(segment_bytes=segment_bytes)
    try:
        plog = PartitionLog(directory, config)
        ts, payload = 1_700_000_000_000, b"x" * 1000
        while plog.size_bytes < log_bytes:
            ts += 1  # a newer max timestamp every batch: a time index entry with each offset entry
            batch = bytearray(build_batch([(None, payload, ts)] * 4))
            records.assign_offsets(batch, plog.log_end_offset, 0)
            plog.append([batch], parse_header(batch))
        end, segments = plog.log_end_offset, len(plog.segments)
        active_base = plog.active.base_offset
        plog.flush()
        plog.close()
        seconds = []
        for recovery_point, clean in ((end, True), (active_base, False), (0, False)):
            t0 = time.perf_counter()
            opened = PartitionLog(directory, config, recovery_point=recovery_point, clean_shutdown=clean)
            seconds.append(time.perf_counter() - t0)
            if opened.log_end_offset != end:
                raise RuntimeError(f"opened at {opened.log_end_offset}, expected {end}")
            opened.close()
        entries, per_gib = _index_memory(directory, config, end, ts)
        log.info("opened %.1f GiB: clean %.2fs, crashed %.2fs, full recovery %.2fs",
                 log_bytes / GIB, *seconds)
        return LogOpenResult(log_bytes, segments, entries, seconds[0], seconds[1], seconds[2], per_gib)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _index_memory(directory: Path, config: LogConfig, end: int, last_timestamp: int) -> tuple[int, float]:
    """(offset index entries, MiB per GiB of log) that a cleanly opened log holds, traced from
    before the open until every segment's offset and time index has answered a look-up (an
    index that reads its entries lazily has then read them all)."""
    tracemalloc.start()
    try:
        opened = PartitionLog(directory, config, recovery_point=end, clean_shutdown=True)
        for seg in opened.segments:
            seg.index.lookup(end)
            seg.time_index.lookup(last_timestamp)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    entries = sum(len(s.index) for s in opened.segments)
    log.info("log of %d bytes: %d offset index entries, %d bytes held once opened and looked up (tracemalloc)",
             opened.size_bytes, entries, held)
    per_gib = held / (1 << 20) / (opened.size_bytes / GIB)
    opened.close()
    return entries, per_gib


def report_rows(report: Report, partitions: list[PartitionsResult], opened: LogOpenResult | None) -> None:
    """Put the figures into the bench's table (Report.set: workload, metric, broker, value)."""
    for r in partitions:
        workload = f"start-up: one node, {r.partitions:,} partitions with a record each"
        report.set(workload, "clean shutdown (SIGTERM -> exit), s", r.broker, r.shutdown_seconds, "lower", 2)
        report.set(workload, "clean restart -> ApiVersions answered, s", r.broker, r.clean_api_seconds, "lower", 2)
        report.set(workload, "clean restart -> every partition's ListOffsets answered, s", r.broker,
                   r.clean_ready_seconds, "lower", 2)
        report.set(workload, "RSS after the clean restart, MB", r.broker, r.clean_rss_mb, "lower", 0)
        report.set(workload, "kill -9, restart -> every partition's ListOffsets answered, s", r.broker,
                   r.killed_ready_seconds, "lower", 2)
        report.set(workload, "RSS after the kill -9 restart, MB", r.broker, r.killed_rss_mb, "lower", 0)
    if opened is not None:
        workload = (f"open a {opened.log_bytes / GIB:.1f} GiB log ({opened.segments} segments, "
                    f"{opened.index_entries:,} index entries), in-process")
        report.set(workload, "after a clean shutdown, s", "wirekafka", opened.clean_seconds, "lower", 3)
        report.set(workload, "after kill -9 (recovery point at the active segment), s", "wirekafka",
                   opened.crashed_seconds, "lower", 2)
        report.set(workload, "every segment recovered, s", "wirekafka", opened.full_recovery_seconds, "lower", 2)
        report.set(workload, "index memory, MiB per GiB of log (all entries read)", "wirekafka",
                   opened.index_mib_per_gib, "lower", 2)
