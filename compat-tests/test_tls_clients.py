"""Stock clients over TLS: confluent-kafka, kafka-python, aiokafka, kcat and Kafka's Java console
tools on an SSL listener (the broker's PKCS12 key store made with keytool), confluent-kafka with a
client certificate where ssl.client.auth=required (and refused without one), and SASL/PLAIN
inside TLS on a SASL_SSL listener. Fetches over TLS read the segment bytes (no sendfile) and
still return every record; large records make each fetch span many TLS records.

One broker for the module: PLAINTEXT, SSL, MTLS (SSL with client authentication) and SASL_SSL
listeners. The wire-level answers over TLS are compared with Kafka 4.3.1 in
conformance/test_tls.py."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import KafkaError, Producer

from secure_clients import (aiokafka_round_trip, confluent_round_trip, java_console_round_trip,
                            kafka_python_round_trip, kcat_round_trip)
from testsupport.broker_process import BrokerProcess, free_port
from testsupport.tls_material import PASSWORD, TlsMaterial, make

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_alice="alice-secret";')


class TlsBroker:
    def __init__(self, ports: dict[str, int], material: TlsMaterial) -> None:
        self.material = material
        self.address = {name: f"127.0.0.1:{port}" for name, port in ports.items()}


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    material = make(tmp_path_factory.mktemp("tls-material"))
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "MTLS", "SASL_SSL")}
    proc = BrokerProcess(tmp_path_factory.mktemp("tls") / "data", {
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name": "PLAINTEXT", **material.broker_settings(),
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"},
        port=ports["PLAINTEXT"]).start()
    yield TlsBroker(ports, material)
    proc.stop()


def test_confluent_kafka_over_tls(tls_broker: TlsBroker) -> None:
    config = {"bootstrap.servers": tls_broker.address["SSL"], **tls_broker.material.librdkafka_settings()}
    values = [bytes([i % 251]) * 300_000 for i in range(12)]
    assert confluent_round_trip(config, "tls-confluent", values) == values


def test_client_certificates_where_the_listener_requires_them(tls_broker: TlsBroker) -> None:
    with_cert = {"bootstrap.servers": tls_broker.address["MTLS"],
                 **tls_broker.material.librdkafka_settings(client_auth=True)}
    assert confluent_round_trip(with_cert, "tls-mtls", [b"a", b"b"]) == [b"a", b"b"]
    errors: list[KafkaError] = []
    without = Producer({"bootstrap.servers": tls_broker.address["MTLS"],
                        **tls_broker.material.librdkafka_settings(), "error_cb": errors.append})
    for _ in range(100):
        without.poll(0.1)
        if errors:
            break
    assert errors and errors[0].code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN), errors
    del without


def test_sasl_plain_inside_tls(tls_broker: TlsBroker) -> None:
    config = {"bootstrap.servers": tls_broker.address["SASL_SSL"], **tls_broker.material.librdkafka_settings(),
              "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
              "sasl.password": "alice-secret"}
    assert confluent_round_trip(config, "tls-sasl", [b"s1", b"s2"]) == [b"s1", b"s2"]


def test_kafka_python_over_tls(tls_broker: TlsBroker) -> None:
    settings = dict(bootstrap_servers=tls_broker.address["SSL"], security_protocol="SSL",
                    ssl_cafile=str(tls_broker.material.broker_pem))
    assert kafka_python_round_trip(settings, "tls-kafka-python") == [b"k%d" % i for i in range(10)]


def test_aiokafka_over_tls(tls_broker: TlsBroker) -> None:
    context = ssl.create_default_context(cafile=str(tls_broker.material.broker_pem))
    settings = dict(bootstrap_servers=tls_broker.address["SSL"], security_protocol="SSL", ssl_context=context)
    assert aiokafka_round_trip(settings, "tls-aiokafka") == [b"a%d" % i for i in range(10)]


def test_kcat_over_tls(tls_broker: TlsBroker) -> None:
    settings = {"security.protocol": "SSL", "ssl.ca.location": str(tls_broker.material.broker_pem)}
    assert kcat_round_trip(tls_broker.address["SSL"], settings, "tls-kcat") == ["x1", "x2", "x3"]


def test_java_console_tools_over_tls(tls_broker: TlsBroker, tmp_path: Path) -> None:
    client = tmp_path / "client.properties"
    client.write_text(f"security.protocol=SSL\nssl.truststore.type=PKCS12\n"
                      f"ssl.truststore.location={tls_broker.material.truststore}\nssl.truststore.password={PASSWORD}\n")
    assert java_console_round_trip(tls_broker.address["SSL"], client, "tls-java") == ["j1", "j2"]
