"""SASL/OAUTHBEARER with Kafka's secured validator (KIP-768), at the wire level, against Kafka
4.3.1: signed tokens checked against a JWKS file (a file: URL, allowed by the JVM system property
org.apache.kafka.sasl.oauthbearer.allowed.urls, which wirekafka reads from KAFKA_OPTS).

A good token, signed with any of the published keys, authenticates its sub claim (trimmed; seen
through the authorization id check), with the token's expiry as the session lifetime, and one
expired within the 30 s clock skew authenticates for 0 ms; one expired beyond it, not yet valid,
for another audience or issuer or none, without iat, with exp before iat, a blank or numeric sub,
a scope given twice, a forged signature, a key not in the JWKS or too weak, an unsigned token:
each gets the {"status":"invalid_token"} challenge, and the client's 0x01 then the SASL failure
with it.

The pair is this module's own: a PLAINTEXT listener and a SASL_PLAINTEXT one whose OAUTHBEARER
server callback handler is Kafka's OAuthBearerValidatorCallbackHandler, expecting audience "kafka"
and issuer "https://issuer.test"; the JWKS publishes keys for RS256, RS512, PS256, ES256, ES384,
ES512, EdDSA and HS256 (an "oct" key), and a 1024-bit RSA key, too weak for jose4j."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.test_sasl import closed_by_broker, sasl_listener_settings
from conformance.harness.wire import Connection
from testsupport.jwt_signing import SigningKey, b64url, jwks

HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin";')
SASL_AUTHENTICATION_FAILED = 58
INVALID = b'{"status":"invalid_token"}'
RS256 = SigningKey.generate("RS256", "rsa-1")
ES256 = SigningKey.generate("ES256", "ec-1")
OTHERS = [SigningKey.generate(alg, f"{alg.lower()}-1") for alg in ("RS512", "PS256", "ES384", "ES512", "EdDSA", "HS256")]
WEAK = SigningKey.generate("RS256", "rsa-1024", rsa_bits=1024)  # published, but under jose4j's 2048 bits
UNPUBLISHED = SigningKey.generate("RS256", "rsa-2")  # its kid is not in the JWKS
UNSIGNED_HEADER = b64url(b'{"alg":"none"}')
JWKS_FILE = Path(tempfile.gettempdir()) / f"wirekafka-conformance-jwks-{os.getpid()}.json"
JWKS_URL = f"file:{JWKS_FILE}"


def _settings(plaintext: int, sasl: int) -> dict[str, str]:
    JWKS_FILE.write_text(jwks(RS256, ES256, *OTHERS, WEAK))
    return {**sasl_listener_settings(plaintext, sasl, {"OAUTHBEARER": JAAS}),
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER,
            "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": JWKS_URL,
            "sasl.oauthbearer.expected.audience": "kafka",
            "sasl.oauthbearer.expected.issuer": "https://issuer.test"}


own_wirekafka, own_kafka, target = own_two_listener_pair(
    "SASL_PLAINTEXT", _settings, lambda: f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={JWKS_URL}")


@pytest.fixture(scope="module", autouse=True)
def _jwks_file_removed() -> Iterator[None]:
    """The JWKS file the brokers read goes once the module's brokers have stopped."""
    yield
    JWKS_FILE.unlink(missing_ok=True)


def claims(**changes: object) -> dict[str, object]:
    now = int(time.time())
    body: dict[str, object] = {"sub": "alice", "iat": now, "exp": now + 60, "aud": "kafka",
                               "iss": "https://issuer.test", "scope": "kafka"}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def first(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


def _connect(port: int) -> Connection:
    conn = Connection(f"127.0.0.1:{port}")
    answer = conn.call(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1)
    assert (answer.error_code, answer.mechanisms) == (0, ["OAUTHBEARER"])
    return conn


def _authenticate(conn: Connection, data: bytes):
    return conn.call(SaslAuthenticateRequest(auth_bytes=data), 2)


@pytest.mark.parametrize("key", [RS256, ES256, *OTHERS], ids=lambda key: key.alg)
def test_a_signed_token_authenticates_its_sub_for_its_lifetime(target, key):
    with _connect(target.second) as conn:
        answer = _authenticate(conn, first(key.sign(claims(sub=" alice ")), authzid="alice"))
        assert (answer.error_code, answer.error_message, answer.auth_bytes) == (0, "", b"")
        assert 55_000 <= answer.session_lifetime_ms <= 60_000, answer.session_lifetime_ms
        metadata = conn.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12)
        assert {b.port for b in metadata.brokers} == {target.second}


def test_the_principal_is_the_sub_claim(target):
    with _connect(target.second) as conn:
        answer = _authenticate(conn, first(RS256.sign(claims()), authzid="bob"))
        assert (answer.error_code, answer.error_message) == (
            SASL_AUTHENTICATION_FAILED, "Authentication failed: Client requested an authorization id (bob) that is "
                                        "different from the token's principal name (alice)")
        assert closed_by_broker(conn)


def _forged() -> str:
    """A published key's signature over other claims."""
    head, _, signature = RS256.sign(claims()).split(".")
    return f"{head}.{b64url(json.dumps(claims(sub='admin')).encode())}.{signature}"


def test_a_token_expired_within_the_clock_skew_authenticates_for_no_time(target):
    now = int(time.time())
    with _connect(target.second) as conn:
        answer = _authenticate(conn, first(RS256.sign(claims(iat=now - 120, exp=now - 20))))
        assert (answer.error_code, answer.auth_bytes, answer.session_lifetime_ms) == (0, b"", 0)


@pytest.mark.parametrize("case", ["expired", "other-audience", "no-audience",
                                  "other-issuer", "no-iat", "forged", "unknown-kid", "unsigned", "blank-sub",
                                  "numeric-sub", "exp-before-iat", "not-yet-valid", "duplicate-scope", "weak-key"])
def test_a_token_the_validator_refuses(target, case):
    now = int(time.time())
    token = {"expired": lambda: RS256.sign(claims(iat=now - 120, exp=now - 31)),
             "other-audience": lambda: ES256.sign(claims(aud="other")),
             "no-audience": lambda: RS256.sign(claims(aud=None)),
             "other-issuer": lambda: RS256.sign(claims(iss="https://other.test")),
             "no-iat": lambda: RS256.sign(claims(iat=None)),
             "forged": _forged,
             "unknown-kid": lambda: UNPUBLISHED.sign(claims()),
             "unsigned": lambda: f"{UNSIGNED_HEADER}.{b64url(json.dumps(claims()).encode())}.",
             "blank-sub": lambda: RS256.sign(claims(sub=" ")),
             "numeric-sub": lambda: RS256.sign(claims(sub=42)),
             "exp-before-iat": lambda: RS256.sign(claims(iat=now + 20, exp=now + 10)),
             "not-yet-valid": lambda: RS256.sign(claims(nbf=now + 60)),
             "duplicate-scope": lambda: RS256.sign(claims(scope=["kafka", "kafka "])),
             "weak-key": lambda: WEAK.sign(claims())}[case]()
    with _connect(target.second) as conn:
        challenge = _authenticate(conn, first(token))
        assert (challenge.error_code, challenge.auth_bytes, challenge.session_lifetime_ms) == (0, INVALID, 0)
        refusal = _authenticate(conn, b"\x01")
        assert (refusal.error_code, refusal.error_message) == (SASL_AUTHENTICATION_FAILED, INVALID.decode())
        assert closed_by_broker(conn)
