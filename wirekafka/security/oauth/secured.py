"""A listener's secured OAUTHBEARER validator at run time: its JWKS, kept current as Kafka 4.3.1
keeps it, and the validation of each client's token against it.

Where the keys come from (Kafka's two resolvers):
- a file: URL (JwksFileVerificationKeyResolver): the file is read at start-up and read again when
  its modification time changes, checked at each validation as Kafka's CachedFile does (a stat of
  a local file; it is small, so a changed one is read on the spot);
- an http(s) URL (RefreshingHttpsJwks): fetched at start-up (a failure stops the broker, as
  Kafka's "Could not refresh JWKS"), then every sasl.oauthbearer.jwks.endpoint.refresh.ms, a failed
  fetch retried with exponential backoff (retry.backoff.ms up to retry.backoff.max.ms) and the
  old keys kept meanwhile. A token whose kid is not in the JWKS is refused, and asks for a refresh
  at once, at most once a minute for a kid and for the last 16 kids (kids cut at 1000 characters):
  Kafka's limits. Fetches run in a worker thread (trio.to_thread), never on the event loop."""

from __future__ import annotations

import collections
import logging
import os
import time
import urllib.request
from typing import Callable, Sequence

import trio

from wirekafka.startup_errors import StartupError
from wirekafka.security.oauth.validator import ValidatorConfig
from wirekafka.security.oauth import jwt_validation as jwt
from wirekafka.security.sasl.oauthbearer import Challenge

log = logging.getLogger(__name__)

MISSING_KID_CACHE_ENTRIES = 16
MISSING_KID_IN_FLIGHT_S = 60.0
MISSING_KID_MAX_LENGTH = 1000
FETCH_TIMEOUT_S = 30.0


class JwksError(StartupError):
    """The JWKS could not be read or fetched at start-up: the broker does not start."""


class FileJwks:
    """JWKS from a local file, read again whenever its modification time changes."""

    def __init__(self, path: os.PathLike[str] | str) -> None:
        self.path = path
        self._mtime_ns: int | None = None
        self._keys: tuple[jwt.Jwk, ...] = ()
        try:
            self._reload()
        except (OSError, ValueError) as exc:
            raise JwksError(f"Could not read the JWKS file {path}: {exc}") from None

    def _reload(self) -> None:
        mtime = os.stat(self.path).st_mtime_ns
        if mtime != self._mtime_ns:
            with open(self.path, "rb") as f:
                self._keys = jwt.parse_jwks(f.read())
            self._mtime_ns = mtime

    def keys(self) -> Sequence[jwt.Jwk]:
        try:
            self._reload()
        except (OSError, ValueError) as exc:  # Kafka keeps the keys it has when the file goes bad
            log.warning("could not read the JWKS file %s again (%s); keeping its previous keys", self.path, exc)
        return self._keys

    def request_refresh(self, kid: str | None) -> bool:
        """A file is read when it changes: nothing to ask for."""
        return False

    async def load(self) -> None:
        """Read at construction (as Kafka reads it when its handler is configured)."""

    async def run(self) -> None:
        """Nothing runs in the background: keys() notices a changed file."""


def fetch_jwks(url: str) -> tuple[jwt.Jwk, ...]:
    """One GET of the JWKS endpoint (blocking: called in a worker thread)."""
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as answer:  # noqa: S310 (http(s) checked at config)
        if answer.status != 200:
            raise OSError(f"HTTP status {answer.status}")
        return jwt.parse_jwks(answer.read())


class HttpJwks:
    """JWKS from an http(s) endpoint, refreshed on its interval and on a token's unknown kid."""

    def __init__(self, url: str, refresh_ms: int, retry_backoff_ms: int, retry_backoff_max_ms: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.url = url
        self.refresh_s = refresh_ms / 1000
        self.backoff_s, self.backoff_max_s = retry_backoff_ms / 1000, retry_backoff_max_ms / 1000
        self.clock = clock
        self._keys: tuple[jwt.Jwk, ...] = ()
        self._missing: collections.OrderedDict[str, float] = collections.OrderedDict()  # kid -> next refresh allowed
        self._wake = trio.Event()

    def keys(self) -> Sequence[jwt.Jwk]:
        return self._keys

    def request_refresh(self, kid: str | None) -> bool:
        """RefreshingHttpsJwks.maybeExpediteRefresh: True if this kid starts a refresh."""
        if kid is None:
            return False
        kid = kid[:MISSING_KID_MAX_LENGTH]
        now = self.clock()
        if self._missing.get(kid, 0.0) > now:
            return False
        self._missing[kid] = now + MISSING_KID_IN_FLIGHT_S
        self._missing.move_to_end(kid)
        while len(self._missing) > MISSING_KID_CACHE_ENTRIES:
            self._missing.popitem(last=False)
        self._wake.set()
        return True

    async def _refresh(self) -> None:
        """Fetch with retries; on failure keep the keys there are."""
        wait, waited = self.backoff_s, 0.0
        while True:
            try:
                keys = await trio.to_thread.run_sync(fetch_jwks, self.url, abandon_on_cancel=True)
            except (OSError, ValueError) as exc:
                if waited + wait > self.backoff_max_s:
                    log.warning("OAuth JWKS refresh of %s failed (%s); keeping the previous keys", self.url, exc)
                    return
                await trio.sleep(wait)
                waited, wait = waited + wait, min(wait * 2, self.backoff_max_s)
                continue
            self._keys = keys
            for key in keys:  # a kid now known may ask again when it goes missing
                if key.kid is not None:
                    self._missing.pop(key.kid, None)
            log.debug("OAuth JWKS refresh of %s complete (%d keys)", self.url, len(keys))
            return

    async def load(self) -> None:
        """The fetch at start-up (RefreshingHttpsJwks.init): JwksError if it fails."""
        try:
            self._keys = await trio.to_thread.run_sync(fetch_jwks, self.url, abandon_on_cancel=True)
        except (OSError, ValueError) as exc:
            raise JwksError(f"Could not refresh JWKS from {self.url}: {exc}") from None

    async def run(self) -> None:
        """Refresh on the interval, or at once when an unknown kid asks (after load())."""
        while True:
            with trio.move_on_after(self.refresh_s if self.refresh_s > 0 else float("inf")):
                await self._wake.wait()
            self._wake = trio.Event()
            await self._refresh()


class SecuredValidator:
    """OAuthBearerValidatorCallbackHandler for one listener: a token's principal, or the
    invalid_token challenge every refused token gets."""

    def __init__(self, config: ValidatorConfig) -> None:
        self.config = config
        self.source: FileJwks | HttpJwks = (
            FileJwks(config.jwks_file) if config.jwks_file is not None
            else HttpJwks(config.jwks_url, config.refresh_ms, config.retry_backoff_ms, config.retry_backoff_max_ms))

    def __call__(self, token: str, now_ms: int) -> jwt.VerifiedToken | Challenge:
        try:
            return jwt.validate(token, self.source.keys(), self.config.rules, now_ms / 1000)
        except jwt.UnknownKey as exc:
            refreshing = self.source.request_refresh(exc.kid)
            log.debug("invalid OAUTHBEARER token: %s%s", exc, " (refreshing the JWKS)" if refreshing else "")
        except jwt.InvalidJwt as exc:
            log.debug("invalid OAUTHBEARER token: %s", exc)
        return Challenge("invalid_token")
