"""The settings of Kafka 4.3.1's secured OAUTHBEARER validator (KIP-768), checked as Kafka checks
them when its broker configures the listener's callback handler at start-up.

A listener gets it with `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class=
org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler` (Kafka 4 has
only this class; 3.x's `...oauthbearer.secured.` one is gone). Each sasl.oauthbearer.* setting is
read as Kafka's ConfigurationUtils reads it: the listener's mechanism-prefixed key
(listener.name.<l>.oauthbearer.<key>), then the listener's (listener.name.<l>.<key>), then the
broker's.

Kafka 4 fetches only the JWKS URLs the JVM system property org.apache.kafka.sasl.oauthbearer.
allowed.urls lists (comma-separated; none by default). wirekafka has no JVM: it reads that
property where a Kafka user gives it to Kafka's scripts, a `-Dname=value` entry of the KAFKA_OPTS
environment variable (the last one wins, as for a JVM)."""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from wirekafka.security.jvm_properties import system_property
from wirekafka.security.oauth.jwt_validation import JwtRules

HANDLER_CLASS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
JWKS_URL = "sasl.oauthbearer.jwks.endpoint.url"
JWT_VALIDATOR_CLASS = "sasl.oauthbearer.jwt.validator.class"
DEFAULT_JWT_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"

# key -> Kafka's default (text), for the keys the validator reads
KEYS: dict[str, str | None] = {
    "sasl.oauthbearer.clock.skew.seconds": "30",
    "sasl.oauthbearer.expected.audience": None,
    "sasl.oauthbearer.expected.issuer": None,
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "10000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "100",
    JWKS_URL: None,
    "sasl.oauthbearer.scope.claim.name": "scope",
    "sasl.oauthbearer.sub.claim.name": "sub",
    JWT_VALIDATOR_CLASS: DEFAULT_JWT_VALIDATOR,  # Kafka 4.1's (KIP-1139), so not among Kafka 3.9's keys
}
_JAVA_PROTOCOLS = ("http", "https", "file", "jar", "ftp", "mailto", "jrt")
# Kafka's handler configures its validator through this class: what that refuses, it says so first
_DEFAULT_VALIDATOR_FAILED = ("The class org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator defined in "
                             f"the {JWT_VALIDATOR_CLASS} configuration encountered an error on configure(): ")


class ValidatorConfigError(ValueError):
    """A setting Kafka's handler refuses at start-up: its broker does not start."""


@dataclass(frozen=True)
class ValidatorConfig:
    """A listener's secured validator: where its JWKS is, how often it is refreshed, the rules."""

    jwks_url: str
    jwks_file: Path | None  # for a file: URL
    refresh_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    rules: JwtRules


def _check_url_allowed(url: str, environ: Mapping[str, str] | None) -> None:
    allowed = {entry.strip() for entry in (system_property(ALLOWED_URLS_PROPERTY, environ) or "").split(",")}
    if url not in allowed:
        raise ValidatorConfigError(
            f"Invalid value {url} for configuration {JWKS_URL}: The URL cannot be accessed due to restrictions. "
            f"Update the system property '{ALLOWED_URLS_PROPERTY}' to allow the URL to be accessed.")


def checked_url(key: str, raw: str, check_allowed: Callable[[str], None],
                error: type[ValueError] = ValidatorConfigError) -> tuple[str, Path | None]:
    """Kafka's ConfigurationUtils.validateUrl (and validateFileUrl for file: URLs) of the URL
    setting `key`, shared by the validator's JWKS URL and the login's token endpoint:
    check_allowed applies the allowed-URLs rule of the Kafka line the caller follows; the other
    refusals raise `error`."""
    url = raw.strip()
    scheme, colon, _ = url.partition(":")
    if not colon or not scheme or not scheme[0].isalpha():
        raise error(f"The OAuth configuration option {key} contains a URL ({url}) that is malformed: no protocol: {url}")
    protocol = scheme.lower()
    if protocol not in _JAVA_PROTOCOLS:
        raise error(f"The OAuth configuration option {key} contains a URL ({url}) that is "
                    f"malformed: unknown protocol: {protocol}")
    if protocol not in ("http", "https", "file"):
        raise error(f"The OAuth configuration option {key} contains a URL ({url}) that contains "
                    f'an invalid protocol ({protocol}); only "http", "https", and "file" protocol are supported')
    check_allowed(url)
    if protocol != "file":
        return url, None
    path = Path(urllib.parse.urlsplit(url).path or "").absolute()
    if not path.exists():
        raise error(f"The OAuth configuration option {key} contains a file ({path}) that doesn't exist")
    if not os.access(path, os.R_OK):
        raise error(f"The OAuth configuration option {key} contains a file ({path}) that doesn't have read permission")
    if path.is_dir():
        raise error(f"The OAuth configuration option {key} references a directory ({path}), not a file")
    return url, path


def configure(setting: Callable[[str], str | None], environ: Mapping[str, str] | None = None) -> ValidatorConfig:
    """The validator a listener's handler makes of its settings (setting(key): the value as the
    listener sees it, None when not given), or ValidatorConfigError with Kafka's message."""
    def value(key: str) -> str:
        given = setting(key)
        return (given if given is not None else KEYS[key] or "").strip()

    if value(JWT_VALIDATOR_CLASS) != DEFAULT_JWT_VALIDATOR:
        raise ValidatorConfigError(f"{JWT_VALIDATOR_CLASS}={value(JWT_VALIDATOR_CLASS)} is not available in "
                                   f"wirekafka: it loads JVM classes (wirekafka has Kafka's {DEFAULT_JWT_VALIDATOR})")

    url = value(JWKS_URL)
    if not url:
        raise ValidatorConfigError(
            f'The OAuth validator for the broker requires "{JWKS_URL}" to be configured so that JWT signatures '
            f'can be verified, but it was not set. Set "{JWKS_URL}" to the OAuth/OIDC provider\'s JWKS endpoint '
            f'URL for this listener, or configure a signature-verifying "{JWT_VALIDATOR_CLASS}".')
    try:
        url, path = checked_url(JWKS_URL, url, lambda u: _check_url_allowed(u, environ))
        refresh_ms = int(value("sasl.oauthbearer.jwks.endpoint.refresh.ms"))
        if refresh_ms < 0:
            raise ValidatorConfigError("The OAuth configuration option sasl.oauthbearer.jwks.endpoint.refresh.ms "
                                       "value must be at least 0")
    except ValidatorConfigError as exc:
        raise ValidatorConfigError(_DEFAULT_VALIDATOR_FAILED + str(exc)) from None
    audience = tuple(sorted({a.strip() for a in value("sasl.oauthbearer.expected.audience").split(",") if a.strip()}))
    rules = JwtRules(expected_audience=audience,
                     expected_issuer=value("sasl.oauthbearer.expected.issuer") or None,
                     scope_claim=value("sasl.oauthbearer.scope.claim.name"),
                     sub_claim=value("sasl.oauthbearer.sub.claim.name"),
                     clock_skew_s=int(value("sasl.oauthbearer.clock.skew.seconds")))
    return ValidatorConfig(url, path, refresh_ms, int(value("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")),
                           int(value("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")), rules)
