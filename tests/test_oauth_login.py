"""Kafka's secured OAUTHBEARER login (wirekafka/security/oauth/token_login.py): its settings, the token endpoint
request and retries (against a local HTTP server), the token file, the checks of the token and
the refresh time. A cluster whose brokers log in this way is in conformance/cluster/two_listeners.py."""

from __future__ import annotations

import base64
import http.server
import json
import random
import threading
from typing import Iterator

import pytest
import trio

from tests.test_oauthbearer_unsecured import LISTENERS, MODULE
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config
from wirekafka.security.oauth.token_login import (LoginConfig, LoginConfigError, LoginFailed, LoginToken, SecuredLogin, check_token,
                                   configure, refresh_at_ms, request_body, retrieve)


def _jwt(claims: dict) -> str:
    part = lambda obj: base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()  # noqa: E731
    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


def _config(url: str, **settings: str) -> LoginConfig:
    options = {"clientId": "broker one", "clientSecret": "s3cr:t", "scope": "kafka write"}
    return configure(settings.get, options, environ={})


class _Endpoint(http.server.BaseHTTPRequestHandler):
    """A token endpoint that answers the queued (status, body) pairs in turn and records requests."""

    answers: list[tuple[int, str]] = []
    seen: list[tuple[dict, str]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        type(self).seen.append((dict(self.headers), body))
        status, text = type(self).answers.pop(0)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(text.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Endpoint.answers, _Endpoint.seen = [], []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/token"
    server.shutdown()
    server.server_close()


TOKEN = _jwt({"sub": "broker", "exp": 2_000_000_000, "iat": 1_999_996_400, "scope": "kafka"})


def test_the_client_credentials_grant_as_kafka_sends_it(endpoint: str) -> None:
    _Endpoint.answers = [(200, json.dumps({"access_token": TOKEN, "token_type": "bearer"}))]
    config = _config(endpoint, **{"sasl.oauthbearer.token.endpoint.url": endpoint})
    assert retrieve(config) == TOKEN
    headers, body = _Endpoint.seen[0]
    assert body == "grant_type=client_credentials&scope=kafka+write"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"broker one:s3cr:t").decode()
    assert (headers["Accept"], headers["Cache-Control"], headers["Content-Type"]) == (
        "application/json", "no-cache", "application/x-www-form-urlencoded")


def test_urlencoded_credentials_and_no_scope(endpoint: str) -> None:
    _Endpoint.answers = [(200, json.dumps({"access_token": TOKEN}))]
    config = configure({"sasl.oauthbearer.token.endpoint.url": endpoint, "sasl.oauthbearer.header.urlencode": "true"}.get,
                       {"clientId": "broker one", "clientSecret": "s3cr:t"}, environ={})
    retrieve(config)
    headers, body = _Endpoint.seen[0]
    assert body == request_body(None) == "grant_type=client_credentials"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"broker+one:s3cr%3At").decode()


def test_server_errors_are_retried_and_client_errors_are_final(endpoint: str) -> None:
    settings = {"sasl.oauthbearer.token.endpoint.url": endpoint, "sasl.login.retry.backoff.ms": "10",
                "sasl.login.retry.backoff.max.ms": "5000"}
    _Endpoint.answers = [(503, "{}"), (500, "busy"), (200, json.dumps({"access_token": TOKEN}))]
    waits: list[float] = []
    assert retrieve(_config(endpoint, **settings), sleep=waits.append) == TOKEN
    assert waits == [0.01, 0.02]  # the backoff doubles
    _Endpoint.answers = [(401, '{"error":"invalid_client"}')]
    with pytest.raises(LoginFailed, match="401"):
        retrieve(_config(endpoint, **settings), sleep=waits.append)
    assert len(waits) == 2
    _Endpoint.answers = [(200, json.dumps({"token_type": "bearer"}))] * 100
    with pytest.raises(LoginFailed, match="did not contain an access_token"):
        retrieve(_config(endpoint, **{**settings, "sasl.login.retry.backoff.max.ms": "0"}))


