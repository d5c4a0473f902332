"""SASL/OAUTHBEARER with Kafka's default (unsecured JWS) validator, at the wire level, against
Kafka 4.3.1: a valid token and its session lifetime (the token's expiry), the JSON challenges for
an invalid token or a missing scope and the failure after the client's 0x01, a new token after a
challenge, the generic answer to a malformed first message, an authzid that is not the token's
principal, the inputs after which Kafka drops the connection without an answer, the bare-token
exchange after SaslHandshake v0, the clock skew, expiry and re-authentication.

The pair is this module's own: wirekafka and Kafka each with a PLAINTEXT listener (the inter-broker
one) and a SASL_PLAINTEXT one enabling OAUTHBEARER, whose login module requires the scope "kafka"
and allows 5 s of clock skew."""

from __future__ import annotations

import base64
import json
import socket
import struct
import time

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.test_sasl import closed_by_broker, sasl_listener_settings
from conformance.harness.wire import Connection

JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin" unsecuredLoginListClaim_scope=",kafka" '
        'unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="5000";')
SASL_AUTHENTICATION_FAILED = 58
INVALID = b'{"status":"invalid_token"}'
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"

own_wirekafka, own_kafka, target = own_two_listener_pair(
    "SASL_PLAINTEXT", lambda plaintext, sasl: sasl_listener_settings(plaintext, sasl, {"OAUTHBEARER": JAAS}))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(sub: object = "alice", lifetime_s: float = 60, header: dict | None = None, signature: str = "",
          **claims: object) -> str:
    now = time.time()
    body = {"sub": sub, "iat": now, "exp": now + lifetime_s, "scope": ["kafka"], **claims}
    body = {k: v for k, v in body.items() if v is not None}
    return f"{_b64(json.dumps(header or {'alg': 'none'}).encode())}.{_b64(json.dumps(body).encode())}.{signature}"


def first(tok: str, authzid: str = "", extensions: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {tok}\x01{extensions}\x01".encode()


def _connect(port: int) -> Connection:
    return Connection(f"127.0.0.1:{port}")


def _handshake(conn: Connection, version: int = 1) -> None:
    answer = conn.call(SaslHandshakeRequest(mechanism="OAUTHBEARER"), version)
    assert (answer.error_code, answer.mechanisms) == (0, ["OAUTHBEARER"])


def _authenticate(conn: Connection, data: bytes, version: int = 2):
    return conn.call(SaslAuthenticateRequest(auth_bytes=data), version)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_valid_token_authenticates_for_its_lifetime(target, version):
    with _connect(target.second) as conn:
        _handshake(conn)
        answer = _authenticate(conn, first(token(lifetime_s=60), extensions="traceId=t-1\x01"), version)
        if version == 0:
            assert not hasattr(answer, "session_lifetime_ms") or answer.session_lifetime_ms in (None, 0)
        assert (answer.error_code, answer.error_message, answer.auth_bytes) == (0, "", b"")
        if version >= 1:  # the token's expiry bounds the session, with connections.max.reauth.ms unset
            assert 55_000 <= answer.session_lifetime_ms <= 60_001, answer.session_lifetime_ms  # exp rounds to the ms
        metadata = conn.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12)
        assert {b.port for b in metadata.brokers} == {target.second}


@pytest.mark.parametrize("case", ["signed-alg", "signature", "no-exp", "expired", "no-sub", "numeric-sub",
                                  "issued-later", "standard-base64", "three-parts"])
def test_an_invalid_token_is_challenged_then_refused(target, case):
    tok = {"signed-alg": lambda: token(header={"alg": "HS256"}),
           "signature": lambda: token(signature="c2lnbmF0dXJl"),
           "no-exp": lambda: token(exp=None),
           "expired": lambda: token(lifetime_s=-30),
           "no-sub": lambda: token(sub=None),
           "numeric-sub": lambda: token(sub=42),
           "issued-later": lambda: token(iat=time.time() + 60, lifetime_s=120),
           "standard-base64": lambda: token(sub="??>>??>>").replace("_", "/").replace("-", "+"),
           "three-parts": lambda: token() + "extra."}[case]()
    with _connect(target.second) as conn:
        _handshake(conn)
        challenge = _authenticate(conn, first(tok))
        assert (challenge.error_code, challenge.auth_bytes, challenge.session_lifetime_ms) == (0, INVALID, 0)
        refusal = _authenticate(conn, b"\x01")
        assert (refusal.error_code, refusal.error_message) == (SASL_AUTHENTICATION_FAILED, INVALID.decode())
        assert closed_by_broker(conn)


