"""Rotating an SSL listener's certificate at runtime, against Kafka 4.3.1: its key store set per
broker with the listener prefix (listener.name.ssl.ssl.keystore.*) through IncrementalAlterConfigs
and AlterConfigs, validate_only and for real; what DescribeConfigs then shows (sensitive values
hidden, source DYNAMIC_BROKER_CONFIG, the base key as synonym); the refusals — a wrong password, a
key store whose certificate has another subject (accepted where ssl.allow.dn.changes is true),
a certificate that lost a SubjectAltName, the keys without the prefix, the cluster default, list
operations on them — with Kafka's messages; and that new TLS connections then get the new
certificate while an open one keeps working. Certificates are
compared by subject and serial number (both brokers read the same keytool-made stores).

The pairs are this module's own: wirekafka and Kafka each with a PLAINTEXT and an SSL listener,
and a second pair started with ssl.allow.dn.changes=true. Kafka applies a stored change
asynchronously (its metadata publisher), so a new connection's certificate is polled for."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12

from conformance.harness.broker_configs import BROKER, DELETE, DYNAMIC_BROKER, SET, described, incremental, legacy, node_id
from conformance.harness.own_brokers import TwoListeners, own_two_listener_pair
from conformance.harness.wire import Connection, metadata, poll
from testsupport.tls_material import PASSWORD, TlsMaterial, broker_keystore, shared

INVALID_CONFIG, INVALID_REQUEST = 40, 42
PREFIX = "listener.name.ssl."
LOCATION, STORE_PASSWORD = PREFIX + "ssl.keystore.location", PREFIX + "ssl.keystore.password"
_INVALID = ("Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic config update of "
            "SSLFactory failed: {} for configuration Invalid dynamic configuration")


def _material() -> TlsMaterial:
    return shared("conformance-dynamic-ssl-")


def _settings(plaintext: int, ssl_port: int) -> dict[str, str]:
    return {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SSL://127.0.0.1:{ssl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", **_material().broker_settings()}


def _allowing_settings(plaintext: int, ssl_port: int) -> dict[str, str]:
    return {**_settings(plaintext, ssl_port), "ssl.allow.dn.changes": "true"}


own_wirekafka, own_kafka, target = own_two_listener_pair("SSL", _settings)
allowing_wirekafka, allowing_kafka, _allowing_target = own_two_listener_pair("SSL", _allowing_settings)


def _rotated() -> Path:
    return broker_keystore(_material(), "rotated")


def _other_dn() -> Path:
    return broker_keystore(_material(), "other-dn", dname="CN=other")


def _keystore(store: Path, password: str = PASSWORD) -> list[tuple[str, int, str | None]]:
    return [(LOCATION, SET, str(store)), (STORE_PASSWORD, SET, password)]


def _restore() -> list[tuple[str, int, str | None]]:
    return [(LOCATION, DELETE, None), (STORE_PASSWORD, DELETE, None)]


def _certificate(store: Path) -> tuple[str, int]:
    """The subject and serial of a key store's certificate."""
    loaded = pkcs12.load_pkcs12(store.read_bytes(), PASSWORD.encode())
    assert loaded.cert is not None
    cert = loaded.cert.certificate
    return cert.subject.rfc4514_string(), cert.serial_number


