"""Log compaction side by side: how far the cleaner bounds ``__consumer_offsets`` and how fast the
group coordinator reloads it, and the cleaner's own throughput on one input with the produce
latency it costs. Each runs on a fresh broker of its own (configured for it), removed afterwards.

The cleaner's figures are the broker's own: both log, after each cleaning round, Kafka's summary
"cleaned log <name> (dirty section = [a, b])" followed by "X MB of log processed in Y seconds"
(Kafka's log4j root logger writes it to broker.log under scripts/realkafka.py's configuration;
wirekafka's logger wirekafka.broker.replica.cleaner_scheduler to its log at INFO). Times in both logs are local
wall-clock times with milliseconds, which is how produce samples are matched to the cleaning.

Offset commits go over a raw socket (kafka-python's schema classes, pipelined on one connection):
a client library would spend more time than either broker.
"""

from __future__ import annotations

import logging
import random
import re
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kafka.protocol.consumer.group import (OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
                                           OffsetFetchResponse)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from scripts.benchlib.brokers import Broker
from scripts.benchlib.workloads import BASE, _producer_config, create_topic, delete_topic, new_topic_name, wait_for_leaders

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
#: Kafka 4's smallest segment.bytes (both brokers refuse less for a topic; offsets.topic.segment.bytes
#: sizes __consumer_offsets): the offsets partitions roll, so there is something to clean.
SEGMENT_BYTES = 1 << 20
#: A cleaner that rechecks every second instead of every 15 s: the runs wait less, figures unchanged.
CLEANER_BACKOFF_MS = 1000
BROKER_OVERRIDES = {"offsets.topic.segment.bytes": str(SEGMENT_BYTES),
                    "log.cleaner.backoff.ms": str(CLEANER_BACKOFF_MS)}
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


# ---- a raw, pipelined connection ----------------------------------------------------------------
class WireClient:
    def __init__(self, bootstrap: str, timeout: float = 60.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._cid = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, request: Any, version: int) -> int:
        self._cid += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._cid, client_id="bench")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        return self._cid

    def receive(self, response_cls: Any, version: int, cid: int) -> Any:
        (size,) = struct.unpack(">i", self._exact(4))
        payload = self._exact(size)
        (got,) = struct.unpack(">i", payload[:4])
        if got != cid:
            raise RuntimeError(f"correlation id {got}, expected {cid}")
        flexible = 1 if response_cls.flexible_version_q(version) else 0  # no tagged header fields
        return response_cls.decode(payload[4 + flexible:], version=version)

    def call(self, request: Any, response_cls: Any, version: int) -> Any:
        return self.receive(response_cls, version, self.send(request, version))

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            buf += chunk
        return bytes(buf)


def _retry(call: Callable[[], Any], code_of: Callable[[Any], int], deadline: float) -> Any:
    while True:
        result = call()
        if code_of(result) not in RETRIABLE or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


# ---- broker logs ----------------------------------------------------------------------------------
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]", re.M)


