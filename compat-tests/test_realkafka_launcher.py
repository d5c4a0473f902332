"""Self-test of scripts/realkafka.py: the real Apache Kafka reference broker and its Java tools.

Starts a genuine Kafka (jars from Maven Central, cached by ensure_jars), creates a topic with
kafka-topics, round-trips 10 records with kafka-python, dumps the segment file with
DumpLogSegments, exercises the CLI, and checks a restart on the same data.
Needs java and mvn (scripts/install_system_deps.sh); first run downloads ~55 MB of jars.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from scripts import realkafka

pytestmark = pytest.mark.realkafka

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "realkafka.py"


if shutil.which("java") is None or shutil.which("mvn") is None:  # pragma: no cover
    pytest.skip("java and mvn are needed (scripts/install_system_deps.sh)", allow_module_level=True)


@pytest.fixture(scope="module")
def kafka():
    libs = realkafka.ensure_jars()
    assert any(libs.glob("kafka_2.13-*.jar"))
    with realkafka.RealKafka() as k:
        yield k


def _out(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def test_ensure_jars_is_cached():
    first = realkafka.ensure_jars()  # may resolve (cold cache)
    t0 = time.monotonic()
    libs = realkafka.ensure_jars()
    assert libs == first
    assert time.monotonic() - t0 < 2.0, "second ensure_jars() should only check the marker"
    names = {p.name for p in libs.glob("*.jar")}
    assert f"kafka_2.13-{realkafka.KAFKA_VERSION}.jar" in names
    assert f"kafka-tools-{realkafka.KAFKA_VERSION}.jar" in names
    assert any(n.startswith("log4j-slf4j") for n in names), "slf4j binding missing"


def test_tool_classes_exist():
    """Every TOOLS entry names a class present in the resolved jars."""
    import zipfile

    libs = realkafka.ensure_jars()
    classes: set[str] = set()
    for jar in libs.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            classes.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    missing = {name: cls for name, cls in realkafka.TOOLS.items() if cls not in classes}
    assert not missing


def test_api_versions_probe(kafka):
    host, port = kafka.bootstrap.split(":")
    assert realkafka.api_versions_probe(host, int(port))
    assert kafka.alive()
    log = kafka.log_tail(5000)
    assert "Kafka Server started" in log, "broker log (log4j2 via slf4j) should be populated"


def test_topic_produce_consume_dump(kafka):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"launcher-{uuid.uuid4().hex[:8]}"
    created = realkafka.run_tool(
        "kafka-topics",
        ["--bootstrap-server", kafka.bootstrap, "--create", "--topic", topic,
         "--partitions", "1", "--replication-factor", "1"], timeout=120)
    assert created.returncode == 0, _out(created)
    assert f"Created topic {topic}" in created.stdout.decode()

    described = kafka.run_tool(realkafka.TOOLS["kafka-topics"],
                               ["--bootstrap-server", kafka.bootstrap, "--describe",
                                "--topic", topic], timeout=120)
    assert described.returncode == 0, _out(described)
    assert "PartitionCount: 1" in described.stdout.decode()

    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all")
    for i in range(10):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0).get(timeout=30)
    producer.flush(30)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=1000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    consumer.close()
    assert [(r.offset, r.key, r.value) for r in got] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(10)]

    segment = kafka.partition_dir(topic, 0) / "00000000000000000000.log"
    assert segment.is_file()
    dumped = realkafka.run_tool("kafka-dump-log",
                                ["--files", str(segment), "--print-data-log"], timeout=120)
    text = dumped.stdout.decode()
    assert dumped.returncode == 0, _out(dumped)
    assert f"Dumping {segment}" in text
    # Every record appears with its offset and payload ("| offset: N ... payload: vN").
    assert "Log starting offset: 0" in text
    offsets = [int(m) for m in re.findall(r"^\| offset: (\d+) ", text, re.M)]
    assert offsets == list(range(10)), text
    assert "payload: v9" in text


def test_console_producer_consumer_with_stdin(kafka):
    topic = f"console-{uuid.uuid4().hex[:8]}"  # auto-created by the producer
    lines = b"".join(b"line-%d\n" % i for i in range(5))
    produced = realkafka.run_tool("kafka-console-producer",
                                  ["--bootstrap-server", kafka.bootstrap, "--topic", topic],
                                  timeout=120, input=lines)
    assert produced.returncode == 0, _out(produced)
    consumed = realkafka.run_tool(
        "kafka-console-consumer",
        ["--bootstrap-server", kafka.bootstrap, "--topic", topic, "--from-beginning",
         "--max-messages", "5", "--timeout-ms", "30000"], timeout=120)
    assert consumed.returncode == 0, _out(consumed)
    assert consumed.stdout.decode().split() == [f"line-{i}" for i in range(5)]


def test_cli_tool_and_tools_list(kafka):
    listed = subprocess.run([sys.executable, str(SCRIPT), "tool", "kafka-topics",
                             "--bootstrap-server", kafka.bootstrap, "--list"],
                            capture_output=True, timeout=120)
    assert listed.returncode == 0, _out(listed)
    names = subprocess.run([sys.executable, str(SCRIPT), "tools"], capture_output=True,
                           timeout=60, check=True).stdout.decode()
    assert "kafka-dump-log" in names and "org.apache.kafka.tools.DumpLogSegments" in names
    ensured = subprocess.run([sys.executable, str(SCRIPT), "ensure"], capture_output=True,
                             timeout=600, check=True)
    assert Path(ensured.stdout.decode().strip()) == realkafka.ensure_jars()


def test_cli_serve_sigterm(tmp_path):
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "serve", "--workdir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline().decode().strip()
        assert re.fullmatch(r"127\.0\.0\.1:\d+", line), proc.stderr.read1().decode()
        host, port = line.split(":")
        assert realkafka.api_versions_probe(host, int(port))
        proc.terminate()
        assert proc.wait(60) == 0
        assert not realkafka.api_versions_probe(host, int(port), timeout=1.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_restart_keeps_data(tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    k = realkafka.RealKafka(tmp_path / "node")
    k.start()
    try:
        port = k.port
        producer = KafkaProducer(bootstrap_servers=k.bootstrap)
        producer.send("restart", b"before").get(timeout=30)
        producer.close()
        assert k.stop() is not None
        k.start()  # same workdir, ports and data: no re-format
        assert k.port == port
        consumer = KafkaConsumer(bootstrap_servers=k.bootstrap, enable_auto_commit=False)
        tp = TopicPartition("restart", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        consumer.close()
        assert got == [b"before"]
    finally:
        k.stop()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed "
                    "(scripts/install_system_deps.sh)")
def test_kcat_against_real_kafka(kafka):
    """kcat (installed by scripts/install_system_deps.sh) talks to the reference broker."""
    topic = f"kcat-{uuid.uuid4().hex[:8]}"
    produced = subprocess.run(["kcat", "-b", kafka.bootstrap, "-t", topic, "-P"],
                              input=b"a\nb\nc\n", capture_output=True, timeout=60)
    assert produced.returncode == 0, _out(produced)
    consumed = subprocess.run(["kcat", "-b", kafka.bootstrap, "-t", topic, "-C", "-o",
                               "beginning", "-c", "3", "-e"], capture_output=True, timeout=60)
    assert consumed.returncode == 0, _out(consumed)
    assert consumed.stdout.split() == [b"a", b"b", b"c"]
