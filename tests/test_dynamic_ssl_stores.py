"""Dynamic SSL stores (broker/listener_tls.py through IncrementalAlterConfigs): where Kafka lets
them be set, the checks of a new key store against the old (it loads, same subject DN and
SubjectAltNames unless allowed, the inter-broker listener's handshake both ways), what new
connections then get, DescribeConfigs' view, and the settings kept across a restart. Stores are
made with `cryptography`; conformance/test_dynamic_ssl.py compares the answers with Kafka's."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, pkcs12
from cryptography.x509.oid import NameOID
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest

from tests.test_admin_handlers import call, reopen
from wirekafka.config import dynamic as dc
from wirekafka.config.listener_tls import incompatibility, java_dn, java_sans
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.tls import CertEntry

PASSWORD = "store-secret"
SSL_PREFIX = "listener.name.ssl."
_IR = IncrementalAlterConfigsRequest.AlterConfigsResource
_INVALID = ("Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic config update of "
            "SSLFactory failed: {} for configuration Invalid dynamic configuration")


def _cert(cn: str, sans: list[x509.GeneralName], serial: int) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(serial).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName(sans), False)
            # key identifiers, as keytool writes them: OpenSSL needs them to tell apart trusted
            # certificates that share a subject
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), False)
            .sign(key, hashes.SHA256()))
    return key, cert


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """old/rotated (same DN and SANs), other-dn, fewer-sans, untrusted (same DN, not in the trust
    store), and trust.p12 trusting all but untrusted."""
    directory = tmp_path_factory.mktemp("dynamic-ssl")
    loopback = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    made = {"old": _cert("localhost", loopback, 1), "rotated": _cert("localhost", loopback, 2),
            "other-dn": _cert("other", loopback, 3), "fewer-sans": _cert("localhost", loopback[:1], 4),
            "untrusted": _cert("localhost", loopback, 5)}
    for name, (key, cert) in made.items():
        (directory / f"{name}.p12").write_bytes(pkcs12.serialize_key_and_certificates(
            b"broker", key, cert, None, BestAvailableEncryption(PASSWORD.encode())))
    trusted = b"".join(cert.public_bytes(Encoding.PEM) for name, (_, cert) in made.items() if name != "untrusted")
    (directory / "trust.pem").write_bytes(trusted)
    return directory


def _state(tmp_path: Path, stores: Path, **extra: str) -> BrokerState:
    state = BrokerState(build_config({
        "log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL", "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(stores / "old.p12"),
        "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(stores / "trust.pem"), **extra}))
    state.load()
    trio.run(state.metadata.broker_configs.listener_tls.start)
    return state


def _alter(state: BrokerState, configs: dict[str, str | None], name: str = "1",
           validate_only: bool = False) -> tuple[int, str | None]:
    ops = [_IR.AlterableConfig(name=k, config_operation=0 if v is not None else 1, value=v) for k, v in configs.items()]
    request = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[_IR(
        resource_type=4, resource_name=name, configs=ops)])
    r = call(state, request, 1).responses[0]
    return r.error_code, r.error_message


def _keystore(stores: Path, name: str, password: str = PASSWORD) -> dict[str, str | None]:
    return {SSL_PREFIX + "ssl.keystore.location": str(stores / f"{name}.p12"),
            SSL_PREFIX + "ssl.keystore.password": password}


def _presented_serial(state: BrokerState) -> int:
    """The serial of the certificate a new connection on the SSL listener is shown."""
    server = state.metadata.broker_configs.listener_tls.context("SSL")
    client = ssl.create_default_context()
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server_side, client_side = server.wrap_bio(s_in, s_out, server_side=True), client.wrap_bio(c_in, c_out)
    for _ in range(5):
        for side, out, peer in ((client_side, c_out, s_in), (server_side, s_out, c_in)):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
            peer.write(out.read())
    return x509.load_der_x509_certificate(client_side.getpeercert(binary_form=True)).serial_number


# ---- where the keys may be set ---------------------------------------------------------------------
def test_store_keys_need_the_listener_prefix_and_a_broker_id(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores)
    assert _alter(state, {"ssl.keystore.location": "/x"}) == (
        ErrorCode.INVALID_REQUEST, "These security configs can be dynamically updated only per-listener using the "
                                   "listener prefix: [ssl.keystore.location]")
    assert _alter(state, {"listeners": "PLAINTEXT://:1", "ssl.keystore.location": "/x"}) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [listeners]")
    assert _alter(state, _keystore(stores, "rotated"), name="") == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id must be "
                                   f"specified: [{SSL_PREFIX}ssl.keystore.location, {SSL_PREFIX}ssl.keystore.password]")
    assert _alter(state, {SSL_PREFIX + "ssl.client.auth": "required"}) == (
        ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: [{SSL_PREFIX}ssl.client.auth]")
    assert dc.is_sensitive(SSL_PREFIX + "ssl.keystore.password") and not dc.is_sensitive(SSL_PREFIX + "ssl.keystore.type")
    state.shutdown()


def test_stored_settings_from_another_writer_are_applied_with_the_checks(tmp_path: Path, stores: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """A ZooKeeper-mode broker applies its own entity as the watch delivers it (apply_stored):
    checked as a request's change; one the checks refuse is logged once and changes nothing."""
    state = _state(tmp_path, stores)
    dynamic = state.metadata.broker_configs
    dynamic.replace("1", _keystore(stores, "rotated"))
    trio.run(dynamic.listener_tls.apply_stored)
    assert _presented_serial(state) == 2
    dynamic.replace("1", _keystore(stores, "other-dn"))
    with caplog.at_level("ERROR", logger="wirekafka.config.listener_tls"):
        trio.run(dynamic.listener_tls.apply_stored)
        trio.run(dynamic.listener_tls.apply_stored)
    assert _presented_serial(state) == 2
    assert [r.getMessage() for r in caplog.records] == [
        "listener SSL: its stored SSL settings were not applied: " + _INVALID.format(
            "org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName does not match:  "
            "existing={alias=broker, DN=CN=localhost}, new={alias=broker, DN=CN=other}")]
    state.shutdown()


