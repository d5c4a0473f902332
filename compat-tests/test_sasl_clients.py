"""Stock clients on a SASL_PLAINTEXT listener with SASL/PLAIN: confluent-kafka, kafka-python,
aiokafka, kcat and Kafka's Java console tools authenticate with a user of the listener's JAAS
login module, then produce and consume through it; a wrong password is refused as Kafka refuses
it (each client reports an authentication failure), and the broker stays up for the others.

One broker for the module, with a PLAINTEXT listener (unauthenticated, for setup) and a
SASL_PLAINTEXT one. The wire-level exchange is compared with Kafka 4.3.1 in
conformance/test_sasl.py."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from java_tools import ok
from testsupport.broker_process import BrokerProcess, free_port

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


class SaslBroker:
    def __init__(self, proc: BrokerProcess, sasl_port: int) -> None:
        self.proc = proc
        self.plaintext = proc.bootstrap
        self.sasl = f"127.0.0.1:{sasl_port}"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    plaintext, sasl = free_port(), free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("sasl") / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}, port=plaintext).start()
    yield SaslBroker(proc, sasl)
    proc.stop()


def _confluent(broker: SaslBroker, password: str = "alice-secret", **extra: str) -> dict[str, str]:
    return {"bootstrap.servers": broker.sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": password, **extra}


def _create(broker: SaslBroker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.plaintext})  # alive until the result is in
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)


def _read_confluent(config: dict[str, str], topic: str, count: int) -> list[bytes]:
    consumer = Consumer({**config, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


def test_confluent_kafka_authenticates_and_a_wrong_password_is_refused(sasl_broker: SaslBroker) -> None:
    topic = "sasl-confluent"
    producer = Producer(_confluent(sasl_broker))
    for i in range(20):
        producer.produce(topic, b"m%02d" % i)
    assert producer.flush(30) == 0
    assert _read_confluent(_confluent(sasl_broker), topic, 20) == [b"m%02d" % i for i in range(20)]

    errors: list[KafkaError] = []
    refused = Producer(_confluent(sasl_broker, password="wrong", error_cb=errors.append))
    for _ in range(100):  # librdkafka reports the failure through its error callback, served by poll
        refused.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    assert any(e.code() == KafkaError._AUTHENTICATION and "Invalid username or password" in e.str()
               for e in errors), errors
    del refused


def test_kafka_python_authenticates(sasl_broker: SaslBroker, caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError as PyKafkaError

    topic = "sasl-kafka-python"
    settings = dict(bootstrap_servers=sasl_broker.sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username="alice", sasl_plain_password="alice-secret")
    producer = KafkaProducer(**settings)
    for i in range(10):
        producer.send(topic, b"k%d" % i).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **settings)
    assert [m.value for m in consumer][:10] == [b"k%d" % i for i in range(10)]
    consumer.close()
    with pytest.raises(PyKafkaError):  # it retries the refused bootstrap until its timeout
        KafkaProducer(**{**settings, "sasl_plain_password": "wrong", "bootstrap_timeout_ms": 3000})
    assert "SaslAuthenticationFailedError: Authentication failed: Invalid username or password" in caplog.text


def test_aiokafka_authenticates(sasl_broker: SaslBroker) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = "sasl-aiokafka"
    settings = dict(bootstrap_servers=sasl_broker.sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username="alice", sasl_plain_password="alice-secret")

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, b"a%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **settings)
        await consumer.start()
        got = []
        try:
            while len(got) < 10:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                got += [m.value for msgs in batch.values() for m in msgs]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [b"a%d" % i for i in range(10)]


def test_kcat_authenticates(sasl_broker: SaslBroker) -> None:
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.fail("kcat is not installed: run `bash scripts/install_system_deps.sh` (Debian package kcat)")
    topic = "sasl-kcat"
    auth = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=alice",
            "-X", "sasl.password=alice-secret"]
    produced = subprocess.run([kcat, "-b", sasl_broker.sasl, *auth, "-P", "-t", topic], input=b"x1\nx2\nx3\n",
                              capture_output=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([kcat, "-b", sasl_broker.sasl, *auth, "-C", "-t", topic, "-o", "beginning", "-e",
                               "-f", "%s\n"], capture_output=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.decode().split() == ["x1", "x2", "x3"]


def test_java_console_tools_authenticate(sasl_broker: SaslBroker, tmp_path: Path) -> None:
    topic = "sasl-java"
    _create(sasl_broker, topic)
    client = tmp_path / "client.properties"
    client.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                      'username="alice" password="alice-secret";\n')
    ok("kafka-console-producer", "--bootstrap-server", sasl_broker.sasl, "--topic", topic,
       "--command-config", str(client), input="j1\nj2\n")
    out = ok("kafka-console-consumer", "--bootstrap-server", sasl_broker.sasl, "--topic", topic,
             "--from-beginning", "--max-messages", "2", "--command-config", str(client))
    assert out.split() == ["j1", "j2"]
    listed = ok("kafka-topics", "--bootstrap-server", sasl_broker.sasl, "--list", "--command-config", str(client))
    assert topic in listed.split()