def _served(broker: TwoListeners) -> tuple[str, int]:
    """The subject and serial of the certificate a new TLS connection to the SSL listener gets."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", broker.second), timeout=10) as raw:
        with context.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    cert = x509.load_der_x509_certificate(der)
    return cert.subject.rfc4514_string(), cert.serial_number


def _serves(broker: TwoListeners, store: Path) -> None:
    expected = _certificate(store)
    poll(lambda: _served(broker), lambda got: got == expected)


def _trusting_client() -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(_material().broker_pem))
    context.check_hostname = False
    return context


def test_a_rotated_key_store_reaches_new_connections_only(target):
    original = _material().keystore
    assert _served(target) == _certificate(original)
    with Connection(target.bootstrap(target.plaintext)) as admin, \
            Connection(target.bootstrap(target.second), tls=_trusting_client()) as open_tls:
        node = node_id(admin)
        assert incremental(admin, node, _keystore(_rotated()), validate_only=True) == (0, None)
        assert _served(target) == _certificate(original)
        assert incremental(admin, node, _keystore(_rotated())) == (0, None)
        _serves(target, _rotated())
        # the connection opened before the change keeps its session and certificate
        assert metadata(open_tls, None, version=12).brokers
        assert open_tls.sock.getpeercert()["subject"] == ((("commonName", "localhost"),),)
        # Kafka's broker reloads the listener before it updates the configs DescribeConfigs reads
        configs = poll(lambda: described(admin, BROKER, node, [LOCATION, STORE_PASSWORD, "ssl.keystore.location"]),
                       lambda found: LOCATION in found)
        assert configs[LOCATION][0] == str(_rotated()) and configs[LOCATION][2] == DYNAMIC_BROKER
        assert configs[STORE_PASSWORD][0] is None and configs[STORE_PASSWORD][4] == 9  # PASSWORD, hidden
        assert configs["ssl.keystore.location"][0] == str(original)
        assert incremental(admin, node, _restore()) == (0, None)
        _serves(target, original)
        assert poll(lambda: described(admin, BROKER, node, [LOCATION]), lambda found: found == {}) == {}


def test_legacy_alter_configs_sets_the_key_store(target):
    with Connection(target.bootstrap(target.plaintext)) as admin:
        node = node_id(admin)
        assert legacy(admin, node, {LOCATION: str(_rotated()), STORE_PASSWORD: PASSWORD}) == (0, None)
        _serves(target, _rotated())
        assert legacy(admin, node, {}) == (0, None)
        _serves(target, _material().keystore)


def test_a_key_store_that_does_not_load_is_refused(target):
    with Connection(target.bootstrap(target.plaintext)) as admin:
        node = node_id(admin)
        failed = _INVALID.format(f"org.apache.kafka.common.KafkaException: Failed to load SSL keystore {_rotated()} "
                                 "of type PKCS12")
        assert incremental(admin, node, _keystore(_rotated(), "wrong-password")) == (INVALID_REQUEST, failed)
        assert incremental(admin, node, _keystore(_rotated(), "wrong-password"), validate_only=True) == (
            INVALID_REQUEST, failed)
        assert legacy(admin, node, {LOCATION: str(_rotated()), STORE_PASSWORD: "wrong-password"}) == (
            INVALID_REQUEST, failed)
        assert poll(lambda: described(admin, BROKER, node, [LOCATION]), lambda found: found == {}) == {}
    assert _served(target) == _certificate(_material().keystore)


def test_a_certificate_with_another_subject_is_refused(target):
    with Connection(target.bootstrap(target.plaintext)) as admin:
        node = node_id(admin)
        assert incremental(admin, node, _keystore(_other_dn())) == (INVALID_REQUEST, _INVALID.format(
            "org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName does not match:  "
            "existing={alias=broker, DN=CN=localhost}, new={alias=broker, DN=CN=other}"))
        assert poll(lambda: described(admin, BROKER, node, [LOCATION]), lambda found: found == {}) == {}


def test_a_certificate_that_lost_a_subject_alt_name_is_refused(target):
    fewer = broker_keystore(_material(), "fewer-sans", san="SAN=IP:127.0.0.1")
    with Connection(target.bootstrap(target.plaintext)) as admin:
        assert incremental(admin, node_id(admin), _keystore(fewer)) == (INVALID_REQUEST, _INVALID.format(
            "org.apache.kafka.common.config.ConfigException: Keystore SubjectAltNames do not match:  "
            "existing={alias=broker, SAN=[[2, localhost], [7, 127.0.0.1]]}, new={alias=broker, SAN=[[7, 127.0.0.1]]}"))
    assert _served(target) == _certificate(_material().keystore)


def test_a_certificate_with_another_subject_where_dn_changes_are_allowed(target, request):
    broker = request.getfixturevalue(f"allowing_{target.name}")
    with Connection(broker.bootstrap(broker.plaintext)) as admin:
        node = node_id(admin)
        assert incremental(admin, node, _keystore(_other_dn())) == (0, None)
        _serves(broker, _other_dn())
        assert incremental(admin, node, _restore()) == (0, None)
        _serves(broker, _material().keystore)


def test_where_the_keys_may_not_be_set(target):
    with Connection(target.bootstrap(target.plaintext)) as admin:
        node = node_id(admin)
        assert incremental(admin, "", [(LOCATION, SET, str(_rotated()))]) == (
            INVALID_REQUEST, f"Cannot update these configs at default cluster level, broker id must be specified: "
                             f"[{LOCATION}]")
        assert incremental(admin, node, [("ssl.keystore.location", SET, str(_rotated()))]) == (
            INVALID_REQUEST, "These security configs can be dynamically updated only per-listener using the "
                             "listener prefix: [ssl.keystore.location]")
        assert incremental(admin, node, [(LOCATION, DELETE, None)]) == (0, None)  # nothing to delete


@pytest.mark.parametrize("operation", [2, 3], ids=["APPEND", "SUBTRACT"])
def test_list_operations_on_a_store_key(target, operation):
    with Connection(target.bootstrap(target.plaintext)) as admin:
        assert incremental(admin, node_id(admin), [(LOCATION, operation, str(_rotated()))]) == (
            INVALID_CONFIG, f"Unknown config name: {LOCATION}")
