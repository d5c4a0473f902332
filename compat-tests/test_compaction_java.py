"""The log cleaner on a real wirekafka process, seen through Kafka's own tools (Apache Kafka 4.3.1
jars): kafka-dump-log reads every segment the cleaner wrote — batches of every codec rewritten,
records with headers, tombstones in batches that carry a delete horizon, the offset and time
indexes — and kafka-log-dirs (DescribeLogDirs) reports the partition's size shrinking once the
cleaned segments are swapped in.

The topic is compacted from the start but created with min.cleanable.dirty.ratio=1, which no log
exceeds, so that its size before cleaning can be taken; kafka-configs then lowers the ratio and
the broker's cleaner (log.cleaner.backoff.ms 200) cleans it in one round."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from client_support import CODECS, read_confluent
from confluent_kafka import Producer
from kafka_cli import PROBLEM_MARKERS, ok, parse_log_dump

from wirekafka.storage import checkpoint

pytestmark = pytest.mark.java

T0 = (int(time.time()) - 3600) * 1000  # an hour ago: inside every timestamp bound
SEGMENTS = 6
SEGMENT_MS = 60_000
DELETE_RETENTION_MS = 86_400_000
KEYS = 12
PER_SEGMENT = 30
SHARED = 20  # the first SHARED records of a segment update keys every segment updates


def _no_problems(output: str) -> None:
    found = [marker for marker in PROBLEM_MARKERS if marker in output]
    assert not found, f"kafka-dump-log reported {found}:\n{output[-4000:]}"


def _produce(bootstrap: str, topic: str) -> None:
    """SEGMENTS segments (each segment's timestamps two segment.ms after the previous one's, so
    the first record of each rolls the log), each written with another codec: keys updated in
    every segment, keys of the segment's own updated twice within it, some updates tombstones,
    every record with headers."""
    for seg in range(SEGMENTS):
        codec = CODECS[seg % len(CODECS)]
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5, "log_level": 3})
        for i in range(PER_SEGMENT):
            n = seg * PER_SEGMENT + i
            key = b"key-%d" % (n % KEYS) if i < SHARED else b"own-%d-%d" % (seg, i % 5)
            value = None if n % 7 == 3 else b"segment %d update %d " % (seg, i) * 4
            p.produce(topic, key=key, value=value, timestamp=T0 + seg * 2 * SEGMENT_MS + i,
                      headers=[("seg", b"%d" % seg), ("n", b"%d" % n)])
        assert p.flush(10) == 0


def _log_dir_size(bootstrap: str, topic: str) -> int:
    """The partition's size as kafka-log-dirs --describe prints it (DescribeLogDirs)."""
    out = ok("kafka-log-dirs", "--bootstrap-server", bootstrap, "--describe", "--topic-list", topic)
    report = json.loads(out.strip().splitlines()[-1])
    (broker,) = report["brokers"]
    (log_dir,) = broker["logDirs"]
    assert log_dir["error"] is None
    (partition,) = log_dir["partitions"]
    assert partition["partition"] == f"{topic}-0" and partition["offsetLag"] == 0 and not partition["isFuture"]
    return partition["size"]


def _segment_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def test_cleaned_segments_read_by_dump_log_and_sized_by_log_dirs(broker_factory, topic_name):
    broker = broker_factory({"log.cleaner.backoff.ms": "200"})
    b = broker.bootstrap
    ok("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name, "--partitions", "1",
       "--config", "cleanup.policy=compact", "--config", "min.cleanable.dirty.ratio=1",
       "--config", f"segment.ms={SEGMENT_MS}", "--config", f"delete.retention.ms={DELETE_RETENTION_MS}",
       "--config", "index.interval.bytes=256")
    _produce(b, topic_name)
    total = SEGMENTS * PER_SEGMENT
    produced = sorted(read_confluent(b, topic_name, {0: total}), key=lambda g: g.offset)
    assert [g.offset for g in produced] == list(range(total))
    part = broker.data_dir / f"{topic_name}-0"
    before = _segment_files(part)
    assert len(before) == SEGMENTS
    active = int(before[-1].stem)
    assert active == (SEGMENTS - 1) * PER_SEGMENT
    size_before = _log_dir_size(b, topic_name)
    assert size_before == sum(f.stat().st_size for f in before)

    # Each key's latest record below the active segment survives (tombstones too: their horizon
    # is a day away); the active segment is left as it is.
    latest = {g.key: g.offset for g in produced if g.offset < active}
    expected = [g for g in produced if g.offset >= active or latest[g.key] == g.offset]

    started_ms = int(time.time() * 1000)
    ok("kafka-configs", "--bootstrap-server", b, "--alter", "--entity-type", "topics", "--entity-name", topic_name,
       "--add-config", "min.cleanable.dirty.ratio=0.01")
    deadline = time.monotonic() + 60
    cleaner_checkpoint = broker.data_dir / "cleaner-offset-checkpoint"
    while checkpoint.read_offsets(cleaner_checkpoint).get((topic_name, 0)) != active:
        assert time.monotonic() < deadline, f"not cleaned within 60 s:\n{broker.log_tail()}"
        time.sleep(0.2)
    done_ms = int(time.time() * 1000)

    after = _segment_files(part)
    assert [f.stem for f in after] == [before[0].stem, before[-1].stem]  # one cleaned segment + the active one
    out = ok("kafka-dump-log", "--files", ",".join(map(str, after)), "--print-data-log", "--deep-iteration")
    _no_problems(out)
    dumped = parse_log_dump(out)
    cleaned, untouched = dumped[str(after[0])], dumped[str(after[1])]
    records = [r for batch in cleaned + untouched for r in batch.records]

    def text(value: bytes | None) -> str | None:
        return None if value is None else value.decode()

    assert [(r.offset, r.timestamp, r.key, r.payload, r.header_keys, r.value_size) for r in records] == [
        (g.offset, g.timestamp, text(g.key), text(g.value), [k for k, _ in g.headers],
         -1 if g.value is None else len(g.value)) for g in expected]
    assert all(batch.valid and batch.magic == 2 and batch.count == len(batch.records) for batch in cleaned + untouched)
    assert {batch.codec for batch in cleaned} == set(CODECS)  # each rewritten batch keeps its codec
    # A batch whose tombstones the cleaner kept carries the delete horizon, a day after the round.
    for batch in cleaned:
        if any(r.value_size < 0 for r in batch.records):
            assert batch.delete_horizon is not None, batch
            assert started_ms + DELETE_RETENTION_MS <= batch.delete_horizon <= done_ms + DELETE_RETENTION_MS
        else:
            assert batch.delete_horizon is None, batch
    assert any(batch.delete_horizon is not None for batch in cleaned)
    assert all(batch.delete_horizon is None for batch in untouched)
    assert [batch.position for batch in cleaned] == [0] + [batch.position + batch.size for batch in cleaned[:-1]]
    assert cleaned[-1].position + cleaned[-1].size == after[0].stat().st_size

    indexes = [str(after[0].with_suffix(suffix)) for suffix in (".index", ".timeindex")]
    out = ok("kafka-dump-log", "--files", ",".join(indexes), "--verify-index-only")
    _no_problems(out)
    out = ok("kafka-dump-log", "--files", ",".join(indexes), "--index-sanity-check")
    assert out.count("passed sanity check.") == 2, out

    size_after = _log_dir_size(b, topic_name)
    assert size_after == sum(f.stat().st_size for f in after)
    assert size_after < size_before, (size_before, size_after)