def log_records(path: Path, start: int = 0) -> list[tuple[float, str]]:
    """(wall time, text) of each log record from byte ``start`` on: a record is a line opening
    with ``[yyyy-mm-dd hh:mm:ss,mmm]`` and the lines after it up to the next such line."""
    with open(path, "rb") as fh:
        fh.seek(start)
        text = fh.read().decode(errors="replace")
    marks = list(_STAMP.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        wall = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp() + int(m.group(2)) / 1000
        out.append((wall, text[m.start():end]))
    return out


def log_size(path: Path) -> int:
    """A file's size, 0 if it is gone (a segment the cleaner deleted since it was listed)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


# ---- __consumer_offsets ---------------------------------------------------------------------------
@dataclass(frozen=True)
class OffsetsResult:
    broker: str
    commits: int
    commit_seconds: float
    raw_bytes: int            # what the commits wrote: the first round's bytes x the rounds
    stored_bytes: int         # __consumer_offsets segments once the cleaner settled
    settle_seconds: float     # last commit -> size settled
    ready_seconds: float | None   # restart -> every group's offsets fetched, exactly the last ones
    load_seconds: float | None    # the coordinator's own load time, from its log (Kafka: the slowest partition)
    verified: bool


def offsets_bytes(data_dir: Path) -> int:
    return sum(log_size(f) for f in data_dir.glob(f"{OFFSETS_TOPIC}-*/*.log"))  # 0 for files deleted meanwhile


def _commit_request(group: str, topic: str, partitions: int, offset: int) -> OffsetCommitRequest:
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                               topics=[T(name=topic, partitions=[
                                   T.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset + p,
                                                                  committed_metadata="")
                                   for p in range(partitions)])])


def _commit_rounds(client: WireClient, groups: list[str], topic: str, partitions: int, rounds: range,
                   window: int = 64) -> None:
    in_flight: deque[int] = deque()

    def settle_one() -> None:
        resp = client.receive(OffsetCommitResponse, 8, in_flight.popleft())
        bad = {p.error_code for t in resp.topics for p in t.partitions} - {0}
        if bad:
            raise RuntimeError(f"OffsetCommit errors {bad}")

    for r in rounds:
        for group in groups:
            in_flight.append(client.send(_commit_request(group, topic, partitions, r * 1000), 8))
            if len(in_flight) >= window:
                settle_one()
    while in_flight:
        settle_one()


def _fetch(client: WireClient, group: str, topic: str, partitions: int) -> tuple[int, dict[int, int]]:
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    req = OffsetFetchRequest(require_stable=False, groups=[G(group_id=group, member_id=None, member_epoch=-1, topics=[
        G.OffsetFetchRequestTopics(name=topic, partition_indexes=list(range(partitions)))])])
    (g,) = client.call(req, OffsetFetchResponse, 8).groups
    return g.error_code, {p.partition_index: p.committed_offset for t in g.topics for p in t.partitions}


def _find_coordinators(bootstrap: str, groups: list[str], deadline: float) -> None:
    client = WireClient(bootstrap)
    try:
        for group in groups:
            resp = _retry(lambda: client.call(FindCoordinatorRequest(key=group, key_type=0), FindCoordinatorResponse, 3),
                          lambda r: r.error_code, deadline)
            if resp.error_code:
                raise RuntimeError(f"FindCoordinator({group}): error {resp.error_code}")
    finally:
        client.close()


def _settle(data_dir: Path, quiet: float, deadline: float) -> int:
    """The offsets partitions' size once it has not changed for ``quiet`` seconds."""
    last, since = offsets_bytes(data_dir), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        size = offsets_bytes(data_dir)
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


def _load_seconds(broker: Broker, since: int) -> float | None:
    text = "".join(t for _, t in log_records(broker.log_path, since))
    mine = re.findall(r"loaded \d+ consumer groups from __consumer_offsets in (\d+) ms", text)
    if mine:
        return int(mine[-1]) / 1000
    kafka = re.findall(r"Finished loading of metadata from __consumer_offsets-\d+ with epoch \d+ in (\d+)ms", text)
    return max(map(int, kafka)) / 1000 if kafka else None  # all partitions' loads start together


def offsets_compaction(make_broker: Callable[[], Broker], groups: int, partitions: int, commits: int,
                       timeout: float) -> OffsetsResult:
    """``commits`` offset commits (``groups`` standalone groups, rounds of one OffsetCommit per
    group over ``partitions`` partitions), wait for the cleaner to settle, then a clean restart:
    how long until OffsetFetch answers every group with its last offsets."""
    broker = make_broker()
    broker.start()
    try:
        bootstrap = broker.bootstrap
        topic = new_topic_name("offsets")
        create_topic(bootstrap, topic, partitions)
        names = [f"bench-offsets-{i}" for i in range(groups)]
        _find_coordinators(bootstrap, names, time.monotonic() + timeout)
        rounds = max(1, commits // (groups * partitions))
        client = WireClient(bootstrap)
        try:
            t0 = time.monotonic()
            for group in names:  # the first commit of each group waits for its coordinator to be ready
                resp = _retry(lambda: client.call(_commit_request(group, topic, partitions, 0), OffsetCommitResponse, 8),
                              lambda r: max(p.error_code for t in r.topics for p in t.partitions),
                              time.monotonic() + timeout)
                if any(p.error_code for t in resp.topics for p in t.partitions):
                    raise RuntimeError(f"OffsetCommit({group}) failed: {resp}")
            round_bytes = offsets_bytes(broker.data_dir)  # one record per key, nothing cleaned yet
            _commit_rounds(client, names, topic, partitions, range(1, rounds))
            commit_seconds = time.monotonic() - t0
        finally:
            client.close()
        raw = round_bytes * rounds
        log.info("%s: %d commits in %.1fs, %.1f MB written; waiting for the cleaner", broker.name,
                 rounds * groups * partitions, commit_seconds, raw / 1e6)
        t0 = time.monotonic()
        stored = _settle(broker.data_dir, quiet=5 * CLEANER_BACKOFF_MS / 1000, deadline=t0 + timeout)
        settle_seconds = time.monotonic() - t0
        log.info("%s: __consumer_offsets settled at %.2f MB after %.1fs", broker.name, stored / 1e6, settle_seconds)

        broker.stop()
        mark = log_size(broker.log_path)
        t0 = time.monotonic()
        broker.restart()
        expected = {p: (rounds - 1) * 1000 + p for p in range(partitions)}
        verified, ready = True, None
        deadline = t0 + timeout
        client = WireClient(bootstrap)
        try:
            for group in names:
                code, got = _retry(lambda: _fetch(client, group, topic, partitions), lambda r: r[0], deadline)
                verified &= code == 0 and got == expected
            ready = time.monotonic() - t0
        finally:
            client.close()
        time.sleep(1.0)  # the load's own log line may follow the first answers (Kafka: other partitions)
        load = _load_seconds(broker, mark)
        log.info("%s: offsets fetched %.2fs after the restart (%s); coordinator load %s s", broker.name, ready,
                 "exact" if verified else "MISMATCH", load)
        return OffsetsResult(broker.name, rounds * groups * partitions, commit_seconds, raw, stored, settle_seconds,
                             ready, load, verified)
    finally:
        broker.stop()


# ---- the cleaner's throughput, and produce latency while it runs ----------------------------------
@dataclass(frozen=True)
class CleanerResult:
    broker: str
    input_bytes: int
    cleaned_mb: float         # "MB of log processed" summed over the rounds (MiB, as both print it)
    clean_seconds: float      # their seconds, summed
    rounds: int
    end_bytes: int            # the topic's segments once cleaned
    p50_idle: float | None
    p99_idle: float | None
    p50_cleaning: float | None
    p99_cleaning: float | None
    samples_cleaning: int

    @property
    def mb_per_second(self) -> float | None:
        return self.cleaned_mb / self.clean_seconds if self.clean_seconds > 0 else None


def _percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def _fill_keyed(bootstrap: str, topic: str, total_bytes: int, keys: int, value_size: int, timeout: float) -> int:
    """Keyed records (values of value_size bytes, keys drawn from ``keys``) until total_bytes of
    payload; the same sequence on every broker. Returns the records acked."""
    rng = random.Random(1234)
    values = [rng.randbytes(value_size) for _ in range(97)]
    count = max(1, total_bytes // value_size)
    errors = []
    producer = Producer(_producer_config(bootstrap, BASE, **{"delivery.report.only.error": True,
                                                              "on_delivery": lambda e, _m: errors.append(e)}))
    deadline = time.monotonic() + timeout
    for i in range(count):
        key = b"key-%08d" % rng.randrange(keys)
        while True:
            try:
                producer.produce(topic, values[i % len(values)], key=key, partition=0)
                break
            except BufferError:
                producer.poll(0.005)
        if i & 1023 == 0:
            producer.poll(0)
            if time.monotonic() > deadline:
                break
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if errors or left:
        log.warning("fill: %d delivery errors, %d unacknowledged", len(errors), left)
    return count - left - len(errors)


def _latency(bootstrap: str, topic: str, rate: float, payload: bytes, stop: Callable[[], bool],
             max_seconds: float) -> list[tuple[float, float]]:
    """(wall time sent, ms to the delivery report) of records sent at a fixed rate (acks=all,
    idempotent, linger 0, as the latency row) until ``stop()`` or max_seconds."""
    producer = Producer(_producer_config(bootstrap, BASE, **{"linger.ms": 0}))
    samples: list[tuple[float, float]] = []
    producer.produce(topic, payload, partition=0)
    producer.flush(10)
    interval = 1.0 / rate
    end = time.perf_counter() + max_seconds
    next_send = time.perf_counter()
    checked = 0.0
    while time.perf_counter() < end:
        if time.perf_counter() - checked > 0.2:
            checked = time.perf_counter()
            if stop():
                break
        while (wait := next_send - time.perf_counter()) > 0.001:
            producer.poll(wait)
        sent_at, wall = time.perf_counter(), time.time()

        def on_delivery(err: KafkaError | None, _msg: object, sent_at: float = sent_at, wall: float = wall) -> None:
            if err is None:
                samples.append((wall, (time.perf_counter() - sent_at) * 1000))

        producer.produce(topic, payload, partition=0, on_delivery=on_delivery)
        producer.poll(0)
        next_send += interval
    producer.flush(30)
    return samples


_CLEANED = r"cleaned log {name} \(dirty section = \[\d+, \d+\]\)"
_PROCESSED = re.compile(r"([\d,.]+) MB of log processed in ([\d,.]+) seconds")


def cleaner(make_broker: Callable[[], Broker], total_bytes: int, keys: int, value_size: int, rate: float,
            seconds: float, timeout: float) -> CleanerResult:
    """One partition of ``total_bytes`` of keyed records in 1 MiB segments under cleanup.policy=delete;
    produce latency on another topic for ``seconds`` (the cleaner idle); then the topic turns
    compact (IncrementalAlterConfigs) and the latency load runs again until the cleaner's first
    round on it ends. Throughput from the cleaner's own summary; latency samples sent between the
    round's first log line and its summary are the "while cleaning" ones."""
    broker = make_broker()
    broker.start()
    try:
        bootstrap = broker.bootstrap
        name = new_topic_name("cleaner")
        partition = f"{name}-0"
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "delete",
                                                          "segment.bytes": str(SEGMENT_BYTES)})])[name].result(30)
        wait_for_leaders(bootstrap, name, 1, 30)
        t0 = time.monotonic()
        acked = _fill_keyed(bootstrap, name, total_bytes, keys, value_size, timeout)
        input_bytes = sum(f.stat().st_size for f in (broker.data_dir / partition).glob("*.log"))
        log.info("%s: %d keyed records, %.1f MB of segments in %.1fs", broker.name, acked, input_bytes / 1e6,
                 time.monotonic() - t0)
        lat_topic = new_topic_name("cleaner-latency")
        create_topic(bootstrap, lat_topic, 1)
        payload = random.Random(7).randbytes(1024)
        try:
            idle = [ms for _, ms in _latency(bootstrap, lat_topic, rate, payload, lambda: False, seconds)]
            mark = log_size(broker.log_path)
            done = re.compile(_CLEANED.format(name=re.escape(partition)))
            cleaned_yet = lambda: bool(done.search("".join(t for _, t in log_records(broker.log_path, mark))))  # noqa: E731
            resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
                ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
            admin.incremental_alter_configs([resource])[resource].result(30)
            during = _latency(bootstrap, lat_topic, rate, payload, cleaned_yet, timeout)
        finally:
            delete_topic(bootstrap, lat_topic)
        time.sleep(2 * CLEANER_BACKOFF_MS / 1000)
        records = log_records(broker.log_path, mark)
        begin = re.compile(r"(?i)(beginning cleaning of log|building offset map for (log )?)" + re.escape(partition)
                           + r"\b")
        starts = [wall for wall, text in records if begin.search(text)]
        ends = [(wall, text) for wall, text in records if done.search(text)]
        mb = secs = 0.0
        for _, text in ends:
            m = _PROCESSED.search(text)
            if m:
                mb += float(m.group(1).replace(",", ""))
                secs += float(m.group(2).replace(",", ""))
        window = (starts[0], ends[0][0]) if starts and ends else None
        cleaning = [ms for wall, ms in during if window and window[0] <= wall <= window[1]]
        end_bytes = sum(log_size(f) for f in (broker.data_dir / partition).glob("*.log"))
        if not ends:
            log.warning("%s: no cleaning summary for %s in its log", broker.name, partition)
        log.info("%s: %d cleaning round(s), %.1f MB in %.1f s; %d samples while cleaning", broker.name, len(ends), mb,
                 secs, len(cleaning))
        return CleanerResult(broker.name, input_bytes, mb, secs, len(ends), end_bytes, _percentile(idle, 50),
                             _percentile(idle, 99), _percentile(cleaning, 50), _percentile(cleaning, 99),
                             len(cleaning))
    finally:
        broker.stop()


