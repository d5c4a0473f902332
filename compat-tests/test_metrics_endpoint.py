"""The Prometheus endpoint, the request log, the start-up line and JSON logs of a real
`wirekafka serve` process, driven by stock clients (confluent-kafka) as an operator would: scrape
/metrics with an HTTP client, parse the exposition with prometheus_client's parser, read the log.

One broker serves the module (metrics on, DEBUG, JSON logs, a secret in its configuration);
a second, with no metrics key, shows the endpoint is off by default."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from testsupport.broker_process import REPO, BrokerProcess, api_versions_ok, free_port

SECRET = f"key-pw-{uuid.uuid4().hex[:8]}"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Served:
    proc: subprocess.Popen
    log: Path
    bootstrap: str
    metrics_url: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("metrics")
    port, metrics_port = free_port(), free_port()
    log = tmp / "broker.log"
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(tmp / "data"),
                 "wirekafka.metrics.listener": f"127.0.0.1:{metrics_port}", "ssl.key.password": SECRET,
                 "offsets.topic.num.partitions": "1"}
    args = [sys.executable, "-m", "wirekafka", "serve", "--log-level", "DEBUG", "--log-format", "json"]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=_env())
    deadline = time.monotonic() + 60
    while not (f"listening on 127.0.0.1:{port} ".encode() in log.read_bytes() and api_versions_ok("127.0.0.1", port)):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    yield Served(proc, log, f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics")
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def _env() -> dict[str, str]:
    """The environment of a broker process: this checkout's wirekafka first on the path."""
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = answer.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0


def new_topic(bootstrap: str) -> str:
    name = f"metrics-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, name)
    return name


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: its handle carries it
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)


