"""Produce-then-consume round trips with each stock client, given its security settings: shared by
the SASL (test_sasl_clients.py) and TLS (test_tls_clients.py) client tests, which differ only in
the settings each client gets."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafka_cli import ok


def confluent_round_trip(config: dict[str, Any], topic: str, values: list[bytes]) -> list[bytes]:
    """Produce values with confluent-kafka, then read them back from the start (a new group)."""
    producer = Producer(config)
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) >= len(values):
                break
    finally:
        consumer.close()
    return got


def kafka_python_round_trip(settings: dict[str, Any], topic: str, count: int = 10) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(**settings)
    for i in range(count):
        producer.send(topic, b"k%d" % i).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **settings)
    got = [m.value for m in consumer][:count]
    consumer.close()
    return got


def aiokafka_round_trip(settings: dict[str, Any], topic: str, count: int = 10) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            for i in range(count):
                await producer.send_and_wait(topic, b"a%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **settings)
        await consumer.start()
        got: list[bytes] = []
        try:
            while len(got) < count:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                got += [m.value for msgs in batch.values() for m in msgs]
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def kcat_round_trip(bootstrap: str, settings: dict[str, str], topic: str) -> list[str]:
    """Three lines produced and consumed with kcat (-X settings); the lines read back."""
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.fail("kcat is not installed: run `bash scripts/install_system_deps.sh` (Debian package kcat)")
    options = [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]
    produced = subprocess.run([kcat, "-b", bootstrap, *options, "-P", "-t", topic], input=b"x1\nx2\nx3\n",
                              capture_output=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([kcat, "-b", bootstrap, *options, "-C", "-t", topic, "-o", "beginning", "-e",
                               "-f", "%s\n"], capture_output=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    return consumed.stdout.decode().split()


def java_console_round_trip(bootstrap: str, client_properties: Path, topic: str) -> list[str]:
    """kafka-topics --create, two lines through kafka-console-producer, read back with
    kafka-console-consumer; all with --command-config client_properties."""
    config = ["--command-config", str(client_properties)]
    ok("kafka-topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "1",
       "--replication-factor", "1", *config)
    ok("kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", topic, *config, input="j1\nj2\n")
    out = ok("kafka-console-consumer", "--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
             "--max-messages", "2", *config)
    return out.split()
