"""Rotating a TLS listener's key store at runtime in a ZooKeeper-mode cluster, as Kafka 3.9 does it:
the per-broker, listener-prefixed store keys go to /config/brokers/<id> with their passwords
encoded with password.encoder.secret (broker/password_encoder.py), and the broker applies them.

A 2-broker wirekafka cluster on the session's ZooKeeper, each broker with a PLAINTEXT listener
(inter-broker) and an SSL one; broker 1 has password.encoder.secret, broker 2 has none.
- IncrementalAlterConfigs on broker 1 sets its SSL listener's key store: a new TLS connection
  gets the new certificate; the znode holds the password encoded, which wirekafka's decoder and
  Kafka 3.9.1's own (compat-tests/java/PasswordCodec.java on the cached jars) both read back;
- AlterConfigs (all keys replaced) sets another store, with another store and key password;
- broker 1 restarted decodes the znode and serves that store from the start;
- broker 2 answers a store change as Kafka 3.9 answers without the secret (INVALID_CONFIG, after
  validate_only succeeded) and writes nothing;
- broker 1 restarted with a new secret and the old one as password.encoder.old.secret encodes its
  stored passwords anew (Kafka 3.9.1's decoder reads them with the new secret);
- a real Kafka 3.9.1 pair under its own chroot, whose /config/brokers/1 is a byte-for-byte copy of
  the wirekafka broker's: its broker 1 (same secret) decodes both passwords and serves the rotated
  store, its broker 2 (no secret) answers the same change with the same error as wirekafka's.
Needs java (keytool, the Kafka 3.9.1 jars)."""

from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, pkcs12
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kazoo.client import KazooClient

from client_support import raw_call
from testsupport.broker_process import free_port
from testsupport.cluster import WirekafkaCluster, wait_for
from scripts import realkafka
from testsupport.tls_material import PASSWORD, TlsMaterial, broker_keystore, make
from wirekafka.security.password_encoder import PasswordEncoder

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper]

SECRET = "cluster-encoder-secret"
NEW_PASSWORD = "rotated-store-secret"  # the second rotation's store and key password
PREFIX = "listener.name.ssl."
LOCATION, STORE_PASSWORD, KEY_PASSWORD = (PREFIX + "ssl.keystore.location", PREFIX + "ssl.keystore.password",
                                          PREFIX + "ssl.key.password")
CODEC = Path(__file__).resolve().parent / "java" / "PasswordCodec.java"
NO_SECRET = "Invalid config value for resource ConfigResource(type=BROKER, name='2'): Password encoder secret not " \
            "configured"
INVALID_CONFIG = 40
_IR = IncrementalAlterConfigsRequest.AlterConfigsResource
_AR = AlterConfigsRequest.AlterConfigsResource


def _listeners(port: int, ssl_port: int, material: TlsMaterial) -> dict[str, str]:
    listeners = f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port}"
    return {"listeners": listeners, "advertised.listeners": listeners, **material.broker_settings(PREFIX)}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The static store, "rotated" (same password) and "rotated2" (NEW_PASSWORD for store and key)."""
    material = make(tmp_path_factory.mktemp("dynamic-ssl-tls"))
    rotated2 = material.directory / "rotated2-new-password.p12"
    key, cert, _ = pkcs12.load_key_and_certificates(broker_keystore(material, "rotated2").read_bytes(),
                                                    PASSWORD.encode())
    rotated2.write_bytes(pkcs12.serialize_key_and_certificates(b"broker", key, cert, None,
                                                               BestAvailableEncryption(NEW_PASSWORD.encode())))
    return {"static": material.keystore, "rotated": broker_keystore(material, "rotated"), "rotated2": rotated2,
            "material": material.directory}


def _certificate(store: Path, password: str = PASSWORD) -> bytes:
    return pkcs12.load_key_and_certificates(store.read_bytes(), password.encode())[1].public_bytes(Encoding.DER)


def _presented(ssl_port: int) -> bytes:
    """The certificate a new TLS connection to the port is shown (DER)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", ssl_port), timeout=10) as raw:
        with context.wrap_socket(raw) as tls:
            return tls.getpeercert(binary_form=True)


def _incremental(broker, node: int, configs: dict[str, str], validate_only: bool = False) -> tuple[int, str | None]:
    request = IncrementalAlterConfigsRequest(version=0, validate_only=validate_only, resources=[_IR(
        resource_type=4, resource_name=str(node),
        configs=[_IR.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])])
    r = raw_call(broker, request, IncrementalAlterConfigsResponse).responses[0]
    return r.error_code, r.error_message


def _legacy(broker, node: int, configs: dict[str, str]) -> tuple[int, str | None]:
    request = AlterConfigsRequest(version=0, validate_only=False, resources=[_AR(
        resource_type=4, resource_name=str(node), configs=[_AR.AlterableConfig(name=k, value=v)
                                                           for k, v in configs.items()])])
    r = raw_call(broker, request, AlterConfigsResponse).responses[0]
    return r.error_code, r.error_message


def _kafka_decode(secret: str, encoded: str) -> str:
    """The password Kafka 3.9.1's EncryptingPasswordEncoder reads from an encoded value."""
    libs = realkafka.ensure_jars(realkafka.KAFKA_ZK_VERSION)
    done = subprocess.run(["java", "-cp", f"{libs}/*", str(CODEC), "decode", secret, encoded],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper: str,
            stores: dict[str, Path]) -> Iterator[tuple[WirekafkaCluster, dict[int, int]]]:
    material = TlsMaterial(stores["material"])
    ports = {n: (free_port(), free_port()) for n in (1, 2)}
    overrides = {n: _listeners(*ports[n], material) for n in (1, 2)}
    overrides[1]["password.encoder.secret"] = SECRET
    with WirekafkaCluster(tmp_path_factory.mktemp("wk-dynamic-ssl"), zookeeper, size=2, broker_overrides=overrides,
                          ports={n: p[0] for n, p in ports.items()}) as c:
        yield c, {n: p[1] for n, p in ports.items()}


