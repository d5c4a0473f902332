"""Kafka's own Java CLI tools (Apache Kafka 4.3.1 jars, via scripts/realkafka.py) for compat tests,
and parsers for the tools' output, so tests can assert on what the tools really printed.

scripts/realkafka.py resolves the jars and runs the tools; this module adds the
assertions tests need around a run (exit code, with the tool's stderr in the failure message) and
the readers for kafka-dump-log and kafka-consumer-groups output."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from typing import Sequence

from scripts import realkafka
from wirekafka.broker.coordinator.group_model import partition_for


@dataclass(frozen=True)
class ToolRun:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"$ {' '.join(self.args)}\n(exit {self.returncode})\n{self.stdout[-2000:]}\n{self.stderr[-3000:]}"


def run(name: str, *args: str, input: str | None = None, timeout: float = 120,
        jvm_opts: Sequence[str] | None = None) -> ToolRun:
    """Run tool ``name`` (a realkafka.TOOLS short name such as "kafka-topics") to completion;
    ``jvm_opts`` replaces realkafka's TOOL_JVM_OPTS."""
    try:
        proc = realkafka.run_tool(name, list(args), timeout=timeout, jvm_opts=jvm_opts,
                                    input=None if input is None else input.encode())
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{name} {' '.join(args)} did not finish in {timeout}s") from exc
    return ToolRun((name, *args), proc.returncode, proc.stdout.decode(errors="replace"),
                   proc.stderr.decode(errors="replace"))


def ok(name: str, *args: str, input: str | None = None, timeout: float = 120,
       jvm_opts: Sequence[str] | None = None) -> str:
    """Run a tool that must succeed (exit 0); returns its stdout."""
    result = run(name, *args, input=input, timeout=timeout, jvm_opts=jvm_opts)
    assert result.returncode == 0, result.describe()
    return result.stdout


def fails(name: str, *args: str, input: str | None = None, timeout: float = 120) -> str:
    """Run a tool that must fail (non-zero exit); returns stdout and stderr together."""
    result = run(name, *args, input=input, timeout=timeout)
    assert result.returncode != 0, result.describe()
    return result.stdout + result.stderr


