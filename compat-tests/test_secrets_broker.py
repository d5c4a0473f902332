"""No secret leaves a real `wirekafka serve` process through its log, its start-up errors or
DescribeConfigs, whichever way it was given: a properties file, --override flags, dynamic configs
set by a stock admin client (IncrementalAlterConfigs and AlterConfigs), or a configuration that
stops start-up. Every known secret string is looked for in everything the process printed and
in every DescribeConfigs answer; Kafka answers its PASSWORD keys as null and sensitive.

The same broker serves unsigned OAUTHBEARER tokens, so it warns at start-up; a token of 100k
nested `[` is refused as Kafka refuses a malformed token (SASL_AUTHENTICATION_FAILED after
connection.failed.authentication.delay.ms, no traceback); the file that keeps SCRAM keys and
dynamic store passwords is 0600. (There is no KAFKA_* environment mapping to cover: `wirekafka
serve` reads its file and flags only.)"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType,
                                   ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, \
    SaslHandshakeResponse

from client_support import recv_exact
from testsupport.broker_process import REPO, api_versions_ok, free_port
from testsupport.self_signed import PASSWORD as STORE_PASSWORD
from testsupport.self_signed import make_stores
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.sasl import oauthbearer as oauth

FILE_SECRET, OVERRIDE_SECRET, DYNAMIC_SECRET = "file-pw-51c0e", "flag-pw-9d2b7", "dyn-pw-4a8e1"
JAAS_USER_SECRET, SCRAM_SECRET, ENCODER_SECRET = "alice-pw-77f3", "scram-pw-13ab", "encoder-pw-c4d2"
SECRETS = [FILE_SECRET, OVERRIDE_SECRET, DYNAMIC_SECRET, JAAS_USER_SECRET, SCRAM_SECRET, ENCODER_SECRET,
           STORE_PASSWORD]
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule required"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
FAIL_DELAY_MS = 600


@dataclass
class Served:
    """The module's broker: its process, files and addresses."""

    proc: subprocess.Popen
    log: Path
    data: Path
    stores: Path
    tmp: Path
    bootstrap: str
    sasl_port: int
    answers: int = 0  # DescribeConfigs answers scanned


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _props_file(path: Path, props: dict[str, str]) -> Path:
    # java.util.Properties: backslash-escape what the format would read otherwise
    path.write_text("".join(f"{k}={v.replace(chr(92), chr(92) * 2)}\n" for k, v in props.items()))
    return path


def _serve(config: Path, overrides: dict[str, str], log: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "wirekafka", "serve", str(config)]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    with open(log, "ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A broker with PLAINTEXT, SSL and SASL_PLAINTEXT (PLAIN, SCRAM, unsigned OAUTHBEARER)
    listeners, secrets in its file and its flags; stopped (SIGTERM) by the module's last test."""
    tmp = tmp_path_factory.mktemp("secrets")
    (tmp / "stores").mkdir()
    stores = make_stores(tmp / "stores")
    plaintext, ssl_port, sasl_port = free_port(), free_port(), free_port()
    data = tmp / "data"
    file_props = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SSL://127.0.0.1:{ssl_port},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "log.dirs": str(data),
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(stores / "broker.p12"),
        "ssl.keystore.password": STORE_PASSWORD, "ssl.key.password": STORE_PASSWORD,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f'{PLAIN_MODULE} username="admin" password="{FILE_SECRET}" user_admin="{FILE_SECRET}" '
            f'user_alice="{JAAS_USER_SECRET}";',
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "zookeeper.ssl.keystore.password": FILE_SECRET,  # no ZooKeeper: logged as having no effect
        "password.encoder.secret": ENCODER_SECRET,
        "connection.failed.authentication.delay.ms": str(FAIL_DELAY_MS),
        "offsets.topic.num.partitions": "1",
    }
    overrides = {
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{OAUTH_MODULE} unsecuredLoginStringClaim_sub="admin";',
        "sasl.jaas.config": f'{PLAIN_MODULE} username="x" password="{OVERRIDE_SECRET}";',  # Kafka-only: no effect
        "zookeeper.ssl.truststore.password": OVERRIDE_SECRET,
        "ssl.truststore.password": OVERRIDE_SECRET,
    }
    log = tmp / "broker.log"
    proc = _serve(_props_file(tmp / "server.properties", file_props), overrides, log)
    deadline = time.monotonic() + 60
    while not (f"listening on 127.0.0.1:{plaintext} ".encode() in log.read_bytes()
               and api_versions_ok("127.0.0.1", plaintext)):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    yield Served(proc, log, data, stores, tmp, f"127.0.0.1:{plaintext}", sasl_port)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def _admin(broker: Served) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _describe(broker: Served) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.BROKER, "1")
    admin = _admin(broker)  # held while its futures run: a collected client cancels them
    configs = admin.describe_configs([resource])[resource].result(15)
    broker.answers += 1
    return configs