# ---- Kafka's checks of a new key store ----------------------------------------------------------------
def _entry(cn: str, sans: tuple[tuple[int, str], ...], alias: str = "broker") -> CertEntry:
    return CertEntry(alias, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]), sans)


def test_dn_and_san_rules() -> None:
    sans = ((7, "127.0.0.1"), (2, "localhost"))
    old = (_entry("localhost", sans),)
    assert incompatibility(old, (_entry("LOCALHOST", sans),), False, False) is None  # equal ignoring case
    assert incompatibility(old, (_entry("localhost", sans + ((2, "extra"),)),), False, False) is None  # a superset
    assert incompatibility(old, (_entry("other", sans),), False, False) == (
        "Keystore DistinguishedName does not match:  existing={alias=broker, DN=CN=localhost}, "
        "new={alias=broker, DN=CN=other}")
    assert incompatibility(old, (_entry("other", sans),), True, False) is None
    assert incompatibility(old, (_entry("localhost", sans[:1]),), False, False) == (
        "Keystore SubjectAltNames do not match:  existing={alias=broker, SAN=[[2, localhost], [7, 127.0.0.1]]}, "
        "new={alias=broker, SAN=[[7, 127.0.0.1]]}")
    assert incompatibility(old, (_entry("localhost", ()),), False, True) is None
    assert incompatibility(old, old * 2, False, True) == (
        "Keystore entries do not match, existing store contains 1 entries, new store contains 2 entries")
    assert incompatibility(old, old * 2, True, True) is None


def test_names_print_as_java_prints_them() -> None:
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "broker")])
    assert java_dn(CertEntry("a", name, ())) == "CN=broker, O=Example"
    assert java_sans(()) == "[]"


# ---- a change through IncrementalAlterConfigs ----------------------------------------------------------
def test_a_rotated_key_store_reaches_new_connections(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores)
    assert _presented_serial(state) == 1
    assert _alter(state, _keystore(stores, "rotated"), validate_only=True) == (0, None)
    assert _presented_serial(state) == 1 and state.metadata.broker_configs.own == {}
    assert _alter(state, _keystore(stores, "rotated")) == (0, None)
    assert _presented_serial(state) == 2
    # an unchanged setting is not checked again, and deleting it goes back to the static store
    assert _alter(state, _keystore(stores, "rotated")) == (0, None)
    assert _alter(state, dict.fromkeys(_keystore(stores, "rotated"))) == (0, None)
    assert _presented_serial(state) == 1
    state.shutdown()