def test_a_token_without_the_required_scope(target):
    with _connect(target.second) as conn:
        _handshake(conn)
        challenge = _authenticate(conn, first(token(scope="read")))
        assert challenge.auth_bytes == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
        refusal = _authenticate(conn, b"\x01")
        assert (refusal.error_code, refusal.error_message) == (
            SASL_AUTHENTICATION_FAILED, '{"status":"insufficient_scope", "scope":"[kafka]"}')


def test_a_new_token_after_a_challenge(target):
    with _connect(target.second) as conn:
        _handshake(conn)
        assert _authenticate(conn, first(token(lifetime_s=-30))).auth_bytes == INVALID
        answer = _authenticate(conn, first(token()))
        assert (answer.error_code, answer.auth_bytes) == (0, b"")
        assert conn.call(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3).error_code == 0


@pytest.mark.parametrize("data", [b"n,,\x01auth=Bearer\x01\x01", b"n,,\x01traceId=1\x01\x01", b"\x01",
                                  b"p=x,,\x01auth=Bearer a.b.\x01\x01"])
def test_a_malformed_first_message_gets_the_generic_refusal(target, data):
    with _connect(target.second) as conn:
        _handshake(conn)
        answer = _authenticate(conn, data)
        assert (answer.error_code, answer.error_message) == (SASL_AUTHENTICATION_FAILED, GENERIC)
        assert closed_by_broker(conn)


def test_an_authzid_other_than_the_principal(target):
    with _connect(target.second) as conn:
        _handshake(conn)
        answer = _authenticate(conn, first(token("alice"), authzid="bob"))
        assert (answer.error_code, answer.error_message) == (
            SASL_AUTHENTICATION_FAILED, "Authentication failed: Client requested an authorization id (bob) that is "
                                        "different from the token's principal name (alice)")
    with _connect(target.second) as conn:
        _handshake(conn)
        assert _authenticate(conn, first(token("alice"), authzid="alice")).error_code == 0


@pytest.mark.parametrize("data", [b"n,,\x01auth=Basic dXNlcjpwYXNz\x01\x01",
                                  first(token(header={"typ": "JWT"}))])
def test_inputs_kafka_fails_on_drop_the_connection_without_an_answer(target, data):
    with _connect(target.second) as conn:
        _handshake(conn)
        conn.send(SaslAuthenticateRequest(auth_bytes=data), 2)
        assert closed_by_broker(conn)


def test_handshake_v0_then_bare_tokens(target):
    with _connect(target.second) as conn:
        _handshake(conn, version=0)
        data = first(token())
        conn.sock.sendall(struct.pack(">i", len(data)) + data)
        assert conn.sock.recv(4, socket.MSG_WAITALL) == b"\x00\x00\x00\x00"
        assert conn.call(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3).error_code == 0
    with _connect(target.second) as conn:
        _handshake(conn, version=0)
        data = first(token(lifetime_s=-30))
        conn.sock.sendall(struct.pack(">i", len(data)) + data)
        (size,) = struct.unpack(">i", conn.sock.recv(4, socket.MSG_WAITALL))
        assert conn.sock.recv(size, socket.MSG_WAITALL) == INVALID
        conn.sock.sendall(struct.pack(">i", 1) + b"\x01")
        assert closed_by_broker(conn)


def test_a_token_expired_within_the_clock_skew_authenticates_a_session_already_over(target):
    """Accepted, with no lifetime left: the connection closes at its next request."""
    with _connect(target.second) as conn:
        _handshake(conn)
        answer = _authenticate(conn, first(token(lifetime_s=-2, iat=time.time() - 60)))
        assert (answer.error_code, answer.auth_bytes, answer.session_lifetime_ms) == (0, b"", 0)
        conn.send(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3)
        assert closed_by_broker(conn)


def test_the_session_ends_when_the_token_expires(target):
    with _connect(target.second) as conn:
        _handshake(conn)
        answer = _authenticate(conn, first(token(lifetime_s=2)))
        assert answer.error_code == 0 and 0 < answer.session_lifetime_ms <= 2001  # exp is rounded to the ms
        assert conn.call(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3).error_code == 0
        time.sleep(2.5)
        conn.send(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3)
        assert closed_by_broker(conn)


def test_reauthentication(target):
    with _connect(target.second) as conn:
        _handshake(conn)
        assert _authenticate(conn, first(token("alice"))).error_code == 0
        time.sleep(1.1)  # Kafka re-authenticates a connection at most once a second
        _handshake(conn)
        renewed = _authenticate(conn, first(token("alice", lifetime_s=120)))
        assert renewed.error_code == 0 and 115_000 <= renewed.session_lifetime_ms <= 120_001
        time.sleep(1.1)
        _handshake(conn)
        other = _authenticate(conn, first(token("bob")))
        assert (other.error_code, other.error_message) == (
            SASL_AUTHENTICATION_FAILED, "Cannot change principals during re-authentication from User.alice: User.bob")
