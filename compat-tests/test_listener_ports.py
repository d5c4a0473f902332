"""Listeners on port 0, as Kafka runs them: each gets a port from the OS, the start-up log names
it, and clients are told that port (Kafka's ephemeral-port correction of advertised listeners),
on whichever listener they bootstrap."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from testsupport.broker_process import REPO

LISTENING = re.compile(rb"listening on (127\.0\.0\.1:\d+ \[\w+\](?:, 127\.0\.0\.1:\d+ \[\w+\])*)")


def _bound_ports(log: Path, proc: subprocess.Popen, timeout: float = 30.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        found = LISTENING.search(log.read_bytes())
        if found:
            pairs = re.findall(r"127\.0\.0\.1:(\d+) \[(\w+)\]", found.group(1).decode())
            return {name: int(port) for port, name in pairs}
        time.sleep(0.05)
    raise TimeoutError(log.read_text())


def test_listeners_on_port_0_advertise_their_bound_ports(tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    args = [sys.executable, "-m", "wirekafka", "serve",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "--override", f"log.dirs={tmp_path / 'data'}", "--override", "offsets.topic.num.partitions=1"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        ports = _bound_ports(log, proc)
        assert sorted(ports) == ["INTERNAL", "PLAINTEXT"] and 0 not in ports.values(), ports
        for name, port in ports.items():
            bootstrap = f"127.0.0.1:{port}"
            brokers = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).brokers
            assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", port)], (name, brokers)
            # a client that bootstraps on this listener produces and consumes through it
            topic = f"port-zero-{name.lower()}"
            producer = Producer({"bootstrap.servers": bootstrap})
            producer.produce(topic, b"via " + name.encode())
            assert producer.flush(30) == 0
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{name.lower()}",
                                 "auto.offset.reset": "earliest"})
            consumer.subscribe([topic])
            got = None
            deadline = time.monotonic() + 30
            while got is None and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got = msg.value()
            consumer.close()
            assert got == b"via " + name.encode()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
