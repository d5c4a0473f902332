"""Crash recovery: fill one partition, SIGKILL the broker, restart it, time until it serves again.

Runs on a fresh broker of its own, so the recovery covers the one big log (plus each broker's
internal state), not whatever earlier rows left behind. Default flush settings on both brokers:
neither fsyncs per write, so the data survives the SIGKILL in the page cache but the broker did
not shut down cleanly and must recover (scan and validate) whatever lies past its recovery point.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from scripts.benchlib.brokers import Broker, stored_bytes
from scripts.benchlib.workloads import BASE, create_topic, new_topic_name, produce

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


def run(make_broker: Callable[[], Broker], total_bytes: int, payloads: list[bytes], timeout: float) -> RecoveryResult:
    """Produce ``total_bytes`` of 1 KB records (acks=all, idempotent) into one partition, kill -9,
    restart on the same log dir and port, and poll Metadata + ListOffsets until it answers."""
    broker = make_broker()
    broker.start()
    try:
        topic = new_topic_name("recovery")
        create_topic(broker.bootstrap, topic, 1)
        spec = replace(BASE, partitions=1, records=max(1, total_bytes // BASE.record_size))
        t0 = time.monotonic()
        _, acked = produce(broker.bootstrap, topic, spec, payloads, t0 + timeout)
        on_disk = stored_bytes(broker, topic)
        log.info("%s: %d records acked, %.0f MB on disk in %.1fs; SIGKILL", broker.name, acked, on_disk / 1e6,
                 time.monotonic() - t0)
        broker.kill()
        t0 = time.monotonic()
        broker.restart()
        api_seconds = time.monotonic() - t0
        end = _wait_readable(broker.bootstrap, topic, t0 + timeout)
        ready = time.monotonic() - t0 if end is not None else None
        log.info("%s: ApiVersions after %.2fs, partition readable after %s s, end offset %s (acked %d)",
                 broker.name, api_seconds, _secs(ready), end, acked)
        clean = None
        if ready is not None:
            # The same log after a clean shutdown: what start-up costs without recovery.
            broker.stop()
            t0 = time.monotonic()
            broker.restart()
            if _wait_readable(broker.bootstrap, topic, t0 + timeout) is not None:
                clean = time.monotonic() - t0
            log.info("%s: after a clean shutdown, partition readable after %s s", broker.name, _secs(clean))
        return RecoveryResult(broker.name, on_disk, acked, api_seconds, ready, end, clean)
    finally:
        broker.stop()


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