def test_rotation_is_stored_encoded_and_applied(cluster, stores: dict[str, Path]) -> None:
    c, ssl_ports = cluster
    assert _presented(ssl_ports[1]) == _certificate(stores["static"])
    assert _incremental(c.brokers[1], 1, {LOCATION: str(stores["rotated"]), STORE_PASSWORD: PASSWORD}) == (0, None)
    assert _presented(ssl_ports[1]) == _certificate(stores["rotated"])
    stored = c.znode("/config/brokers/1")["config"]
    assert stored[LOCATION] == str(stores["rotated"]) and stored[STORE_PASSWORD] != PASSWORD
    assert PasswordEncoder(SECRET).decode(stored[STORE_PASSWORD]) == PASSWORD
    assert _kafka_decode(SECRET, stored[STORE_PASSWORD]) == PASSWORD

    # AlterConfigs replaces the whole set: another store, with its own store and key password
    rotated2 = {LOCATION: str(stores["rotated2"]), STORE_PASSWORD: NEW_PASSWORD, KEY_PASSWORD: NEW_PASSWORD}
    assert _legacy(c.brokers[1], 1, rotated2) == (0, None)
    assert _presented(ssl_ports[1]) == _certificate(stores["rotated2"], NEW_PASSWORD)
    stored = c.znode("/config/brokers/1")["config"]
    assert sorted(stored) == sorted(rotated2)
    for key in (STORE_PASSWORD, KEY_PASSWORD):
        assert _kafka_decode(SECRET, stored[key]) == PasswordEncoder(SECRET).decode(stored[key]) == NEW_PASSWORD

    # a restarted broker decodes the znode before its listeners start
    assert c.brokers[1].stop() == 0
    c.brokers[1].start()
    assert _presented(ssl_ports[1]) == _certificate(stores["rotated2"], NEW_PASSWORD)


def test_without_a_secret_a_password_is_refused_as_kafka_refuses_it(cluster, stores: dict[str, Path]) -> None:
    c, ssl_ports = cluster
    change = {LOCATION: str(stores["rotated"]), STORE_PASSWORD: PASSWORD}
    assert _incremental(c.brokers[2], 2, change, validate_only=True) == (0, None)
    assert _incremental(c.brokers[2], 2, change) == (INVALID_CONFIG, NO_SECRET)
    assert c.zk.exists("/config/brokers/2") is None
    assert _presented(ssl_ports[2]) == _certificate(stores["static"])


@pytest.mark.realkafka
def test_kafka_reads_the_znode_wirekafka_wrote(cluster, stores: dict[str, Path], zookeeper: str,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    c, _ = cluster
    rotated2 = {LOCATION: str(stores["rotated2"]), STORE_PASSWORD: NEW_PASSWORD, KEY_PASSWORD: NEW_PASSWORD}
    assert _legacy(c.brokers[1], 1, rotated2) == (0, None)
    data, _ = c.zk.get("/config/brokers/1")
    workdir = tmp_path_factory.mktemp("kafka39-dynamic-ssl")
    chroot = f"/kafka39-{workdir.name}"
    seed = KazooClient(hosts=zookeeper, timeout=10.0)
    seed.start(timeout=15)
    try:
        seed.create(f"{chroot}/config/brokers/1", data, makepath=True)
    finally:
        seed.stop()
        seed.close()
    material = TlsMaterial(stores["material"])
    ports = {n: (free_port(), free_port()) for n in (1, 2)}
    overrides = {n: _listeners(*ports[n], material) for n in (1, 2)}
    overrides[1]["password.encoder.secret"] = SECRET
    brokers = realkafka.start_zk_cluster(zookeeper + chroot, (1, 2), workdir=workdir, heap="256m",
                                           broker_overrides=overrides, ports={n: p[0] for n, p in ports.items()})
    try:
        wait_for(lambda: _presented(ports[1][1]) == _certificate(stores["rotated2"], NEW_PASSWORD), 30,
                 "Kafka's broker 1 to serve the store set in the copied znode")
        change = {LOCATION: str(stores["rotated"]), STORE_PASSWORD: PASSWORD}
        assert _incremental(brokers[1], 2, change) == _incremental(c.brokers[2], 2, change) == (INVALID_CONFIG,
                                                                                               NO_SECRET)
    finally:
        realkafka.stop_all(brokers)


def test_a_new_secret_reencodes_the_stored_passwords_at_start(cluster, stores: dict[str, Path]) -> None:
    """With password.encoder.old.secret, a restarted broker rewrites its znode's passwords with the
    new secret (Kafka's start-up re-encoding) and serves the stored store."""
    c, ssl_ports = cluster
    rotated2 = {LOCATION: str(stores["rotated2"]), STORE_PASSWORD: NEW_PASSWORD, KEY_PASSWORD: NEW_PASSWORD}
    assert _legacy(c.brokers[1], 1, rotated2) == (0, None)
    broker = c.brokers[1]
    assert broker.stop() == 0
    broker.overrides.update({"password.encoder.secret": "changed-secret", "password.encoder.old.secret": SECRET})
    broker.start()
    stored = c.znode("/config/brokers/1")["config"]
    for key in (STORE_PASSWORD, KEY_PASSWORD):
        assert _kafka_decode("changed-secret", stored[key]) == NEW_PASSWORD
    assert stored[LOCATION] == str(stores["rotated2"])
    assert _presented(ssl_ports[1]) == _certificate(stores["rotated2"], NEW_PASSWORD)
