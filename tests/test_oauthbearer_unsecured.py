"""SASL/OAUTHBEARER with Kafka's default unsecured validator and login: the client's first
message, the unsecured JWS, the validator's checks and challenges, the exchange, the login token
and the config rules around them."""

from __future__ import annotations

import base64
import json

import pytest

from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config
from wirekafka.security.sasl import oauthbearer as oauth

NOW_S = 1_800_000_000.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jws(claims: dict | bytes, header: dict | bytes | None = None, signature: str = "") -> str:
    header_bytes = header if isinstance(header, bytes) else json.dumps(header or {"alg": "none"}).encode()
    claims_bytes = claims if isinstance(claims, bytes) else json.dumps(claims).encode()
    return f"{_b64(header_bytes)}.{_b64(claims_bytes)}.{signature}"


def good(**extra) -> dict:
    return {"sub": "alice", "iat": NOW_S - 10, "exp": NOW_S + 3600, **extra}


def _validate(token: str, **options: str):
    return oauth.validate(token, oauth.ValidatorOptions.of(options), int(NOW_S * 1000))


# ---- the first message ------------------------------------------------------------------------------
def test_first_message_with_authzid_and_extensions() -> None:
    first = oauth.parse_first_message(b"n,a=alice,\x01traceId=abc=d\x01auth=Bearer tok.en.\x01x=1\x01x=2\x01\x01")
    assert (first.authzid, first.token, first.extensions) == ("alice", "tok.en.", {"traceId": "abc=d", "x": "2"})


@pytest.mark.parametrize("data, message", [
    (b"y,,\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01auth=Bearer t\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,a=,\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01a_b=1\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01auth=Bearer t\xc3\xa9\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01other=1\x01\x01", "Invalid OAUTHBEARER client first message: 'auth' not specified"),
    (b"n,,\x01auth=Bearer\x01\x01", "Invalid OAUTHBEARER client first message: invalid 'auth' format"),
    (b"n,,\x01auth=Bearer a=b\x01\x01", "Invalid OAUTHBEARER client first message: invalid 'auth' format"),
    (b"n,,\x01auth= Bearer t\x01\x01", "Invalid OAUTHBEARER client first message: invalid 'auth' format"),
])
def test_malformed_first_messages(data: bytes, message: str) -> None:
    with pytest.raises(oauth.MalformedFirstMessage) as caught:
        oauth.parse_first_message(data)
    assert str(caught.value) == message


def test_the_scheme_is_bearer_in_any_case_and_another_drops_the_connection() -> None:
    assert oauth.parse_first_message(b"n,,\x01auth=BEARER  t==\x01\x01").token == "t=="
    with pytest.raises(oauth.Dropped):
        oauth.parse_first_message(b"n,,\x01auth=Basic xyz\x01\x01")


# ---- the token and the validator --------------------------------------------------------------------
def test_a_valid_token() -> None:
    outcome = _validate(jws(good(scope=["a", " b ", ""])))
    assert isinstance(outcome, oauth.UnsecuredJws)
    assert (outcome.principal, outcome.scope, outcome.expires_ms) == ("alice", {"a", "b"}, int((NOW_S + 3600) * 1000))


@pytest.mark.parametrize("token", [
    jws(good(), header={"alg": "HS256"}),
    jws(good(), signature="c2ln"),
    jws({"sub": "alice", "iat": NOW_S}),  # no exp
    jws(good(exp=str(NOW_S + 3600))),
    jws(good(sub=7)),
    jws(good(sub="  ")),
    jws(good(sub={"a": 1})),  # an object reads as "", so no principal
    jws(good(iat="now")),
    jws(good(scope=3)),
    jws(good(exp=NOW_S)),  # expired: now is on the expiry
    jws(good(iat=NOW_S + 5)),  # issued in the future
    jws(good(iat=NOW_S - 5, exp=NOW_S - 6)),
    "a..b",
    "abc.def",
    jws(good()) + "x.",
    "e30+.e30.",  # '+' is not base64url (Kafka 4.2+)
    "eyJhbGciOiJub25lIn0.e.",  # a length that no base64 has
    _b64(b'{"alg":"none"}') + "." + _b64(b"{not json") + ".",
])
def test_invalid_tokens_are_challenged(token: str) -> None:
    assert _validate(token) == oauth.Challenge("invalid_token")


