#!/usr/bin/env python3
"""wirekafka next to Apache Kafka 4.3.1: one command starts both on loopback, runs the same
confluent-kafka and raw-socket workloads against each, stops them and prints one markdown table
(both figures and the ratio wirekafka/Kafka per row). It asserts nothing.

    .venv/bin/python scripts/bench.py                      # everything, both brokers (~11 min)
    .venv/bin/python scripts/bench.py --quick              # tiny counts: a smoke test (~2 min)
    .venv/bin/python scripts/bench.py --only tput-base,latency --no-kafka --out table.md
    .venv/bin/python scripts/bench.py --only cluster-produce,cluster-failover     # 3-broker clusters

Both brokers run for the whole session and each workload runs against one broker at a time,
wirekafka then Kafka, so slow drifts of a shared machine hit both alike. Kafka is started by
scripts/realkafka.py (512 MB heap); wirekafka by ``python -m wirekafka serve
config/server.properties`` with the listener and log.dirs overridden. Neither fsyncs per write
(defaults). Progress goes to stderr (logging); the table goes to stdout.

Rows (``--only`` takes a comma-separated list of these ids):

  throughput       all tput-* rows: produce MB/s (first send -> last delivery report, all
                   producers; the median of 3 produces into fresh topics, the brokers taking
                   turns; the first one's topic is kept for the reads) and consume MB/s (one
                   assign()ed consumer reading it all back, fetch.queue.backoff.ms=10: see
                   workloads.consume; the median of 9 reads, the brokers taking turns, and the
                   broker's CPU seconds per GB of payload delivered over the 9 reads, from
                   /proc/<pid>/stat), then the same 9 reads with 8 MiB partition fetches
                   (max.partition.fetch.bytes; librdkafka's default is 1 MiB).
                   Base: 1 KB records, 3 partitions, 1 producer, acks=all, idempotent, no
                   compression, linger 5 ms, batch 1 MB. Each row varies one dimension:
    tput-base, tput-100b, tput-1p, tput-64p, tput-8prod, tput-acks1 (not idempotent: librdkafka
    requires acks=all for that), tput-lz4, tput-zstd
  txn-1prod, txn-8prod  100 MB of 1 KB records in transactions of 100 records over 3 partitions,
                   by 1 or 8 transactional producers: produce MB/s and commit_transaction() p50 /
                   p99, then read_committed consume MB/s and broker CPU per GB at both fetch sizes
                   (the median of 9 reads each, the brokers taking turns, as above)
  latency          1 KB records at a fixed rate (default 1,000/s for 10 s), acks=all, linger 0;
                   p50 / p99 / p99.9 of produce() -> delivery report
  rss              broker RSS from /proc/<pid>/status: after start-up, peak (VmHWM) over the
                   run, and idle after the workloads (for Kafka the JVM's)
  connect          100 raw TCP connections each completing an ApiVersions v0 exchange, wall time
                   (median of 3): as a burst (all connect, then all answered) and one at a time
  idle-conns       RSS growth with 1,000 idle connections open (one ApiVersions exchange each)
  bombs            four concurrent zstd batches of ~8 KB, each one record inflating to 192 MiB with a
                   timestamp 10 days ahead, sent while a bystander produces (benchlib/bombs.py): the
                   error codes, RSS growth, the bystander's worst ack before and during them
  syscalls         strace on the broker while one consumer reads ~100 MB back: file bytes read
                   into user space, sendfile calls, socket writes, per MB delivered
  recovery         fresh broker, ~1 GB (--recovery-bytes) into one partition, SIGKILL, restart on
                   the same log dir: seconds until ApiVersions is answered, and until Metadata
                   names a leader and ListOffsets answers; the end offset is checked against the
                   acked count. Then the same after a clean restart of that log; RSS after each.
                   A log past one 1 GiB segment (--recovery-bytes 100G: the issue's 100 GB row)
                   is produced on until its active segment, the one neither broker flushed yet,
                   holds about --recovery-unflushed (100M). The sides run one after the other,
                   each log removed before the next is written; too little free disk skips it.
  startup          fresh broker per side (benchlib/startup.py): 10,000 (--startup-partitions)
                   partitions (topics of 1,000) with a record each, clean restart and kill -9
                   restart: seconds until ListOffsets answers every partition, RSS after; and
                   in-process, wirekafka only: a 2 GiB (--startup-bytes) log of ~4 KB batches
                   opened after a clean shutdown / a kill -9 / with every segment recovered, and
                   its index memory per GiB of log
  loop-stall       in-process, wirekafka only (benchlib/loop_stall.py): a 1 ms timer on the event
                   loop while 3,000 (--stall-partitions) partitions become leaders in a new epoch
                   and their epoch checkpoints are written, then while a retention pass expires
                   all of them: the operation's seconds, the timer's p99 and worst lateness
  metadata-answer  in-process, wirekafka only (benchlib/metadata_answer.py): the Metadata handler
                   answering all topics at v12 over 10,000 (--answer-partitions) partitions of a
                   ZooKeeper broker's view (topics of 100, replication 3): whole (no cache), first
                   (parts built), after one partition's state changed, after every topic's
                   changed, unchanged; median ms of handling and encoding
  large-request    fresh broker with socket.request.max.bytes and message.max.bytes at 200 MiB
                   (benchlib/large_request.py): one raw 100 MB Produce request (one batch of 1 MiB
                   records) while a producer sends 1 KB records at 200/s, acks=all, linger 0: that
                   producer's worst produce->ack during the big request, and its round trip
  offsets-compaction  fresh broker with offsets.topic.segment.bytes=1 MiB (Kafka 4's smallest
                   segment) and log.cleaner.backoff.ms=1000: 1,000,000 (--offsets-commits) offset
                   commits from 10 standalone groups over 100 partitions (raw OffsetCommit v8,
                   pipelined); __consumer_offsets size on disk once the cleaner settled, then a
                   clean restart: seconds until OffsetFetch answers every group with exactly its
                   last offsets, and the coordinator's load time from the broker's log (Kafka:
                   the longest of its per-partition "Finished loading ... in X ms")
  cleaner          fresh broker (same settings): one partition of 100 MB (--cleaner-mb) of 256 B
                   records over 50,000 keys in 1 MiB segments under cleanup.policy=delete, then
                   turned compact: the cleaner's MB/s from its own round summary ("X MB of log
                   processed in Y seconds", Kafka's and wirekafka's), and produce->ack p50/p99 on
                   another topic (1 KB at the latency rate) with the cleaner idle vs during that
                   round (samples sent between the round's first log line and its summary)
  distinct-keys    fresh broker (same settings): 10,000,000 (--distinct-keys) distinct keys of 13 B,
                   each written twice (32 B values) to one partition in 1 MiB segments, then turned
                   compact: the cleaner's MB/s over its rounds (their summaries), how many rounds it
                   took to clean the whole log (the offset map's size: each round rereads what was
                   cleaned before), and seconds from the switch to the last round's summary
  embedded         in-process, wirekafka only (benchlib/embedded_start.py): Broker().start() until
                   ApiVersions is answered, median and worst of 20 (--embedded-starts) starts in a
                   warm process, and a cold `python -c` (interpreter, imports, start: median of 3);
                   testcontainers' Kafka/Redpanda start (~5-15 s, Docker) quoted beside it, not measured

With --metrics, the rows on the long-running brokers also run on a second wirekafka that serves
the Prometheus endpoint (wirekafka.metrics.listener), scraped every 5 s as a Prometheus server
would; its column comes first, so the ratio column reads metrics on / metrics off (add --no-kafka
to leave Kafka out: its column would otherwise follow, outside the ratio):

    .venv/bin/python scripts/bench.py --metrics --no-kafka --only tput-base,tput-100b

Cluster rows run last, on 3-broker clusters of their own: a wirekafka cluster (three `wirekafka
serve` processes, testsupport/cluster.py) and a Kafka 3.9.1 ZooKeeper-mode cluster
(realkafka.start_zk_cluster, 512 MB heap each), one after the other, each on its own chroot of one
ZooKeeper 3.8.4 (scripts/zookeeper.py); both with Kafka's defaults where they matter and the same
settings (benchlib/cluster_rows.py: CLUSTER_CONFIG; zookeeper.session.timeout.ms 6000). The single-node
brokers above are not started when only cluster rows are chosen.

  cluster-produce  a topic of 3 partitions, replication factor 3, min.insync.replicas=2: the
                   throughput base load (acks=all, idempotent, 1 KB, linger 5 ms; --cluster-mb,
                   default 200 MB) as MB/s and records/s, then the latency row's load (1 KB at the
                   latency rate, linger 0) on another such topic: produce->ack p50 / p99
  cluster-txn      a topic of 3 partitions (replication 3, min.insync.replicas=2, their leaders spread
                   over the brokers): one transactional producer, 50 MB of 1 KB records in
                   transactions of 100 over the 3 partitions: produce MB/s and commit_transaction()
                   p50 / p99 (its markers go to three leaders, two of them not the coordinator)
  cluster-failover a 1-partition topic (replication 3, min.insync.replicas=2) led by a broker that
                   is not the controller, a producer sending one record every ~5 ms (acks=all,
                   idempotent, linger 0); kill -9 of the leader; seconds until its ZooKeeper
                   session expired, until a new leader was written to ZooKeeper, and until the
                   first record sent after the kill was acknowledged (median of 9 runs,
                   --failover-runs; the killed broker is restarted between runs)
  cluster-scale    only with --only (it takes minutes per partition count): per partition count
                   of --scale-partitions (default 1000,3000), a fresh cluster per side
                   (benchlib/cluster_scale.py): topics of --scale-topic-partitions (100)
                   partitions, replication 3, min.insync.replicas=2, in one CreateTopics request:
                   seconds until it is answered, until every partition has a leader in ZooKeeper
                   and until an acks=all record was acknowledged on each (8 producers, each
                   partition through one: librdkafka sends a partition per request and Kafka
                   answers a connection's requests one at a time); Metadata (all topics)
                   p50 / p99 of 50 requests; the largest broker RSS; kill -9 of the controller:
                   seconds until a new one is in ZooKeeper and until every partition acknowledged a
                   record sent after the kill, then restarted: until every ISR is full; the same
                   kill and restart of the non-controller leading most partitions (about a third);
                   per step, ZooKeeper's packets (mntr) and wirekafka's event-loop lateness p99 /
                   max per broker (its /metrics, on for this row). Every wait is bounded by
                   --scale-timeout (600 s) and reported as a timeout if reached
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import confluent_kafka

if not __package__:  # run as a file (`python scripts/bench.py`): siblings are imported as scripts.*,
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # from the repository root
from scripts import realkafka  # noqa: E402
from scripts.benchlib import (bombs, cluster_rows, cluster_scale, compaction, embedded_start,  # noqa: E402
                              large_request, loop_stall, metadata_answer, netprobe, recovery, startup, syscalls,
                              transactions, workloads)
from scripts.benchlib.brokers import (HOST, REPO, Broker, KafkaBroker, WirekafkaBroker,  # noqa: E402
                                      peak_rss_mb, rss_mb)
from scripts.benchlib.report import Report  # noqa: E402
from scripts.benchlib.workloads import BASE, LoadSpec  # noqa: E402

log = logging.getLogger("bench")

#: Throughput rows: id -> (what differs from the base, how); record counts are set from --mb.
THROUGHPUT: dict[str, tuple[str, Callable[[LoadSpec], LoadSpec]]] = {
    "tput-base": ("base: 1 KB, 3 partitions, 1 producer, acks=all, no compression", lambda s: s),
    "tput-100b": ("100 B records", lambda s: replace(s, record_size=100)),
    "tput-1p": ("1 partition", lambda s: replace(s, partitions=1)),
    "tput-64p": ("64 partitions", lambda s: replace(s, partitions=64)),
    "tput-8prod": ("8 producers", lambda s: replace(s, producers=8)),
    "tput-acks1": ("acks=1 (not idempotent)", lambda s: replace(s, acks="1")),
    "tput-lz4": ("lz4 compression", lambda s: replace(s, compression="lz4")),
    "tput-zstd": ("zstd compression", lambda s: replace(s, compression="zstd")),
}
#: Transactional rows: id -> producers; 1 KB records, TXN_RECORDS per transaction, 3 partitions.
TRANSACTIONAL: dict[str, int] = {"txn-1prod": 1, "txn-8prod": 8}
TXN_RECORDS = 100
#: the recovery row's disk need: one broker's log at a time (removed before the next starts), plus room
RECOVERY_DISK_FACTOR = 1.1
RECOVERY_DISK_SPARE = 4 << 30
#: the slowest produce rate (bytes/s) the recovery row's deadline allows for (one 1 KB producer)
RECOVERY_PRODUCE_FLOOR = 50e6
#: max.partition.fetch.bytes of the consume rows' second series of reads (librdkafka's default: 1 MiB)
LARGE_PARTITION_FETCH = 8 * 1024 * 1024
CLUSTER_ROWS = ["cluster-produce", "cluster-txn", "cluster-failover", "cluster-scale"]
#: Cluster rows that share one cluster per side (cluster-scale starts fresh ones).
SHARED_CLUSTER_ROWS = {"cluster-produce", "cluster-txn", "cluster-failover"}
OTHER_ROWS = [*TRANSACTIONAL, "latency", "rss", "connect", "idle-conns", "bombs", "syscalls", "recovery", "startup",
              "loop-stall", "metadata-answer", "large-request", "offsets-compaction", "cleaner", "distinct-keys",
              "embedded", *CLUSTER_ROWS]
ROW_IDS = [*THROUGHPUT, *OTHER_ROWS]
#: Rows a run without --only leaves out: cluster-scale alone would take longer than the rest.
OPT_IN_ROWS = {"cluster-scale"}
#: Rows on the two long-running single-node brokers (the others start brokers of their own).
LONG_RUNNING_ROWS = {*THROUGHPUT, *TRANSACTIONAL, "latency", "rss", "connect", "idle-conns", "bombs", "syscalls"}


@dataclass(frozen=True)
class Settings:
    """Sizes of every load. With 200 MB throughput rows a full run took 4 minutes on a busy
    2-core machine; the defaults (500 MB) should stay well under the 20 minutes allowed."""

    mb: float = 500               # payload MB per 1 KB throughput row
    txn_mb: float = 100           # payload MB per transactional row
    small_mb: float = 100         # payload MB for the 100 B row (client-bound: 10x the records per MB)
    latency_rate: float = 1000
    latency_seconds: float = 10
    connections: int = 100
    idle_connections: int = 1000
    syscall_mb: float = 100
    recovery_bytes: int = 1 << 30
    recovery_unflushed: int = 100 << 20
    load_timeout: float = 180     # seconds any single produce/consume may take
    settle: float = 3.0           # idle seconds before an RSS reading
    offsets_commits: int = 1_000_000  # offset commits: 10 groups x 100 partitions x 1,000 rounds
    cleaner_mb: float = 100       # payload MB the cleaner row compacts
    distinct_keys: int = 10_000_000  # keys of the distinct-keys row (each written twice)
    cluster_mb: float = 200       # payload MB of cluster-produce's throughput load
    cluster_txn_mb: float = 50    # payload MB of cluster-txn's transactions
    cluster_timeout: float = 60   # seconds that load may take
    failover_runs: int = 9        # kills per cluster in cluster-failover (the median is reported)
    stall_partitions: int = 3000  # partitions of the loop-stall row
    answer_partitions: int = 10_000  # partitions of the metadata-answer row
    startup_partitions: int = 10_000  # partitions of the startup row
    startup_bytes: int = 2 << 30  # log size the startup row opens in-process
    embedded_starts: int = 20     # warm starts of the embedded row
    scale_partitions: tuple[int, ...] = (1000, 3000)  # partition counts of cluster-scale, a fresh cluster each
    scale_topic_partitions: int = 100  # partitions per topic in cluster-scale
    scale_timeout: float = 600    # seconds any one wait of cluster-scale may take
    scale_kafka_heap: str = "512m"  # each Kafka broker's heap in cluster-scale (10,000 partitions need more)
    scale_sides: tuple[str, ...] = ("wirekafka", "kafka")  # the clusters cluster-scale runs


QUICK = Settings(mb=5, small_mb=1, txn_mb=1, latency_rate=200, latency_seconds=2, syscall_mb=5,
                 recovery_bytes=50 << 20, load_timeout=60, settle=1.0, offsets_commits=20_000, cleaner_mb=5,
                 distinct_keys=20_000,
                 cluster_mb=5, cluster_txn_mb=1, failover_runs=1, stall_partitions=300, answer_partitions=1000,
                 startup_partitions=300, startup_bytes=64 << 20, embedded_starts=5, scale_partitions=(300,))
OFFSETS_GROUPS, OFFSETS_PARTITIONS = 10, 100
CLEANER_KEYS, CLEANER_VALUE_BYTES = 50_000, 256
DISTINCT_VALUE_BYTES = 32


def parse_size(text: str) -> int:
    """'1G', '500M', '64k' or a plain byte count (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)[iI]?[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def parse_only(text: str) -> set[str]:
    chosen: set[str] = set()
    for item in filter(None, (t.strip() for t in text.split(","))):
        if item == "throughput":
            chosen.update(THROUGHPUT)
        elif item in ROW_IDS:
            chosen.add(item)
        else:
            raise argparse.ArgumentTypeError(f"unknown row {item!r}; choose from throughput, {', '.join(ROW_IDS)}")
    return chosen


def parse_counts(text: str) -> tuple[int, ...]:
    """'1000,3000' -> (1000, 3000): positive counts."""
    try:
        counts = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of counts: {text!r}") from None
    if not counts or min(counts) <= 0:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of positive counts: {text!r}")
    return counts


def mb_text(nbytes: float) -> str:
    return f"{nbytes / (1 << 30):.2f} GiB" if nbytes >= 1 << 30 else f"{nbytes / (1 << 20):.0f} MiB"


def _delete_produced(produced: dict[str, tuple[Broker, workloads.ProducedTopic]]) -> None:
    """Delete each broker's topic of a row once its reads are done (or failed)."""
    for broker, p in produced.values():
        with contextlib.suppress(Exception):
            workloads.delete_topic(broker.bootstrap, p.topic)


class Bench:
    """Runs the selected rows against each broker in turn and fills the report."""

    def __init__(self, settings: Settings, report: Report, workdir: Path) -> None:
        self.s = settings
        self.report = report
        self.workdir = workdir
        self.brokers: list[Broker] = []
        self._payloads: dict[int, list[bytes]] = {}
        self.start_rss: dict[str, float | None] = {}

    def payloads(self, size: int) -> list[bytes]:
        if size not in self._payloads:
            self._payloads[size] = workloads.make_payloads(size)
        return self._payloads[size]

    def each(self, what: str, fn: Callable[[Broker], None], reverse: bool = False) -> None:
        """Run ``fn`` on every broker (the other way round with ``reverse``); a failure costs that
        broker's cells, not the run.

        Each broker starts a row with the page cache's dirty data written back: otherwise the
        one that runs second writes while the kernel flushes the first one's data, and the
        writeback throttling it meets is the other broker's (one row read 0.47x this way)."""
        for broker in reversed(self.brokers) if reverse else self.brokers:
            workloads.settle_writeback()
            log.info("== %s on %s", what, broker.name)
            try:
                fn(broker)
            except Exception as exc:  # noqa: BLE001 - reported in the table's notes
                log.exception("%s failed on %s", what, broker.name)
                self.report.note(f"{what} failed on {broker.name}: {type(exc).__name__}: {exc}")

    # -- rows on the long-running brokers ------------------------------------------------------

    def run_throughput(self, row_id: str) -> None:
        label, vary = THROUGHPUT[row_id]
        spec = vary(BASE)
        mb = self.s.small_mb if spec.record_size < 1024 else self.s.mb
        spec = replace(spec, records=max(spec.producers, int(mb * 1e6 / spec.record_size)))
        workload = f"{label} ({spec.records:,} records)"

        produced: dict[str, tuple[Broker, workloads.ProducedTopic]] = {}  # the topic each broker's reads use
        rates: dict[str, list[float]] = {}

        def produce_one(broker: Broker) -> None:
            p = workloads.produce_topic(broker, spec, self.payloads(spec.record_size), self.s.load_timeout)
            rates.setdefault(broker.name, []).append(p.produce_mbps)
            if p.acked < spec.records:
                self.report.note(f"{row_id} on {broker.name}: {p.acked:,} of {spec.records:,} acked within the time limit")
            if broker.name in produced:
                workloads.delete_topic(broker.bootstrap, p.topic)
            else:
                produced[broker.name] = (broker, p)

        try:
            # The brokers take turns, in the opposite order every other round, as the reads do.
            for round_ in range(workloads.PRODUCE_RUNS):
                self.each(row_id, produce_one, reverse=round_ % 2 == 1)
            for name, mbps in rates.items():
                if len(mbps) == workloads.PRODUCE_RUNS:
                    self.report.set(workload, f"produce MB/s (median of {workloads.PRODUCE_RUNS})", name,
                                    statistics.median_low(mbps))
            self._read_back(row_id, workload, spec.partitions, produced)
        finally:
            _delete_produced(produced)

    def _read_back(self, row_id: str, workload: str, partitions: int,
                   produced: dict[str, tuple[Broker, workloads.ProducedTopic]],
                   isolation: str = "read_uncommitted", metric: str = "consume MB/s") -> None:
        """CONSUME_READS reads of each broker's topic at the client's default fetch sizes, then as
        many with 8 MiB partition fetches, the brokers taking turns (in the opposite order every
        other round), so a drift of the machine over the row — the first read after a produce is
        slower on both — falls on both alike; the median read is the figure, beside the median of
        the broker's CPU seconds per GB delivered over all the reads. One read of 500 MB takes
        about half a second, bound by the client's Python loop, so the CPU per GB is what tells the
        brokers apart; summed over the reads, as /proc counts CPU in 10 ms ticks."""
        workloads.settle_writeback()
        for fetch_bytes, fetches in ((None, ""), (LARGE_PARTITION_FETCH, ", 8 MiB partition fetches")):
            reads = self._reads(row_id, partitions, produced, isolation, fetch_bytes)
            for broker, p in produced.values():
                if len(reads[broker.name]) < workloads.CONSUME_READS:
                    continue
                of = f"median of {workloads.CONSUME_READS} reads"
                self.report.set(workload, f"{metric}{fetches} ({of})", broker.name,
                                workloads.median_read(reads[broker.name]).mbps)
                self.report.set(workload, f"broker CPU s per GB delivered{fetches} (all {workloads.CONSUME_READS} reads)",
                                broker.name, workloads.cpu_per_gb(reads[broker.name]), better="lower", decimals=3)
                fewest = min(r.records for r in reads[broker.name])
                if fewest < p.acked:
                    self.report.note(f"{row_id}{fetches} on {broker.name}: a read got {fewest:,} of {p.acked:,} "
                                     "records within the time limit")

    def _reads(self, row_id: str, partitions: int, produced: dict[str, tuple[Broker, workloads.ProducedTopic]],
               isolation: str, partition_fetch_bytes: int | None) -> dict[str, list[workloads.Read]]:
        """CONSUME_READS interleaved reads of each broker's topic; a broker whose read failed reads
        no more (its cells stay empty, the failure is in the notes)."""
        reads: dict[str, list[workloads.Read]] = {name: [] for name in produced}
        turns = list(produced.values())
        for round_ in range(workloads.CONSUME_READS):
            for broker, p in turns if round_ % 2 == 0 else reversed(turns):
                if len(reads[broker.name]) < round_:
                    continue
                try:
                    reads[broker.name].append(workloads.read_back(broker, p, partitions, self.s.load_timeout,
                                                                  isolation, partition_fetch_bytes))
                except Exception as exc:  # noqa: BLE001 - reported in the table's notes
                    log.exception("%s read failed on %s", row_id, broker.name)
                    self.report.note(f"{row_id} read failed on {broker.name}: {type(exc).__name__}: {exc}")
        return reads

    def run_transactional(self, row_id: str) -> None:
        producers = TRANSACTIONAL[row_id]
        records = int(self.s.txn_mb * 1e6 / 1024)
        workload = (f"transactions: 1 KB, {TXN_RECORDS} records each, 3 partitions, {producers} producer"
                    f"{'s' if producers > 1 else ''} ({records:,} records)")

        produced: dict[str, tuple[Broker, workloads.ProducedTopic]] = {}

        def one(broker: Broker) -> None:
            r = transactions.transactional(broker, producers, records, TXN_RECORDS, self.payloads(1024),
                                           self.s.load_timeout)
            produced[broker.name] = (broker, r.produced)
            self._put_transactional(workload, row_id, broker.name, r, records, "the time limit")

        try:
            self.each(row_id, one)
            self._read_back(row_id, workload, transactions.PARTITIONS, produced, "read_committed",
                            "read_committed consume MB/s")
        finally:
            _delete_produced(produced)

    def run_latency(self) -> None:
        s = self.s
        workload = f"latency: 1 KB at {s.latency_rate:,.0f}/s for {s.latency_seconds:g} s, acks=all, linger 0"

        def one(broker: Broker) -> None:
            r = workloads.latency(broker.bootstrap, s.latency_rate, s.latency_seconds, 1024, self.payloads(1024))
            for label, p in (("p50", 50), ("p99", 99), ("p99.9", 99.9)):
                self.report.set(workload, f"produce->ack {label} ms", broker.name, r.percentile(p), "lower", 2)
            if len(r.samples_ms) < r.sent:
                self.report.note(f"latency on {broker.name}: {len(r.samples_ms):,} of {r.sent:,} records acked")
            log.info("%s: latency over %d samples, mean %.2f ms", broker.name, len(r.samples_ms),
                     statistics.fmean(r.samples_ms) if r.samples_ms else float("nan"))

        self.each("latency", one)

    def run_connect(self) -> None:
        n = self.s.connections
        workload = f"{n} new connections, one ApiVersions each (median of 3)"

        def one(broker: Broker) -> None:
            r = netprobe.connect_times(HOST, _port(broker), n)
            self.report.set(workload, "burst (all connect, then all answered), ms", broker.name,
                            r.burst_seconds * 1000, "lower", 1)
            self.report.set(workload, "one at a time, ms", broker.name, r.sequential_seconds * 1000, "lower", 1)
            if r.overflows:
                self.report.note(f"connect on {broker.name}: the kernel dropped {r.overflows} SYNs to a full "
                                 "accept queue during the bursts (TcpExt ListenOverflows, whole namespace); "
                                 "each costs that client a 1 s retransmit")

        self.each("connect", one)

    def run_idle_connections(self) -> None:
        n = self.s.idle_connections
        workload = f"{n:,} idle connections (one ApiVersions each)"

        def one(broker: Broker) -> None:
            delta = netprobe.idle_connections_rss_delta_mb(HOST, _port(broker), broker.pid, n, self.s.settle)
            self.report.set(workload, "RSS growth MB", broker.name, delta, "lower", 1)
            if delta is not None:
                self.report.set(workload, "RSS growth KB per connection", broker.name, delta * 1024 / n, "lower", 1)

        self.each("idle-conns", one)

    def run_syscalls(self) -> None:
        if syscalls.strace_path() is None:
            self.report.note("syscalls: not measured, strace is not installed (scripts/install_system_deps.sh)")
            return
        spec = replace(BASE, records=max(1, int(self.s.syscall_mb * 1e6 / BASE.record_size)))
        workload = f"consume {spec.records * spec.record_size / 1e6:,.0f} MB under strace (per MB delivered)"

        def one(broker: Broker) -> None:
            topic, acked = workloads.fill_topic(broker.bootstrap, spec, self.payloads(spec.record_size),
                                                self.s.load_timeout)
            try:
                out = self.workdir / f"strace-{broker.name.split()[0].lower()}.txt"
                with syscalls.traced(broker.pid, out):
                    _, _, nbytes = workloads.consume(broker.bootstrap, topic, spec.partitions, acked,
                                                     time.monotonic() + self.s.load_timeout * 3)
                counts = syscalls.count_file(out)
            finally:
                workloads.delete_topic(broker.bootstrap, topic)
            log.info("%s: %.1f MB delivered; calls %s; bytes %s", broker.name, nbytes / 1e6,
                     dict(counts.calls), dict(counts.bytes))
            mb = nbytes / 1e6
            if mb <= 0:
                raise RuntimeError("nothing consumed under strace")
            put = self.report.set
            put(workload, "file bytes read into user space (read/pread/readv), MB", broker.name,
                counts.bytes["file_read"] / 1e6 / mb, "lower", 2)
            put(workload, "file read calls", broker.name, counts.calls["file_read"] / mb, "lower", 1)
            put(workload, "sendfile calls", broker.name, counts.calls["sendfile"] / mb, "", 1)
            put(workload, "sendfile bytes, MB", broker.name, counts.bytes["sendfile"] / 1e6 / mb, "", 2)
            put(workload, "socket bytes written (write/writev/sendto/sendmsg), MB", broker.name,
                counts.bytes["socket_write"] / 1e6 / mb, "lower", 2)
            put(workload, "socket write calls", broker.name, counts.calls["socket_write"] / mb, "lower", 1)
            put(workload, "all traced I/O calls", broker.name, counts.total_calls / mb, "lower", 1)

        self.each("syscalls", one)
        self.report.note("syscalls: strace -f -y on every broker thread during the consume only; traced: "
                         + ", ".join(syscalls.TRACED) + "; a call is a file or socket call by its fd; bytes are "
                         "return values, divided by MB of record payload delivered. Counts, not speed "
                         "(strace slows the broker).")

    def record_start_rss(self) -> None:
        time.sleep(self.s.settle)
        for broker in self.brokers:
            self.start_rss[broker.name] = rss_mb(broker.pid)

    def warm_up(self) -> None:
        self.each("warm-up", lambda broker: workloads.warm_up(broker.bootstrap, self.payloads(1024)))

    def run_rss(self) -> None:
        time.sleep(self.s.settle + 2)
        workload = "broker RSS (/proc/<pid>/status)"
        for broker in self.brokers:
            self.report.set(workload, "after start-up, idle, MB", broker.name, self.start_rss.get(broker.name),
                            "lower", 0)
            self.report.set(workload, "peak over the run (VmHWM), MB", broker.name, peak_rss_mb(broker.pid),
                            "lower", 0)
            self.report.set(workload, "idle after the workloads, MB", broker.name, rss_mb(broker.pid), "lower", 0)

    # -- recovery, on brokers of its own ------------------------------------------------------

    def run_recovery(self, factories: list[tuple[Path, Callable[[Path], Broker]]]) -> None:
        """One fresh broker per factory, each in its own directory, removed before the next one
        starts (so the disk holds one log at a time)."""
        size = self.s.recovery_bytes
        unflushed = self.s.recovery_unflushed
        # a log within one segment (segment.bytes, 1 GiB by default on both) is all unflushed; a longer
        # one has rolled segments, which both brokers flush when the next segment starts
        workload = (f"recovery of a {mb_text(size)} unflushed log after kill -9" if size < recovery.SEGMENT_BYTES else
                    f"restarts of a log of {size // recovery.SEGMENT_BYTES} full 1 GiB segments (flushed at each "
                    f"roll) and about {mb_text(unflushed)} unflushed in the active one")
        timeout = max(self.s.load_timeout, 600, size / RECOVERY_PRODUCE_FLOOR)
        for where, make in factories:
            free = shutil.disk_usage(self.workdir).free
            if free < RECOVERY_DISK_FACTOR * size + RECOVERY_DISK_SPARE:
                self.report.note(f"recovery: skipped, {mb_text(free)} free in {self.workdir} < "
                                 f"{RECOVERY_DISK_FACTOR} x {mb_text(size)} + {mb_text(RECOVERY_DISK_SPARE)} "
                                 "(lower --recovery-bytes)")
                return
            try:
                r = recovery.run(lambda: make(where), size, self.payloads(1024), timeout, unflushed)
            except Exception as exc:  # noqa: BLE001 - reported in the table's notes
                log.exception("recovery failed")
                self.report.note(f"recovery failed: {type(exc).__name__}: {exc}")
                continue
            finally:
                shutil.rmtree(where, ignore_errors=True)
            name = r.broker
            self.report.set(workload, "kill -9, restart -> ApiVersions answered, s", name, r.api_seconds, "lower", 2)
            self.report.set(workload, "kill -9, restart -> leader available + offsets, s", name, r.ready_seconds,
                            "lower", 2)
            self.report.set(workload, "clean restart -> leader available + offsets, s", name,
                            r.clean_ready_seconds, "lower", 2)
            self.report.set(workload, "RSS after the kill -9 restart, MB", name, r.recovered_rss_mb, "lower", 0)
            self.report.set(workload, "RSS after the clean restart, MB", name, r.clean_rss_mb, "lower", 0)
            ok = "matches" if r.end_offset == r.acked else "MISMATCH"
            self.report.note(f"recovery on {name}: {r.acked:,} records acked ({mb_text(r.log_bytes)} in {r.segments} "
                             f"segments, the active one {mb_text(r.active_segment_bytes)}), end offset after the "
                             f"kill -9 restart {r.end_offset} - {ok}")

    def run_loop_stall(self) -> None:
        """In-process on wirekafka's own classes: no broker, no Kafka column (see loop_stall)."""
        netprobe.ensure_nofile(self.s.stall_partitions * 12 + 1024)  # up to 3 segments x 4 files each
        for f in loop_stall.run(self.s.stall_partitions, self.workdir):
            workload = f"event loop, {f.operation} over {f.partitions:,} partitions (1 ms timer)"
            self.report.set(workload, "operation, s", "wirekafka", f.seconds, "lower", 2)
            self.report.set(workload, f"timer lateness p99, ms ({f.samples:,} samples)", "wirekafka", f.p99_ms, "lower", 1)
            self.report.set(workload, "timer lateness max, ms", "wirekafka", f.max_ms, "lower", 1)

    def run_metadata_answer(self) -> None:
        """In-process on wirekafka's own handler: no broker, no Kafka column (see metadata_answer)."""
        f = metadata_answer.run(self.s.answer_partitions)
        workload = (f"Metadata for all topics (v{metadata_answer.VERSION}, {f.answer_bytes:,} bytes) over "
                    f"{f.partitions:,} partitions of a ZooKeeper broker's view, in-process")
        for case, ms in f.ms.items():
            self.report.set(workload, f"handled and encoded, median ms: {case}", "wirekafka", ms, "lower", 2)

    # -- compaction, on brokers of their own ---------------------------------------------------

    def _fresh(self, what: str, factories: list[tuple[Path, Callable[[Path], Broker]]],
               run: Callable[[Callable[[], Broker]], None]) -> None:
        """``run`` on one fresh broker per factory, each in its own directory, removed afterwards."""
        for where, make in factories:
            workloads.settle_writeback()
            try:
                run(lambda: make(where))
            except Exception as exc:  # noqa: BLE001 - reported in the table's notes
                log.exception("%s failed", what)
                self.report.note(f"{what} failed in {where.name}: {type(exc).__name__}: {exc}")
            finally:
                shutil.rmtree(where, ignore_errors=True)

    def run_large_request(self, factories: list[tuple[Path, Callable[[Path], Broker]]]) -> None:
        workload = "one 100 MB Produce request beside a producer of 1 KB at 200/s, acks=all"

        def one(make: Callable[[], Broker]) -> None:
            name, r = large_request.on_fresh_broker(make, 100 << 20, max(self.s.load_timeout, 120))
            self.report.set(workload, "bystander's worst produce->ack during it, ms", name, r.bystander_worst_ms,
                            "lower", 0)
            self.report.set(workload, "the big request's round trip, s", name, r.round_trip_s, "lower", 2)

        self._fresh("large-request", factories, one)

    def run_offsets_compaction(self, factories: list[tuple[Path, Callable[[Path], Broker]]]) -> None:
        commits = self.s.offsets_commits
        workload = (f"__consumer_offsets: {commits:,} offset commits, {OFFSETS_GROUPS} groups x "
                    f"{OFFSETS_PARTITIONS} partitions, 1 MiB segments")

        def one(make: Callable[[], Broker]) -> None:
            r = compaction.offsets_compaction(make, OFFSETS_GROUPS, OFFSETS_PARTITIONS, commits,
                                              timeout=max(self.s.load_timeout, 600))
            put = self.report.set
            put(workload, "written by the commits, MB", r.broker, r.raw_bytes / 1e6, "", 1)
            put(workload, "on disk once the cleaner settled, MB", r.broker, r.stored_bytes / 1e6, "lower", 2)
            put(workload, "commits/s (raw OffsetCommit, pipelined)", r.broker, r.commits / r.commit_seconds, "higher", 0)
            put(workload, "clean restart -> every group's offsets fetched, s", r.broker, r.ready_seconds, "lower", 2)
            put(workload, "coordinator load (its log), s", r.broker, r.load_seconds, "lower", 2)
            if not r.verified:
                self.report.note(f"offsets-compaction on {r.broker}: OffsetFetch after the restart did NOT return "
                                 "the last committed offsets")

        self._fresh("offsets-compaction", factories, one)
        self.report.note("offsets-compaction: both brokers with offsets.topic.segment.bytes=1048576 and "
                         "log.cleaner.backoff.ms=1000; \"written\" is the first round's bytes times the rounds; "
                         "Kafka's coordinator load is the longest of its per-partition \"Finished loading ... in X ms\" "
                         "times (all 50 partitions are scheduled together; X includes the wait in its scheduler).")

    def run_cleaner(self, factories: list[tuple[Path, Callable[[Path], Broker]]]) -> None:
        s = self.s
        workload = (f"cleaner: {s.cleaner_mb:g} MB of {CLEANER_VALUE_BYTES} B keyed records "
                    f"({CLEANER_KEYS:,} keys), 1 partition, 1 MiB segments")

        def one(make: Callable[[], Broker]) -> None:
            r = compaction.cleaner(make, int(s.cleaner_mb * 1e6), CLEANER_KEYS, CLEANER_VALUE_BYTES, s.latency_rate,
                                   s.latency_seconds, timeout=max(s.load_timeout, 600))
            put = self.report.set
            put(workload, "cleaner MB/s (its own summary)", r.broker, r.mb_per_second, "higher", 1)
            put(workload, "log processed (MiB) / cleaning rounds", r.broker,
                f"{r.cleaned_mb:,.1f} / {r.rounds}" if r.rounds else None, "", 0)
            put(workload, "size before / after cleaning, MB", r.broker,
                f"{r.input_bytes / 1e6:,.1f} / {r.end_bytes / 1e6:,.1f}", "", 0)
            for label, idle, during in (("p50", r.p50_idle, r.p50_cleaning), ("p99", r.p99_idle, r.p99_cleaning)):
                put(workload, f"produce->ack {label} ms, cleaner idle", r.broker, idle, "lower", 2)
                put(workload, f"produce->ack {label} ms, while cleaning", r.broker, during, "lower", 2)
            self.report.note(f"cleaner on {r.broker}: {r.samples_cleaning:,} latency samples sent while it cleaned")

        self._fresh("cleaner", factories, one)
        self.report.note(f"cleaner: produce latency with 1 KB records at {s.latency_rate:,.0f}/s on another "
                         f"topic, acks=all, linger 0; idle for {s.latency_seconds:g} s, then during the round.")

    def run_distinct_keys(self, factories: list[tuple[Path, Callable[[Path], Broker]]]) -> None:
        keys = self.s.distinct_keys
        workload = (f"compaction of {keys:,} distinct keys, each written twice ({DISTINCT_VALUE_BYTES} B values), "
                    "1 partition, 1 MiB segments")

        def one(make: Callable[[], Broker]) -> None:
            r = compaction.distinct_keys(make, keys, DISTINCT_VALUE_BYTES, timeout=max(self.s.load_timeout, 3600))
            put = self.report.set
            put(workload, "cleaner MB/s (its own summaries)", r.broker, r.mb_per_second, "higher", 1)
            put(workload, "cleaning rounds", r.broker, r.rounds, "lower", 0)
            put(workload, "log processed over the rounds, MiB", r.broker, r.cleaned_mb, "lower", 1)
            put(workload, "compact -> whole log cleaned, s", r.broker, r.wall_seconds, "lower", 1)
            put(workload, "size before / after cleaning, MB", r.broker,
                f"{r.input_bytes / 1e6:,.1f} / {r.end_bytes / 1e6:,.1f}", "", 0)

        self._fresh("distinct-keys", factories, one)
        self.report.note("distinct-keys: both brokers with log.cleaner.dedupe.buffer.size at its default (128 MiB, "
                         "1 cleaner thread), the topic with min.cleanable.dirty.ratio=0.01; a round maps as many "
                         "keys as that map holds, then rewrites the log up to them.")

    # -- cluster rows, on 3-broker clusters of their own ----------------------------------------

    def run_clusters(self, selected: set[str], kafka: bool) -> None:
        """cluster-produce, cluster-txn and cluster-failover on a wirekafka cluster, then on a Kafka
        3.9.1 one (unless ``kafka`` is False), each under its own chroot of one ZooKeeper server; a
        cluster is started once for those rows and stopped before the next one starts. Then
        cluster-scale, on fresh clusters of its own on the same ZooKeeper."""
        zk = cluster_rows.zookeeper_server(self.workdir / "zookeeper")
        try:
            makers: list[Callable[[], cluster_rows.Cluster]] = []
            if selected & SHARED_CLUSTER_ROWS:
                makers.append(lambda: cluster_rows.WirekafkaClusterRun(self.workdir / "wirekafka-cluster",
                                                                       zk.connect_string))
                if kafka:
                    makers.append(lambda: cluster_rows.KafkaClusterRun(self.workdir / "kafka-cluster",
                                                                       zk.connect_string))
            for make in makers:
                workloads.settle_writeback()
                under_test = make()
                try:
                    under_test.start()
                except Exception as exc:  # noqa: BLE001 - reported in the table's notes
                    log.exception("cluster start failed: %s", under_test.name)
                    self.report.note(f"cluster rows: the {under_test.name} cluster did not start: "
                                     f"{type(exc).__name__}: {exc}")
                    continue
                view = cluster_rows.ZkView(zk.connect_string, under_test.chroot)
                try:
                    if "cluster-produce" in selected:
                        self._cluster_step("cluster-produce", under_test,
                                           lambda: self.run_cluster_produce(under_test, view))
                    if "cluster-txn" in selected:
                        self._cluster_step("cluster-txn", under_test, lambda: self.run_cluster_txn(under_test))
                    if "cluster-failover" in selected:
                        self._cluster_step("cluster-failover", under_test,
                                           lambda: self.run_cluster_failover(under_test, view))
                    for problem in cluster_rows.log_problems(under_test):
                        self.report.note(f"cluster rows on {under_test.name}: {problem}")
                finally:
                    view.close()
                    under_test.stop()
            if "cluster-scale" in selected:
                sides = [side for side in self.s.scale_sides if kafka or side != "kafka"]
                cluster_scale.bench_row(self.report, zk, self.workdir, self.s.scale_partitions,
                                        self.s.scale_topic_partitions, self.s.scale_timeout, sides,
                                        self.s.scale_kafka_heap)
        finally:
            zk.stop()
        self.report.note(cluster_rows.NOTE)
        if "cluster-failover" in selected:
            self.report.note(cluster_rows.FAILOVER_NOTE)

    def _cluster_step(self, what: str, under_test: cluster_rows.Cluster, fn: Callable[[], None]) -> None:
        log.info("== %s on the %s cluster", what, under_test.name)
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - reported in the table's notes
            log.exception("%s failed on %s", what, under_test.name)
            self.report.note(f"{what} failed on the {under_test.name} cluster: {type(exc).__name__}: {exc}")

    def run_cluster_produce(self, under_test: cluster_rows.Cluster, view: cluster_rows.ZkView) -> None:
        s = self.s
        records = int(s.cluster_mb * 1e6 / 1024)
        workload = (f"3-broker cluster, replication 3, min.insync.replicas=2: base load (1 KB, 3 partitions, "
                    f"acks=all, linger 5 ms; {records:,} records)")
        r = cluster_rows.produce_row(under_test, view, records, self.payloads(1024), s.cluster_timeout,
                                s.latency_rate, s.latency_seconds)
        self.report.set(workload, "produce MB/s", under_test.name, r.mbps)
        self.report.set(workload, "produce records/s", under_test.name, r.records_per_second, "higher", 0)
        if r.acked < records:
            self.report.note(f"cluster-produce on {under_test.name}: {r.acked:,} of {records:,} acked within "
                             f"{s.cluster_timeout:g} s")
        latency_workload = (f"3-broker cluster, replication 3, min.insync.replicas=2: 1 KB at "
                            f"{s.latency_rate:,.0f}/s for {s.latency_seconds:g} s, acks=all, linger 0")
        for label, p in (("p50", 50), ("p99", 99)):
            self.report.set(latency_workload, f"produce->ack {label} ms", under_test.name,
                            r.latency.percentile(p), "lower", 2)
        if len(r.latency.samples_ms) < r.latency.sent:
            self.report.note(f"cluster-produce latency on {under_test.name}: {len(r.latency.samples_ms):,} of "
                             f"{r.latency.sent:,} records acked")

    def run_cluster_txn(self, under_test: cluster_rows.Cluster) -> None:
        s = self.s
        records = int(s.cluster_txn_mb * 1e6 / 1024)
        workload = (f"3-broker cluster, replication 3, min.insync.replicas=2: 1 transactional producer, "
                    f"{TXN_RECORDS} x 1 KB records per transaction over {transactions.PARTITIONS} partitions "
                    f"({records:,} records)")
        r = transactions.transactional(under_test, 1, records, TXN_RECORDS, self.payloads(1024), s.cluster_timeout,
                                       replication=cluster_rows.REPLICATION, config=cluster_rows.TOPIC_CONFIG)
        workloads.delete_topic(under_test.bootstrap, r.produced.topic)
        self._put_transactional(workload, "cluster-txn", under_test.name, r, records, f"{s.cluster_timeout:g} s")

    def _put_transactional(self, workload: str, row_id: str, name: str, r: transactions.TransactionalResult,
                           records: int, limit: str) -> None:
        """A transactional row's figures: produce MB/s, commit p50 / p99, and a note when the
        time limit cut the load short."""
        self.report.set(workload, "produce MB/s", name, r.produced.produce_mbps)
        for label, p in (("p50", 50), ("p99", 99)):
            self.report.set(workload, f"commit_transaction {label} ms", name, r.commit.percentile(p), "lower", 2)
        if r.produced.acked < records:
            self.report.note(f"{row_id} on {name}: {r.produced.acked:,} of {records:,} committed within {limit}")

    def run_cluster_failover(self, under_test: cluster_rows.Cluster, view: cluster_rows.ZkView) -> None:
        n = self.s.failover_runs
        workload = (f"3-broker cluster failover: kill -9 of a partition leader (not the controller), "
                    f"zookeeper.session.timeout.ms={cluster_rows.SESSION_TIMEOUT_MS} (median of {n})")
        runs = cluster_rows.failover_row(under_test, view, n, self.payloads(1024)[0])
        put = self.report.set
        put(workload, "kill -> first acks=all write acknowledged (new leader), s", under_test.name,
            cluster_rows.median([r.acked_seconds for r in runs]), "lower", 2)
        put(workload, "kill -> new leader written to ZooKeeper, s", under_test.name,
            cluster_rows.median([r.elected_seconds for r in runs]), "lower", 2)
        put(workload, "kill -> its ZooKeeper session expired (/brokers/ids/N gone), s", under_test.name,
            cluster_rows.median([r.expired_seconds for r in runs]), "", 2)
        put(workload, "session expired -> new leader written to ZooKeeper (the controller's part), s",
            under_test.name, cluster_rows.median([None if r.elected_seconds is None or r.expired_seconds is None
                                             else r.elected_seconds - r.expired_seconds for r in runs]), "lower", 2)
        put(workload, "session expired -> first acks=all write acknowledged, s", under_test.name,
            cluster_rows.median([None if r.acked_seconds is None or r.expired_seconds is None
                            else r.acked_seconds - r.expired_seconds for r in runs]), "lower", 2)
        fmt = cluster_rows.fmt_seconds
        self.report.note(f"cluster-failover on {under_test.name}: per run (session expired / new leader in "
                         "ZooKeeper / first ack, s): "
                         + "; ".join(f"{fmt(r.expired_seconds)} / {fmt(r.elected_seconds)} / {fmt(r.acked_seconds)}"
                                     for r in runs))
        failed = [e for r in runs for e in r.failed_deliveries]
        if failed:
            self.report.note(f"cluster-failover on {under_test.name}: {len(failed)} deliveries failed, first: "
                             f"{failed[0]}")


METRICS_COLUMN = "wirekafka metrics-on"
SCRAPE_EVERY_S = 5.0


class MeteredWirekafka(WirekafkaBroker):
    """wirekafka with its Prometheus endpoint on, scraped every SCRAPE_EVERY_S seconds while it
    runs (a figure for metrics "on" includes serving them)."""

    name = METRICS_COLUMN

    def __init__(self, workdir: Path, python: str) -> None:
        self.metrics_url = f"http://{HOST}:{realkafka.free_ports(1, HOST)[0]}/metrics"
        super().__init__(workdir, python, overrides={"wirekafka.metrics.listener": self.metrics_url.split("/")[2]})
        self._stopping = threading.Event()
        self._scraper: threading.Thread | None = None
        self.scrapes = 0

    def start(self) -> None:
        super().start()
        self._scraper = threading.Thread(target=self._scrape, name="metrics-scraper", daemon=True)
        self._scraper.start()

    def _scrape(self) -> None:
        while not self._stopping.wait(SCRAPE_EVERY_S):
            try:
                with urllib.request.urlopen(self.metrics_url, timeout=10) as answer:
                    answer.read()
                self.scrapes += 1
            except OSError as exc:
                log.warning("scrape of %s failed: %s", self.metrics_url, exc)

    def stop(self) -> None:
        self._stopping.set()
        if self._scraper is not None:
            self._scraper.join()
        super().stop()


def _port(broker: Broker) -> int:
    return int(broker.bootstrap.rsplit(":", 1)[1])


def _git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "?"
    except OSError:
        return "?"


def build_args() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", type=parse_only, metavar="ROWS", help="comma-separated row ids (default: all)")
    ap.add_argument("--quick", action="store_true", help="tiny counts: checks that everything runs")
    ap.add_argument("--no-kafka", action="store_true", help="wirekafka only (no JVM)")
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    ap.add_argument("--metrics", action="store_true", help="also run the long-running rows on a wirekafka with "
                                                           "its Prometheus endpoint on (first column)")
    ap.add_argument("--mb", type=float, help=f"payload MB per 1 KB throughput row (default {Settings.mb:g})")
    ap.add_argument("--small-mb", type=float, help=f"payload MB for the 100 B row (default {Settings.small_mb:g})")
    ap.add_argument("--latency-rate", type=float, help="records/s (default 1000)")
    ap.add_argument("--latency-seconds", type=float, help="seconds (default 10)")
    ap.add_argument("--syscall-mb", type=float, help=f"MB consumed under strace (default {Settings.syscall_mb:g})")
    ap.add_argument("--recovery-bytes", type=parse_size, help="log size for the recovery row, e.g. 1G, 300M, "
                                                              "100G (default 1G)")
    ap.add_argument("--recovery-unflushed", type=parse_size, help="a log past one segment: about this much in its "
                                                                  "active (unflushed) segment at the kill (default 100M)")
    ap.add_argument("--load-timeout", type=float, help="seconds any one produce or consume may take (default 180)")
    ap.add_argument("--offsets-commits", type=int, help="offset commits for offsets-compaction (default 1,000,000)")
    ap.add_argument("--cleaner-mb", type=float, help=f"payload MB for the cleaner row (default {Settings.cleaner_mb:g})")
    ap.add_argument("--distinct-keys", type=int, help=f"keys of the distinct-keys row "
                                                      f"(default {Settings.distinct_keys:,})")
    ap.add_argument("--cluster-mb", type=float, help=f"payload MB for cluster-produce "
                                                     f"(default {Settings.cluster_mb:g})")
    ap.add_argument("--failover-runs", type=int, help=f"kills per cluster in cluster-failover "
                                                      f"(default {Settings.failover_runs})")
    ap.add_argument("--stall-partitions", type=int, help=f"partitions of the loop-stall row "
                                                         f"(default {Settings.stall_partitions:,})")
    ap.add_argument("--answer-partitions", type=int, help=f"partitions of the metadata-answer row "
                                                          f"(default {Settings.answer_partitions:,})")
    ap.add_argument("--startup-partitions", type=int, help=f"partitions of the startup row "
                                                           f"(default {Settings.startup_partitions:,})")
    ap.add_argument("--startup-bytes", type=parse_size, help="log size the startup row opens in-process (default 2G)")
    ap.add_argument("--embedded-starts", type=int, help=f"warm starts of the embedded row "
                                                        f"(default {Settings.embedded_starts})")
    ap.add_argument("--scale-partitions", type=parse_counts, metavar="N,N",
                    help="partition counts of cluster-scale, a fresh cluster each (default 1000,3000)")
    ap.add_argument("--scale-topic-partitions", type=int, help=f"partitions per topic in cluster-scale "
                                                               f"(default {Settings.scale_topic_partitions})")
    ap.add_argument("--scale-timeout", type=float, help=f"seconds any one wait of cluster-scale may take "
                                                        f"(default {Settings.scale_timeout:g})")
    ap.add_argument("--scale-kafka-heap", help=f"each Kafka broker's heap in cluster-scale (default "
                                               f"{Settings.scale_kafka_heap}; 512m runs out at 10,000 partitions)")
    ap.add_argument("--scale-sides", type=lambda text: tuple(text.split(",")), metavar="SIDE,SIDE",
                    help="the clusters cluster-scale runs: wirekafka, kafka or both (default both)")
    ap.add_argument("--workdir", type=Path, help="where brokers keep their data (default: a new dir in $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, strace output)")
    ap.add_argument("--python", default=None, help="interpreter for wirekafka (default .venv/bin/python)")
    ap.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return ap


def settings_from(args: argparse.Namespace) -> Settings:
    base = QUICK if args.quick else Settings()
    given = {k: getattr(args, k) for k in ("mb", "small_mb", "latency_rate", "latency_seconds", "syscall_mb",
                                           "recovery_bytes", "recovery_unflushed", "load_timeout", "offsets_commits", "cleaner_mb",
                                           "distinct_keys", "cluster_mb", "failover_runs", "stall_partitions", "answer_partitions",
                                           "startup_partitions", "startup_bytes", "embedded_starts",
                                           "scale_partitions", "scale_topic_partitions", "scale_timeout",
                                           "scale_kafka_heap", "scale_sides")
             if getattr(args, k) is not None}
    return replace(base, **given)


def main(argv: list[str] | None = None) -> int:
    args = build_args().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    settings = settings_from(args)
    selected = args.only or set(ROW_IDS) - OPT_IN_ROWS
    python = args.python or str(REPO / ".venv" / "bin" / "python")
    if not os.access(python, os.X_OK):
        python = sys.executable
    netprobe.ensure_nofile(settings.idle_connections + 1024)

    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="wirekafka-bench-")) if own_workdir else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    disk = shutil.disk_usage(workdir)
    log.info("work dir %s: %s free of %s", workdir, mb_text(disk.free), mb_text(disk.total))

    # The single-node brokers run for the whole session, but only if a row needs them.
    brokers: list[Broker] = []
    if selected & LONG_RUNNING_ROWS:
        if args.metrics:
            brokers.append(MeteredWirekafka(workdir / "wirekafka-metrics", python))
        brokers.append(WirekafkaBroker(workdir / "wirekafka", python))
        if not args.no_kafka:
            brokers.append(KafkaBroker(workdir / "kafka"))
    wanted_cluster_rows = [r for r in CLUSTER_ROWS if r in selected]
    columns = [METRICS_COLUMN, "wirekafka"] if args.metrics else ["wirekafka"]
    if not args.no_kafka:
        if selected - set(CLUSTER_ROWS):
            columns.append(f"Kafka {realkafka.KAFKA_VERSION}")
        if wanted_cluster_rows:
            columns.append(cluster_rows.kafka_cluster_name())
    report = Report(columns)
    single_kafka = [c for c in columns[1:] if c not in (cluster_rows.kafka_cluster_name(), "wirekafka")]
    machine = (f"on 127.0.0.1, {os.cpu_count()} cores ({platform.machine()}), Python "
               f"{platform.python_version()}, confluent-kafka {confluent_kafka.version()} / librdkafka "
               f"{confluent_kafka.libversion()[0]}")
    quick = "Quick mode (tiny counts): not figures to quote. " if args.quick else ""
    if selected - set(CLUSTER_ROWS):
        report.preamble.append(
            f"wirekafka {_git_revision()}{''.join(f' and {c} (512 MB heap)' for c in single_kafka)} {machine}; "
            f"brokers run side by side, loads run on one at a time. {quick}"
            "Throughput base: 1 KB records, 3 partitions, 1 producer, acks=all, idempotent, no compression, "
            f"linger 5 ms; consumers with fetch.queue.backoff.ms={workloads.CONSUMER_QUEUE_BACKOFF_MS}; "
            "MB = 10^6 bytes of record payload.")
    if wanted_cluster_rows:
        scale_heap = ("" if "cluster-scale" not in wanted_cluster_rows or settings.scale_kafka_heap == "512m"
                      else f"; {settings.scale_kafka_heap} in cluster-scale")
        kafka_cluster = ("" if args.no_kafka else
                         f", then 3 {cluster_rows.kafka_cluster_name()} brokers (512 MB heap each{scale_heap})")
        report.preamble.append(
            f"{'' if selected - set(CLUSTER_ROWS) else f'wirekafka {_git_revision()} {machine}. {quick}'}"
            f"Cluster rows: 3 wirekafka brokers{kafka_cluster} on one ZooKeeper 3.8.4, each cluster on its own "
            f"chroot, one cluster at a time; both with zookeeper.session.timeout.ms={cluster_rows.SESSION_TIMEOUT_MS}, "
            "replica.lag.time.max.ms=30000 (Kafka's default), replication factor 3; the measured topics have "
            "min.insync.replicas=2; MB = 10^6 bytes of record payload.")

    if args.metrics:
        report.preamble.append(f"{METRICS_COLUMN}: the same wirekafka with wirekafka.metrics.listener set and "
                               f"/metrics scraped every {SCRAPE_EVERY_S:g} s; the ratio column is metrics on / off.")
    bench = Bench(settings, report, workdir)
    t0 = time.monotonic()
    try:
        with contextlib.ExitStack() as running:
            for broker in brokers:
                broker.start()
                running.callback(broker.stop)
            bench.brokers = brokers
            if brokers:
                bench.record_start_rss()
                bench.warm_up()
            if "connect" in selected:
                bench.run_connect()
            if "idle-conns" in selected:
                bench.run_idle_connections()
            if "bombs" in selected:
                bombs.bench_row(bench, 32 << 20 if args.quick else 192 << 20)
            for row_id in THROUGHPUT:
                if row_id in selected:
                    bench.run_throughput(row_id)
            for row_id in TRANSACTIONAL:
                if row_id in selected:
                    bench.run_transactional(row_id)
            if "latency" in selected:
                bench.run_latency()
            if "syscalls" in selected:
                bench.run_syscalls()
            if "rss" in selected:
                bench.run_rss()
        if "recovery" in selected:
            recovery_factories: list[tuple[Path, Callable[[Path], Broker]]] = [
                (workdir / "wirekafka-recovery", lambda d: WirekafkaBroker(d, python, start_timeout=600))]
            if not args.no_kafka:
                recovery_factories.append((workdir / "kafka-recovery", lambda d: KafkaBroker(d, start_timeout=600)))
            bench.run_recovery(recovery_factories)
        if "startup" in selected:
            netprobe.ensure_nofile(settings.startup_partitions * 6 + 1024)
            makers: list[tuple[str, Callable[[Path], Broker]]] = [
                ("wirekafka", lambda d: WirekafkaBroker(d, python, start_timeout=900))]
            if not args.no_kafka:
                makers.append(("kafka", lambda d: KafkaBroker(d, start_timeout=900)))
            startup.report_rows(report, [startup.run_partitions(lambda: make(workdir / f"{name}-startup"),
                                                                settings.startup_partitions, 900)
                                         for name, make in makers],
                                startup.run_log_open(workdir, settings.startup_bytes))
        if "loop-stall" in selected:
            bench.run_loop_stall()
        if "metadata-answer" in selected:
            bench.run_metadata_answer()
        if "embedded" in selected:
            embedded_start.report_rows(report, embedded_start.run(settings.embedded_starts, python=python),
                                       None if args.no_kafka else columns[1])
        for row_id, run_row, overrides in (("large-request", bench.run_large_request, large_request.BROKER_OVERRIDES),
                                           ("offsets-compaction", bench.run_offsets_compaction, compaction.BROKER_OVERRIDES),
                                           ("cleaner", bench.run_cleaner, compaction.BROKER_OVERRIDES),
                                           ("distinct-keys", bench.run_distinct_keys, compaction.BROKER_OVERRIDES)):
            if row_id in selected:
                own: list[tuple[Path, Callable[[Path], Broker]]] = [
                    (workdir / f"wirekafka-{row_id}",
                     lambda d, o=overrides: WirekafkaBroker(d, python, start_timeout=600, overrides=o))]
                if not args.no_kafka:
                    own.append((workdir / f"kafka-{row_id}",
                                lambda d, o=overrides: KafkaBroker(d, start_timeout=600, overrides=o)))
                run_row(own)
        if wanted_cluster_rows:
            bench.run_clusters(set(wanted_cluster_rows), kafka=not args.no_kafka)
    finally:
        if own_workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            log.info("kept work dir %s", workdir)
    log.info("done in %.0fs", time.monotonic() - t0)
    table = report.markdown()
    sys.stdout.write(table)
    if args.out:
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
