"""Kafka's secured OAUTHBEARER login (KIP-768): a broker's own token for its connections to other
brokers, got from an OAuth/OIDC token endpoint instead of made up unsecured.

A listener gets it with `listener.name.<l>.oauthbearer.sasl.login.callback.handler.class=
org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler` (or its Kafka 3.x
name in the `...oauthbearer.secured.` package) and `sasl.oauthbearer.token.endpoint.url`, read
like the validator's settings (the listener's mechanism-prefixed key, the listener's, the
broker's). As Kafka 3.9's handler does it:
- a `file:` URL names a file holding the token (read again at each refresh);
- an http(s) URL is sent a client-credentials grant: POST `grant_type=client_credentials` (and
  `scope` when the login module's `scope` option is set), HTTP Basic authentication with the
  module's `clientId` and `clientSecret` (URL-encoded first when sasl.oauthbearer.header.urlencode
  is true), Accept application/json; the answer's `access_token` is the token. Errors are retried
  with sasl.login.retry.backoff.ms doubling for at most sasl.login.retry.backoff.max.ms in all,
  except the 4xx/5xx codes Kafka deems final;
- the token is checked as Kafka's LoginAccessTokenValidator checks it (three JWT sections, a
  numeric `exp`, the sub claim, an optional `iat`, the scope claim a string or a list), not its
  signature: that is the brokers' validators' job;
- it is fetched again at Kafka's refresh time: sasl.login.refresh.window.factor of its lifetime
  plus up to .jitter more, kept out of the last sasl.login.refresh.buffer.seconds and not sooner
  than sasl.login.refresh.min.period.seconds from the fetch.
Kafka 3.9.1 fetches from any URL unless the JVM system property org.apache.kafka.sasl.
oauthbearer.allowed.urls lists which (KAFKA_OPTS -D entries here, as for the validator)."""

from __future__ import annotations

import base64
import json
import logging
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import trio

from wirekafka.security.jvm_properties import system_property
from wirekafka.security.oauth.validator import ALLOWED_URLS_PROPERTY, checked_url
from wirekafka.security.sasl.oauthbearer import IllegalToken, decode_part

log = logging.getLogger(__name__)

HANDLER_CLASSES = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                   "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")
TOKEN_URL = "sasl.oauthbearer.token.endpoint.url"
# key -> Kafka's default (text), for the keys the login reads
KEYS: dict[str, str | None] = {
    TOKEN_URL: None,
    "sasl.oauthbearer.header.urlencode": "false",
    "sasl.login.connect.timeout.ms": None,
    "sasl.login.read.timeout.ms": None,
    "sasl.login.retry.backoff.ms": "100",
    "sasl.login.retry.backoff.max.ms": "10000",
    "sasl.login.refresh.window.factor": "0.8",
    "sasl.login.refresh.window.jitter": "0.05",
    "sasl.login.refresh.min.period.seconds": "60",
    "sasl.login.refresh.buffer.seconds": "300",
}
# read by the validator too: the login takes them from there when the validator is configured
SHARED_KEYS = {"sasl.oauthbearer.scope.claim.name": "scope", "sasl.oauthbearer.sub.claim.name": "sub"}
# Kafka's HttpAccessTokenRetriever gives up at once on these answers
_FINAL_HTTP_CODES = frozenset({400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505})
_DEFAULT_TIMEOUT_S = 10.0  # when sasl.login.*.timeout.ms are unset (Java would wait forever)


class LoginConfigError(ValueError):
    """A setting Kafka's login handler refuses at start-up."""


class LoginFailed(Exception):
    """No token: the endpoint failed or answered something that is not a usable token."""


class _Final(LoginFailed):
    """A failure not worth retrying."""


@dataclass(frozen=True)
class LoginConfig:
    url: str
    file: Path | None  # a file: URL's file
    client_id: str
    client_secret: str
    scope: str | None
    urlencode_header: bool
    scope_claim: str
    sub_claim: str
    connect_timeout_s: float
    read_timeout_s: float
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    refresh_factor: float
    refresh_jitter: float
    refresh_min_period_s: int
    refresh_buffer_s: int


