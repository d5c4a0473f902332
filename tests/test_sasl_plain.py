"""SASL/PLAIN pieces: the JAAS text Kafka accepts, PlainSaslServer's checks and messages, and the
connection's authentication steps (the wire-level exchange is also compared with Kafka 4.3.1 in
conformance/test_sasl.py)."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from wirekafka.security import jaas
from wirekafka.security.sasl import plain as sasl_plain
from wirekafka.protocol.errors import ErrorCode
from tests.sasl_frames import answer as _answer
from tests.sasl_frames import frame as _frame
from wirekafka.server.sasl_authenticator import SaslSettings, Step

EMPTY_FRAME = b"\x00\x00\x00\x00"

MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_jaas_text_is_read_as_kafkas_tokenizer_reads_it() -> None:
    text = (f'{MODULE} required username="admin" password=\'admin-secret\' /* c */ '
            f'user_admin="admin-secret" // comment\n user_alice=alice_secret-2 user_bob="q\\"uote";')
    module = jaas.single_module(text)
    assert (module.name, module.flag) == (MODULE, "REQUIRED")
    assert module.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                              "user_alice": "alice_secret-2", "user_bob": 'q"uote'}


@pytest.mark.parametrize("text, message", [
    ("", "Login module not specified in JAAS config"),
    (MODULE, "Login module control flag not specified in JAAS config"),
    (f"{MODULE} mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    (f'{MODULE} required user_a=;', "Value not specified for key 'user_a' in JAAS config"),
    (f'{MODULE} required user_a=123;', "Value not specified for key 'user_a' in JAAS config"),
    (f'{MODULE} required user_a="x"', "JAAS config entry not terminated by semi-colon"),
    (f'{MODULE} required; {MODULE} optional;', "JAAS config property contains 2 login modules, should be 1 module"),
])
def test_jaas_errors_are_kafkas(text: str, message: str) -> None:
    with pytest.raises(jaas.JaasError) as err:
        jaas.single_module(text)
    assert str(err.value) == message


USERS = {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.mark.parametrize("message, refusal", [
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"),
    (b"\x00\x00alice-secret", "Authentication failed: username not specified"),
    (b"\x00alice\x00", "Authentication failed: password not specified"),
    (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\x00a\x00b\x00c\x00d", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"admin\x00alice\x00alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])
def test_plain_refusals_carry_kafkas_messages(message: bytes, refusal: str) -> None:
    with pytest.raises(sasl_plain.PlainAuthenticationError) as err:
        sasl_plain.authenticate(message, USERS)
    assert str(err.value) == refusal


def test_plain_accepts_the_users_of_the_login_module() -> None:
    users = sasl_plain.users_of({"username": "admin", "password": "x", "user_alice": "alice-secret"})
    assert users == {"alice": "alice-secret"}
    assert sasl_plain.authenticate(sasl_plain.client_message("alice", "alice-secret"), users) == "alice"
    assert sasl_plain.authenticate(b"alice\x00alice\x00alice-secret", users) == "alice"


SETTINGS = SaslSettings(("PLAIN",), USERS)


def test_versions_then_handshake_then_authenticate() -> None:
    auth = SETTINGS.authenticator("peer")
    assert auth.step(_frame(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)).dispatch
    step = auth.step(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 1))
    assert not step.fail and _answer(step.reply, SaslHandshakeResponse, 1).mechanisms == ["PLAIN"]
    step = auth.step(_frame(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"), 2))
    answer = _answer(step.reply, SaslAuthenticateResponse, 2)
    assert (answer.error_code, answer.auth_bytes, answer.session_lifetime_ms) == (0, b"", 0)
    assert auth.complete and auth.principal == "alice"


def test_handshake_v0_takes_a_bare_token() -> None:
    auth = SETTINGS.authenticator("peer")
    assert not auth.step(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 0)).fail
    assert auth.step(b"\x00alice\x00alice-secret").reply == EMPTY_FRAME and auth.complete
    auth = SETTINGS.authenticator("peer")
    auth.step(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 0))
    assert auth.step(b"\x00alice\x00nope") == Step(reply=None, fail=True)  # no answer: the connection closes


def test_failures() -> None:
    # an unknown mechanism: answered with the enabled ones, then the connection fails
    step = SETTINGS.authenticator("p").step(_frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1))
    answer = _answer(step.reply, SaslHandshakeResponse, 1)
    assert step.fail and (answer.error_code, answer.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN"])
    # a wrong password: SASL_AUTHENTICATION_FAILED with PlainSaslServer's message
    auth = SETTINGS.authenticator("p")
    auth.step(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 1))
    step = auth.step(_frame(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00x"), 1))
    answer = _answer(step.reply, SaslAuthenticateResponse, 1)
    assert step.fail and (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password")
    # another request before the handshake: no answer
    step = SETTINGS.authenticator("p").step(_frame(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9))
    assert step.fail and step.reply is None
    # a second ApiVersions
    auth = SETTINGS.authenticator("p")
    auth.step(_frame(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3))
    assert auth.step(_frame(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)).fail
    # not a Kafka request at all (a GSSAPI token): GSSAPI is not enabled
    assert SETTINGS.authenticator("p").step(b"\x60\x01").fail


def _authenticate(auth, user: bytes = b"alice", password: bytes = b"alice-secret", version: int = 2):
    assert not auth.step(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 1)).fail
    step = auth.step(_frame(SaslAuthenticateRequest(auth_bytes=b"\x00" + user + b"\x00" + password), version))
    return step, _answer(step.reply, SaslAuthenticateResponse, version)


def test_sessions_expire_and_are_renewed_by_re_authentication(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("wirekafka.server.sasl_authenticator.time.monotonic", lambda: clock[0])
    auth = SaslSettings(("PLAIN",), USERS, reauth_ms={"PLAIN": 3000}).authenticator("peer")
    _step, answer = _authenticate(auth)
    assert answer.session_lifetime_ms == 3000 and auth.complete and not auth.expired()
    clock[0] += 2.0
    assert auth.begin_reauthentication()  # a SaslHandshake on the authenticated connection
    _step, answer = _authenticate(auth)
    assert answer.error_code == 0 and answer.session_lifetime_ms == 3000
    clock[0] += 0.5  # within a second of the last one: answered as any late SaslHandshake
    assert not auth.begin_reauthentication()
    clock[0] += 3.0
    assert auth.expired()


def test_re_authentication_keeps_the_user_and_the_mechanism() -> None:
    settings = SaslSettings(("PLAIN",), USERS, reauth_ms={"PLAIN": 60_000})
    auth = settings.authenticator("peer")
    _authenticate(auth)
    assert auth.begin_reauthentication()
    step, answer = _authenticate(auth, b"admin", b"admin-secret")
    assert step.fail and (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "Cannot change principals during re-authentication from User.alice: User.admin")
    # without a session lifetime, a late SaslHandshake starts nothing
    plain = SETTINGS.authenticator("peer")
    _authenticate(plain)
    assert not plain.begin_reauthentication() and not plain.expired()
