"""A SASL_PLAINTEXT connection's authentication, as Kafka's SaslServerAuthenticator runs it,
before any other request reaches the broker.

The exchange, one frame at a time:
1. optionally ApiVersions, answered as on any listener (only as the first request; an
   unsupported version is answered and may be retried);
2. SaslHandshake naming a mechanism: answered with the enabled mechanisms, NONE if the one named
   is among them, else UNSUPPORTED_SASL_MECHANISM and the connection fails;
3. from SaslHandshake v1, SaslAuthenticate carrying the mechanism's token (PLAIN: one message):
   NONE with empty auth bytes and session lifetime 0 (no re-authentication), or
   SASL_AUTHENTICATION_FAILED with PlainSaslServer's message and the connection fails. After
   SaslHandshake v0 the token comes as a bare size-prefixed frame, and success is answered with an
   empty one.

Any other request during the handshake fails the connection without an answer; during the
authenticate step Kafka answers it with ILLEGAL_SASL_STATE first (here for APIs whose response
has a top-level error code; others fail without an answer). A failed connection is closed after
connection.failed.authentication.delay.ms, its answer (if any) sent then, as Kafka delays it.
A token that fails in a way no check foresaw takes the same path (Kafka's generic refusal, one
warning line, no traceback) rather than the connection's catch-all, which would skip the delay.

GSSAPI (Kerberos, RFC 4752) runs its tokens through protocol/sasl_gssapi.py over MIT's acceptor
(gssapi_binding.py) with the listener's keytab (kerberos_login.py); the principal is the client's
Kerberos name shortened by sasl.kerberos.principal.to.local.rules. A first frame that is not a
Kafka request fails the connection even with GSSAPI enabled: Kafka 3 took it as the GSSAPI token of
a client without SaslHandshake (Kafka 0.9's), Kafka 4 does not. A Kerberos error Kafka deems
transient (clock skew, replay) closes the connection unanswered, as Kafka's I/O failure does.

Re-authentication (KIP-368), when connections.max.reauth.ms is set: SaslAuthenticate tells the
client its session lifetime; a SaslHandshake on an authenticated connection starts the exchange
again (at most once a second; the same mechanism, and the same user, or the connection fails),
and a connection whose session has expired is closed at its next other request."""

from __future__ import annotations

import logging
import struct
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Mapping

from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from wirekafka.security.kerberos import gssapi_binding
from wirekafka.jvm import java_hashmap_order
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.listeners import SASL_PROTOCOLS
from wirekafka.security.kerberos.keytab_login import KerberosLogin
from wirekafka.security.principal import NoMatchingRule
from wirekafka.protocol import codec, schema_meta, served_versions as api_versions
from wirekafka.security.sasl import gssapi
from wirekafka.security.sasl import oauthbearer as oauth
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.sasl.plain import MECHANISM as PLAIN
from wirekafka.security.sasl.plain import PlainAuthenticationError, authenticate, users_of
from wirekafka.security.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from wirekafka.security.sasl.scram import CredentialLookup, GenericFailure, ScramCredential, ScramFailure, ScramServer
from wirekafka.security.oauth.secured import SecuredValidator

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class _State(Enum):
    HANDSHAKE_OR_VERSIONS = 1  # the first request: ApiVersions or SaslHandshake
    HANDSHAKE = 2  # ApiVersions answered: SaslHandshake next
    AUTHENTICATE = 3  # SaslHandshake v1 accepted: SaslAuthenticate requests
    RAW_TOKEN = 4  # SaslHandshake v0 accepted: the token as a bare frame
    COMPLETE = 5
    REAUTH_HANDSHAKE = 6  # an authenticated client began re-authenticating: its SaslHandshake
    REAUTH_BAD_MECHANISM = 7  # it named another mechanism than its first: the next token fails

