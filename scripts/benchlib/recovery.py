"""Crash recovery: fill one partition, SIGKILL the broker, restart it, time until it serves again.

Runs on a fresh broker of its own, so the recovery covers the one big log (plus each broker's
internal state), not whatever earlier rows left behind. Default flush settings on both brokers:
neither fsyncs per write, so the data survives the SIGKILL in the page cache but the broker did
not shut down cleanly and must recover (scan and validate) whatever lies past its recovery point.

A log longer than a segment (1 GiB, both brokers' default) is flushed by both at every roll, so
only the active segment is unflushed at the kill; the produce is sized so that segment holds
about ``unflushed`` bytes (Kafka's "100 GB in 1 GB segments, 100 MB unflushed").
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from scripts.benchlib.brokers import Broker, rss_mb, stored_bytes
from scripts.benchlib.workloads import BASE, create_topic, new_topic_name, produce

SEGMENT_BYTES = 1 << 30  # log.segment.bytes, both brokers' default

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecoveryResult:
    broker: str
    log_bytes: int             # segment bytes on disk when the broker was killed
    acked: int                 # records acknowledged before the kill
    api_seconds: float         # SIGKILL'd broker restarted -> ApiVersions answered
    ready_seconds: float | None  # ... -> partition leader available and end offset readable
    end_offset: int | None     # high watermark read back after the restart
    clean_ready_seconds: float | None  # then SIGTERM + restart -> readable: start-up cost alone
    active_segment_bytes: int  # the newest segment's size at the kill: what was unflushed
    segments: int              # segment files at the kill
    recovered_rss_mb: float | None  # broker RSS once readable after the kill -9 restart
    clean_rss_mb: float | None      # ... and after the clean restart


def run(make_broker: Callable[[], Broker], total_bytes: int, payloads: list[bytes], timeout: float,
        unflushed: int = 100 << 20) -> RecoveryResult:
    """Produce ``total_bytes`` of 1 KB records (acks=all, idempotent) into one partition (past a
    segment: that many whole segments and about ``unflushed`` bytes in the active one), kill -9, restart
    on the same log dir and port, and poll Metadata + ListOffsets until it answers; then the same
    after a clean shutdown. RSS is read once the partition is readable after each restart."""
    broker = make_broker()
    broker.start()
    try:
        topic = new_topic_name("recovery")
        create_topic(broker.bootstrap, topic, 1)
        t0 = time.monotonic()
        if total_bytes <= SEGMENT_BYTES:
            acked = _produce(broker, topic, total_bytes // BASE.record_size, payloads, t0 + timeout)
        else:
            acked = _fill_segments(broker, topic, total_bytes // SEGMENT_BYTES, unflushed, payloads, t0 + timeout)
        on_disk = stored_bytes(broker, topic)
        segments = _segments(broker, topic)
        active = segments[-1].stat().st_size if segments else 0
        log.info("%s: %d records acked, %.0f MB on disk in %d segments (the active one %.0f MB) in %.1fs; SIGKILL",
                 broker.name, acked, on_disk / 1e6, len(segments), active / 1e6, time.monotonic() - t0)
        broker.kill()
        t0 = time.monotonic()
        broker.restart()
        api_seconds = time.monotonic() - t0
        end = _wait_readable(broker.bootstrap, topic, t0 + timeout)
        ready = time.monotonic() - t0 if end is not None else None
        recovered_rss = rss_mb(broker.pid)
        log.info("%s: ApiVersions after %.2fs, partition readable after %s s, end offset %s (acked %d)",
                 broker.name, api_seconds, _secs(ready), end, acked)
        clean = clean_rss = None
        if ready is not None:
            # The same log after a clean shutdown: what start-up costs without recovery.
            broker.stop()
            t0 = time.monotonic()
            broker.restart()
            if _wait_readable(broker.bootstrap, topic, t0 + timeout) is not None:
                clean = time.monotonic() - t0
                clean_rss = rss_mb(broker.pid)
            log.info("%s: after a clean shutdown, partition readable after %s s", broker.name, _secs(clean))
        return RecoveryResult(broker.name, on_disk, acked, api_seconds, ready, end, clean, active, len(segments),
                              recovered_rss, clean_rss)
    finally:
        broker.stop()


def _produce(broker: Broker, topic: str, records: int, payloads: list[bytes], deadline: float) -> int:
    """``records`` 1 KB records into the topic's one partition; the count acknowledged."""
    if records <= 0:
        return 0
    _, acked = produce(broker.bootstrap, topic, replace(BASE, partitions=1, records=records), payloads, deadline)
    return acked