def test_json_quirks_kafka_accepts() -> None:
    # trailing text after the JSON, a non-object claims part (no claims), booleans read as text
    assert isinstance(_validate(jws(json.dumps(good()).encode() + b" trailing")), oauth.UnsecuredJws)
    assert _validate(jws(b"[1, 2]")) == oauth.Challenge("invalid_token")
    outcome = _validate(jws(good(sub=True)))
    assert isinstance(outcome, oauth.UnsecuredJws) and outcome.principal == "true"
    assert _validate(jws(good(), header=b'{"alg": "none"} extra')).principal == "alice"  # type: ignore[union-attr]


@pytest.mark.parametrize("header", [{"typ": "JWT"}, b"", b"[]"])
def test_a_header_without_alg_drops_the_connection(header) -> None:
    with pytest.raises(oauth.Dropped):
        _validate(jws(good(), header=header))


def test_clock_skew_and_scope_options() -> None:
    late = jws(good(exp=NOW_S - 1))
    assert _validate(late) == oauth.Challenge("invalid_token")
    assert isinstance(_validate(late, unsecuredValidatorAllowableClockSkewMs="2000"), oauth.UnsecuredJws)
    scoped = jws(good(scope="read write"))  # a text is one scope, not split
    assert _validate(scoped, unsecuredValidatorRequiredScope="read") == oauth.Challenge(
        "insufficient_scope", "[read]")
    assert _validate(scoped, unsecuredValidatorRequiredScope="read write") == oauth.Challenge(
        "insufficient_scope", "[read, write]")
    listed = jws(good(roles=["read", "write"]))
    assert isinstance(_validate(listed, unsecuredValidatorScopeClaimName="roles",
                                unsecuredValidatorRequiredScope=" read  write "), oauth.UnsecuredJws)
    assert oauth.Challenge("insufficient_scope", "[read, admin]").json() == \
        '{"status":"insufficient_scope", "scope":"[read, admin]"}'
    named = jws({"user": "bob", "exp": NOW_S + 60})
    assert _validate(named, unsecuredValidatorPrincipalClaimName="user").principal == "bob"  # type: ignore[union-attr]


@pytest.mark.parametrize("options", [{"unsecuredValidatorAllowableClockSkewMs": "abc"},
                                     {"unsecuredValidatorAllowableClockSkewMs": "-1"},
                                     {"unsecuredValidatorRequiredScope": "a\\b"}])
def test_a_bad_validator_option_drops_every_connection(options: dict) -> None:
    with pytest.raises(oauth.Dropped):
        oauth.validate(jws(good()), oauth.ValidatorOptions.of(options), int(NOW_S * 1000))


# ---- the exchange -----------------------------------------------------------------------------------
def _server() -> oauth.OAuthBearerServer:
    return oauth.OAuthBearerServer(oauth.ValidatorOptions(), clock=lambda: NOW_S)


def test_the_exchange() -> None:
    server = _server()
    assert server.evaluate(oauth.first_message(jws(good()))) == b""
    assert (server.principal, server.expires_ms) == ("alice", int((NOW_S + 3600) * 1000))

    refused = _server()
    assert refused.evaluate(oauth.first_message(jws({"sub": "x"}))) == b'{"status":"invalid_token"}'
    assert not refused.complete
    with pytest.raises(oauth.Refused, match=r'^\{"status":"invalid_token"\}$'):
        refused.evaluate(b"\x01")

    retried = _server()  # after a challenge, a new first message starts over
    retried.evaluate(oauth.first_message(jws({"sub": "x"})))
    assert retried.evaluate(oauth.first_message(jws(good()))) == b"" and retried.principal == "alice"

    with pytest.raises(oauth.MalformedFirstMessage):  # 0x01 without a pending challenge
        _server().evaluate(b"\x01")