def _texts(configs: dict[str, ConfigEntry]) -> str:
    return "\n".join(f"{e.name}={e.value} {[(s.name, s.value) for s in e.synonyms.values()]}"
                     for e in configs.values())


def test_describe_configs_answers_secrets_as_null_and_sensitive(broker: Served) -> None:
    configs = _describe(broker)
    assert not _leaks(_texts(configs))
    for key in ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config", "password.encoder.secret"):
        assert configs[key].is_sensitive and configs[key].value is None, key
    assert configs["ssl.keystore.location"].value is not None and not configs["ssl.keystore.location"].is_sensitive


def test_dynamic_store_passwords_and_scram_keys_stay_hidden(broker: Served) -> None:
    admin = _admin(broker)
    stores, tmp = broker.stores, broker.tmp
    copy = tmp / "dynamic.p12"
    shutil.copy(stores / "broker.p12", copy)
    wrong = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("listener.name.ssl.ssl.keystore.location", str(copy), incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("listener.name.ssl.ssl.keystore.password", DYNAMIC_SECRET,
                    incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as refused:  # the store does not open with that password
        admin.incremental_alter_configs([wrong])[wrong].result(15)
    assert not _leaks(str(refused.value)), refused.value
    right = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("listener.name.ssl.ssl.keystore.location", str(copy), incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("listener.name.ssl.ssl.keystore.password", STORE_PASSWORD,
                    incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("listener.name.ssl.ssl.key.password", STORE_PASSWORD, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([right])[right].result(15)
    legacy = ConfigResource(ResourceType.BROKER, "1", set_config={
        "listener.name.ssl.ssl.keystore.location": str(copy),
        "listener.name.ssl.ssl.keystore.password": DYNAMIC_SECRET})
    with pytest.raises(Exception) as legacy_refused:  # AlterConfigs, the same wrong password
        admin.alter_configs([legacy])[legacy].result(15)
    assert not _leaks(str(legacy_refused.value)), legacy_refused.value
    not_dynamic = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("listener.name.sasl_plaintext.plain.sasl.jaas.config",
                    f'{PLAIN_MODULE} user_bob="{DYNAMIC_SECRET}";', incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as not_dynamic_refused:
        admin.incremental_alter_configs([not_dynamic])[not_dynamic].result(15)
    assert not _leaks(str(not_dynamic_refused.value)), not_dynamic_refused.value
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), SCRAM_SECRET.encode())])["carol"].result(15)
    configs = _describe(broker)
    entry = configs["listener.name.ssl.ssl.keystore.password"]
    assert entry.is_sensitive and entry.value is None and not _leaks(_texts(configs))
    topics_file = broker.data / "wirekafka-topics.json"
    assert STORE_PASSWORD in topics_file.read_text()  # kept to reload the store at restart: so the file is private
    assert stat.S_IMODE(topics_file.stat().st_mode) == 0o600


def _sasl_call(s: socket.socket, request, response_cls, version: int, cid: int):
    request.API_VERSION = version
    request.with_header(correlation_id=cid, client_id="secrets-test")
    s.sendall(bytes(request.encode(header=True, framed=True)))
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    payload = recv_exact(s, size)
    flexible = response_cls.flexible_version_q(version)
    return response_cls.decode(payload[4 + flexible:], version=version)


def test_a_deeply_nested_token_is_refused_as_a_malformed_one(broker: Served) -> None:
    deep = ".".join([_b64(b"[" * 100_000), _b64(b'{"sub":"admin","exp":9999999999}'), ""])
    with socket.create_connection(("127.0.0.1", broker.sasl_port), timeout=15) as s:
        s.settimeout(15)
        handshake = _sasl_call(s, SaslHandshakeRequest[1](mechanism="OAUTHBEARER"), SaslHandshakeResponse[1], 1, 1)
        assert handshake.error_code == 0
        challenge = _sasl_call(s, SaslAuthenticateRequest[2](auth_bytes=oauth.first_message(deep)),
                               SaslAuthenticateResponse[2], 2, 2)
        assert (challenge.error_code, challenge.auth_bytes) == (0, b'{"status":"invalid_token"}')
        started = time.monotonic()
        refused = _sasl_call(s, SaslAuthenticateRequest[2](auth_bytes=b"\x01"), SaslAuthenticateResponse[2], 2, 3)
        waited = time.monotonic() - started
        assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert waited >= FAIL_DELAY_MS / 1000 * 0.9, waited
        assert s.recv(1) == b""  # then closed
    host, port = broker.bootstrap.rsplit(":", 1)
    assert api_versions_ok(host, int(port))  # the broker serves on


def test_the_log_holds_no_secret_a_warning_for_unsigned_tokens_and_no_traceback(broker: Served) -> None:
    broker.proc.send_signal(signal.SIGTERM)
    assert broker.proc.wait(30) == 0
    text = broker.log.read_text()
    assert not _leaks(text), [line for line in text.splitlines() if _leaks(line)]
    assert "listener SASL_PLAINTEXT accepts unsigned OAUTHBEARER tokens" in text
    assert "zookeeper.ssl.keystore.password=[hidden] has no effect" in text
    assert "sasl.jaas.config=[hidden] has no effect" in text
    startup = next(line for line in text.splitlines() if "with non-default configuration:" in line)
    assert all(f"{key}=[hidden]" in startup for key in ("ssl.keystore.password", "password.encoder.secret",
                                                         "listener.name.sasl_plaintext.plain.sasl.jaas.config"))
    assert "Traceback" not in text
    assert broker.answers == 2  # both DescribeConfigs answers were scanned too


# Configurations that stop start-up, each holding a secret: the error names none of them.
REFUSED = {
    "delegation tokens": {"delegation.token.secret.key": FILE_SECRET},
    "an unreadable key store": {"listeners": "SSL://127.0.0.1:{port}", "ssl.keystore.type": "PKCS12",
                                "ssl.keystore.location": "/nonexistent/broker.p12",
                                "ssl.keystore.password": FILE_SECRET, "ssl.key.password": FILE_SECRET},
    "a wrong key store password": {"listeners": "SSL://127.0.0.1:{port}", "ssl.keystore.type": "PKCS12",
                                   "ssl.keystore.location": "{stores}/broker.p12",
                                   "ssl.keystore.password": FILE_SECRET},
    "an inline PEM key that is not one": {
        "listeners": "SSL://127.0.0.1:{port}", "ssl.keystore.type": "PEM",
        "ssl.keystore.key": f"-----BEGIN PRIVATE KEY-----\\n{FILE_SECRET}\\n-----END PRIVATE KEY-----",
        "ssl.keystore.certificate.chain": f"-----BEGIN CERTIFICATE-----\\n{FILE_SECRET}\\n-----END CERTIFICATE-----"},
    "a JAAS config beside a JVM plug-in": {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:{port}", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f'{PLAIN_MODULE} user_a="{FILE_SECRET}";',
        "listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class": "com.example.Handler"},
}


@pytest.mark.parametrize("where", ["file", "flags"])
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_configuration_that_stops_startup_names_no_secret(case: str, where: str, tmp_path: Path) -> None:
    stores = make_stores(tmp_path)
    props = {k: v.format(port=free_port(), stores=stores) for k, v in REFUSED[case].items()}
    props["log.dirs"] = str(tmp_path / "data")
    log = tmp_path / "out.log"
    empty = _props_file(tmp_path / "empty.properties", {})
    proc = (_serve(_props_file(tmp_path / "server.properties", props), {}, log) if where == "file"
            else _serve(empty, props, log))
    try:
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert code != 0 and ("invalid configuration" in text or "fatal error during startup" in text), text
    assert not _leaks(text), text
    assert "Traceback" not in text