MIN_REAUTH_INTERVAL_S = 1.0  # Kafka re-authenticates a connection at most once a second
# Kerberos errors Kafka's server treats as transient (KerberosError: client not yet valid, ticket
# not yet valid, replay): the connection closes without an answer and the client retries
TRANSIENT_KERBEROS_ERRORS = (21, 33, 34)
MAX_LOGGED_REASON = 300  # characters of a refusal's reason in its log line


@dataclass(frozen=True)
class Step:
    """What the connection does with a frame during authentication."""

    dispatch: bool = False  # answer it as any request (ApiVersions)
    reply: bytes | None = None  # a whole frame to send
    fail: bool = False  # authentication failed: wait the failure delay, send reply if any, close
    drop: bool = False  # Kafka's server failed unexpectedly: close at once, without an answer


def _no_scram_credentials(_user: str, _mechanism: str) -> ScramCredential | None:
    return None


@dataclass(frozen=True)
class SaslSettings:
    """A SASL listener's mechanisms, its PLAIN users, OAUTHBEARER validator options and GSSAPI
    keytab login (from their JAAS login modules) and where the SCRAM credentials are (the cluster
    metadata's store)."""

    mechanisms: tuple[str, ...]
    users: dict[str, str]
    # connections.max.reauth.ms by mechanism: 0 (or absent) is no re-authentication
    reauth_ms: Mapping[str, int] = field(default_factory=dict)
    scram: CredentialLookup = _no_scram_credentials
    oauth: oauth.ValidatorOptions = oauth.ValidatorOptions()
    # Kafka's secured OAUTHBEARER validator, when the listener configures it (its JWKS is kept
    # current by its source's run task, started with the broker)
    secured: SecuredValidator | None = None
    kerberos: KerberosLogin | None = None  # the listener's keytab and principal, with GSSAPI

    @classmethod
    def of_listener(cls, config: BrokerConfig, listener: str,
                    scram: CredentialLookup = _no_scram_credentials) -> "SaslSettings | None":
        """The listener's settings; None for a listener without SASL. build_config has checked
        the mechanisms and that their JAAS texts parse."""
        if config.security_protocol(listener) not in SASL_PROTOCOLS:
            return None
        # Kafka lists the enabled mechanisms in the order of its HashMap of their JAAS contexts
        mechanisms = tuple(java_hashmap_order(config.sasl_mechanisms(listener)))
        users = {}
        if PLAIN in mechanisms:
            users = users_of(config.jaas_options(listener, PLAIN))
        validator, secured = oauth.ValidatorOptions(), None
        if oauth.MECHANISM in mechanisms:
            validator = oauth.ValidatorOptions.of(config.jaas_options(listener, oauth.MECHANISM))
            secured_config = config.oauth_validator(listener)
            secured = SecuredValidator(secured_config) if secured_config is not None else None
        kerberos = config.kerberos_login(listener) if gssapi.MECHANISM in mechanisms else None
        return cls(mechanisms, users, {m: config.reauth_ms(listener, m) for m in mechanisms}, scram, validator,
                   secured, kerberos)

    def authenticator(self, peer: str) -> "SaslServerAuthenticator":
        return SaslServerAuthenticator(self, peer)