def test_an_authzid_other_than_the_principal_is_refused() -> None:
    message = f"n,a=bob,\x01auth=Bearer {jws(good())}\x01\x01".encode()
    with pytest.raises(oauth.Refused) as caught:
        _server().evaluate(message)
    assert str(caught.value) == ("Authentication failed: Client requested an authorization id (bob) that is "
                                 "different from the token's principal name (alice)")
    assert _server().evaluate(message.replace(b"a=bob", b"a=alice")) == b""


# ---- the login token --------------------------------------------------------------------------------
def test_the_login_token() -> None:
    options = {"unsecuredLoginStringClaim_sub": "admin", "unsecuredLoginListClaim_scope": ",a,b",
               "unsecuredLoginNumberClaim_level": "3", "unsecuredLoginLifetimeSeconds": "60",
               "unsecuredLoginExtension_traceId": "x"}
    token = oauth.login_token(options, NOW_S)
    assert token is not None
    parsed = oauth.parse_unsecured_jws(token, "sub", "scope")
    assert (parsed.principal, parsed.scope, parsed.exp, parsed.iat) == ("admin", {"a", "b"}, NOW_S + 60, NOW_S)
    assert parsed.claims["level"] == 3.0
    assert oauth.login_extensions(options) == {"traceId": "x"}
    assert oauth.login_token({}, NOW_S) is None


@pytest.mark.parametrize("options, message", [
    ({"unsecuredValidatorRequiredScope": "a"}, "No principal name in JWT claim: sub"),
    ({"unsecuredLoginExtension_a": "b"}, "Extensions provided in login context without a token"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_exp": "1"}, "Cannot explicitly set the 'exp' claim"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "x"}, 'For input string: "x"'),
])
def test_login_options_kafka_refuses(options: dict, message: str) -> None:
    with pytest.raises(oauth.LoginError) as caught:
        oauth.login_token(options, NOW_S)
    assert str(caught.value) == message


def test_list_claims_split_as_kafka_splits_them() -> None:
    assert oauth._list_claim(",a,b") == ["a", "b"]
    assert oauth._list_claim(",a,,b") == ["a", "", "b", ""]
    assert oauth._list_claim("|a|") == ["a", ""]
    assert oauth._list_claim(",") == []


# ---- config --------------------------------------------------------------------------------------------
LISTENERS = {"log.dirs": "/tmp/unused", "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
             "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"}
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
JAAS_KEY = "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"


def test_a_listener_with_oauthbearer() -> None:
    cfg = build_config({**LISTENERS, JAAS_KEY: f"{MODULE};"})
    assert cfg.sasl_mechanisms("SASL_PLAINTEXT") == ("OAUTHBEARER",)
    build_config({**LISTENERS, JAAS_KEY: f'{MODULE} unsecuredLoginStringClaim_sub="admin" '
                                         f'unsecuredValidatorRequiredScope="kafka";'})


def test_options_that_make_no_login_token_stop_startup() -> None:
    with pytest.raises(ConfigError, match="An internal error occurred while retrieving token from callback handler"):
        build_config({**LISTENERS, JAAS_KEY: f'{MODULE} unsecuredValidatorRequiredScope="kafka";'})


@pytest.mark.parametrize("key", ["listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
                                 "listener.name.sasl_plaintext.oauthbearer.sasl.login.callback.handler.class",
                                 "listener.name.SASL_PLAINTEXT.OAUTHBEARER.sasl.login.class"])
def test_plugins_on_a_listener_stop_startup(key: str) -> None:
    with pytest.raises(ConfigError, match="it loads JVM classes"):
        build_config({**LISTENERS, JAAS_KEY: f"{MODULE};", key: "org.example.Handler"})
