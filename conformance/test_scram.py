"""SCRAM-SHA-256/512 against Kafka 4.3.1: AlterUserScramCredentials and DescribeUserScramCredentials
(the credentials a client's salted password makes, Kafka's per-user errors and the order of its
results), then logging in with them on a SASL_PLAINTEXT listener: the two SaslAuthenticate round
trips, the server's signature (checked with the password), and the answers to an unknown user, a
wrong password and a deleted credential.

The pair is this module's own: PLAINTEXT and SASL_PLAINTEXT listeners, PLAIN and both SCRAM
mechanisms enabled. The server's SCRAM messages carry its random nonce, so auth_bytes is compared
by these checks, not byte for byte (conformance/harness/compare.py)."""

from __future__ import annotations

import base64

import pytest
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.test_sasl import JAAS, SASL_AUTHENTICATION_FAILED, closed_by_broker, sasl_listener_settings
from conformance.harness.wire import Connection, poll, unique
from wirekafka.security.sasl.scram import ScramClient, salted_password

SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SALT = b"conformance-salt"
_Upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
_Delete = AlterUserScramCredentialsRequest.ScramCredentialDeletion
_User = DescribeUserScramCredentialsRequest.UserName
RESOURCE_NOT_FOUND, DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL, UNSUPPORTED_SASL_MECHANISM = 91, 92, 93, 33
MECHANISM = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def _settings(plaintext: int, sasl: int) -> dict[str, str]:
    return sasl_listener_settings(plaintext, sasl, {"PLAIN": JAAS, "SCRAM-SHA-256": SCRAM_JAAS, "SCRAM-SHA-512": SCRAM_JAAS})


own_wirekafka, own_kafka, target = own_two_listener_pair("SASL_PLAINTEXT", _settings)


def _upsert(user: str, password: str, mechanism: int = 1, iterations: int = 4096) -> _Upsert:
    salted = salted_password(MECHANISM.get(mechanism, "SCRAM-SHA-256"), password, SALT, iterations)
    return _Upsert(name=user, mechanism=mechanism, iterations=iterations, salt=SALT, salted_password=salted)


def _alter(conn: Connection, upsertions=(), deletions=()) -> list[tuple[str, int, str | None]]:
    answer = conn.call(AlterUserScramCredentialsRequest(deletions=list(deletions), upsertions=list(upsertions)), 0)
    return [(r.user, r.error_code, r.error_message) for r in answer.results]


def _describe(conn: Connection, users: list[str] | None) -> list[tuple[str, int, list[tuple[int, int]]]]:
    request = DescribeUserScramCredentialsRequest(users=None if users is None else [_User(name=u) for u in users])
    answer = conn.call(request, 0)
    assert answer.error_code == 0
    return [(r.user, r.error_code, [(c.mechanism, c.iterations) for c in r.credential_infos]) for r in answer.results]


def _described_once_visible(conn: Connection, users: list[str]) -> list:
    """Kafka's brokers learn a new credential from the metadata log a moment after Alter answers."""
    return poll(lambda: _describe(conn, users), lambda found: all(code == 0 for _u, code, _c in found))


def _login(conn: Connection, mechanism: str, user: str, password: str):
    """A SCRAM login; returns the last SaslAuthenticate answer (server-final, or the refusal)."""
    handshake = conn.call(SaslHandshakeRequest(mechanism=mechanism), 1)
    assert handshake.error_code == 0 and mechanism in handshake.mechanisms
    client = ScramClient(mechanism, user, password)
    first = conn.call(SaslAuthenticateRequest(auth_bytes=client.first_message()), 2)
    if first.error_code:
        return first
    server_first = bytes(first.auth_bytes).decode()
    assert server_first.startswith(f"r={client.nonce}") and f",s={base64.b64encode(SALT).decode()},i=" in server_first
    assert first.session_lifetime_ms == 0
    final = conn.call(SaslAuthenticateRequest(auth_bytes=client.final_message(bytes(first.auth_bytes))), 2)
    if final.error_code == 0:
        client.verify(bytes(final.auth_bytes))  # the server proves it holds the credential
    return final


def test_credentials_are_stored_and_described(target):
    alice, bob = unique("alice"), unique("bob")
    with Connection(f"127.0.0.1:{target.plaintext}") as conn:
        assert sorted(_alter(conn, [_upsert(alice, "a-secret", 1), _upsert(bob, "b-secret", 2, 8192)])) == [
            (alice, 0, None), (bob, 0, None)]
        assert sorted(_described_once_visible(conn, [alice, bob])) == sorted([
            (alice, 0, [(1, 4096)]), (bob, 0, [(2, 8192)])])
        nobody = unique("nobody")
        found = _describe(conn, [alice, nobody, alice])
        assert sorted(found) == sorted([(alice, DUPLICATE_RESOURCE, []), (nobody, RESOURCE_NOT_FOUND, [])])
        everyone = {user for user, _code, _infos in _describe(conn, None)}
        assert {alice, bob} <= everyone
        assert sorted(_alter(conn, deletions=[_Delete(name=bob, mechanism=2)])) == [(bob, 0, None)]


def test_alter_errors(target):
    carol, dave, erin = unique("carol"), unique("dave"), unique("erin")
    with Connection(f"127.0.0.1:{target.plaintext}") as conn:
        results = _alter(conn, upsertions=[_upsert("", "x"), _upsert(carol, "x", mechanism=3),
                                           _upsert(dave, "x", iterations=1000), _upsert(erin, "x", iterations=20000),
                                           _upsert(carol + "-twice", "x"), _upsert(carol + "-twice", "y")],
                         deletions=[_Delete(name=dave + "-gone", mechanism=1)])
        assert sorted(results) == sorted([
            ("", UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
            (carol, UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            (dave, UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
            (erin, UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
            (carol + "-twice", DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
            (dave + "-gone", RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")])
        assert sorted(_describe(conn, [dave, carol + "-twice"])) == sorted([
            (dave, RESOURCE_NOT_FOUND, []), (carol + "-twice", RESOURCE_NOT_FOUND, [])])


@pytest.mark.parametrize("mechanism", [1, 2], ids=["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login(target, mechanism):
    user = unique("frank")
    name = MECHANISM[mechanism]
    with Connection(f"127.0.0.1:{target.plaintext}") as conn:
        assert _alter(conn, [_upsert(user, "f-secret", mechanism)]) == [(user, 0, None)]
        _described_once_visible(conn, [user])
    with Connection(f"127.0.0.1:{target.second}") as conn:
        final = _login(conn, name, user, "f-secret")
        assert (final.error_code, final.session_lifetime_ms) == (0, 0)
    for who, password in ((user, "wrong"), (unique("nobody"), "f-secret")):
        with Connection(f"127.0.0.1:{target.second}") as conn:
            refused = _login(conn, name, who, password)
            assert (refused.error_code, refused.error_message) == (
                SASL_AUTHENTICATION_FAILED,
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism {name}")
            assert closed_by_broker(conn)
