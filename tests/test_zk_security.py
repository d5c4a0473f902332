"""The ZooKeeper client's security (broker/replication/zk_security.py), without a ZooKeeper: Kafka's
default ACLs by path, the SASL login read from the JAAS file KAFKA_OPTS names, the TLS settings
and their system-property fallbacks, and the start-up refusals with Kafka's messages. The
ZooKeeper servers that check them are in compat-tests/test_zookeeper_security.py."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Iterator

import puresasl.client
import pytest
from kazoo.security import ACL, Id

from testsupport import kdc as kdc_support
from testsupport.self_signed import PASSWORD, make_stores
from wirekafka.security.kerberos import gssapi_binding
from wirekafka.broker.metadata.zk.security import (GSSAPI_MECHANISM, AclKazooClient, TlsHandler,
                                                      ZkClientSecurity, client_security, default_acls)
from wirekafka.security.sasl.gssapi import GssapiServer
from wirekafka.startup_errors import StartupError
from wirekafka.config.loader import build_config
from wirekafka.security.jaas import JaasError, parse_file

CREATOR_ALL = ACL(31, Id("auth", ""))
WORLD_READ = ACL(1, Id("world", "anyone"))
WORLD_ALL = ACL(31, Id("world", "anyone"))
DIGEST_CLIENT = """
// the broker's login to ZooKeeper
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="kafka-secret";
};
KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b"; };
"""


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stores(tmp_path_factory.mktemp("zk-tls"))


def _config(**extra: str):
    return build_config({"log.dirs": "/tmp/unused", "broker.id": "1", "zookeeper.connect": "127.0.0.1:2181",
                         **{k.replace("_", "."): v for k, v in extra.items()}})


@pytest.fixture(autouse=True)
def no_kafka_opts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the KAFKA_OPTS it means (_opts); none leaks in from the environment."""
    monkeypatch.delenv("KAFKA_OPTS", raising=False)


def _opts(monkeypatch: pytest.MonkeyPatch, *words: str) -> None:
    monkeypatch.setenv("KAFKA_OPTS", " ".join(words))


def _jaas(tmp_path: Path, text: str = DIGEST_CLIENT) -> str:
    """The KAFKA_OPTS entry naming a JAAS file with text."""
    path = tmp_path / "jaas.conf"
    path.write_text(text)
    return f"-Djava.security.auth.login.config={path}"


def _refusal(config) -> str:
    with pytest.raises(StartupError) as err:
        client_security(config)
    return str(err.value)


@pytest.mark.parametrize("path, acls", [
    ("/brokers/ids/1", [CREATOR_ALL, WORLD_READ]),
    ("/brokers/topics/t/partitions/0/state", [CREATOR_ALL, WORLD_READ]),
    ("/controller", [CREATOR_ALL, WORLD_READ]),
    ("/cluster/id", [CREATOR_ALL, WORLD_READ]),
    ("/config/topics/t", [CREATOR_ALL, WORLD_READ]),
    ("/kafka-acl/Topic/t", [CREATOR_ALL, WORLD_READ]),
    ("/config/users", [CREATOR_ALL]),
    ("/config/users/alice", [CREATOR_ALL]),
    ("/config/brokers/<default>", [CREATOR_ALL]),
    ("/delegation_token/tokens", [CREATOR_ALL]),
    ("/consumers", [WORLD_ALL]),
    ("/consumers/g", [CREATOR_ALL, WORLD_READ]),  # only the root itself stays open, as in Kafka
])
def test_default_acls_are_kafkas(path: str, acls: list[ACL]) -> None:
    assert default_acls(path) == acls


def test_without_security_the_client_is_kazoos_own() -> None:
    security = client_security(_config())
    assert security == ZkClientSecurity()
    client = security.client("127.0.0.1:2181", 6.0)
    assert type(client).__name__ == "KazooClient" and client.default_acl is None


