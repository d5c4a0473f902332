"""Stock clients on a SASL_PLAINTEXT listener with SASL/PLAIN: confluent-kafka, kafka-python,
aiokafka, kcat and Kafka's Java console tools authenticate with a user of the listener's JAAS
login module, then produce and consume through it; a wrong password is refused as Kafka refuses
it (each client reports an authentication failure), and the broker stays up for the others.

One broker for the module, with a PLAINTEXT listener and a SASL_PLAINTEXT one. The wire-level
exchange is compared with Kafka 4.3.1 in conformance/test_sasl.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import KafkaError, Producer

from secure_clients import (aiokafka_round_trip, confluent_round_trip, java_console_round_trip,
                            kafka_python_round_trip, kcat_round_trip)
from testsupport.broker_process import BrokerProcess, free_port

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
PLAIN = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
         "sasl.password": "alice-secret"}


@pytest.fixture(scope="module")
def sasl_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plaintext, sasl = free_port(), free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("sasl") / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}, port=plaintext).start()
    yield f"127.0.0.1:{sasl}"
    proc.stop()


def test_confluent_kafka_authenticates_and_a_wrong_password_is_refused(sasl_address: str) -> None:
    values = [b"m%02d" % i for i in range(20)]
    assert confluent_round_trip({"bootstrap.servers": sasl_address, **PLAIN}, "sasl-confluent", values) == values
    errors: list[KafkaError] = []
    refused = Producer({"bootstrap.servers": sasl_address, **PLAIN, "sasl.password": "wrong",
                        "error_cb": errors.append})
    for _ in range(100):  # librdkafka reports the failure through its error callback, served by poll
        refused.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    assert any(e.code() == KafkaError._AUTHENTICATION and "Invalid username or password" in e.str()
               for e in errors), errors
    del refused


def test_kafka_python_authenticates(sasl_address: str, caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as PyKafkaError

    settings = dict(bootstrap_servers=sasl_address, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert kafka_python_round_trip(settings, "sasl-kafka-python") == [b"k%d" % i for i in range(10)]
    with pytest.raises(PyKafkaError):  # it retries the refused bootstrap until its timeout
        KafkaProducer(**{**settings, "sasl_plain_password": "wrong", "bootstrap_timeout_ms": 3000})
    assert "SaslAuthenticationFailedError: Authentication failed: Invalid username or password" in caplog.text


def test_aiokafka_authenticates(sasl_address: str) -> None:
    settings = dict(bootstrap_servers=sasl_address, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert aiokafka_round_trip(settings, "sasl-aiokafka") == [b"a%d" % i for i in range(10)]


def test_kcat_authenticates(sasl_address: str) -> None:
    assert kcat_round_trip(sasl_address, PLAIN, "sasl-kcat") == ["x1", "x2", "x3"]


def test_java_console_tools_authenticate(sasl_address: str, tmp_path: Path) -> None:
    client = tmp_path / "client.properties"
    client.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                      'username="alice" password="alice-secret";\n')
    assert java_console_round_trip(sasl_address, client, "sasl-java") == ["j1", "j2"]


def test_librdkafka_re_authenticates_before_its_session_expires(tmp_path: Path) -> None:
    """connections.max.reauth.ms=2000: librdkafka (KIP-368) re-authenticates its connections
    within each session lifetime, so a producer writing for 7 s is never cut off, and the
    broker closes none of its connections as expired."""
    plaintext, sasl = free_port(), free_port()
    proc = BrokerProcess(tmp_path / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "2000"}, port=plaintext).start()
    try:
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{sasl}", **PLAIN, "linger.ms": 5})
        acked: list[object] = []
        deadline = time.monotonic() + 7
        sent = 0
        while time.monotonic() < deadline:
            producer.produce("reauth", b"r%d" % sent, on_delivery=lambda err, msg: acked.append(err))
            sent += 1
            producer.poll(0.05)
        assert producer.flush(30) == 0
        assert len(acked) == sent and set(acked) == {None}, (sent, [e for e in acked if e is not None][:3])
        log = proc.log_tail()
        assert "SASL session expired" not in log, log
    finally:
        proc.stop()