# ---- many distinct keys: the offset map's size in rounds ------------------------------------------
@dataclass(frozen=True)
class DistinctKeysResult:
    broker: str
    keys: int
    input_bytes: int
    cleaned_mb: float         # "MB of log processed" summed over the rounds (MiB)
    clean_seconds: float      # their seconds, summed
    rounds: int
    wall_seconds: float | None  # cleanup.policy=compact -> the whole log below the active segment cleaned
    end_bytes: int

    @property
    def mb_per_second(self) -> float | None:
        return self.cleaned_mb / self.clean_seconds if self.clean_seconds > 0 else None


def _fill_distinct(bootstrap: str, topic: str, keys: int, passes: int, value_size: int, timeout: float) -> int:
    """Every key of ``keys`` (13 bytes each) once per pass, in order: each pass supersedes the
    previous one. Returns the records acked."""
    value = random.Random(99).randbytes(value_size)
    errors = []
    producer = Producer(_producer_config(bootstrap, BASE, **{"delivery.report.only.error": True,
                                                              "on_delivery": lambda e, _m: errors.append(e)}))
    deadline = time.monotonic() + timeout
    for i in range(keys * passes):
        key = b"key-%09d" % (i % keys)
        while True:
            try:
                producer.produce(topic, value, key=key, partition=0)
                break
            except BufferError:
                producer.poll(0.005)
        if i & 4095 == 0:
            producer.poll(0)
            if time.monotonic() > deadline:
                raise RuntimeError(f"fill: {i:,} of {keys * passes:,} records sent in {timeout:g}s")
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if errors or left:
        raise RuntimeError(f"fill: {len(errors)} delivery errors, {left} unacknowledged")
    return keys * passes


