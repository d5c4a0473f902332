"""Kafka's secured OAUTHBEARER validator (KIP-768): signed tokens against a JWKS (the signature,
the times with clock skew, audience, issuer, the sub and scope claims), its settings and the
allowed-URL rule read from KAFKA_OPTS, the JWKS sources' refresh rules and the SASL exchange."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import pytest
from cryptography.hazmat.primitives.asymmetric import ed448
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
import trio
import trio.testing

from testsupport.jwt_signing import SigningKey, b64url, jwks
from wirekafka.security import jvm_properties
from wirekafka.security.oauth import validator as oauth_validator
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config
from wirekafka.security.oauth import jwt_validation as jwt
from wirekafka.security.sasl import oauthbearer as oauth
from wirekafka.security.oauth import secured as oauth_secured
from wirekafka.security.oauth.secured import FileJwks, HttpJwks, SecuredValidator

NOW = 1_800_000_000
RULES = jwt.JwtRules(expected_audience=("kafka",), expected_issuer="https://issuer")
ALGS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512", "EdDSA", "HS256", "HS512"]


@pytest.fixture(scope="module")
def keys() -> dict[str, SigningKey]:
    return {alg: SigningKey.generate(alg, f"kid-{alg}") for alg in ALGS}


@pytest.fixture(scope="module")
def key_set(keys: dict[str, SigningKey]) -> tuple[jwt.Jwk, ...]:
    return jwt.parse_jwks(jwks(*keys.values()))


def claims(**changes: object) -> dict[str, object]:
    body: dict[str, object] = {"sub": "alice", "iat": NOW - 10, "exp": NOW + 600, "aud": "kafka",
                               "iss": "https://issuer", "scope": "read write"}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def refusal(token: str, key_set: tuple[jwt.Jwk, ...], rules: jwt.JwtRules = RULES) -> str:
    with pytest.raises(jwt.InvalidJwt) as caught:
        jwt.validate(token, key_set, rules, NOW)
    return str(caught.value)


@pytest.mark.parametrize("alg", ALGS)
def test_a_token_signed_with_a_key_of_the_jwks_authenticates_its_sub(keys, key_set, alg) -> None:
    token = jwt.validate(keys[alg].sign(claims(sub=" alice ")), key_set, RULES, NOW)
    assert (token.principal, token.scope, token.expires_ms, token.issued_at_ms) == (
        "alice", frozenset({"read write"}), (NOW + 600) * 1000, (NOW - 10) * 1000)


def test_the_scope_claim_as_a_list_and_claim_names_configured(keys, key_set) -> None:
    rules = jwt.JwtRules(("kafka",), "https://issuer", scope_claim="scp", sub_claim="client_id")
    token = jwt.validate(keys["RS256"].sign(claims(scp=["a", " b "], client_id="svc")), key_set, rules, NOW)
    assert (token.principal, token.scope) == ("svc", frozenset({"a", "b"}))


@pytest.mark.parametrize("changes, reason", [
    ({"exp": NOW - 30}, "no longer valid"),  # now - 30 s of skew is on exp
    ({"exp": None}, "No Expiration Time"),
    ({"iat": None}, "No Issued At"),
    ({"exp": NOW + 5, "iat": NOW + 6}, "cannot be before the Issued At"),
    ({"nbf": NOW + 31}, "not yet valid"),
    ({"exp": "soon"}, "'exp' claim is not the expected type"),
    ({"aud": "other"}, "doesn't contain an acceptable identifier"),
    ({"aud": None}, "No Audience"),
    ({"iss": "https://elsewhere"}, "Issuer (iss) claim value"),
    ({"iss": None}, "Issuer (iss) claim value"),
    ({"sub": None}, "sub value must be non-empty"),
    ({"sub": "  "}, "sub value must be non-empty"),
    ({"sub": 7}, "'sub' claim is not the expected type"),
    ({"scope": ["a", "a "]}, "must not contain duplicates"),
    ({"scope": ["a", ""]}, "scope value must be non-empty"),
])
def test_claims_kafka_refuses(keys, key_set, changes, reason) -> None:
    assert reason in refusal(keys["ES256"].sign(claims(**changes)), key_set)


def test_the_clock_skew_allows_a_token_just_expired_or_not_yet_valid(keys, key_set) -> None:
    expired = keys["RS256"].sign(claims(exp=NOW - 29, iat=NOW - 100))
    early = keys["RS256"].sign(claims(nbf=NOW + 30))
    assert [jwt.validate(t, key_set, RULES, NOW).principal for t in (expired, early)] == ["alice", "alice"]
    strict = jwt.JwtRules(("kafka",), "https://issuer", clock_skew_s=0)
    assert "no longer valid" in refusal(expired, key_set, strict)
    assert "not yet valid" in refusal(early, key_set, strict)


def test_audience_and_issuer_unchecked_when_not_configured_but_an_aud_is_refused(keys, key_set) -> None:
    open_rules = jwt.JwtRules()
    assert jwt.validate(keys["RS256"].sign(claims(aud=None, iss=None)), key_set, open_rules, NOW).principal == "alice"
    assert "doesn't contain an acceptable identifier" in refusal(keys["RS256"].sign(claims()), key_set, open_rules)


def test_an_audience_list_needs_one_expected_value(keys, key_set) -> None:
    assert jwt.validate(keys["RS256"].sign(claims(aud=["x", "kafka"])), key_set, RULES, NOW).principal == "alice"


def test_a_bad_signature_and_a_signature_of_another_key(keys, key_set) -> None:
    token = keys["RS256"].sign(claims())
    head, body, _ = token.split(".")
    forged = f"{head}.{b64url(json.dumps(claims(sub='mallory')).encode())}.{token.split('.')[2]}"
    assert refusal(forged, key_set) == "JWS signature is invalid"
    other = SigningKey.generate("RS256", "kid-RS256")  # the same kid, another key
    assert refusal(other.sign(claims()), key_set) == "JWS signature is invalid"


def test_an_unknown_kid_is_an_unknown_key(keys, key_set) -> None:
    with pytest.raises(jwt.UnknownKey) as caught:
        jwt.validate(keys["RS256"].sign(claims(), kid="rotated"), key_set, RULES, NOW)
    assert caught.value.kid == "rotated"


def test_key_selection_by_type_use_and_alg(keys) -> None:
    key = keys["RS256"]
    encryption_only = jwt.parse_jwks(json.dumps({"keys": [key.jwk(use="enc")]}))
    with pytest.raises(jwt.UnknownKey):
        jwt.validate(key.sign(claims()), encryption_only, RULES, NOW)
    other_alg = jwt.parse_jwks(json.dumps({"keys": [key.jwk(alg="RS512")]}))
    with pytest.raises(jwt.UnknownKey):
        jwt.validate(key.sign(claims()), other_alg, RULES, NOW)
    no_kid = key.sign(claims(), kid=None)  # a token without kid is tried with every key of its type
    both = json.dumps({"keys": [keys["PS256"].jwk(alg=None), key.jwk(alg=None)]})
    assert jwt.validate(no_kid, jwt.parse_jwks(both), RULES, NOW).principal == "alice"


@pytest.mark.parametrize("header, reason", [
    ({"alg": "none"}, "'none' is not a permitted algorithm"),
    ({"alg": None}, "'None' is not a permitted algorithm"),
    ({"crit": ["exp"]}, "marked as critical"),
    ({"alg": "XY256"}, "unsupported"),
])
def test_headers_jose4j_refuses(keys, key_set, header, reason) -> None:
    token = keys["RS256"].sign(claims(), **header)
    assert reason in refusal(token, key_set)


@pytest.mark.parametrize("token", ["a.b", "a.b.c.d.e", "!!.e30.", "e30.e30.x"])
def test_malformed_serializations(key_set, token) -> None:
    with pytest.raises(jwt.InvalidJwt):
        jwt.validate(token, key_set, RULES, NOW)


def test_duplicate_claim_names_are_refused(keys, key_set) -> None:
    token = keys["RS256"].sign_payload(b'{"sub":"alice","sub":"admin","iat":1,"exp":9999999999}')
    assert "Names must be unique" in refusal(token, key_set)


def test_rsa_keys_under_2048_bits_do_not_verify() -> None:
    weak = SigningKey.generate("RS256", "weak", rsa_bits=1024)
    assert refusal(weak.sign(claims()), jwt.parse_jwks(jwks(weak))) == "JWS signature is invalid"


def test_an_ec_key_of_another_curve_does_not_verify(keys) -> None:
    """A P-384 key (kid and all) does not verify an ES256 token, even one made to fit its size."""
    p384 = keys["ES384"]
    token = p384.sign(claims(), alg="ES256", kid=p384.kid)
    listed = jwt.parse_jwks(json.dumps({"keys": [p384.jwk(alg=None)]}))
    assert refusal(token, listed) == "JWS signature is invalid"


def test_hmac_keys_shorter_than_their_hash_do_not_verify() -> None:
    short = SigningKey("HS256", "short", b"k" * 31)
    assert refusal(short.sign(claims()), jwt.parse_jwks(jwks(short))) == "JWS signature is invalid"
    exact = SigningKey("HS256", "exact", b"k" * 32)
    assert jwt.validate(exact.sign(claims()), jwt.parse_jwks(jwks(exact)), RULES, NOW).principal == "alice"


def test_ed448_keys_verify() -> None:
    private = ed448.Ed448PrivateKey.generate()
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    member = {"kty": "OKP", "crv": "Ed448", "x": b64url(raw), "kid": "ed448"}
    header = b64url(json.dumps({"alg": "EdDSA", "kid": "ed448"}).encode())
    payload = b64url(json.dumps(claims()).encode())
    token = f"{header}.{payload}.{b64url(private.sign(f'{header}.{payload}'.encode()))}"
    assert jwt.validate(token, jwt.parse_jwks(json.dumps({"keys": [member]})), RULES, NOW).principal == "alice"


def test_jwks_keys_of_unknown_types_are_left_out(keys) -> None:
    document = json.dumps({"keys": [{"kty": "XYZ", "kid": "x"}, keys["ES256"].jwk()]})
    assert [k.kid for k in jwt.parse_jwks(document)] == ["kid-ES256"]
    with pytest.raises(ValueError):
        jwt.parse_jwks('{"no": "keys"}')


# ---- settings ------------------------------------------------------------------------------------------
def _configure(settings: dict[str, str], kafka_opts: str = "") -> oauth_validator.ValidatorConfig:
    return oauth_validator.configure(settings.get, {"KAFKA_OPTS": kafka_opts})


def test_the_jwks_url_is_required() -> None:
    with pytest.raises(oauth_validator.ValidatorConfigError) as caught:
        _configure({})
    assert str(caught.value).startswith('The OAuth validator for the broker requires "sasl.oauthbearer.jwks.'
                                        'endpoint.url" to be configured so that JWT signatures can be verified')


def test_a_url_not_in_the_allowed_urls_property_stops_startup(tmp_path: Path) -> None:
    url = f"file:{tmp_path / 'jwks.json'}"
    with pytest.raises(oauth_validator.ValidatorConfigError) as caught:
        _configure({"sasl.oauthbearer.jwks.endpoint.url": url}, "-Xmx1g -Dother=1")
    assert str(caught.value) == (
        f"The class org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator defined in the "
        f"sasl.oauthbearer.jwt.validator.class configuration encountered an error on configure(): "
        f"Invalid value {url} for configuration sasl.oauthbearer.jwks.endpoint.url: The URL cannot be accessed "
        f"due to restrictions. Update the system property 'org.apache.kafka.sasl.oauthbearer.allowed.urls' to "
        f"allow the URL to be accessed.")


def test_an_allowed_file_url_and_its_checks(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    url = f"file:{path}"
    opts = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=http://x,{url}"
    with pytest.raises(oauth_validator.ValidatorConfigError, match="that doesn't exist"):
        _configure({"sasl.oauthbearer.jwks.endpoint.url": url}, opts)
    path.write_text('{"keys": []}')
    config = _configure({"sasl.oauthbearer.jwks.endpoint.url": url, "sasl.oauthbearer.expected.audience": "b,a",
                         "sasl.oauthbearer.clock.skew.seconds": "5"}, opts)
    assert (config.jwks_file, config.rules) == (path, jwt.JwtRules(("a", "b"), None, "scope", "sub", 5))


@pytest.mark.parametrize("url, message", [
    ("jwks.json", "is malformed: no protocol: jwks.json"),
    ("ftp://host/jwks", 'contains an invalid protocol (ftp); only "http", "https", and "file" protocol'),
    ("gopher://host/jwks", "is malformed: unknown protocol: gopher"),
])
def test_urls_kafka_refuses(url, message) -> None:
    with pytest.raises(oauth_validator.ValidatorConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _configure({"sasl.oauthbearer.jwks.endpoint.url": url})


def test_only_kafkas_default_jwt_validator_class() -> None:
    url = "http://127.0.0.1:1/jwks"
    opts = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={url}"
    default = {"sasl.oauthbearer.jwks.endpoint.url": url,
               "sasl.oauthbearer.jwt.validator.class": oauth_validator.DEFAULT_JWT_VALIDATOR}
    assert _configure(default, opts).jwks_url == url
    with pytest.raises(oauth_validator.ValidatorConfigError, match="loads JVM classes"):
        _configure({**default, "sasl.oauthbearer.jwt.validator.class": "com.example.Validator"}, opts)


def test_the_allowed_urls_property_is_read_from_kafka_opts_the_last_one_winning() -> None:
    opts = "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=a -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls='b c'"
    assert jvm_properties.system_property(oauth_validator.ALLOWED_URLS_PROPERTY, {"KAFKA_OPTS": opts}) == "b c"
    assert jvm_properties.system_property(oauth_validator.ALLOWED_URLS_PROPERTY, {}) is None


def _broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handler: str, allowed: bool = True) -> dict[str, str]:
    path = tmp_path / "jwks.json"
    path.write_text('{"keys": []}')
    if allowed:
        monkeypatch.setenv("KAFKA_OPTS", f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file:{path}")
    else:
        monkeypatch.delenv("KAFKA_OPTS", raising=False)
    return {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
            "log.dirs": str(tmp_path / "data"),
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                'unsecuredLoginStringClaim_sub="admin";',
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": handler,
            "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": f"file:{path}",
            "sasl.oauthbearer.expected.audience": "kafka"}


def test_a_broker_with_kafkas_validator_handler(tmp_path, monkeypatch) -> None:
    cfg = build_config(_broker(tmp_path, monkeypatch, oauth_validator.HANDLER_CLASS))
    validator = cfg.oauth_validator("SASL_PLAINTEXT")
    assert validator is not None and validator.rules.expected_audience == ("kafka",)
    with pytest.raises(ConfigError, match="The URL cannot be accessed due to restrictions"):
        build_config(_broker(tmp_path, monkeypatch, oauth_validator.HANDLER_CLASS, allowed=False))


def test_kafka_3s_secured_handler_class_is_not_available(tmp_path, monkeypatch) -> None:
    old = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
    with pytest.raises(ConfigError, match="loads JVM classes"):
        build_config(_broker(tmp_path, monkeypatch, old))


# ---- the JWKS sources ----------------------------------------------------------------------------------
def test_a_jwks_file_is_read_again_when_it_changes(tmp_path: Path, keys) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(jwks(keys["RS256"]))
    source = FileJwks(path)
    assert [k.kid for k in source.keys()] == ["kid-RS256"]
    path.write_text(jwks(keys["ES256"], keys["RS256"]))
    os.utime(path, ns=(1, 2))  # a new modification time whatever the clock's resolution
    assert [k.kid for k in source.keys()] == ["kid-ES256", "kid-RS256"]


def test_an_unknown_kid_refreshes_at_most_once_a_minute_for_the_last_16_kids() -> None:
    now = [1000.0]
    source = HttpJwks("http://127.0.0.1:1/jwks", 3_600_000, 100, 10_000, clock=lambda: now[0])
    assert source.request_refresh("a") is True
    assert source.request_refresh("a") is False
    assert source.request_refresh(None) is False
    for kid in range(16):
        assert source.request_refresh(f"k{kid}") is True
    assert source.request_refresh("a") is True  # "a" fell out of the 16 remembered kids
    now[0] += 60
    assert source.request_refresh("k15") is True
    assert source.request_refresh("x" * 1000 + "tail") is True
    assert source.request_refresh("x" * 1000 + "other") is False  # kids are cut at 1000 characters


# ---- the exchange --------------------------------------------------------------------------------------
def test_the_exchange_with_the_secured_validator(tmp_path: Path, keys) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(jwks(keys["RS256"]))
    config = oauth_validator.ValidatorConfig(f"file:{path}", path, 3_600_000, 100, 10_000, RULES)
    server = oauth.OAuthBearerServer(oauth.ValidatorOptions(), clock=lambda: NOW, validator=SecuredValidator(config))
    refused = keys["RS256"].sign(claims(aud="other"))
    assert server.evaluate(oauth.first_message(refused)) == b'{"status":"invalid_token"}'
    with pytest.raises(oauth.Refused, match='^{"status":"invalid_token"}$'):
        server.evaluate(b"\x01")
    assert server.evaluate(oauth.first_message(keys["RS256"].sign(claims()))) == b""
    assert (server.principal, server.expires_ms) == ("alice", (NOW + 600) * 1000)


def test_a_failed_refresh_keeps_the_keys_then_an_unknown_kid_fetches_again(monkeypatch, keys) -> None:
    """Backoff 100 ms doubling while the waits stay within 400 ms: three tries, then the old keys
    stay; the next unknown kid fetches the JWKS again (on trio's mock clock: no real waiting)."""
    rsa_key, ec_key = keys["RS256"], keys["ES256"]
    answers: list[object] = [[rsa_key], OSError("down"), OSError("down"), OSError("down"), [rsa_key, ec_key]]

    def fetch(url: str) -> tuple[jwt.Jwk, ...]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return jwt.parse_jwks(jwks(*answer))  # type: ignore[arg-type]

    monkeypatch.setattr(oauth_secured, "fetch_jwks", fetch)
    source = HttpJwks("http://127.0.0.1:1/jwks", 3_600_000, 100, 400)

    async def until(done: Callable[[], bool]) -> None:
        """Each fetch runs in a real worker thread: wait for what it leaves, not for a time."""
        with trio.fail_after(3600):
            while not done():
                await trio.sleep(0.01)

    async def scenario() -> list[list[str | None]]:
        seen = []
        await source.load()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(source.run)
            assert source.request_refresh("kid-ES256")
            await until(lambda: len(answers) == 1)  # three failed fetches, no fourth
            seen.append([k.kid for k in source.keys()])
            assert source.request_refresh("other")
            await until(lambda: len(source.keys()) == 2)
            seen.append([k.kid for k in source.keys()])
            nursery.cancel_scope.cancel()
        return seen

    assert trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0)) == [
        ["kid-RS256"], ["kid-RS256", "kid-ES256"]]
    assert answers == []
