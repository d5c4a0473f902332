"""SASL/GSSAPI (Kerberos) with stock clients: a throw-away MIT KDC (testsupport/kdc.py), a
`wirekafka serve` process with a SASL_PLAINTEXT listener enabling GSSAPI from its keytab, and
Debian's kcat (librdkafka with Cyrus SASL's GSSAPI plug-in, logging in with kinit and a keytab)
and Kafka's Java console tools (Krb5LoginModule with a keytab) producing and consuming through it.

The broker authorizes with super.users=User:alice only, so what each client may do shows the
principal the broker made of its Kerberos name: alice@REALM is User:alice (DEFAULT rule), bob
is refused the topic. A broker whose keytab holds keys older than the KDC's refuses the tickets
clients bring, with SASL_AUTHENTICATION_FAILED; Kafka 4.3.1 with the same stale keytab is run
beside it, and the Java client reports the same failure for both. At the wire level, a client on
the same MIT library sees the same exchange from both brokers (SaslHandshake v1 with
SaslAuthenticate, v0 with bare tokens, and the close of a bare token sent without any handshake,
which Kafka 3 took as GSSAPI and Kafka 4 refuses).

The broker's name is `localhost` (its advertised SASL listener; it listens on 127.0.0.1): Kafka's
Java client asks for a ticket to `<service>/<reverse name of the address>`, which for 127.0.0.1
is localhost, so the service principal is kafka/localhost@REALM and every client uses that name."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import struct
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
import trio
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_cli import ok, run
from testsupport import kdc as kdc_support
from testsupport.broker_process import BrokerProcess, free_port
from scripts import realkafka
from wirekafka.security.kerberos import gssapi_binding
from wirekafka.broker.replication.peer_client import PeerClient, PeerSecurity
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config

pytestmark = pytest.mark.skipif(not kdc_support.available() or shutil.which("kcat") is None,
                                reason="MIT Kerberos KDC or kcat not installed (scripts/install_system_deps.sh)")

HOST = "localhost"
SERVICE = f"kafka/{HOST}"
GENERIC_REFUSAL = "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI"


class Realm:
    """The module's KDC with keytabs for the broker (current and stale keys), alice and bob."""

    def __init__(self, directory: Path) -> None:
        self.kdc = kdc_support.Kdc(directory).start()
        # exported twice: the first keytab's keys are then stale (a broker with them refuses tickets)
        self.stale_keytab = self.kdc.keytab(SERVICE, directory / "broker-stale.keytab")
        self.broker_keytab = self.kdc.keytab(SERVICE, directory / "broker.keytab")
        self.keytabs = {user: self.kdc.keytab(user) for user in ("alice", "bob")}

    def principal(self, name: str) -> str:
        return f"{name}@{self.kdc.realm}"

    def server_jaas(self, keytab: Path) -> str:
        """The broker's login module. Kafka and wirekafka log in to the KDC at start-up (isInitiator
        defaults to true), which fails with stale keys: brokers with those are told not to, so
        that they start and meet the clients' tickets."""
        initiator = " isInitiator=false" if keytab == self.stale_keytab else ""
        return kdc_support.keytab_login(keytab, self.principal(SERVICE), initiator)

    def java_properties(self, user: str, path: Path) -> Path:
        path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name=kafka\n"
                        f"sasl.jaas.config={kdc_support.keytab_login(self.keytabs[user], self.principal(user))}\n")
        return path

    def jvm_opts(self) -> list[str]:
        return [*realkafka.TOOL_JVM_OPTS, *self.kdc.java_options()]


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    r = Realm(tmp_path_factory.mktemp("kdc"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KRB5_CONFIG", str(r.kdc.krb5_conf))  # for the wire-level client in this process
        yield r
    r.kdc.stop()


def _broker_settings(realm: Realm, keytab: Path, plaintext: int, sasl: int) -> dict[str, str]:
    return {"listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://{HOST}:{sasl}",
            "sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.service.name": "kafka",
            "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": realm.server_jaas(keytab),
            "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def sasl_address(realm: Realm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plaintext, sasl = free_port(), free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("gssapi") / "data", {
        **_broker_settings(realm, realm.broker_keytab, plaintext, sasl),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:alice;User:ANONYMOUS"}, port=plaintext, env=realm.kdc.env).start()
    yield f"{HOST}:{sasl}"
    proc.stop()


def _kcat(realm: Realm, user: str, address: str, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    login, env = realm.kdc.kcat_login(realm.principal(user), realm.keytabs[user])
    return subprocess.run(["kcat", "-b", address, *login, *args], input=data, capture_output=True, timeout=60, env=env)


def test_kcat_produces_and_consumes_as_alice(realm: Realm, sasl_address: str) -> None:
    produced = _kcat(realm, "alice", sasl_address, "-P", "-t", "kcat-gssapi", data=b"x1\nx2\nx3\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(realm, "alice", sasl_address, "-C", "-t", "kcat-gssapi", "-o", "beginning", "-e",
                     "-f", "%s\n")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.decode().split() == ["x1", "x2", "x3"]


def test_java_console_tools_produce_and_consume_as_alice(realm: Realm, sasl_address: str, tmp_path: Path) -> None:
    config = ["--command-config", str(realm.java_properties("alice", tmp_path / "alice.properties"))]
    opts = realm.jvm_opts()
    ok("kafka-topics", "--bootstrap-server", sasl_address, "--create", "--topic", "java-gssapi", "--partitions", "1",
       "--replication-factor", "1", *config, jvm_opts=opts)
    ok("kafka-console-producer", "--bootstrap-server", sasl_address, "--topic", "java-gssapi", *config,
       input="j1\nj2\n", jvm_opts=opts)
    out = ok("kafka-console-consumer", "--bootstrap-server", sasl_address, "--topic", "java-gssapi",
             "--from-beginning", "--max-messages", "2", *config, jvm_opts=opts)
    assert out.split() == ["j1", "j2"]


def test_bob_authenticates_but_is_not_alice(realm: Realm, sasl_address: str) -> None:
    """bob@REALM becomes User:bob, who is no super user: the topic is refused, not the login."""
    ok_listing = _kcat(realm, "bob", sasl_address, "-L")
    assert ok_listing.returncode == 0, ok_listing.stderr  # authenticated: metadata is served
    produced = _kcat(realm, "bob", sasl_address, "-P", "-t", "kcat-gssapi", "-X", "message.timeout.ms=5000",
                     data=b"b1\n")
    assert b"Topic authorization failed" in produced.stderr or b"TOPIC_AUTHORIZATION_FAILED" in produced.stderr, \
        produced.stderr


def _java_produce(realm: Realm, address: str, tmp_path: Path) -> str:
    """One line through kafka-console-producer as alice; its stdout and stderr."""
    result = run("kafka-console-producer", "--bootstrap-server", address, "--topic", "refused", "--command-config",
                 str(realm.java_properties("alice", tmp_path / "alice.properties")), input="r1\n", timeout=90,
                 jvm_opts=realm.jvm_opts())
    return result.stdout + result.stderr


@pytest.mark.parametrize("kind", ["wirekafka", pytest.param("kafka", marks=pytest.mark.realkafka)])
def test_a_broker_with_stale_keys_refuses_as_kafka_does(realm: Realm, tmp_path: Path, kind: str) -> None:
    plaintext, sasl = free_port(), free_port()
    settings = _broker_settings(realm, realm.stale_keytab, plaintext, sasl)
    address = f"{HOST}:{sasl}"
    if kind == "wirekafka":
        broker = BrokerProcess(tmp_path / "data", settings, port=plaintext, env=realm.kdc.env).start()
        try:
            output = _java_produce(realm, address, tmp_path)
            listing = _kcat(realm, "alice", address, "-L", "-m", "10")
        finally:
            broker.stop()
        assert listing.returncode != 0 and b"SASL authentication error" in listing.stderr, listing.stderr
    else:
        controller = free_port()
        kafka = realkafka.RealKafka(overrides={
            **settings,
            "listeners": f"{settings['listeners']},CONTROLLER://127.0.0.1:{controller}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        }, port=plaintext, controller_port=controller, jvm_opts=realm.kdc.java_options()).start()
        try:
            output = _java_produce(realm, address, tmp_path)
        finally:
            kafka.stop()
    assert "SaslAuthenticationException" in output and GENERIC_REFUSAL in output, output[-3000:]


@pytest.fixture(scope="module")
def kafka_sasl_address(realm: Realm) -> Iterator[str]:
    """Kafka 4.3.1 with the same GSSAPI listener (no authorizer)."""
    plaintext, sasl, controller = free_port(), free_port(), free_port()
    settings = _broker_settings(realm, realm.broker_keytab, plaintext, sasl)
    kafka = realkafka.RealKafka(overrides={
        **settings, "listeners": f"{settings['listeners']},CONTROLLER://127.0.0.1:{controller}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    }, port=plaintext, controller_port=controller, jvm_opts=realm.kdc.java_options()).start()
    yield f"{HOST}:{sasl}"
    kafka.stop()


class _Wire:
    """Kafka frames over one socket, with kafka-python's request classes."""

    def __init__(self, address: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])), timeout=20)
        self._ids = itertools.count(1)

    def call(self, request, response_class, version: int):
        request.API_VERSION = version
        cid = next(self._ids)
        request.with_header(correlation_id=cid, client_id="gssapi-wire")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        payload = self.frame()
        assert struct.unpack_from(">i", payload)[0] == cid
        flexible = response_class.API_KEY != 18 and response_class.flexible_version_q(version)
        return response_class.decode(payload[4 + flexible:], version=version)

    def bare(self, token: bytes, answered: bool = True) -> bytes | None:
        self.sock.sendall(struct.pack(">i", len(token)) + token)
        return self.frame() if answered else None

    def frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._exact(4))
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "the broker closed the connection"
            data += chunk
        return data


def _wire_exchange(realm: Realm, address: str, handshake: int | None) -> list[object]:
    """What a client logging in as alice sees, step by step (RFC 4752 after SaslHandshake v1 with
    SaslAuthenticate, or v0 with bare tokens), then ApiVersions on the authenticated connection;
    with no handshake at all (a Kafka 0.9 client's bare first token), whether the broker closes."""
    credential = gssapi_binding.Credential.initiator(realm.principal("alice"), str(realm.keytabs["alice"]),
                                                    f"MEMORY:wire-{os.getpid()}-{handshake}-{address}")
    ctx = gssapi_binding.InitiatorContext(credential, realm.principal(SERVICE))
    wire, seen = _Wire(address), []

    def send(token: bytes, answered: bool = True) -> bytes | None:
        if handshake != 1:
            return wire.bare(token, answered)
        answer = wire.call(SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse, 2)
        seen.append((answer.error_code, answer.error_message, answer.session_lifetime_ms))
        return answer.auth_bytes

    try:
        if handshake is None:
            wire.bare(ctx.step(), answered=False)
            return [wire.sock.recv(1) == b""]
        answer = wire.call(SaslHandshakeRequest(mechanism="GSSAPI"), SaslHandshakeResponse, handshake)
        seen.append((answer.error_code, answer.mechanisms))
        ap_rep = send(ctx.step())
        seen.append(bool(ap_rep))  # mutual authentication: the acceptor's token comes back
        assert ctx.step(ap_rep or b"") == b"" and ctx.established
        seen.append(ctx.unwrap(send(b"") or b"")[0])  # the security-layer offer
        seen.append(send(ctx.wrap(b"\x01\x00\x00\x00"), answered=handshake == 1))  # the choice: no bare answer
        versions = wire.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                             ApiVersionsResponse, 3)
        seen.append(versions.error_code)
    finally:
        wire.sock.close()
        ctx.delete()
        credential.release()
    return seen


@pytest.mark.realkafka
@pytest.mark.parametrize("handshake", [1, 0, None], ids=["handshake-v1", "handshake-v0", "no-handshake"])
def test_the_exchange_on_the_wire_is_kafkas(realm: Realm, sasl_address: str, kafka_sasl_address: str,
                                            handshake: int | None) -> None:
    ours = _wire_exchange(realm, sasl_address, handshake)
    assert ours == _wire_exchange(realm, kafka_sasl_address, handshake)
    offer = b"\x01\x01\x00\x00"  # no security layer; 65536 bytes
    assert ours == {1: [(0, ["GSSAPI"]), (0, "", 0), True, (0, "", 0), offer, (0, "", 0), b"", 0],
                    0: [(0, ["GSSAPI"]), True, offer, None, 0],
                    None: [True]}[handshake]  # Kafka 4 closes on a token without handshake


async def _peer_login(config_settings: dict[str, str], address: str) -> int:
    """wirekafka's inter-broker client logging in to `address` with the broker's Kerberos login
    (PeerClient, as a follower connects to its leader); the error code of ApiVersions after it."""
    config = build_config(config_settings)
    host, port = address.rsplit(":", 1)
    async with PeerClient(host, int(port), "broker-1-gssapi", 10.0, 20.0, security=PeerSecurity.of(config)) as peer:
        return (await peer.send(ApiVersionsRequest(version=3, client_software_name="wirekafka",
                                                   client_software_version="1"))).error_code


@pytest.mark.realkafka
def test_a_broker_logs_in_to_kafka_and_to_wirekafka_alike(realm: Realm, sasl_address: str, kafka_sasl_address: str,
                                                         tmp_path: Path) -> None:
    """The client side of inter-broker GSSAPI (sasl.mechanism.inter.broker.protocol=GSSAPI) against
    Kafka 4.3.1's GSSAPI listener and wirekafka's: kafka/localhost@REALM with the broker's keytab
    asks for a ticket to kafka/localhost and completes RFC 4752's steps on both."""
    settings = {**_broker_settings(realm, realm.broker_keytab, free_port(), free_port()),
                "log.dirs": str(tmp_path / "data"), "inter.broker.listener.name": "SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "GSSAPI"}
    for address in (kafka_sasl_address, sasl_address):
        assert trio.run(_peer_login, settings, address) == 0, address
    stale = {**settings, "listener.name.sasl_plaintext.gssapi.sasl.jaas.config":
             realm.server_jaas(realm.stale_keytab).replace(" isInitiator=false", "")}
    with pytest.raises(ConfigError, match="LoginException"):  # stale keys: the broker does not start
        build_config(stale)
