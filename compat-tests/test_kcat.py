"""kcat (librdkafka's command-line client, from Debian) against a live wirekafka."""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None,
                                reason="kcat is installed by scripts/install_system_deps.sh")


def kcat(*args: str, input: bytes | None = None) -> str:
    proc = subprocess.run(["kcat", *args], input=input, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_consume_with_keys_headers_and_codecs(broker, topic_name, codec):
    b = broker.bootstrap
    lines = "".join(f"k{i}:value-{i}\n" for i in range(30)).encode()
    kcat("-b", b, "-P", "-t", topic_name, "-K", ":", "-z", codec, "-H", "h1=x", "-H", "trace=abc", input=lines)
    out = kcat("-b", b, "-C", "-t", topic_name, "-o", "beginning", "-e",
               "-f", "%p|%o|%k|%s|%h\n")
    rows = [line.split("|") for line in out.splitlines()]
    assert [int(r[1]) for r in rows] == list(range(30))
    assert rows[7][2:] == ["k7", "value-7", "h1=x,trace=abc"]


def test_metadata_listing(broker, topic_name):
    kcat("-b", broker.bootstrap, "-P", "-t", topic_name, input=b"one\n")
    out = kcat("-b", broker.bootstrap, "-L", "-t", topic_name)
    assert "1 brokers:" in out and f'topic "{topic_name}" with 1 partitions' in out
    assert "leader 1, replicas: 1, isrs: 1" in out


def test_query_offsets_by_timestamp(broker, topic_name):
    b = broker.bootstrap
    base = 1_800_000_000_000
    kcat("-b", b, "-P", "-t", topic_name, "-p", "0", input=b"".join(b"v%d\n" % i for i in range(5)))
    out = kcat("-b", b, "-Q", "-t", f"{topic_name}:0:-1")
    assert out.strip().endswith("offset 5")
    out = kcat("-b", b, "-Q", "-t", f"{topic_name}:0:{base}")
    assert out.strip().endswith("offset -1")  # no record that late
    out = kcat("-b", b, "-Q", "-t", f"{topic_name}:0:0")
    assert out.strip().endswith("offset 0")