class SaslServerAuthenticator:
    def __init__(self, settings: SaslSettings, peer: str) -> None:
        self.settings = settings
        self.peer = peer
        self.state = _State.HANDSHAKE_OR_VERSIONS
        self.principal: str | None = None
        self.mechanism: str | None = None
        self._scram: ScramServer | None = None
        self._oauth: oauth.OAuthBearerServer | None = None
        self._gssapi: gssapi.GssapiServer | None = None
        self.expires_at: float | None = None  # time.monotonic() when the session ends, if it does
        self._previous: tuple[str, str] | None = None  # (mechanism, principal) while re-authenticating
        self._reauth_started = 0.0

    @property
    def complete(self) -> bool:
        return self.state is _State.COMPLETE

    @property
    def reads_files(self) -> bool:
        """Whether the next step may read files: GSSAPI's acceptor reads the keytab and the replay
        cache, so the connection runs such a step in a worker thread, off the event loop."""
        return self.mechanism == gssapi.MECHANISM and self.state in (_State.AUTHENTICATE, _State.RAW_TOKEN)

    def expired(self) -> bool:
        return self.expires_at is not None and time.monotonic() > self.expires_at

    def begin_reauthentication(self) -> bool:
        """An authenticated client sent SaslHandshake: True if that starts re-authentication (its
        session has a lifetime, and the last one began over a second ago); otherwise the
        handshake is answered as any request after authentication (ILLEGAL_SASL_STATE)."""
        now = time.monotonic()
        if self.expires_at is None or (self._reauth_started and now - self._reauth_started < MIN_REAUTH_INTERVAL_S):
            return False
        self._reauth_started = now
        self._previous = (self.mechanism or "", self.principal or "")
        self.state = _State.REAUTH_HANDSHAKE
        return True

    def step(self, frame: bytes | bytearray) -> Step:
        if self.state is _State.RAW_TOKEN:
            return self._authenticate(frame, None)
        if self.state is _State.REAUTH_BAD_MECHANISM:
            previous = self._previous[0] if self._previous else ""
            return self._failed(f"SASL mechanism '{self.mechanism}' requested by client is not supported for "
                                f"re-authentication of mechanism '{previous}'")
        try:
            header = codec.parse_header(frame)
        except codec.ProtocolError as exc:
            # not a Kafka request, e.g. a GSSAPI token from a client that skips SaslHandshake (Kafka
            # 0.9's): Kafka 4 no longer takes it as GSSAPI, whatever the mechanisms, and closes
            return self._failed(f"first packet is not a SASL handshake ({exc})")
        key, version = header.api_key, header.api_version
        if self.state is _State.AUTHENTICATE:
            if key != SASL_AUTHENTICATE:
                return self._failed(f"Unexpected Kafka request of type {key} during SASL authentication.",
                                    _illegal_state_answer(header))
            if not api_versions.is_served(key, version):
                return self._failed(f"Version {version} is not supported for SaslAuthenticate")
            request = codec.decode_body(header, frame)
            return self._authenticate(request.auth_bytes, header)
        if key not in (API_VERSIONS, SASL_HANDSHAKE):
            return self._failed(f"Unexpected Kafka request of type {key} during SASL handshake.")
        if key == API_VERSIONS:
            if self.state is not _State.HANDSHAKE_OR_VERSIONS:  # not a second time, nor re-authenticating
                return self._failed("Unexpected ApiVersions request received during SASL authentication")
            if api_versions.is_served(key, version):
                self.state = _State.HANDSHAKE
            return Step(dispatch=True)
        if not api_versions.is_served(key, version):
            return self._failed(f"Version {version} is not supported for SaslHandshake")
        mechanism = codec.decode_body(header, frame).mechanism
        enabled = list(self.settings.mechanisms)
        if mechanism not in enabled:
            answer = SaslHandshakeResponse(version=version, error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                           mechanisms=enabled)
            return self._failed(f"Unsupported SASL mechanism {mechanism}",
                                codec.encode_response(key, version, header.correlation_id, answer))
        self._start(mechanism)
        if self._previous is not None and mechanism != self._previous[0]:
            self.state = _State.REAUTH_BAD_MECHANISM
        else:
            self.state = _State.AUTHENTICATE if version >= 1 else _State.RAW_TOKEN
        answer = SaslHandshakeResponse(version=version, error_code=ErrorCode.NONE, mechanisms=enabled)
        return Step(reply=codec.encode_response(key, version, header.correlation_id, answer))

    def _start(self, mechanism: str) -> None:
        """Begin an exchange with mechanism (its server state is made here; GSSAPI's acceptor at
        its first token)."""
        self.mechanism = mechanism
        self._scram = ScramServer(mechanism, self.settings.scram) if mechanism in SCRAM_MECHANISMS else None
        self._oauth = (oauth.OAuthBearerServer(self.settings.oauth, validator=self.settings.secured)
                       if mechanism == oauth.MECHANISM else None)
        self._gssapi = None

    def _evaluate_gssapi(self, token: bytes) -> tuple[bytes | None, str | None]:
        """GSSAPI's answer (None: nothing to send) and the short name once authenticated.
        Raises gssapi.GssapiFailure or gssapi_binding.GssError for a token that fails, _Dropped
        for Kafka's transient Kerberos errors and a principal no rule names."""
        kerberos = self.settings.kerberos
        assert kerberos is not None  # of_listener makes it whenever GSSAPI is enabled
        if self._gssapi is None:
            self._gssapi = gssapi.GssapiServer(gssapi_binding.AcceptorContext(kerberos.acceptor()))
        try:
            answer = self._gssapi.evaluate(token)
        except (gssapi_binding.GssError, gssapi.GssapiFailure) as exc:
            self._gssapi = None  # frees the context and credentials
            if isinstance(exc, gssapi_binding.GssError) and exc.kerberos_error in TRANSIENT_KERBEROS_ERRORS:
                raise _Dropped(str(exc)) from None
            raise
        if not self._gssapi.complete:
            return answer, None
        authenticated, asked = self._gssapi.authenticated or "", self._gssapi.authorization_id
        self._gssapi = None
        if asked not in (None, authenticated):  # Kafka's callback allows it and keeps the authenticated name
            log.info("%s authenticated as %s with authorization id %s: its principal is %s's", self.peer,
                     authenticated, asked, authenticated)
        try:
            return answer, kerberos.short_namer.short_name(authenticated)
        except (NoMatchingRule, ValueError) as exc:  # Kafka fails building the principal: the connection closes
            raise _Dropped(f"Failed to set name for '{authenticated}' based on Kerberos authentication rules. "
                           f"({exc})") from None

    def _evaluate(self, token: bytes) -> tuple[bytes | None, str | None]:
        """The mechanism's answer to a token (None: nothing is sent back), and the user once
        authenticated (None while a SCRAM, OAUTHBEARER or GSSAPI exchange goes on). Raises
        _Refused with what the client is told, oauth.Dropped or _Dropped."""
        try:
            if self.mechanism == gssapi.MECHANISM:
                return self._evaluate_gssapi(token)
            if self._oauth is not None:
                answer = self._oauth.evaluate(token)
                return answer, self._oauth.principal
            if self._scram is None:
                return b"", authenticate(token, self.settings.users)
            answer = self._scram.evaluate(token)
            return answer, self._scram.principal if self._scram.complete else None
        except (GenericFailure, oauth.MalformedFirstMessage, gssapi.GssapiFailure,
                gssapi_binding.GssError) as exc:  # Kafka does not say why
            stage = "re-authentication" if self._previous is not None else "authentication"
            raise _Refused(f"Authentication failed during {stage} due to invalid credentials with SASL mechanism "
                           f"{self.mechanism}", str(exc)) from None
        except (PlainAuthenticationError, ScramFailure, oauth.Refused) as exc:  # GenericFailure is a ScramFailure
            raise _Refused(str(exc), str(exc)) from None
        except (oauth.Dropped, _Dropped):  # Kafka's own unexpected failures: closed unanswered, as Kafka does
            raise
        except Exception as exc:  # a token no check foresaw: refused as any bad token, not a crash per attempt
            stage = "re-authentication" if self._previous is not None else "authentication"
            raise _Refused(f"Authentication failed during {stage} due to invalid credentials with SASL mechanism "
                           f"{self.mechanism}", f"unexpected {type(exc).__name__}: {exc}", unexpected=True) from None

    def _session_ms(self) -> int:
        """The session's lifetime: connections.max.reauth.ms for the mechanism (0: none); an
        OAUTHBEARER session also ends when its token expires, whether or not that is set (a token
        expired within the clock skew leaves 0: the session ends at once)."""
        limit = max(self.settings.reauth_ms.get(self.mechanism or "", 0), 0)
        if self._oauth is None or self._oauth.expires_ms is None:
            return limit
        left = max(0, self._oauth.expires_ms - int(time.time() * 1000))
        return min(left, limit) if limit > 0 else left

    def _authenticate(self, token: bytes | bytearray, header: codec.RequestHeader | None) -> Step:
        """Evaluate a token; header is the SaslAuthenticate request's (None for a bare token)."""
        try:
            try:
                answer_bytes, principal = self._evaluate(bytes(token))
            except (oauth.Dropped, _Dropped) as exc:
                log.warning("unexpected error authenticating %s with SASL/%s (%s); closing connection",
                            self.peer, self.mechanism, exc)
                return Step(drop=True)
            if principal is not None and self._previous is not None and principal != self._previous[1]:
                message = (f"Cannot change principals during re-authentication from User.{self._previous[1]}: "
                           f"User.{principal}")
                raise _Refused(message, message)
        except _Refused as refused:
            if header is None:  # a bare token has no error answer
                return self._failed(refused.reason, unexpected=refused.unexpected)
            answer = SaslAuthenticateResponse(version=header.api_version, error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                              error_message=refused.message, auth_bytes=b"", session_lifetime_ms=0)
            return self._failed(refused.reason, codec.encode_response(SASL_AUTHENTICATE, header.api_version,
                                                                      header.correlation_id, answer),
                                refused.unexpected)
        lifetime_ms = 0
        if principal is not None:
            self.principal, self.state, self._previous = principal, _State.COMPLETE, None
            lifetime_ms = self._session_ms()
            bounded = lifetime_ms > 0 or self._oauth is not None  # a token's expiry always ends its session
            self.expires_at = time.monotonic() + lifetime_ms / 1000 if bounded else None
            log.debug("%s authenticated as %s with SASL/%s", self.peer, self.principal, self.mechanism)
        if header is None:  # a bare token: no frame when the mechanism has nothing to say (GSSAPI's last step)
            return Step(reply=None if answer_bytes is None else struct.pack(">i", len(answer_bytes)) + answer_bytes)
        # Kafka's success answer leaves the message at its schema default, "" (not null)
        answer = SaslAuthenticateResponse(version=header.api_version, error_code=ErrorCode.NONE, error_message="",
                                          auth_bytes=answer_bytes or b"", session_lifetime_ms=lifetime_ms)
        return Step(reply=codec.encode_response(SASL_AUTHENTICATE, header.api_version, header.correlation_id, answer))

    def _failed(self, reason: str, reply: bytes | None = None, unexpected: bool = False) -> Step:
        """Every refusal's one path: one log line (a warning when no check foresaw the token, so a
        gap in the checks is seen), then the connection's failure delay, answer and close."""
        if len(reason) > MAX_LOGGED_REASON:  # a reason may quote the client's message, up to the frame limit
            reason = reason[:MAX_LOGGED_REASON] + "..."
        log.log(logging.WARNING if unexpected else logging.INFO, "failed authentication with %s (%s)", self.peer,
                reason)
        return Step(reply=reply, fail=True)


class _Dropped(Exception):
    """Kafka's server fails unexpectedly on this token: the connection closes without an answer."""


class _Refused(Exception):
    """A token that does not authenticate: message for the client, reason for the log."""

    def __init__(self, message: str, reason: str, unexpected: bool = False) -> None:
        super().__init__(message)
        self.message, self.reason, self.unexpected = message, reason, unexpected


def _illegal_state_answer(header: codec.RequestHeader) -> bytes | None:
    """Kafka's error answer to a request other than SaslAuthenticate mid-exchange, for an API
    whose response has a top-level error code; None for the others."""
    if not api_versions.is_served(header.api_key, header.api_version):
        return None
    cls = api_versions.response_class(header.api_key)
    if not schema_meta.has_field(cls, "error_code"):
        return None
    body = cls(version=header.api_version, error_code=ErrorCode.ILLEGAL_SASL_STATE)
    return codec.encode_response(header.api_key, header.api_version, header.correlation_id, body)

