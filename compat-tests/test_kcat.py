"""kcat (librdkafka's command-line client, Debian package "kcat"; scripts/install_system_deps.sh
installs it) against a live wirekafka: metadata listing, producing with keys, headers, partitions
and every codec, consuming with format strings and offsets, and offset look-ups by timestamp.

What kcat produced is read back with confluent-kafka and from wirekafka's segment files; what
kcat consumed or looked up is compared with records produced with explicit timestamps. The
outputs were checked against a real Kafka 4.3.1 broker."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from client_support import CODEC_ATTRIBUTE, CODECS, log_batches, read_confluent
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

T0 = (int(time.time()) - 3600) * 1000  # an hour ago: inside every retention and timestamp bound


@pytest.fixture(scope="module")
def kcat_path() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.fail("kcat is not installed: run `bash scripts/install_system_deps.sh` (Debian package kcat)")
    return path


def kcat(path: str, *args: str, input: bytes | None = None) -> str:
    proc = subprocess.run([path, *args], input=input, capture_output=True, timeout=60)
    assert proc.returncode == 0, f"kcat {' '.join(args)}: exit {proc.returncode}\n{proc.stderr.decode()[-2000:]}"
    return proc.stdout.decode()


def _create(broker, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def _produce_timed(broker, topic: str, count: int, partitions: int) -> None:
    """Record i: partition i % partitions, key k<i>, value v<i>, header h=<i> and a null-valued
    header n, timestamp T0 + i seconds."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 3})
    for i in range(count):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % partitions, timestamp=T0 + i * 1000,
                  headers=[("h", b"%d" % i), ("n", None)])
    assert p.flush(10) == 0


def test_metadata_listing(broker, topic_name, kcat_path):
    _create(broker, topic_name, 3)
    meta = json.loads(kcat(kcat_path, "-b", broker.bootstrap, "-L", "-J", "-t", topic_name))
    assert meta["brokers"] == [{"id": 1, "name": broker.bootstrap}] and meta["controllerid"] == 1
    assert meta["topics"] == [{"topic": topic_name, "partitions": [
        {"partition": p, "leader": 1, "replicas": [{"id": 1}], "isrs": [{"id": 1}]} for p in range(3)]}]

    lines = kcat(kcat_path, "-b", broker.bootstrap, "-L", "-t", topic_name).splitlines()
    assert lines[1:] == [
        " 1 brokers:", f"  broker 1 at {broker.bootstrap} (controller)", " 1 topics:",
        f'  topic "{topic_name}" with 3 partitions:',
        *(f"    partition {p}, leader 1, replicas: 1, isrs: 1" for p in range(3))]

    every = json.loads(kcat(kcat_path, "-b", broker.bootstrap, "-L", "-J"))
    assert topic_name in {t["topic"] for t in every["topics"]}


def test_produce_with_key_delimiter_headers_and_partition(broker, topic_name, kcat_path):
    b = broker.bootstrap
    _create(broker, topic_name, 2)
    lines = b"".join(b"key%d:value %d\n" % (i, i) for i in range(20))
    kcat(kcat_path, "-b", b, "-P", "-t", topic_name, "-p", "1", "-K", ":", "-H", "h1=x", "-H", "trace=abc",
         input=lines)
    kcat(kcat_path, "-b", b, "-P", "-t", topic_name, "-p", "0", "-k", "fixed-key", input=b"one\ntwo\n")
    kcat(kcat_path, "-b", b, "-P", "-t", topic_name, "-p", "0", "-K", ":", "-Z", input=b":null key\nnull value:\n")

    got = sorted(read_confluent(b, topic_name, {0: 4, 1: 20}), key=lambda g: (g.partition, g.offset))
    assert [(g.partition, g.offset, g.key, g.value, g.headers) for g in got] == [
        (0, 0, b"fixed-key", b"one", ()), (0, 1, b"fixed-key", b"two", ()),
        (0, 2, None, b"null key", ()), (0, 3, b"null value", None, ()),
        *((1, i, b"key%d" % i, b"value %d" % i, (("h1", b"x"), ("trace", b"abc"))) for i in range(20))]


