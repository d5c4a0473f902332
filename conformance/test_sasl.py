"""SASL/PLAIN on a SASL_PLAINTEXT listener, at the wire level, against Kafka 4.3.1: ApiVersions,
SaslHandshake and SaslAuthenticate before anything else, Kafka's answers for a wrong password, an
unknown mechanism and a request out of turn (and when it closes the connection instead), the
bare-token exchange after SaslHandshake v0, and what both APIs answer once authenticated or on a
listener without SASL (ILLEGAL_SASL_STATE).

The pair is this module's own: wirekafka and Kafka each with a PLAINTEXT and a SASL_PLAINTEXT
listener; PLAINTEXT stays the inter-broker one."""

from __future__ import annotations

import socket
import struct

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.harness.wire import Connection

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 34, 33, 58
MAX_RECEIVE = 4096  # the listener's sasl.server.max.receive.size: the largest frame before authentication


def sasl_listener_settings(plaintext: int, sasl: int, jaas: dict[str, str]) -> dict[str, str]:
    """A PLAINTEXT listener (the inter-broker one) and a SASL_PLAINTEXT one enabling each mechanism
    of jaas with its JAAS text."""
    return {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": ",".join(jaas),
            **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config": text for m, text in jaas.items()}}


def _settings(plaintext: int, sasl: int) -> dict[str, str]:
    return {**sasl_listener_settings(plaintext, sasl, {"PLAIN": JAAS}),
            "listener.name.sasl_plaintext.sasl.server.max.receive.size": str(MAX_RECEIVE)}


own_wirekafka, own_kafka, target = own_two_listener_pair("SASL_PLAINTEXT", _settings)


def _connect(port: int) -> Connection:
    return Connection(f"127.0.0.1:{port}")


def _versions(conn: Connection):
    return conn.call(ApiVersionsRequest(client_software_name="conformance", client_software_version="1"), 3)


def closed_by_broker(conn: Connection, within: float = 10.0) -> bool:
    """True once the broker has closed the connection (EOF or reset) without sending more."""
    conn.sock.settimeout(within)
    try:
        return conn.sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _authenticated(conn: Connection, password: str = "alice-secret", version: int = 2):
    handshake = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN"])
    return conn.call(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00" + password.encode()), version)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_authentication_then_requests(target, version):
    with _connect(target.second) as conn:
        assert _versions(conn).error_code == 0
        answer = _authenticated(conn, version=version)
        assert answer.error_code == 0 and answer.auth_bytes == b""
        metadata = conn.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12)
        assert {b.port for b in metadata.brokers} == {target.second}
        # authenticated: a second exchange is refused, the connection stays
        again = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert (again.error_code, again.mechanisms) == (ILLEGAL_SASL_STATE, [])
        token = conn.call(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"), version)
        assert token.error_code == ILLEGAL_SASL_STATE
        assert _versions(conn).error_code == 0


@pytest.mark.parametrize("password", ["wrong", ""], ids=["wrong", "empty"])
def test_a_failed_authentication_is_answered_then_closed(target, password):
    with _connect(target.second) as conn:
        answer = _authenticated(conn, password=password)
        assert answer.error_code == SASL_AUTHENTICATION_FAILED
        assert closed_by_broker(conn)


def test_a_frame_over_the_listeners_max_receive_size_before_authentication_closes(target):
    with _connect(target.second) as conn:
        handshake = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert handshake.error_code == 0
        answer = conn.call(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00" + b"x" * (MAX_RECEIVE - 200)), 2)
        assert answer.error_code == SASL_AUTHENTICATION_FAILED  # within the size: read and refused
    with _connect(target.second) as conn:
        assert conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        conn.send(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00" + b"x" * MAX_RECEIVE), 2, expect_response=False)
        assert closed_by_broker(conn)


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed(target):
    with _connect(target.second) as conn:
        answer = conn.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        assert (answer.error_code, answer.mechanisms) == (UNSUPPORTED_SASL_MECHANISM, ["PLAIN"])
        assert closed_by_broker(conn)


@pytest.mark.parametrize("api", ["Metadata", "SaslHandshake", "ApiVersions"])
def test_a_request_out_of_turn(target, api):
    """Before the handshake any other request closes the connection unanswered; after it, Kafka
    answers a request other than SaslAuthenticate with ILLEGAL_SASL_STATE, then closes."""
    requests = {"Metadata": (MetadataRequest(topics=[], allow_auto_topic_creation=False), 13),
                "SaslHandshake": (SaslHandshakeRequest(mechanism="PLAIN"), 1),
                "ApiVersions": (ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3)}
    request, version = requests[api]
    if api == "Metadata":
        with _connect(target.second) as conn:
            conn.send(request, version)
            assert closed_by_broker(conn)
    with _connect(target.second) as conn:  # after the handshake, before the token
        assert conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        if api == "ApiVersions":  # an error answer whose body the v0 decoder cannot read: its code, raw
            conn.send(request, version, expect_response=False)
            (size,) = struct.unpack(">i", conn.sock.recv(4, socket.MSG_WAITALL))
            frame = conn.sock.recv(size, socket.MSG_WAITALL)
            assert struct.unpack_from(">h", frame, 4)[0] == ILLEGAL_SASL_STATE, frame
        else:
            assert conn.call(request, version).error_code == ILLEGAL_SASL_STATE
        assert closed_by_broker(conn)


def test_handshake_v0_then_a_bare_token(target):
    with _connect(target.second) as conn:
        assert conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        token = b"\x00alice\x00alice-secret"
        conn.sock.sendall(struct.pack(">i", len(token)) + token)
        assert conn.sock.recv(4) == b"\x00\x00\x00\x00"  # an empty token back: authenticated
        assert _versions(conn).error_code == 0
    with _connect(target.second) as conn:
        assert conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        token = b"\x00alice\x00nope"
        conn.sock.sendall(struct.pack(">i", len(token)) + token)
        assert closed_by_broker(conn)


@pytest.mark.parametrize("version", [0, 1])
def test_sasl_apis_on_a_listener_without_sasl(target, version):
    with _connect(target.plaintext) as conn:
        handshake = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), version)
        assert (handshake.error_code, handshake.mechanisms) == (ILLEGAL_SASL_STATE, [])
        token = conn.call(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"), version + 1)
        assert token.error_code == ILLEGAL_SASL_STATE
        assert _versions(conn).error_code == 0
