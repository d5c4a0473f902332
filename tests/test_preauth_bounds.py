"""Parsing before authentication is bounded: a token of deeply nested JSON (100k `[` fits the
512 KiB pre-authentication frame) is a malformed token to both OAUTHBEARER validators, as Kafka's
Jackson (nesting limit 1000) makes it, not a RecursionError; and any failure no check foresaw
takes the refusal's one path (SASL_AUTHENTICATION_FAILED, the failure delay, one log line
without a traceback). Credential files are written 0600 whatever the umask. Over the wire:
compat-tests/test_secrets_broker.py."""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
from pathlib import Path

import pytest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest

from tests.sasl_frames import answer, frame
from testsupport.jwt_signing import SigningKey, jwks
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security import bounded_json
from wirekafka.security.oauth import jwt_validation as jwt
from wirekafka.security.private_file import write_private
from wirekafka.security.sasl import oauthbearer as oauth
from wirekafka.server.sasl_authenticator import SaslServerAuthenticator, SaslSettings

NOW = 1_800_000_000
DEEP = 100_000
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(**extra: object) -> bytes:
    return json.dumps({"sub": "admin", "iat": NOW - 10, "exp": NOW + 600, **extra}).encode()


_NONE = _b64(b'{"alg":"none"}')
DEEP_TOKENS = {
    "header of open brackets": _b64(b"[" * DEEP) + "." + _b64(_claims()) + ".",
    "header nested and closed": _b64(b"[" * DEEP + b"]" * DEEP) + "." + _b64(_claims()) + ".",
    "claims nested in a member": _NONE + "." + _b64(b'{"a":' + b"[" * DEEP) + ".",
    "claims of nested objects": _NONE + "." + _b64(b'{"a":' * DEEP + b"1" + b"}" * DEEP) + ".",
}


def test_bounded_json_refuses_deep_nesting_and_keeps_the_rest() -> None:
    assert bounded_json.parse(json.loads, "[" * 50 + "]" * 50) is not None
    assert bounded_json.depth(json.loads('{"a": [1, {"b": []}], "c": 2}')) == 4
    for text in ("[" * DEEP, "[" * DEEP + "]" * DEEP, '{"a":' * DEEP + "1" + "}" * DEEP):
        with pytest.raises(ValueError):
            bounded_json.parse(json.loads, text)


@pytest.mark.parametrize("case", sorted(DEEP_TOKENS))
def test_the_unsecured_validator_challenges_a_deep_token(case: str) -> None:
    outcome = oauth.validate(DEEP_TOKENS[case], oauth.ValidatorOptions(), NOW * 1000)
    assert outcome == oauth.Challenge("invalid_token")


@pytest.mark.parametrize("case", sorted(DEEP_TOKENS))
def test_the_secured_validator_refuses_a_deep_token(case: str) -> None:
    key = SigningKey.generate("RS256", "k1")
    with pytest.raises(jwt.InvalidJwt):
        jwt.validate(DEEP_TOKENS[case], jwt.parse_jwks(jwks(key)), jwt.JwtRules(), NOW)


def test_a_signed_token_with_deep_claims_is_refused_after_its_signature_checks() -> None:
    key = SigningKey.generate("RS256", "k1")
    token = key.sign_payload(b'{"sub":"admin","exp":9999999999,"x":' + b"[" * DEEP + b"]" * DEEP + b"}")
    with pytest.raises(jwt.InvalidJwt, match="nested deeper than 1000"):
        jwt.validate(token, jwt.parse_jwks(jwks(key)), jwt.JwtRules(), NOW)


def test_a_deep_jwks_document_is_refused() -> None:
    with pytest.raises(ValueError):
        jwt.parse_jwks('{"keys": ' + "[" * DEEP + "]" * DEEP + "}")


def _authenticate(auth: SaslServerAuthenticator, token_bytes: bytes):
    handshake = auth.step(frame(SaslHandshakeRequest[1](mechanism="OAUTHBEARER"), 1))
    assert handshake.reply is not None and not handshake.fail
    return auth.step(frame(SaslAuthenticateRequest[2](auth_bytes=token_bytes), 2))


def test_a_deep_token_over_the_exchange_is_challenged_then_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    auth = SaslServerAuthenticator(SaslSettings(("OAUTHBEARER",), {}), "peer")
    step = _authenticate(auth, oauth.first_message(DEEP_TOKENS["header of open brackets"]))
    assert not step.fail and step.reply is not None
    challenge = answer(step.reply, SaslAuthenticateResponse[2], 2)
    assert (challenge.error_code, challenge.auth_bytes) == (0, b'{"status":"invalid_token"}')
    final = auth.step(frame(SaslAuthenticateRequest[2](auth_bytes=b"\x01"), 2, cid=3))
    assert final.fail and not final.drop and final.reply is not None
    refused = answer(final.reply, SaslAuthenticateResponse[2], 2)
    assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and not auth.complete
    assert all(r.exc_info is None for r in caplog.records)


def test_a_failure_no_check_foresaw_takes_the_refusals_path(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    def broken(self: oauth.OAuthBearerServer, data: bytes) -> bytes:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(oauth.OAuthBearerServer, "evaluate", broken)
    caplog.set_level(logging.DEBUG, logger="wirekafka.server.sasl_authenticator")
    auth = SaslServerAuthenticator(SaslSettings(("OAUTHBEARER",), {}), "peer")
    step = _authenticate(auth, b"anything")
    assert step.fail and not step.drop and step.reply is not None
    refused = answer(step.reply, SaslAuthenticateResponse[2], 2)
    assert (refused.error_code, refused.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, GENERIC)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "unexpected RecursionError" in warnings[0].getMessage()


def test_a_listener_of_unsigned_tokens_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
    build_config({"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:1",
                  "sasl.enabled.mechanisms": "OAUTHBEARER",
                  "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                      f'{module} unsecuredLoginStringClaim_sub="admin";'})
    warned = [r.getMessage() for r in caplog.records if "unsigned OAUTHBEARER" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith("listener SASL_PLAINTEXT accepts unsigned OAUTHBEARER tokens")
    assert "User:admin" in warned[0] and "OAuthBearerValidatorCallbackHandler" in warned[0]


def test_credential_files_are_written_0600_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "wirekafka-topics.json"
    path.write_text("{}")
    path.chmod(0o644)  # as an older version left it
    (tmp_path / "wirekafka-topics.json.tmp").write_text("leftover")
    old = os.umask(0o002)
    try:
        write_private(path, '{"scram_credentials": {}}')
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        path.unlink()
        write_private(path, "{}")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "{}"
    finally:
        os.umask(old)
    assert not (tmp_path / "wirekafka-topics.json.tmp").exists()


def test_a_refusal_logs_one_bounded_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="wirekafka.server.sasl_authenticator")
    auth = SaslServerAuthenticator(SaslSettings(("SCRAM-SHA-256",), {}), "peer")
    assert not auth.step(frame(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256"), 1)).fail
    step = auth.step(frame(SaslAuthenticateRequest[2](auth_bytes=b"y" * 400_000), 2))
    assert step.fail and step.reply is not None
    assert answer(step.reply, SaslAuthenticateResponse[2], 2).error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert len(caplog.records) == 1 and len(caplog.records[0].getMessage()) < 400