def test_refused_key_stores(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores)
    wrong = _keystore(stores, "rotated", password="wrong")
    assert _alter(state, wrong) == (ErrorCode.INVALID_REQUEST, _INVALID.format(
        f"org.apache.kafka.common.KafkaException: Failed to load SSL keystore {stores / 'rotated.p12'} of type PKCS12"))
    assert _alter(state, _keystore(stores, "other-dn"), validate_only=True) == (ErrorCode.INVALID_REQUEST, _INVALID.format(
        "org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName does not match:  "
        "existing={alias=broker, DN=CN=localhost}, new={alias=broker, DN=CN=other}"))
    assert _alter(state, _keystore(stores, "fewer-sans"))[1].endswith(
        "SAN=[[7, 127.0.0.1]]} for configuration Invalid dynamic configuration")
    missing = {SSL_PREFIX + "ssl.keystore.location": str(stores / "none.p12")}
    assert _alter(state, missing) == (ErrorCode.INVALID_REQUEST, _INVALID.format(
        f"org.apache.kafka.common.KafkaException: Failed to load SSL keystore {stores / 'none.p12'} of type PKCS12"))
    garbage = {SSL_PREFIX + "ssl.truststore.certificates": "garbage", SSL_PREFIX + "ssl.truststore.location": ""}
    assert _alter(state, garbage) == (ErrorCode.INVALID_REQUEST, _INVALID.format(
        "org.apache.kafka.common.errors.InvalidConfigurationException: Invalid PEM truststore configs"))
    assert _presented_serial(state) == 1 and state.metadata.broker_configs.own == {}
    state.shutdown()


def test_dn_changes_when_allowed(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores, **{"ssl.allow.dn.changes": "true"})
    assert _alter(state, _keystore(stores, "other-dn")) == (0, None)
    assert _presented_serial(state) == 3
    state.shutdown()


def test_the_inter_broker_listener_must_still_handshake(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores, **{"inter.broker.listener.name": "SSL", "ssl.endpoint.identification.algorithm": ""})
    code, message = _alter(state, _keystore(stores, "untrusted"))
    assert code == ErrorCode.INVALID_REQUEST and "javax.net.ssl.SSLHandshakeException: " in message
    assert _alter(state, _keystore(stores, "rotated")) == (0, None)  # both sides trust both certificates
    assert _presented_serial(state) == 2
    state.shutdown()


def test_described_and_kept_across_a_restart(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores)
    assert _alter(state, {**_keystore(stores, "rotated"), SSL_PREFIX + "ssl.keystore.type": "PKCS12"}) == (0, None)
    keys = [SSL_PREFIX + "ssl.keystore.location", SSL_PREFIX + "ssl.keystore.password", SSL_PREFIX + "ssl.keystore.type"]
    request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=4, resource_name="1", configuration_keys=keys)], include_synonyms=True,
        include_documentation=False)
    entries = {c.name: c for c in call(state, request, 4).results[0].configs}
    location, password = entries[keys[0]], entries[keys[1]]
    assert (location.value, location.config_source, location.read_only, location.config_type) == (
        str(stores / "rotated.p12"), 2, True, 2)
    assert [(s.name, s.source) for s in location.synonyms] == [(keys[0], 2), ("ssl.keystore.location", 4)]
    assert (password.value, password.is_sensitive, password.config_type) == (None, True, 9)
    assert [(s.name, s.value, s.source) for s in password.synonyms] == [
        (keys[1], None, 2), ("ssl.keystore.password", None, 4)]
    assert [(s.name, s.value, s.source) for s in entries[keys[2]].synonyms] == [
        (keys[2], "PKCS12", 2), ("ssl.keystore.type", "PKCS12", 4), ("ssl.keystore.type", "JKS", 5)]
    again = _restarted(state)
    assert again.metadata.broker_configs.own[keys[0]] == str(stores / "rotated.p12")
    assert _presented_serial(again) == 2
    again.shutdown()


def _restarted(state: BrokerState) -> BrokerState:
    """The broker started again on the same log dir, its listener's TLS set up as at start-up."""
    again = reopen(state)
    trio.run(again.metadata.broker_configs.listener_tls.start)
    return again


def test_settings_that_no_longer_load_fall_back_to_the_static_stores(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores)
    gone = tmp_path / "gone.p12"
    gone.write_bytes((stores / "rotated.p12").read_bytes())
    assert _alter(state, {SSL_PREFIX + "ssl.keystore.location": str(gone)}) == (0, None)
    gone.unlink()
    again = _restarted(state)
    assert _presented_serial(again) == 1
    again.shutdown()


def test_a_store_file_changed_in_place_is_reloaded_when_set_again(tmp_path: Path, stores: Path) -> None:
    state = _state(tmp_path, stores)
    live = tmp_path / "live.p12"
    live.write_bytes((stores / "old.p12").read_bytes())
    assert _alter(state, _keystore(stores, "old") | {SSL_PREFIX + "ssl.keystore.location": str(live)}) == (0, None)
    assert _presented_serial(state) == 1
    live.write_bytes((stores / "rotated.p12").read_bytes())
    os.utime(live, (1, 1))  # a modification time other than the one read
    assert _alter(state, {SSL_PREFIX + "ssl.keystore.location": str(live)}) == (0, None)
    assert _presented_serial(state) == 2
    state.shutdown()
