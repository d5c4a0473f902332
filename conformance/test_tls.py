"""An SSL listener at the wire level, against Kafka 4.3.1: over TLS (the same keytool-made PKCS12
key store for both), ApiVersions, Metadata naming the SSL listener's port, CreateTopics, Produce
and Fetch answer as on Kafka — Fetch's records come from the segment bytes read and encrypted
rather than sendfile'd, and must be the same batches. The TLS handshake's outcome (version, the
certificate presented) is checked too.

The pair is this module's own: wirekafka and Kafka each with a PLAINTEXT and an SSL listener."""

from __future__ import annotations

import ssl

import pytest

from conformance.harness.broker_configs import BROKER, described, node_id
from conformance.harness.own_brokers import own_two_listener_pair
from conformance.harness.scenarios import batch, fetch, produce
from conformance.harness.wire import Connection, create_topic, metadata, unique
from testsupport.tls_material import TlsMaterial, shared

def _material() -> TlsMaterial:
    return shared("conformance-tls-")


def _settings(plaintext: int, ssl_port: int) -> dict[str, str]:
    return {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SSL://127.0.0.1:{ssl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", **_material().broker_settings()}


own_wirekafka, own_kafka, target = own_two_listener_pair("SSL", _settings)


def _tls(versions: tuple[ssl.TLSVersion, ssl.TLSVersion] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(_material().broker_pem))
    if versions is not None:
        context.minimum_version, context.maximum_version = versions
    return context


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLSv1.2", "TLSv1.3"])
def test_requests_over_tls(target, version):
    topic = unique("tls")
    with Connection(target.bootstrap(target.second), tls=_tls((version, version))) as conn:
        assert conn.sock.version() == version.name.replace("_", ".")
        assert conn.sock.getpeercert()["subject"] == ((("commonName", "localhost"),),)
        answer = metadata(conn, None, version=12)
        assert [(b.host, b.port) for b in answer.brokers] == [("127.0.0.1", target.second)]
        create_topic(conn, topic, partitions=1)
        for _ in range(3):  # batches of 800 KB: each answer spans many TLS records
            written = produce(conn, topic, batch([b"v" * 20_000] * 40), version=11)
            assert written.error_code == 0
        fetched = fetch(conn, topic, 0, version=12, max_bytes=4 << 20, partition_max_bytes=4 << 20)
        assert fetched.error_code == 0 and fetched.high_watermark == 120
        assert len(fetched.records) == 3 * len(batch([b"v" * 20_000] * 40))


SSL_KEYS = ["ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
            "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.client.auth",
            "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm", "ssl.keystore.key",
            "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "ssl.cipher.suites"]


def test_ssl_settings_are_described_and_passwords_are_not_shown(target):
    with Connection(target.bootstrap(target.plaintext)) as conn:
        configs = described(conn, BROKER, node_id(conn), SSL_KEYS)
    assert configs["ssl.keystore.location"][0] == str(_material().keystore)
    for key in ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password"):
        value, _read_only, source, synonyms, config_type = configs[key]
        assert (value, config_type, source) == (None, 9, 4)  # PASSWORD, static broker config
        assert all(s[1] is None for s in synonyms)