def configure(setting: Callable[[str], str | None], options: Mapping[str, str],
              environ: Mapping[str, str] | None = None) -> LoginConfig:
    """The login a listener's handler makes of its settings and its login module's options, or
    LoginConfigError with Kafka's message."""
    def value(key: str) -> str:
        given = setting(key)
        default = KEYS[key] if key in KEYS else SHARED_KEYS[key]
        return (given if given is not None else default or "").strip()

    url = value(TOKEN_URL)
    if not url:
        raise LoginConfigError(f"The OAuth configuration option {TOKEN_URL} is required")

    def check_allowed(candidate: str) -> None:  # Kafka 3.9.1: any URL unless the property lists some
        allowed = system_property(ALLOWED_URLS_PROPERTY, environ)
        if allowed is not None and candidate not in {entry.strip() for entry in allowed.split(",")}:
            raise LoginConfigError(f"{candidate} is not allowed. Update system property '{ALLOWED_URLS_PROPERTY}' "
                                   f"to allow {candidate}")

    url, path = checked_url(TOKEN_URL, url, check_allowed, LoginConfigError)
    client_id = client_secret = ""
    if path is None:
        client_id, client_secret = _required(options, "clientId"), _required(options, "clientSecret")
    try:
        timeouts = [int(value(k)) / 1000 if value(k) else _DEFAULT_TIMEOUT_S
                    for k in ("sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms")]
        return LoginConfig(
            url, path, client_id, client_secret, (options.get("scope") or "").strip() or None,
            value("sasl.oauthbearer.header.urlencode").lower() == "true",
            value("sasl.oauthbearer.scope.claim.name"), value("sasl.oauthbearer.sub.claim.name"),
            timeouts[0], timeouts[1],
            int(value("sasl.login.retry.backoff.ms")), int(value("sasl.login.retry.backoff.max.ms")),
            float(value("sasl.login.refresh.window.factor")), float(value("sasl.login.refresh.window.jitter")),
            int(value("sasl.login.refresh.min.period.seconds")), int(value("sasl.login.refresh.buffer.seconds")))
    except ValueError as exc:
        raise LoginConfigError(f"invalid OAuth login setting: {exc}") from None


def _required(options: Mapping[str, str], name: str) -> str:
    text = (options.get(name) or "").strip()
    if not text:
        raise LoginConfigError(f"The OAuth configuration option {name} is required")
    return text


# ---- getting a token ---------------------------------------------------------------------------
def retrieve(config: LoginConfig, sleep: Callable[[float], None] = time.sleep) -> str:
    """The token from the file or the endpoint (blocking: run it in a worker thread)."""
    if config.file is not None:
        try:
            token = config.file.read_text().strip()
        except OSError as exc:
            raise LoginFailed(f"reading {config.file}: {exc}") from None
        if not token:
            raise LoginFailed(f"the file {config.file} holds no token")
        return token
    deadline = time.monotonic() + config.retry_backoff_max_ms / 1000
    attempt = 0
    while True:
        attempt += 1
        try:
            return _post(config)
        except _Final:
            raise
        except LoginFailed as exc:
            wait = min(config.retry_backoff_ms * 2 ** (attempt - 1) / 1000, deadline - time.monotonic())
            if wait <= 0:
                raise
            log.warning("OAuth token endpoint attempt %d failed (%s); retrying in %.0f ms", attempt, exc, wait * 1000)
            sleep(wait)


def _authorization(config: LoginConfig) -> str:
    client_id, secret = config.client_id, config.client_secret
    if config.urlencode_header:
        client_id, secret = urllib.parse.quote_plus(client_id), urllib.parse.quote_plus(secret)
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def request_body(scope: str | None) -> str:
    """Kafka's client-credentials grant body."""
    body = "grant_type=client_credentials"
    return body + f"&scope={urllib.parse.quote_plus(scope)}" if scope else body


