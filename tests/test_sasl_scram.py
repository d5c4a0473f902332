"""SCRAM (wirekafka/security/sasl/scram.py) against RFC 7677's SCRAM-SHA-256 example, the stored
credential's derivation and text form, the server's refusals (what the client is told, and what
only the log learns), and a SCRAM login through the connection's authenticator."""

from __future__ import annotations

import base64
from unittest import mock

import pytest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest

from wirekafka.security.sasl import scram as sasl_scram
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.sasl.scram import GenericFailure, ScramClient, ScramCredential, ScramFailure, ScramServer
from tests.sasl_frames import answer
from tests.sasl_frames import frame as _frame
from wirekafka.server.sasl_authenticator import SaslSettings

# RFC 7677 section 3
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE, SERVER_NONCE = "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _credential(password: str = "pencil", mechanism: str = "SCRAM-SHA-256", iterations: int = 4096) -> ScramCredential:
    salted = sasl_scram.salted_password(mechanism, password, SALT, iterations)
    return ScramCredential.from_salted_password(mechanism, SALT, salted, iterations)


def test_rfc7677_exchange_on_both_sides() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    server = ScramServer("SCRAM-SHA-256", lambda user, _m: _credential() if user == "user" else None)
    assert client.first_message() == f"n,,n=user,r={CLIENT_NONCE}".encode()
    with mock.patch("secrets.token_urlsafe", return_value=SERVER_NONCE):
        assert server.evaluate(client.first_message()).decode() == SERVER_FIRST
    assert client.final_message(SERVER_FIRST.encode()).decode() == CLIENT_FINAL
    assert server.evaluate(CLIENT_FINAL.encode()).decode() == SERVER_FINAL
    client.verify(SERVER_FINAL.encode())
    assert server.complete and server.principal == "user"


def test_the_stored_credential_round_trips_through_kafkas_text_form() -> None:
    credential = _credential(mechanism="SCRAM-SHA-512", iterations=8192)
    text = credential.encode()
    assert text.startswith(f"salt={base64.b64encode(SALT).decode()},stored_key=") and text.endswith(",iterations=8192")
    assert ScramCredential.decode(text) == credential


def _server(credential: ScramCredential | None) -> ScramServer:
    return ScramServer("SCRAM-SHA-256", lambda _u, _m: credential)


@pytest.mark.parametrize("first, credential, kind, reason", [
    (b"n,,n=nobody,r=abc", None, GenericFailure, "Authentication failed: Invalid user credentials"),
    (b"y,,n=user,r=abc", _credential(), GenericFailure, "Invalid SCRAM client first message format: y,,n=user,r=abc"),
    (b"n,a=other,n=user,r=abc", _credential(), ScramFailure,
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"n,,n=user,r=abc", _credential(iterations=1000), GenericFailure,
     "Iterations 1000 is less than the minimum 4096 for SCRAM-SHA-256"),
])
def test_client_first_refusals(first: bytes, credential, kind, reason: str) -> None:
    with pytest.raises(ScramFailure) as err:
        _server(credential).evaluate(first)
    assert type(err.value) is kind and str(err.value) == reason


def test_a_wrong_password_or_nonce_is_refused_without_detail() -> None:
    server = _server(_credential())
    client = ScramClient("SCRAM-SHA-256", "user", "wrong")
    final = client.final_message(server.evaluate(client.first_message()))
    with pytest.raises(GenericFailure, match="Invalid client credentials"):
        server.evaluate(final)
    server = _server(_credential())
    client = ScramClient("SCRAM-SHA-256", "user", "pencil")
    server.evaluate(client.first_message())
    with pytest.raises(GenericFailure, match="Invalid client nonce"):
        server.evaluate(b"c=biws,r=" + client.nonce.encode() + b"forged,p=AAAA")


def _answer(reply: bytes, version: int = 2):
    return answer(reply, SaslAuthenticateResponse, version)


def test_a_scram_login_through_the_authenticator() -> None:
    credentials = {("user", "SCRAM-SHA-256"): _credential()}
    settings = SaslSettings(("PLAIN", "SCRAM-SHA-256"), {}, scram=lambda u, m: credentials.get((u, m)))
    auth = settings.authenticator("peer")
    assert not auth.step(_frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)).fail
    client = ScramClient("SCRAM-SHA-256", "user", "pencil")
    first = _answer(auth.step(_frame(SaslAuthenticateRequest(auth_bytes=client.first_message()), 2)).reply)
    assert first.error_code == 0 and not auth.complete
    final = _answer(auth.step(_frame(SaslAuthenticateRequest(
        auth_bytes=client.final_message(first.auth_bytes)), 2)).reply)
    client.verify(final.auth_bytes)
    assert auth.complete and auth.principal == "user"
    # an unknown user is told only that authentication failed with the mechanism
    auth = settings.authenticator("peer")
    auth.step(_frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1))
    step = auth.step(_frame(SaslAuthenticateRequest(auth_bytes=b"n,,n=nobody,r=abc"), 2))
    assert step.fail and (_answer(step.reply).error_code, _answer(step.reply).error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