def test_set_acl_without_a_login_is_refused_with_kafkas_message() -> None:
    assert _refusal(_config(zookeeper_set_acl="true")) == (
        "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at least "
        "zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and zookeeper.ssl.keystore.location was not "
        "present and the verification of the JAAS login file failed [java.security.auth.login.config=null, "
        "zookeeper.sasl.client=default:true, zookeeper.sasl.clientconfig=default:Client]")


def test_jaas_client_section_gives_a_digest_login_and_secure_acls(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _opts(monkeypatch, "-Xmx1g", _jaas(tmp_path))
    security = client_security(_config(zookeeper_set_acl="true"))
    assert security.secure_acls
    assert security.sasl == {"mechanism": "DIGEST-MD5", "username": "kafka", "password": "kafka-secret",
                             "service": "zookeeper"}
    client = security.client("127.0.0.1:2181", 6.0)
    assert isinstance(client, AclKazooClient)
    assert client._connection.sasl_options == security.sasl  # handed to kazoo's connection
    assert client._connection.sasl_options is not security.sasl  # a copy: kazoo writes to it


def test_a_login_without_set_acl_keeps_znodes_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _opts(monkeypatch, _jaas(tmp_path))
    security = client_security(_config())
    assert security.sasl is not None and not security.secure_acls
    assert not isinstance(security.client("127.0.0.1:2181", 6.0), AclKazooClient)


def test_system_properties_name_the_section_and_the_service(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    jaas = _jaas(tmp_path, DIGEST_CLIENT.replace("Client {", "ZkLogin {"))
    _opts(monkeypatch, jaas)
    assert client_security(_config()).sasl is None  # no Client section: no SASL, as in ZooKeeper's client
    _opts(monkeypatch, jaas, "-Dzookeeper.sasl.clientconfig=ZkLogin", "-Dzookeeper.sasl.client.username=zk")
    assert client_security(_config()).sasl == {"mechanism": "DIGEST-MD5", "username": "kafka",
                                                       "password": "kafka-secret", "service": "zk"}


def test_jaas_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _opts(monkeypatch, _jaas(tmp_path), "-Dzookeeper.sasl.client=false")
    assert _refusal(_config()).startswith("Exception while determining if ZooKeeper is secure [")
    kerberos = "Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };"
    if gssapi_binding.available():
        _opts(monkeypatch, _jaas(tmp_path, kerberos))
        assert "GSSAPI needs the broker's keys" in _refusal(_config())
    _opts(monkeypatch, _jaas(tmp_path, "Client { org.example.Login required; };"))
    assert "names org.example.Login: ZooKeeper's client logs in with" in _refusal(_config())
    no_password = 'Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="kafka"; };'
    _opts(monkeypatch, _jaas(tmp_path, no_password))
    assert "without username and password" in _refusal(_config())
    _opts(monkeypatch, _jaas(tmp_path, "Client {"))
    assert "Exception while loading Zookeeper JAAS login context" in _refusal(_config())


def test_jaas_file_sections() -> None:
    sections = parse_file(DIGEST_CLIENT)
    assert list(sections) == ["Client", "KafkaServer"]
    assert sections["Client"][0].options == {"username": "kafka", "password": "kafka-secret"}
    for bad in ("Client { x required; }", "Client x required; };", "{ x required; };"):
        with pytest.raises(JaasError):
            parse_file(bad)


def _tls(stores: Path, **extra: str):
    return _config(**{"zookeeper_ssl_client_enable": "true",
                      "zookeeper_clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
                      "zookeeper_ssl_truststore_location": str(stores / "cert.pem"), **extra})


def test_tls_with_a_client_certificate_allows_secure_acls(stores: Path) -> None:
    config = _tls(stores, zookeeper_set_acl="true", zookeeper_ssl_keystore_location=str(stores / "broker.p12"),
                  zookeeper_ssl_keystore_password=PASSWORD)  # the type from the name (.p12), as ZooKeeper's
    security = client_security(config)
    assert security.secure_acls and security.sasl is None and security.tls is not None
    assert security.tls.check_hostname  # zookeeper.ssl.endpoint.identification.algorithm=HTTPS, Kafka's default
    assert security.tls.minimum_version == security.tls.maximum_version == ssl.TLSVersion.TLSv1_2
    assert isinstance(security.client("127.0.0.1:2182", 6.0).handler, TlsHandler)


def test_tls_without_a_client_certificate_is_no_login(stores: Path) -> None:
    security = client_security(_tls(stores))
    assert security.tls is not None
    assert "zookeeper.set.acl is true" in _refusal(_tls(stores, zookeeper_set_acl="true"))


def test_tls_settings_fall_back_to_zookeepers_system_properties(stores: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _opts(monkeypatch, "-Dzookeeper.client.secure=true",
          "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
          f"-Dzookeeper.ssl.trustStore.location={stores / 'cert.pem'}",
          "-Dzookeeper.ssl.hostnameVerification=false", "-Dzookeeper.ssl.enabledProtocols=TLSv1.3")
    security = client_security(_config())
    assert security.tls is not None and not security.tls.check_hostname
    assert security.tls.minimum_version == ssl.TLSVersion.TLSv1_3
    # a key in the broker's config wins over the property
    config = _config(zookeeper_ssl_endpoint_identification_algorithm="https")
    assert client_security(config).tls.check_hostname  # type: ignore[union-attr]


@pytest.mark.parametrize("extra, reason", [
    ({"zookeeper_clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNIO"},
     "zookeeper.clientCnxnSocket must be org.apache.zookeeper.ClientCnxnSocketNetty"),
    ({"zookeeper_ssl_crl_enable": "true"}, "does not check certificate revocation"),
    ({"zookeeper_ssl_keystore_location": "/nonexistent/zk.p12", "zookeeper_ssl_keystore_password": "x"},
     "ZooKeeper TLS: "),
    ({"zookeeper_ssl_protocol": "TLSv1.1"}, "ZooKeeper TLS: ssl.enabled.protocols=TLSv1.1"),
])
def test_tls_refusals(stores: Path, extra: dict[str, str], reason: str) -> None:
    assert reason in _refusal(_tls(stores, **extra))


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kdc_support.Kdc]:
    if not (kdc_support.available() and gssapi_binding.available()):
        pytest.skip("MIT Kerberos KDC not installed (scripts/install_system_deps.sh)")
    with pytest.MonkeyPatch.context() as env, kdc_support.Kdc(tmp_path_factory.mktemp("zk-kdc")) as realm:
        for key, value in realm.env.items():
            env.setenv(key, value)  # the library reads the realm's krb5.conf from here
        yield realm


def test_a_kerberos_client_section_logs_in_to_zookeeper_with_gssapi(kdc: kdc_support.Kdc, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Krb5LoginModule with the broker's keytab: GSSAPI to zookeeper/<host name>, run by pure-sasl
    (as kazoo runs it) against an acceptor with ZooKeeper's keys, naming the broker's principal."""
    principal = f"kafka/localhost@{kdc.realm}"
    keytab = kdc.keytab("kafka/localhost")
    server_keytab = kdc.keytab("zookeeper/localhost")
    section = f"Client {{ {kdc_support.keytab_login(keytab, principal)} }};"
    _opts(monkeypatch, _jaas(tmp_path, section))
    security = client_security(_config(zookeeper_set_acl="true"))
    assert security.secure_acls and security.sasl is not None and security.sasl["mechanism"] == GSSAPI_MECHANISM
    login = security.sasl["login"]
    assert login.principal == principal and login.service_name == "zookeeper"

    server = GssapiServer(gssapi_binding.AcceptorContext(gssapi_binding.Credential.acceptor(
        f"zookeeper/localhost@{kdc.realm}", str(server_keytab))))
    client = puresasl.client.SASLClient("127.0.0.1", **security.sasl)  # the address kazoo connects to
    challenge = None
    for _ in range(10):
        response = client.process(challenge)
        if client.complete:
            break
        challenge = server.evaluate(response or b"") or b""
    else:
        pytest.fail("the exchange did not finish")
    assert server.evaluate(response) is None and server.complete
    assert server.authenticated == principal