#: The topic's min.cleanable.dirty.ratio once compact: with the default 0.5 a cleaner whose map
#: holds half the keys stops when the clean half outweighs the dirty one; this one goes on to the end.
DISTINCT_DIRTY_RATIO = 0.01
_DIRTY_SECTION = r"cleaned log {name} \(dirty section = \[\d+, (\d+)\]\)"


def distinct_keys(make_broker: Callable[[], Broker], keys: int, value_size: int, timeout: float,
                  passes: int = 2) -> DistinctKeysResult:
    """``keys`` distinct keys, each written ``passes`` times (all keys, then all again), on one
    partition under cleanup.policy=delete in 1 MiB segments; then the topic turns compact (with
    min.cleanable.dirty.ratio=0.01, so that rounds go on to the end) and the cleaner's rounds
    are followed in the broker's log until one ends at the active segment (the whole log
    cleaned). A map too small for the keys shows as more rounds, each rereading the
    log cleaned before it."""
    broker = make_broker()
    broker.start()
    try:
        bootstrap = broker.bootstrap
        name = new_topic_name("distinct")
        partition = f"{name}-0"
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "delete",
                                                          "segment.bytes": str(SEGMENT_BYTES)})])[name].result(30)
        wait_for_leaders(bootstrap, name, 1, 30)
        t0 = time.monotonic()
        records = _fill_distinct(bootstrap, name, keys, passes, value_size, timeout)
        pdir = broker.data_dir / partition
        segments = sorted(pdir.glob("*.log"))
        input_bytes = sum(log_size(f) for f in segments)
        active_base = int(segments[-1].name.split(".")[0])
        log.info("%s: %d records of %d distinct keys, %.1f MB of segments in %.1fs", broker.name, records, keys,
                 input_bytes / 1e6, time.monotonic() - t0)
        mark = log_size(broker.log_path)
        resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("min.cleanable.dirty.ratio", str(DISTINCT_DIRTY_RATIO),
                        incremental_operation=AlterConfigOpType.SET)])
        t0 = time.monotonic()
        admin.incremental_alter_configs([resource])[resource].result(30)
        ended = re.compile(_DIRTY_SECTION.format(name=re.escape(partition)))
        wall = None
        summaries: list[str] = []
        while time.monotonic() - t0 < timeout:
            summaries = [text for _, text in log_records(broker.log_path, mark) if ended.search(text)]
            if any(int(m.group(1)) >= active_base for m in map(ended.search, summaries) if m):
                wall = time.monotonic() - t0
                break
            time.sleep(0.5)
        else:
            log.warning("%s: the log was not fully cleaned within %gs", broker.name, timeout)
        mb = secs = 0.0
        for text in summaries:
            m = _PROCESSED.search(text)
            if m:
                mb += float(m.group(1).replace(",", ""))
                secs += float(m.group(2).replace(",", ""))
        end_bytes = sum(log_size(f) for f in pdir.glob("*.log"))
        log.info("%s: %d cleaning round(s), %.1f MiB in %.1f s (%s s to the end)", broker.name, len(summaries), mb,
                 secs, f"{wall:.1f}" if wall is not None else "not")
        return DistinctKeysResult(broker.name, keys, input_bytes, mb, secs, len(summaries), wall, end_bytes)
    finally:
        broker.stop()