def _post(config: LoginConfig) -> str:
    request = urllib.request.Request(config.url, data=request_body(config.scope).encode(), method="POST", headers={
        "Accept": "application/json", "Authorization": _authorization(config), "Cache-Control": "no-cache",
        "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=config.connect_timeout_s + config.read_timeout_s) as answer:
            body = answer.read().decode("utf-8", "replace")
            status = answer.status
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")[:500]
        failure = _Final if exc.code in _FINAL_HTTP_CODES else LoginFailed
        raise failure(f"the token endpoint answered {exc.code}: {text}") from None
    except OSError as exc:
        raise LoginFailed(f"the token endpoint {config.url} cannot be reached: {exc}") from None
    if status not in (200, 201) or not body.strip():
        raise LoginFailed(f"the token endpoint answered {status} with {'no body' if not body.strip() else body[:200]}")
    try:
        token = json.loads(body).get("access_token")
    except (ValueError, AttributeError):
        token = None
    if not isinstance(token, str) or not token.strip():
        raise LoginFailed(f"The token endpoint response did not contain an access_token value. Response: ({body[:200]})")
    return token.strip()


# ---- checking it and knowing when to refresh ----------------------------------------------------
@dataclass(frozen=True)
class LoginToken:
    value: str
    principal: str
    scopes: tuple[str, ...]
    expires_ms: int
    issued_ms: int | None


def check_token(token: str, config: LoginConfig) -> LoginToken:
    """Kafka's LoginAccessTokenValidator: the claims a login needs, not the signature."""
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        raise LoginFailed("Malformed JWT provided; expected three sections (header, payload, and signature)")
    try:
        claims = decode_part(parts[1])  # read as Kafka's OAuthBearerUnsecuredJws.toMap reads it
    except IllegalToken as exc:
        raise LoginFailed(f"Malformed JWT provided: {exc}") from None
    scope = claims.get(config.scope_claim)
    scopes = (scope,) if isinstance(scope, str) else tuple(str(s) for s in scope) if isinstance(scope, list) else ()
    expires = _millis(claims, "exp")
    if expires is None:
        raise LoginFailed("exp value must be non-null")
    subject = claims.get(config.sub_claim)
    if not isinstance(subject, str) or not subject.strip():
        raise LoginFailed(f"{config.sub_claim} value must be non-null")
    return LoginToken(token, subject.strip(), scopes, expires, _millis(claims, "iat"))


def _millis(claims: dict[str, Any], name: str) -> int | None:
    raw = claims.get(name)
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise LoginFailed(f"{name} value must be a number")
    if raw < 0:
        raise LoginFailed(f"{name} value must be non-negative; value given was \"{raw}\"")
    return int(raw * 1000)


def refresh_at_ms(token: LoginToken, now_ms: int, config: LoginConfig, rng: random.Random) -> int:
    """Kafka's ExpiringCredentialRefreshingLogin: when to fetch the next token."""
    if now_ms > token.expires_ms:
        return now_ms
    pct = config.refresh_factor + config.refresh_jitter * rng.random()
    if now_ms + 1000 * (config.refresh_min_period_s + config.refresh_buffer_s) > token.expires_ms:
        return now_ms + int((token.expires_ms - now_ms) * pct)
    start = token.issued_ms if token.issued_ms is not None else now_ms
    proposed = start + int((token.expires_ms - start) * pct)
    buffer_start = token.expires_ms - config.refresh_buffer_s * 1000
    if proposed > buffer_start:
        return buffer_start
    return max(proposed, now_ms + 1000 * config.refresh_min_period_s)


class SecuredLogin:
    """A broker's current token: fetched in a worker thread when there is none or its refresh
    time has come; concurrent connections wait for the same fetch."""

    def __init__(self, config: LoginConfig, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None) -> None:
        self.config = config
        self.clock = clock
        self.rng = rng or random.Random()
        self._token: LoginToken | None = None
        self._refresh_ms = 0
        self._lock = trio.Lock()

    async def token(self) -> str:
        """The token to log in with; LoginFailed when none can be had."""
        async with self._lock:
            now_ms = int(self.clock() * 1000)
            if self._token is None or now_ms >= self._refresh_ms:
                value = await trio.to_thread.run_sync(retrieve, self.config, abandon_on_cancel=True)
                token = check_token(value, self.config)
                now_ms = int(self.clock() * 1000)
                self._token, self._refresh_ms = token, refresh_at_ms(token, now_ms, self.config, self.rng)
                log.info("OAuth login: a token for %s, expiring in %.0f s, refreshed in %.0f s", token.principal,
                         (token.expires_ms - now_ms) / 1000, (self._refresh_ms - now_ms) / 1000)
            return self._token.value