def test_a_token_file_is_read_trimmed(tmp_path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n")
    config = configure({"sasl.oauthbearer.token.endpoint.url": f"file:{path}"}.get, {}, environ={})
    assert retrieve(config) == TOKEN
    path.write_text("\n")
    with pytest.raises(LoginFailed, match="no token"):
        retrieve(config)


def test_settings_kafka_refuses(tmp_path) -> None:
    with pytest.raises(LoginConfigError, match="sasl.oauthbearer.token.endpoint.url is required"):
        configure({}.get, {"clientId": "a", "clientSecret": "b"}, environ={})
    with pytest.raises(LoginConfigError, match="clientSecret is required"):
        configure({"sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/t"}.get, {"clientId": "a"}, environ={})
    with pytest.raises(LoginConfigError, match="invalid protocol"):
        configure({"sasl.oauthbearer.token.endpoint.url": "ftp://x/t"}.get, {}, environ={})
    with pytest.raises(LoginConfigError, match="doesn't exist"):
        configure({"sasl.oauthbearer.token.endpoint.url": f"file:{tmp_path}/none"}.get, {}, environ={})
    url = "http://127.0.0.1:1/t"
    allowed = {"KAFKA_OPTS": "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=http://other/t"}
    with pytest.raises(LoginConfigError, match="is not allowed"):
        configure({"sasl.oauthbearer.token.endpoint.url": url}.get, {"clientId": "a", "clientSecret": "b"}, allowed)
    allowed = {"KAFKA_OPTS": f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=http://other/t,{url}"}
    assert configure({"sasl.oauthbearer.token.endpoint.url": url}.get, {"clientId": "a", "clientSecret": "b"},
                     allowed).url == url


def test_the_token_checks_of_kafkas_login(tmp_path) -> None:
    config = configure({"sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/t",
                        "sasl.oauthbearer.sub.claim.name": "client_id"}.get,
                       {"clientId": "a", "clientSecret": "b"}, environ={})
    token = check_token(_jwt({"client_id": "svc", "exp": 1700000000.5, "scope": ["a", "b"]}), config)
    assert (token.principal, token.scopes, token.expires_ms, token.issued_ms) == ("svc", ("a", "b"), 1700000000500, None)
    for claims, message in (({"client_id": "svc"}, "exp value must be non-null"),
                            ({"exp": 1}, "client_id value must be non-null"),
                            ({"client_id": "svc", "exp": "soon"}, "exp value must be a number"),
                            ({"client_id": "svc", "exp": 1, "iat": -1}, "iat value must be non-negative")):
        with pytest.raises(LoginFailed, match=message):
            check_token(_jwt(claims), config)
    with pytest.raises(LoginFailed, match="expected three sections"):
        check_token("abc.def", config)


def test_refresh_time_follows_kafkas_rules() -> None:
    config = configure({"sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/t",
                        "sasl.login.refresh.window.jitter": "0"}.get, {"clientId": "a", "clientSecret": "b"}, environ={})
    rng = random.Random(1)
    hour = LoginToken("t", "p", (), expires_ms=3_600_000, issued_ms=0)
    assert refresh_at_ms(hour, 0, config, rng) == 2_880_000  # 80% of the lifetime
    assert refresh_at_ms(hour, 3_000_000, config, rng) == 3_060_000  # not sooner than the minimum period
    assert refresh_at_ms(hour, 3_300_000, config, rng) == 3_300_000 + int(300_000 * 0.8)  # too close to the end
    ten_min = LoginToken("t", "p", (), expires_ms=700_000, issued_ms=0)
    assert refresh_at_ms(ten_min, 0, config, rng) == 400_000  # kept out of the last 300 s
    assert refresh_at_ms(hour, 4_000_000, config, rng) == 4_000_000  # expired: at once


def test_secured_login_fetches_once_until_its_refresh_time(endpoint: str) -> None:
    _Endpoint.answers = [(200, json.dumps({"access_token": TOKEN}))] * 2
    now = [1_999_996_400.0]
    login = SecuredLogin(_config(endpoint, **{"sasl.oauthbearer.token.endpoint.url": endpoint}), clock=lambda: now[0])

    async def main() -> None:
        assert await login.token() == TOKEN
        assert await login.token() == TOKEN
        assert len(_Endpoint.seen) == 1
        now[0] += 3600 * 0.9  # past 80-85% of the hour
        assert await login.token() == TOKEN
        assert len(_Endpoint.seen) == 2

    trio.run(main)


# ---- the broker's settings ---------------------------------------------------------------------
_PREFIX = "listener.name.sasl_plaintext.oauthbearer."
_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"


def test_a_listener_with_kafkas_login_handler_reads_its_settings() -> None:
    config = build_config({**LISTENERS, f"{_PREFIX}sasl.jaas.config": f'{MODULE} clientId="b" clientSecret="s";',
                           f"{_PREFIX}sasl.login.callback.handler.class": _HANDLER,
                           "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/token",
                           f"{_PREFIX}sasl.login.retry.backoff.ms": "7"})
    login = config.oauth_login("SASL_PLAINTEXT")
    assert login is not None
    assert (login.url, login.client_id, login.client_secret, login.retry_backoff_ms) == (
        "http://127.0.0.1:1/token", "b", "s", 7)
    legacy = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
    assert build_config({**LISTENERS, f"{_PREFIX}sasl.jaas.config": f'{MODULE} clientId="b" clientSecret="s";',
                         f"{_PREFIX}sasl.login.callback.handler.class": legacy,
                         "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/token"}).oauth_login(
        "SASL_PLAINTEXT") is not None
    unsecured = build_config({**LISTENERS, f"{_PREFIX}sasl.jaas.config": f'{MODULE} unsecuredLoginStringClaim_sub="a";'})
    assert unsecured.oauth_login("SASL_PLAINTEXT") is None


def test_a_login_without_its_client_credentials_stops_startup() -> None:
    with pytest.raises(ConfigError, match="clientId is required"):
        build_config({**LISTENERS, f"{_PREFIX}sasl.jaas.config": f"{MODULE};",
                      f"{_PREFIX}sasl.login.callback.handler.class": _HANDLER,
                      "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/token"})