def test_consume_with_format_string_and_offsets(broker, topic_name, kcat_path):
    b = broker.bootstrap
    _create(broker, topic_name, 2)
    _produce_timed(broker, topic_name, 10, 2)

    out = kcat(kcat_path, "-b", b, "-C", "-t", topic_name, "-o", "beginning", "-e",
               "-f", "%t|%p|%o|%T|%k|%s|%h|%K|%S\n")
    assert sorted(out.splitlines()) == sorted(
        f"{topic_name}|{i % 2}|{i // 2}|{T0 + i * 1000}|k{i}|v{i}|h={i},n=NULL|{len(str(i)) + 1}|{len(str(i)) + 1}"
        for i in range(10))

    records = [json.loads(line) for line in kcat(kcat_path, "-b", b, "-C", "-t", topic_name, "-p", "1",
                                                 "-o", "beginning", "-e", "-J").splitlines()]
    assert [(r["partition"], r["offset"], r["tstype"], r["ts"], r["key"], r["payload"], r["headers"])
            for r in records] == [(1, j, "create", T0 + (2 * j + 1) * 1000, f"k{2 * j + 1}", f"v{2 * j + 1}",
                                   ["h", str(2 * j + 1), "n", None]) for j in range(5)]

    def offsets(*args: str) -> list[int]:
        return [int(x) for x in kcat(kcat_path, "-b", b, "-C", "-t", topic_name, "-p", "0", *args,
                                     "-f", "%o\n").split()]

    assert offsets("-o", "1", "-c", "2") == [1, 2]
    assert offsets("-o", "-2", "-e") == [3, 4]  # the last two
    assert offsets("-o", f"s@{T0 + 3500}", "-e") == [2, 3, 4]  # partition 0 holds T0, T0+2s, T0+4s...
    assert offsets("-o", "beginning", "-o", f"e@{T0 + 4000}", "-e") == [0, 1]


def test_query_offsets_by_timestamp(broker, topic_name, kcat_path):
    b = broker.bootstrap
    _create(broker, topic_name, 2)
    _produce_timed(broker, topic_name, 10, 2)  # partition 0: T0, T0+2s, ...; partition 1: T0+1s, T0+3s, ...

    def query(partition: int, timestamp: int) -> str:
        return kcat(kcat_path, "-b", b, "-Q", "-t", f"{topic_name}:{partition}:{timestamp}").strip()

    assert query(0, T0) == f"{topic_name} [0] offset 0"
    assert query(0, T0 + 2500) == f"{topic_name} [0] offset 2"
    assert query(1, T0 + 2500) == f"{topic_name} [1] offset 1"
    assert query(1, T0 + 9000) == f"{topic_name} [1] offset 4"
    assert query(1, T0 + 9001) == f"{topic_name} [1] offset -1"  # nothing that late
    assert query(0, -1) == f"{topic_name} [0] offset 5"  # latest
    assert query(0, -2) == f"{topic_name} [0] offset 0"  # earliest


@pytest.mark.parametrize("codec", CODECS)
def test_compressed_producer(broker, topic_name, kcat_path, codec):
    b = broker.bootstrap
    _create(broker, topic_name, 1)
    count = 300
    lines = b"".join(b"k%d:%s\n" % (i, b"compressible value %d " % i * 8) for i in range(count))
    kcat(kcat_path, "-b", b, "-P", "-t", topic_name, "-p", "0", "-K", ":", "-z", codec, "-H", "codec=" + codec,
         input=lines)

    batches = log_batches(broker.data_dir, topic_name, 0)
    assert sum(batch.records_count for batch in batches) == count
    assert {batch.compression for batch in batches} == {CODEC_ATTRIBUTE[codec]}  # stored as kcat sent it

    out = kcat(kcat_path, "-b", b, "-C", "-t", topic_name, "-o", "beginning", "-e", "-f", "%o|%k|%s|%h\n")
    assert out.splitlines() == [f"{i}|k{i}|{f'compressible value {i} ' * 8}|codec={codec}" for i in range(count)]
    got = read_confluent(b, topic_name, {0: count})
    assert [(g.offset, g.key, g.value) for g in got] == [
        (i, b"k%d" % i, b"compressible value %d " % i * 8) for i in range(count)]