def _fill_segments(broker: Broker, topic: str, full: int, unflushed: int, payloads: list[bytes],
                   deadline: float) -> int:
    """``full`` rolled segments and about ``unflushed`` bytes in the active one; the records
    acknowledged. A first 256 MiB gives this log's segment bytes per record (batch headers
    included); the bulk stops short of the last roll by a MiB per segment (a roll leaves up to a
    batch of room unused), a produce rolls the last full segment, and once the broker's recovery
    point checkpoint covers every rolled segment (Kafka writes it every
    log.flush.offset.checkpoint.interval.ms, 60 s: until then a kill -9 recovers everything past
    the previous one) the tail lands in the active segment, unflushed."""
    acked = _produce(broker, topic, (256 << 20) // BASE.record_size, payloads, deadline)
    per_record = stored_bytes(broker, topic) / max(acked, 1)
    acked += _produce(broker, topic, int((full * SEGMENT_BYTES - full * (1 << 20)) / per_record) - acked, payloads,
                      deadline)
    segments = _segments(broker, topic)
    if len(segments) <= full:
        wanted = SEGMENT_BYTES - segments[-1].stat().st_size + (1 << 20)
        acked += _produce(broker, topic, int(wanted / per_record), payloads, deadline)
        segments = _segments(broker, topic)
    active = segments[-1]
    _wait_recovery_point(broker, topic, int(active.stem), deadline)
    return acked + _produce(broker, topic, int((unflushed - active.stat().st_size) / per_record), payloads, deadline)


def _segments(broker: Broker, topic: str) -> list[Path]:
    """The partition's segment files, oldest first (their names are zero-padded base offsets)."""
    return sorted(broker.data_dir.glob(f"{topic}-0/*.log"))


def _wait_recovery_point(broker: Broker, topic: str, offset: int, deadline: float) -> None:
    """Until the broker's recovery-point-offset-checkpoint (Kafka's file, in both brokers' log
    dir) holds at least ``offset`` for the partition."""
    path = broker.data_dir / "recovery-point-offset-checkpoint"
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines()[2:]:
                name, partition, point = line.split()
                if name == topic and partition == "0" and int(point) >= offset:
                    log.info("%s: recovery point %s checkpointed after %.1fs", broker.name, point, time.monotonic() - t0)
                    return
        time.sleep(0.5)
    raise TimeoutError(f"{broker.name}: the recovery point of {topic}-0 was not checkpointed at {offset}")


def _secs(value: float | None) -> str:
    return "> timeout" if value is None else f"{value:.2f}"


def _wait_readable(bootstrap: str, topic: str, deadline: float) -> int | None:
    """The partition's high watermark once Metadata names a leader and ListOffsets answers;
    None at the deadline. Short reconnect backoffs: librdkafka's default (up to 10 s) would be
    timed instead of the broker."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-recovery", "log_level": 3,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50,
                         "topic.metadata.refresh.interval.ms": 100})
    try:
        while time.monotonic() < deadline:
            try:
                md = consumer.list_topics(topic, timeout=1.0).topics.get(topic)
                part = md.partitions.get(0) if md is not None and md.error is None else None
                if part is not None and part.error is None and part.leader >= 0:
                    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=1.0)
                    return high
            except KafkaException as exc:
                log.debug("not ready yet: %s", exc)
            time.sleep(0.02)
        return None
    finally:
        consumer.close()
