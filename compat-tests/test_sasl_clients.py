"""Stock clients on a SASL_PLAINTEXT listener: with SASL/PLAIN, confluent-kafka, kafka-python,
aiokafka, kcat and Kafka's Java console tools authenticate with a user of the listener's JAAS
login module, then produce and consume through it; a wrong password is refused as Kafka refuses
it (each client reports an authentication failure), and the broker stays up for the others.
With SCRAM, credentials set by confluent-kafka's admin client and by kafka-configs let
confluent-kafka, the Java tools and kafka-python log in; a broker's own client logs in with both.

One broker for the module, with a PLAINTEXT listener and a SASL_PLAINTEXT one. The wire-level
exchange is compared with Kafka 4.3.1 in conformance/test_sasl.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest
import trio
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from kafka_cli import ok
from secure_clients import (aiokafka_round_trip, confluent_round_trip, java_console_round_trip,
                            kafka_python_round_trip, kcat_round_trip)
from testsupport.broker_process import BrokerProcess, free_port
from wirekafka.broker.replication.peer_client import PeerClient, PeerSasl, PeerSecurity, PeerUnavailable

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
PLAIN = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
         "sasl.password": "alice-secret"}


SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
# Kafka's default OAUTHBEARER validator (unsecured tokens), requiring the scope "kafka"; the
# broker's own login token is for admin
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
OAUTH_JAAS = f'{OAUTH_MODULE} unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";'
OAUTH = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
         "enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=alice scope=kafka"}
MECHANISMS = {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
              "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
              "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
              "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS}
_PLAINTEXT: list[str] = []  # the module broker's PLAINTEXT address, for setting credentials


@pytest.fixture(scope="module")
def sasl_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plaintext, sasl = free_port(), free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("sasl") / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}", **MECHANISMS,
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}, port=plaintext).start()
    _PLAINTEXT[:] = [proc.bootstrap]
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
    # The broker answers the failure, then closes (as Kafka does: conformance/test_sasl.py checks
    # the answer on the wire). kafka-python 3.0 reads the answer and the close in one go when both
    # are there before it looks, and then drops the answer ("socket disconnected"), so which of
    # the two it reports depends on its scheduling.
    assert ("SaslAuthenticationFailedError: Authentication failed: Invalid username or password" in caplog.text
            or "KafkaConnectionError: socket disconnected" in caplog.text), caplog.text


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


def test_oauthbearer_with_unsecured_tokens(sasl_address: str, tmp_path: Path) -> None:
    """confluent-kafka, kcat (librdkafka's unsecured JWT) and the Java console tools (Kafka's
    unsecured login) authenticate with OAUTHBEARER and produce and consume; a token without the
    required scope is refused."""
    values = [b"o%02d" % i for i in range(20)]
    assert confluent_round_trip({"bootstrap.servers": sasl_address, **OAUTH}, "oauth-confluent", values) == values
    assert kcat_round_trip(sasl_address, OAUTH, "oauth-kcat") == ["x1", "x2", "x3"]
    client = tmp_path / "client.properties"
    client.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                      f'sasl.jaas.config={OAUTH_MODULE} unsecuredLoginStringClaim_sub="java-user" '
                      'unsecuredLoginListClaim_scope=",kafka,other";\n')
    assert java_console_round_trip(sasl_address, client, "oauth-java") == ["j1", "j2"]
    errors: list[KafkaError] = []
    refused = Producer({"bootstrap.servers": sasl_address, **OAUTH, "sasl.oauthbearer.config": "principal=alice",
                        "error_cb": errors.append})
    for _ in range(100):
        refused.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    assert any(e.code() == KafkaError._AUTHENTICATION and "insufficient_scope" in e.str() for e in errors), errors
    del refused


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


def _described(admin: AdminClient, user: str) -> list[tuple[object, int]]:
    description = admin.describe_user_scram_credentials([user])[user].result(30)
    return [(c.mechanism, c.iterations) for c in description.scram_credential_infos]


def _scram(mechanism: str, user: str, password: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password}


def test_confluent_kafka_sets_scram_credentials_and_logs_in_with_them(sasl_address: str) -> None:
    admin = AdminClient({"bootstrap.servers": _PLAINTEXT[0]})
    upserts = [UserScramCredentialUpsertion("scram-user", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                            b"scram-secret")]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(30)
    assert _described(admin, "scram-user") == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    config = {"bootstrap.servers": sasl_address, **_scram("SCRAM-SHA-512", "scram-user", "scram-secret")}
    assert confluent_round_trip(config, "scram-confluent", [b"s1", b"s2"]) == [b"s1", b"s2"]
    errors: list[KafkaError] = []
    refused = Producer({**config, "sasl.password": "wrong", "error_cb": errors.append})
    for _ in range(100):
        refused.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    assert any(e.code() == KafkaError._AUTHENTICATION and "invalid credentials with SASL mechanism SCRAM-SHA-512"
               in e.str() for e in errors), errors
    del refused


def test_kafka_configs_sets_scram_credentials_for_java_clients(sasl_address: str, tmp_path: Path) -> None:
    ok("kafka-configs", "--bootstrap-server", _PLAINTEXT[0], "--alter", "--entity-type", "users",
       "--entity-name", "java-user", "--add-config", "SCRAM-SHA-256=[iterations=4096,password=java-secret]")
    # (kafka-configs --describe of users also lists client quotas, which wirekafka has not)
    admin = AdminClient({"bootstrap.servers": _PLAINTEXT[0]})
    assert _described(admin, "java-user") == [(ScramMechanism.SCRAM_SHA_256, 4096)]
    client = tmp_path / "client.properties"
    client.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                      'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
                      'username="java-user" password="java-secret";\n')
    assert java_console_round_trip(sasl_address, client, "scram-java") == ["j1", "j2"]
    settings = dict(bootstrap_servers=sasl_address, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                    sasl_plain_username="java-user", sasl_plain_password="java-secret")
    assert kafka_python_round_trip(settings, "scram-kafka-python") == [b"k%d" % i for i in range(10)]


@pytest.mark.parametrize("mechanism, user, password", [("PLAIN", "alice", "alice-secret"),
                                                       ("SCRAM-SHA-256", "peer-user", "peer-secret")])
def test_a_brokers_own_client_authenticates(sasl_address: str, mechanism: str, user: str, password: str) -> None:
    """The client a broker uses towards other brokers (replica fetchers, transaction markers)
    logs in with the inter-broker mechanism, and reports a refusal as the peer being unavailable."""
    if mechanism != "PLAIN":
        admin = AdminClient({"bootstrap.servers": _PLAINTEXT[0]})
        upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                              password.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
    host, port = sasl_address.rsplit(":", 1)

    async def versions(secret: str) -> int:
        async with PeerClient(host, int(port), "peer-test", 10, 10,
                              security=PeerSecurity(sasl=PeerSasl(mechanism, {"username": user, "password": secret}))) as client:
            answer = await client.send(ApiVersionsRequest(version=3, client_software_name="peer",
                                                          client_software_version="1"))
            return answer.error_code

    assert trio.run(versions, password) == 0
    with pytest.raises(PeerUnavailable, match="SASL authentication as"):
        trio.run(versions, "wrong")


def test_a_brokers_own_client_authenticates_with_oauthbearer(sasl_address: str) -> None:
    """With OAUTHBEARER the broker's own client sends the unsecured token its login options make;
    a token the peer refuses (no required scope) is acknowledged, and the refusal reported."""
    host, port = sasl_address.rsplit(":", 1)

    async def versions(options: dict[str, str]) -> int:
        async with PeerClient(host, int(port), "peer-test", 10, 10,
                              security=PeerSecurity(sasl=PeerSasl("OAUTHBEARER", options))) as client:
            answer = await client.send(ApiVersionsRequest(version=3, client_software_name="peer",
                                                          client_software_version="1"))
            return answer.error_code

    assert trio.run(versions, {"unsecuredLoginStringClaim_sub": "broker-2",
                               "unsecuredLoginListClaim_scope": " kafka"}) == 0
    with pytest.raises(PeerUnavailable, match=r'insufficient_scope'):
        trio.run(versions, {"unsecuredLoginStringClaim_sub": "broker-2"})