def table(text: str, first_column: str) -> list[dict[str, str]]:
    """Rows of a whitespace-aligned table (kafka-consumer-groups) whose header starts with
    ``first_column``; cells must not contain spaces (true of the offsets and members tables)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first_column])
    header = lines[start].split()
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        cells = line.split()
        assert len(cells) == len(header), f"unexpected row {line!r} under {header}"
        rows.append(dict(zip(header, cells)))
    return rows


# ---- kafka-dump-log ------------------------------------------------------------------------

_BATCH = re.compile(
    r"^baseOffset: (?P<base>\d+) lastOffset: (?P<last>\d+) count: (?P<count>\d+) "
    r"baseSequence: (?P<base_seq>-?\d+) lastSequence: (?P<last_seq>-?\d+) producerId: (?P<pid>-?\d+) "
    r"producerEpoch: (?P<epoch>-?\d+) partitionLeaderEpoch: (?P<leader_epoch>-?\d+) "
    r"isTransactional: (?P<txn>\w+) isControl: (?P<control>\w+) "
    r"deleteHorizonMs: OptionalLong(?:\[(?P<horizon>-?\d+)\]|\.empty) "
    r"position: (?P<position>\d+) (?P<ts_type>CreateTime|LogAppendTime): (?P<max_ts>-?\d+) "
    r"size: (?P<size>\d+) magic: (?P<magic>\d+) compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) "
    r"isvalid: (?P<valid>\w+)$")
_RECORD = re.compile(
    r"^\| offset: (?P<offset>\d+) (?:CreateTime|LogAppendTime): (?P<ts>-?\d+) keySize: (?P<key_size>-?\d+) "
    r"valueSize: (?P<value_size>-?\d+) sequence: (?P<seq>-?\d+) headerKeys: \[(?P<headers>[^\]]*)\]"
    r"(?: key: (?P<key>.*?))?(?: payload: (?P<payload>.*))?$")
_OFFSET_ENTRY = re.compile(r"^offset: (\d+) position: (\d+)$")
_TIME_ENTRY = re.compile(r"^timestamp: (-?\d+) offset: (\d+)$")

#: What DumpLogSegments prints when a log or index disagrees with itself (Kafka 4.3.1's strings).
PROBLEM_MARKERS = ("Mismatches in", "Found timestamp mismatch", "Found out of order timestamp",
                   "indexed offsets are not found", "Non-consecutive offsets", "invalid bytes at the end",
                   "is followed by", "Error at", "skipping", "isvalid: false", "Exception")


@dataclass
class DumpedRecord:
    offset: int
    timestamp: int
    key_size: int
    value_size: int
    sequence: int
    header_keys: list[str]
    key: str | None
    payload: str | None


@dataclass
class DumpedBatch:
    base_offset: int
    last_offset: int
    count: int
    base_sequence: int
    producer_id: int
    position: int
    max_timestamp: int
    size: int
    magic: int
    codec: str
    valid: bool
    records: list[DumpedRecord] = field(default_factory=list)
    delete_horizon: int | None = None  # set by the log cleaner on batches whose tombstones it kept


def parse_log_dump(text: str) -> dict[str, list[DumpedBatch]]:
    """``kafka-dump-log --files a.log,b.log [--deep-iteration] [--print-data-log]`` output as
    file path -> batches (with their records when deep iteration printed them)."""
    files: dict[str, list[DumpedBatch]] = {}
    batches: list[DumpedBatch] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            batches = files.setdefault(line[len("Dumping "):], [])
        elif m := _BATCH.match(line):
            batches.append(DumpedBatch(
                int(m["base"]), int(m["last"]), int(m["count"]), int(m["base_seq"]), int(m["pid"]),
                int(m["position"]), int(m["max_ts"]), int(m["size"]), int(m["magic"]), m["codec"],
                m["valid"] == "true", delete_horizon=None if m["horizon"] is None else int(m["horizon"])))
        elif m := _RECORD.match(line):
            batches[-1].records.append(DumpedRecord(
                int(m["offset"]), int(m["ts"]), int(m["key_size"]), int(m["value_size"]), int(m["seq"]),
                [k for k in m["headers"].split(",") if k], m["key"], m["payload"]))
    return files


def parse_index_dump(text: str) -> dict[str, list[tuple[int, int]]]:
    """``kafka-dump-log --files x.index,y.timeindex`` output as file path -> entries:
    (offset, position) for offset indexes, (timestamp, offset) for time indexes."""
    files: dict[str, list[tuple[int, int]]] = {}
    entries: list[tuple[int, int]] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            entries = files.setdefault(line[len("Dumping "):], [])
        elif m := _OFFSET_ENTRY.match(line) or _TIME_ENTRY.match(line):
            entries.append((int(m[1]), int(m[2])))
    return files


#: What the decoders print as the payload of a tombstone (a null value).
DUMPED_TOMBSTONE = "<DELETE>"


def parse_offsets_dump(text: str) -> list[tuple[dict, dict | None]]:
    """``kafka-dump-log --offsets-decoder`` (or ``--transaction-log-decoder``) records as (key,
    value) JSON objects; the value is None for a tombstone."""
    out = []
    for line in text.splitlines():
        if m := _RECORD.match(line):
            if m["key"] is not None:
                payload = m["payload"]
                out.append((json.loads(m["key"]),
                            None if payload in (None, DUMPED_TOMBSTONE) else json.loads(payload)))
    return out


def kafka_index_entries(batches: list[DumpedBatch], interval_bytes: int, *, closed: bool = False,
                        ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The offset and time index entries Kafka 4's LogSegment.append writes for these batches
    (appended one by one into a fresh segment): a batch is indexed when the bytes appended since
    the previous entry, before it, exceed index.interval.bytes; the time entry is the largest batch
    max timestamp so far (this batch included) with the last offset of the batch that had it,
    written only when it grows. ``closed``: the segment was rolled or the log closed since, which
    appends that max-so-far entry once more if it is new (LogSegment.onBecomeInactiveSegment and
    close); a live active segment has no such final entry."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    since, max_ts, max_ts_offset = 0, -1, -1
    for batch in batches:
        if batch.max_timestamp > max_ts:
            max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
        if since > interval_bytes:
            offsets.append((batch.last_offset, batch.position))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_ts_offset))
            since = 0
        since += batch.size
    if closed and max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_ts_offset))
    return offsets, times


def offsets_partition(group: str, partitions: int = 50) -> int:
    """The __consumer_offsets partition Kafka keeps a group in (GroupCoordinatorService.partitionFor),
    with Kafka's default of 50 partitions."""
    return partition_for(group, partitions)


# ---- kafka-dump-log on producer snapshots ------------------------------------------------------

_SNAPSHOT_ENTRY = re.compile(
    r"^producerId: (?P<pid>-?\d+) producerEpoch: (?P<epoch>-?\d+) coordinatorEpoch: (?P<coordinator_epoch>-?\d+) "
    r"currentTxnFirstOffset: OptionalLong(?:\[(?P<txn_first>-?\d+)\]|\.empty) lastTimestamp: (?P<last_ts>-?\d+) ?"
    r"(?:firstSequence: (?P<first_seq>-?\d+) lastSequence: (?P<last_seq>-?\d+) lastOffset: (?P<last_offset>-?\d+) "
    r"offsetDelta: (?P<delta>-?\d+) timestamp: (?P<batch_ts>-?\d+))?$")


@dataclass(frozen=True)
class DumpedProducer:
    """One producer of a `.snapshot` file as DumpLogSegments.dumpProducerIdSnapshot prints it
    (the batch fields are None when the snapshot holds no batch for the producer)."""

    producer_id: int
    epoch: int
    coordinator_epoch: int
    current_txn_first_offset: int | None
    last_timestamp: int
    first_sequence: int | None
    last_sequence: int | None
    last_offset: int | None
    offset_delta: int | None
    batch_timestamp: int | None


def parse_snapshot_dump(text: str) -> list[DumpedProducer]:
    """``kafka-dump-log --files X.snapshot`` output: one line per producer entry. Any other
    non-blank line but the "Dumping" header fails, so a format change shows up."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("Dumping "):
            continue
        m = _SNAPSHOT_ENTRY.match(line.rstrip())
        assert m, f"unexpected kafka-dump-log snapshot line {line!r}"

        def opt(name: str) -> int | None:
            return None if m[name] is None else int(m[name])

        out.append(DumpedProducer(int(m["pid"]), int(m["epoch"]), int(m["coordinator_epoch"]), opt("txn_first"),
                                  int(m["last_ts"]), opt("first_seq"), opt("last_seq"), opt("last_offset"),
                                  opt("delta"), opt("batch_ts")))
    return out
