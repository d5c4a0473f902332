"""SASL re-authentication (KIP-368) with connections.max.reauth.ms set, against Kafka 4.3.1: the
session lifetime SaslAuthenticate reports, a re-authentication on the same connection (at most one
a second: a second SaslHandshake within it is answered ILLEGAL_SASL_STATE), a re-authentication
as another user (refused, then closed), and a connection whose session expired (closed at its
next request).

The pair is this module's own: PLAINTEXT and SASL_PLAINTEXT listeners, re-authentication every
REAUTH_MS."""

from __future__ import annotations

import time

from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.test_sasl import ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED, closed_by_broker, _settings
from conformance.harness.wire import Connection

REAUTH_MS = 3000


def _reauth_settings(plaintext: int, sasl: int) -> dict[str, str]:
    return {**_settings(plaintext, sasl), "connections.max.reauth.ms": str(REAUTH_MS)}


own_wirekafka, own_kafka, target = own_two_listener_pair("SASL_PLAINTEXT", _reauth_settings)


def _authenticate(conn: Connection, user: str = "alice", password: str = "alice-secret"):
    handshake = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert handshake.error_code == 0
    return conn.call(SaslAuthenticateRequest(auth_bytes=f"\x00{user}\x00{password}".encode()), 2)


def _metadata(conn: Connection):
    return conn.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)


def test_sessions_are_renewed_by_re_authenticating(target):
    with Connection(f"127.0.0.1:{target.second}") as conn:
        first = _authenticate(conn)
        assert (first.error_code, first.session_lifetime_ms) == (0, REAUTH_MS)
        again = _authenticate(conn)  # re-authentication on the same connection
        assert (again.error_code, again.session_lifetime_ms) == (0, REAUTH_MS)
        assert _metadata(conn).throttle_time_ms == 0
        # a second re-authentication within a second is an ordinary late SaslHandshake
        late = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert (late.error_code, late.mechanisms) == (ILLEGAL_SASL_STATE, [])
        assert _metadata(conn).throttle_time_ms == 0


def test_re_authenticating_as_another_user_fails(target):
    with Connection(f"127.0.0.1:{target.second}") as conn:
        assert _authenticate(conn).error_code == 0
        other = _authenticate(conn, "admin", "admin-secret")
        assert other.error_code == SASL_AUTHENTICATION_FAILED
        assert closed_by_broker(conn)


def test_an_expired_session_is_closed_at_its_next_request(target):
    with Connection(f"127.0.0.1:{target.second}") as conn:
        assert _authenticate(conn).error_code == 0
        time.sleep(REAUTH_MS / 1000 + 0.5)
        conn.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
        assert closed_by_broker(conn)