def test_produce_and_consume_move_the_families(served: Served) -> None:
    topic = new_topic(served.bootstrap)
    before = scrape(served.metrics_url)
    produce(served.bootstrap, topic, 500)
    consumer = Consumer({"bootstrap.servers": served.bootstrap, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < 500 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        got += msg is not None and not msg.error()
    consumer.close()
    assert got == 500
    after = scrape(served.metrics_url)
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 500
    grew = {name: value(after, name) - value(before, name) for name in (
        "kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_bytesin_total",
        "kafka_server_brokertopicmetrics_bytesout_total")}
    assert grew["kafka_server_brokertopicmetrics_messagesin_total"] == 500  # the all-topics series
    bytes_in = value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    assert 500 * len(b"v499") < bytes_in == grew["kafka_server_brokertopicmetrics_bytesin_total"]
    assert value(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) >= bytes_in
    produce_requests = sum(v - before.get(k, 0) for k, v in after.items()
                           if k[0] == "kafka_network_requestmetrics_requests_total"
                           and ("request", "Produce") in k[1])
    assert produce_requests >= 1
    timed = (value(after, "kafka_network_requestmetrics_totaltimems_count", request="Produce")
             - value(before, "kafka_network_requestmetrics_totaltimems_count", request="Produce"))
    assert timed == produce_requests  # one latency observation per request answered
    assert value(after, "kafka_network_requestmetrics_totaltimems_bucket", request="Fetch", le="+Inf") > 0
    assert value(after, "kafka_log_log_logendoffset", topic=topic, partition="0") == 500
    assert value(after, "kafka_log_log_size", topic=topic, partition="0") == bytes_in
    assert value(after, "kafka_server_replicamanager_partitioncount") >= 1
    assert value(after, "kafka_server_replicamanager_leadercount") == value(after, "kafka_server_replicamanager_partitioncount")
    assert value(after, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(after, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT",
                 networkProcessor="0") >= 0
    assert value(after, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= produce_requests
    for family in ("kafka_network_socketserver_memorypoolavailable", "kafka_network_requestchannel_requestqueuesize",
                   "kafka_log_logcleanermanager_time_since_last_run_ms", "kafka_server_replicamanager_isrshrinks_total",
                   "kafka_log_logflushstats_logflushrateandtimems_count"):
        assert any(k[0] == family for k in after), family


def test_an_error_answered_is_counted_by_api_and_code(served: Served) -> None:
    topic = new_topic(served.bootstrap)
    counted = ("kafka_network_requestmetrics_errors_total", frozenset({("request", "CreateTopics"),
                                                                        ("error", "TOPIC_ALREADY_EXISTS")}))
    before = scrape(served.metrics_url).get(counted, 0.0)
    with pytest.raises(Exception, match="already exists"):
        create_topic(served.bootstrap, topic)
    assert scrape(served.metrics_url)[counted] == before + 1


def test_rate_of_messages_in_matches_the_produced_rate(served: Served) -> None:
    """Grafana's rate(kafka_server_brokertopicmetrics_messagesin_total[...]) between two scrapes,
    against the records produced in that same window: within 10%."""
    topic = new_topic(served.bootstrap)
    first, t1 = scrape(served.metrics_url), time.monotonic()
    produced = 0
    producer = Producer({"bootstrap.servers": served.bootstrap, "linger.ms": 5})
    while time.monotonic() - t1 < 2.0:
        for i in range(200):
            producer.produce(topic, value=b"r%d" % i)
        produced += 200
        producer.poll(0)
        time.sleep(0.02)
    assert producer.flush(30) == 0
    second, t2 = scrape(served.metrics_url), time.monotonic()
    name = "kafka_server_brokertopicmetrics_messagesin_total"
    rate = (value(second, name, topic=topic) - value(first, name, topic=topic)) / (t2 - t1)
    assert rate == pytest.approx(produced / (t2 - t1), rel=0.10)


def test_the_event_loop_lateness_is_exposed_and_counts_wake_ups(served: Served) -> None:
    """The 1 ms timer on the broker's loop: its histogram gains about one sample a millisecond
    between two scrapes (fewer on a busy machine, never more), and the worst lateness is a gauge."""
    name = "wirekafka_event_loop_lateness_seconds"
    first, t1 = scrape(served.metrics_url), time.monotonic()
    time.sleep(1.0)
    second, t2 = scrape(served.metrics_url), time.monotonic()
    woke = value(second, name + "_count") - value(first, name + "_count")
    assert 100 <= woke <= (t2 - t1) * 1000 + 50
    assert value(second, name + "_bucket", le="+Inf") == value(second, name + "_count")
    assert value(second, name + "_sum") <= value(second, name + "_count") * value(second, name.replace(
        "_seconds", "_max_seconds"))
    assert (name.replace("_seconds", "_max_seconds"), frozenset()) in second


def test_only_get_metrics_is_served(served: Served) -> None:
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(served.metrics_url.replace("/metrics", "/"), timeout=10)
    assert missing.value.code == 404


def _log_entries(served: Served) -> list[dict]:
    """Every line of the broker's output, each a JSON object (asserted)."""
    entries = []
    for line in served.log.read_text().splitlines():
        entry = json.loads(line)
        assert {"time", "level", "logger", "message"} <= entry.keys(), line
        entries.append(entry)
    return entries


def test_requests_are_logged_at_debug_by_kafka_request_logger(served: Served) -> None:
    produce(served.bootstrap, new_topic(served.bootstrap), 10)
    completed = [json.loads(e["message"].removeprefix("Completed request:")) for e in _log_entries(served)
                 if e["logger"] == "kafka.request.logger"]
    assert completed and all(e["level"] == "DEBUG" for e in _log_entries(served) if e["logger"] == "kafka.request.logger")
    produced = [c for c in completed if c["requestHeader"]["requestApiKeyName"] == "PRODUCE"]
    assert produced, completed[:5]
    line = produced[-1]
    assert line["requestHeader"]["requestApiKey"] == 0 and line["requestHeader"]["clientId"] == "rdkafka"
    assert line["listener"] == "PLAINTEXT" and line["securityProtocol"] == "PLAINTEXT"
    assert line["principal"] == "User:ANONYMOUS" and line["requestSize"] > 0 and line["totalTimeMs"] >= 0


def test_the_startup_line_names_the_version_and_hides_secrets(served: Served) -> None:
    startup = [e["message"] for e in _log_entries(served) if "with non-default configuration:" in e["message"]]
    assert len(startup) == 1 and startup[0].startswith("starting wirekafka 0.1.0 ")
    assert "ssl.key.password=[hidden]" in startup[0]
    assert f"wirekafka.metrics.listener={served.metrics_url.split('/')[2]}" in startup[0]
    assert "offsets.topic.num.partitions=1" in startup[0]
    assert SECRET not in served.log.read_text()


def test_the_json_log_keeps_a_traceback_in_one_line(served: Served) -> None:
    """Every line parsed (above); an exception's text, when logged, is the entry's "exception"."""
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(30) == 0
    entries = _log_entries(served)
    assert entries[-1]["message"] == "shut down cleanly"
    assert all("Traceback" in e["exception"] for e in entries if "exception" in e)


def _listening_ports(pid: int) -> set[int]:
    """The TCP ports a process listens on (Linux: its socket inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_no_endpoint_without_the_key(broker_factory) -> None:
    broker: BrokerProcess = broker_factory()
    assert broker.proc is not None
    assert _listening_ports(broker.proc.pid) == {broker.port}
    assert "metrics endpoint" not in broker.log_tail(200)


@pytest.mark.parametrize("address", ["localhost:http", "::1:9404"])  # the parser's cases: tests/test_metrics_units.py
def test_a_bad_listener_address_stops_startup(address: str, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "wirekafka", "serve", "--override", f"log.dirs={tmp_path}",
                          "--override", f"wirekafka.metrics.listener={address}"],
                         capture_output=True, text=True, cwd=REPO, timeout=60, env=_env())
    assert run.returncode == 2, run.stderr
    assert f"invalid value {address!r} for wirekafka.metrics.listener" in run.stderr


def test_a_taken_metrics_port_stops_startup_without_a_traceback(tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", metrics_port))
        taken.listen()
        run = subprocess.run([sys.executable, "-m", "wirekafka", "serve", "--override", f"log.dirs={tmp_path}",
                              "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                              "--override", f"wirekafka.metrics.listener=127.0.0.1:{metrics_port}"],
                             capture_output=True, text=True, cwd=REPO, timeout=60, env=_env())
    assert run.returncode == 1, run.stderr
    assert f"fatal error during startup: cannot listen for metrics on 127.0.0.1:{metrics_port}" in run.stderr
    assert "Traceback" not in run.stderr
