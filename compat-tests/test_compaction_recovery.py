"""SIGKILL of a live wirekafka process while its log cleaner swaps cleaned segments in, 20 times.

A compacted topic takes bursts of updates to a fixed set of keys (some of them tombstones) from
acks=all producers, with small segments (internal.segment.bytes), segment.ms and
log.cleaner.backoff.ms and a tiny min.cleanable.dirty.ratio, so the cleaner is at work all the
time. Each round kills the broker at another kind of moment, watched on its partition
directory: as soon as a `.swap` segment appears (the swap is decided, the old segments are being
deleted), a few milliseconds after one appears (the last deletions and the final renames), as
soon as a `.cleaned` segment appears (being written), or after a random delay while an idempotent
producer's burst may still be in flight. After each restart:

- every key's latest acknowledged record is there exactly once, at the offset its
  acknowledgement gave, with its value (a tombstone too: delete.retention.ms is a day);
- the offsets read are strictly increasing, and every record read is the one acknowledged at
  its offset (compaction removes records, never moves or duplicates one);
- the log end is the number of records acknowledged: nothing acknowledged is lost;
- no `.cleaned` or `.swap` file of the killed process is left (recovery completes a decided
  swap and discards an unfinished cleaning; the restarted cleaner's own files are newer).

The run ends with a last kill and a restart without the cleaner, where no `.cleaned`/`.swap`
file may exist at all and no offset may be stored twice on disk. Enough kills must have left a
`.swap` or `.cleaned` file on disk, or the test tested nothing.

The restarts dominate the run time (about 2.5 s each, most of it the broker's codec warm-up)."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from wirekafka.protocol import records

pytestmark = pytest.mark.timeout(170)

_LOG = logging.getLogger("librdkafka")

ROUNDS = 20
KEYS = 600
BURST = 2500
MODES = ("swap", "swap-late", "cleaned", "delay")
LEFTOVER = (".cleaned", ".swap")
BROKER = {
    "log.cleaner.backoff.ms": "20",
}
TOPIC = {
    "internal.segment.bytes": "65536",  # Kafka's test-only key: segment.bytes must be >= 1 MiB (Kafka 4)
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "86400000",
}


class Acks:
    """offset -> (key, value) of every acknowledged record; delivery errors."""

    def __init__(self) -> None:
        self.records: dict[int, tuple[bytes, bytes | None]] = {}
        self.errors: list[KafkaError] = []
        self.lock = threading.Lock()

    def on_delivery(self, err, msg) -> None:
        with self.lock:
            if err is not None:
                self.errors.append(err)
            else:
                self.records[msg.offset()] = (msg.key(), msg.value())


def _burst(rng: random.Random, round_no: int) -> list[tuple[bytes, bytes | None]]:
    out = []
    for i in range(BURST):
        key = b"key-%05d" % rng.randrange(KEYS)
        value = None if rng.random() < 0.03 else (b"r%02d-%05d-" % (round_no, i)).ljust(100, b"v")
        out.append((key, value))
    return out


def _produce(producer: Producer, topic: str, burst, acks: Acks) -> None:
    for key, value in burst:
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=0, on_delivery=acks.on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)


def _leftovers(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(LEFTOVER))


def _kill(broker, directory: Path, mode: str, rng: random.Random, limit: float) -> None:
    """Kill the broker at the moment mode names, or when limit passes."""
    deadline = time.monotonic() + limit
    if mode == "delay":
        time.sleep(rng.uniform(0.0, 1.0))
    else:
        suffix = ".cleaned" if mode == "cleaned" else ".swap"
        while time.monotonic() < deadline:
            try:
                if any(n.endswith(suffix) for n in os.listdir(directory)):
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.0002)
        if mode == "swap-late":  # among the old segments' deletion and the final renames
            time.sleep(rng.uniform(0.001, 0.015))
    broker.kill()


def _read_all(bootstrap: str, topic: str, end: int, timeout: float = 30.0) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record of partition 0 up to end, with kafka-python."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_bytes=4 << 20,
                             max_partition_fetch_bytes=4 << 20)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[tuple[int, bytes, bytes | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=500, max_records=100_000).values():
                got += [(m.offset, m.key, m.value) for m in msgs]
        end_offsets = consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()
    assert end_offsets == end, f"log end {end_offsets}, {end} records acknowledged"
    return got


def _check(broker, topic: str, acks: Acks) -> None:
    with acks.lock:
        produced = dict(acks.records)
    end = len(produced)
    assert sorted(produced) == list(range(end)), "acknowledged offsets are not dense"
    got = _read_all(broker.bootstrap, topic, end)
    offsets = [o for o, _, _ in got]
    assert all(a < b for a, b in zip(offsets, offsets[1:])), "an offset read twice or out of order"
    assert offsets and offsets[-1] == end - 1, "the last record is always kept"
    for offset, key, value in got:
        assert produced.get(offset) == (key, value), f"offset {offset} holds {key!r}={value!r}"
    latest = {key: offset for offset, (key, _) in sorted(produced.items())}
    present = set(offsets)
    lost = [(k, o) for k, o in latest.items() if o not in present]
    assert not lost, f"{len(lost)} keys lost their latest record, e.g. {lost[:3]}"


def _stale_leftovers(directory: Path, killed_ns: int) -> list[str]:
    """`.cleaned`/`.swap` files older than the kill: what recovery should have removed or finished.
    (The restarted cleaner's own files are created, and renamed, seconds after the kill.)"""
    stale = []
    for name in _leftovers(directory):
        try:
            if (directory / name).stat().st_ctime_ns < killed_ns + 200_000_000:
                stale.append(name)
        except FileNotFoundError:  # renamed or deleted by the cleaner meanwhile
            pass
    return stale


def _check_segments(directory: Path) -> None:
    """On disk, each segment's batches follow one another and the next segment starts past them:
    no offset is stored twice, whatever a reader would see; no index file is left without its log."""
    logs = {p.stem for p in directory.glob("*.log")}
    orphans = [p.name for p in directory.iterdir()
               if p.name.endswith((".index", ".timeindex", ".txnindex")) and p.name.split(".")[0] not in logs]
    assert not orphans
    last = -1
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        assert int(path.stem) > last, f"{path.name} starts at or before offset {last}, stored before it"
        for start, end in records.split_batches(data):
            header = records.check_integrity(data[start:end])
            assert header.base_offset > last and header.base_offset >= int(path.stem), (path.name, header)
            last = header.last_offset


def test_sigkill_during_cleaner_swaps_keeps_every_latest_record(broker_factory, topic_name):
    began = time.monotonic()
    broker = broker_factory(BROKER)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "logger": _LOG})
    for future in admin.create_topics([NewTopic(topic_name, 1, 1, config=TOPIC)]).values():
        future.result(15)
    directory = broker.data_dir / f"{topic_name}-0"
    acks = Acks()
    rng = random.Random(20261123)
    kills: Counter[str] = Counter()
    for round_no in range(ROUNDS):
        mode = MODES[round_no % len(MODES)]
        burst = _burst(rng, round_no)
        # Idempotent when the burst is in flight at the kill (its retries must not duplicate); a
        # plain acks=all producer otherwise (librdkafka's idempotent start costs half a second).
        producer = Producer({"bootstrap.servers": broker.bootstrap, "logger": _LOG, "acks": "all",
                             "enable.idempotence": mode == "delay", "linger.ms": 5, "batch.size": 16384,
                             "message.timeout.ms": 120_000, "reconnect.backoff.ms": 20,
                             "reconnect.backoff.max.ms": 200})
        if mode == "delay":
            sender = threading.Thread(target=_produce, args=(producer, topic_name, burst, acks), daemon=True)
            sender.start()
            _kill(broker, directory, mode, rng, 5.0)
            sender.join(30)
            assert not sender.is_alive()
        else:
            _produce(producer, topic_name, burst, acks)
            assert producer.flush(30) == 0
            _kill(broker, directory, mode, rng, 5.0)
        killed_ns = time.time_ns()
        left = _leftovers(directory)
        kills[f"{mode}: left " + (".swap" if any(n.endswith(".swap") for n in left) else
                                  ".cleaned" if left else "nothing")] += 1
        broker.start()
        assert not _stale_leftovers(directory, killed_ns), (round_no, mode, left, _leftovers(directory))
        assert producer.flush(60) == 0
        assert not acks.errors, acks.errors[:3]
        _check(broker, topic_name, acks)

    # Without the cleaner after a last kill: nothing of it may remain at all.
    broker.kill()
    broker.overrides["log.cleaner.enable"] = "false"
    broker.start()
    assert _leftovers(directory) == []
    _check_segments(directory)
    _check(broker, topic_name, acks)
    assert broker.stop() == 0, broker.log_tail()
    completed = broker.log_path.read_text(errors="replace").count("completing an interrupted swap")
    summary = (f"{ROUNDS} kills in {time.monotonic() - began:.0f} s: {dict(sorted(kills.items()))}; "
               f"recovery deleted {completed} old segment(s) to complete swaps")
    print(summary)
    swaps = sum(n for k, n in kills.items() if k.endswith(".swap"))
    cleaned = sum(n for k, n in kills.items() if k.endswith(".cleaned"))
    # Kills aimed at a swap land in its window most of the time (7 of 10 typically); one each is
    # what the recovery paths need to have been exercised, and what chance cannot take away.
    assert swaps >= 1 and cleaned >= 1, f"no kill landed while the cleaner swapped: {summary}"
