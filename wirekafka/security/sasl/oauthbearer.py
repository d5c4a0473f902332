"""SASL/OAUTHBEARER (RFC 7628) as a Kafka broker serves it without a server callback handler
configured: Kafka's default validator of *unsecured* JSON Web Tokens (alg "none", no signature),
and Kafka's unsecured login token, which a broker sends on its own OAUTHBEARER connections.

A Kafka broker without `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`
validates nothing but the token's shape, its lifetime and its scope; with Kafka's secured handler
(KIP-768) the exchange is the same and the token is checked by a TokenValidator instead
(jwt_validation.py: signature against a JWKS, times, audience, issuer), whose refusals are all
answered {"status":"invalid_token"}.

The exchange (OAuthBearerSaslServer): the client's first message `n,[a=authzid],^Aauth=Bearer
<token>^A[key=value^A...]^A`. A valid token authenticates its principal claim at once (empty
answer). An invalid one is answered, without an error, by the JSON challenge {"status":
"invalid_token"} (or "insufficient_scope" with the missing scope); the client then sends a lone
0x01 and the authentication fails with that JSON as the message — or it sends a new first message.
A malformed first message fails with Kafka's generic message; a different authzid with its own.
Two inputs make Kafka's server throw an unexpected exception (a scheme other than Bearer; a JWS
header without "alg"): the connection is then dropped without an answer, as Kafka drops it.

Token details follow Kafka 4.3.1 (OAuthBearerUnsecuredJws): three dot-separated base64url parts
(the alphabet of Kafka 4.2+, padding optional), the last empty; JSON where a member is a number,
a list of texts, or else its text (`true` is "true"); `exp` (seconds, may be fractional) required,
`iat` optional; the scope claim a text (one scope) or a list. Why a token is invalid is never
told to the client (Kafka drops the reason): it is logged here at debug level."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from wirekafka.security import bounded_json

log = logging.getLogger(__name__)

MECHANISM = "OAUTHBEARER"
CONTROL_A = b"\x01"

_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"  # Java's [\x01-\x7F&&[^=,]] spelled out
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_FIRST_MESSAGE = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>(?:{_KEY}={_VALUE}\x01)*)\x01", re.ASCII)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)", re.ASCII)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_SCOPE_ITEM = re.compile(r"[\x23-\x5B\x5D-\x7E\x21]+")

PRINCIPAL_CLAIM_OPTION = "unsecuredValidatorPrincipalClaimName"
SCOPE_CLAIM_OPTION = "unsecuredValidatorScopeClaimName"
REQUIRED_SCOPE_OPTION = "unsecuredValidatorRequiredScope"
CLOCK_SKEW_OPTION = "unsecuredValidatorAllowableClockSkewMs"

GENERIC_FAILURE = "Authentication failed during {stage} due to invalid credentials with SASL mechanism OAUTHBEARER"


class MalformedFirstMessage(Exception):
    """A first message Kafka refuses with a SaslException: answered with the generic failure."""


class Dropped(Exception):
    """Kafka's server throws an unexpected exception: the connection closes without an answer."""


class Refused(Exception):
    """A SaslAuthenticationException: the client is told this message."""


class IllegalToken(Exception):
    """An unsecured JWS Kafka refuses (invalid_token); the reason is for the log only."""


@dataclass(frozen=True)
class FirstMessage:
    authzid: str
    token: str
    extensions: dict[str, str]


def parse_first_message(data: bytes) -> FirstMessage:
    """OAuthBearerClientInitialResponse: the GS2 header, then key=value pairs separated by 0x01,
    `auth` among them; the other pairs are SASL extensions (a repeated key: the last one)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise MalformedFirstMessage("Invalid OAUTHBEARER client first message") from None
    match = _FIRST_MESSAGE.fullmatch(text)
    if match is None:
        raise MalformedFirstMessage("Invalid OAUTHBEARER client first message")
    pairs: dict[str, str] = {}
    for item in match["kvpairs"].split("\x01"):
        if item:
            key, _, value = item.partition("=")
            pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise MalformedFirstMessage("Invalid OAUTHBEARER client first message: 'auth' not specified")
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise MalformedFirstMessage("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match["scheme"].lower() != "bearer":
        # Kafka means to refuse it with a SaslException, but its message lookup throws
        # IllegalArgumentException ("No group with name <scheme>"): the connection just drops
        raise Dropped(f"No group with name <scheme> (scheme {auth_match['scheme']!r})")
    return FirstMessage(match["authzid"] or "", auth_match["token"], pairs)


# ---- the unsecured JWS -------------------------------------------------------------------------
@dataclass(frozen=True)
class UnsecuredJws:
    principal: str
    scope: frozenset[str]
    expires_ms: int  # round(exp * 1000)
    exp: float
    iat: float | None
    claims: dict[str, Any] = field(compare=False)


def decode_part(part: str) -> dict[str, Any]:
    """A header or claims part: base64url (unpadded or padded) JSON; a value that is not a JSON
    object is an empty map, as Kafka's toMap reads it."""
    if not _BASE64URL.fullmatch(part) or len(part) % 4 == 1:
        raise IllegalToken("malformed Base64 URL encoded value")
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise IllegalToken("malformed Base64 URL encoded value") from None
    try:
        text = raw.decode("utf-8").lstrip(" \t\r\n")
        if not text:
            return {}
        decoder = json.JSONDecoder(parse_constant=_no_constant)
        value = bounded_json.parse(lambda t: decoder.raw_decode(t)[0], text)  # trailing text ignored
    except (UnicodeDecodeError, ValueError):
        raise IllegalToken("malformed JSON") from None
    if not isinstance(value, dict):
        return {}
    return {name: _member(v) for name, v in value.items()}


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _member(value: Any) -> Any:
    """Kafka keeps numbers and lists of texts; anything else becomes its text."""
    if isinstance(value, bool) or value is None or isinstance(value, dict):
        return _as_text(value)
    if isinstance(value, (int, float, str)):
        return value
    return [_as_text(v) for v in value]


def _as_text(value: Any) -> str:
    """Jackson's asText: a text as is, true/false/null as words, a number as written, a container ""."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return ""


def _type_name(value: Any) -> str:
    if isinstance(value, str):
        return "String"
    if isinstance(value, list):
        return "ArrayList"
    if isinstance(value, float):
        return "Double"
    return "Integer" if -2**31 <= value < 2**31 else "Long" if -2**63 <= value < 2**63 else "BigInteger"


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, (int, float)):
        raise IllegalToken(f"The '{name}' claim was not of type Number: {_type_name(value)}")
    return value


def parse_unsecured_jws(token: str, principal_claim: str, scope_claim: str) -> UnsecuredJws:
    if ".." in token:
        raise IllegalToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise IllegalToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = decode_part(parts[0]), decode_part(parts[1])
    if "alg" not in header:  # Kafka's NullPointerException: not an invalid token, a dropped connection
        raise Dropped("JWS header must have an Algorithm value")
    if str(header["alg"]) != "none":
        raise IllegalToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise IllegalToken("Unsecured JWS must not contain a digital signature")
    scope_value = claims.get(scope_claim)
    if isinstance(scope_value, str):
        scope = frozenset([scope_value.strip()] if scope_value.strip() else [])
    elif isinstance(scope_value, list):
        scope = frozenset(s.strip() for s in scope_value if s.strip())
    elif scope_value is None:
        scope = frozenset()
    else:
        raise IllegalToken(f"The '{scope_claim}' claim was not of type List: {_type_name(scope_value)}")
    exp = _number(claims, "exp")
    if exp is None:
        raise IllegalToken("No expiration time in JWT")
    principal = claims.get(principal_claim)
    if principal is not None and not isinstance(principal, str):
        raise IllegalToken(f"The '{principal_claim}' claim was not of type String: {_type_name(principal)}")
    if principal is None or not principal.strip():
        raise IllegalToken(f"No principal name in JWT claim: {principal_claim}")
    iat = _number(claims, "iat")
    return UnsecuredJws(principal, scope, _java_round_ms(exp), float(exp), None if iat is None else float(iat), claims)


def _java_round_ms(seconds: float) -> int:
    """Math.round(seconds * 1000), saturating at Long's bounds as Java does."""
    ms = float(seconds) * 1000
    if not math.isfinite(ms):
        return 2**63 - 1 if ms > 0 else -2**63
    return max(-2**63, min(2**63 - 1, math.floor(ms + 0.5)))


# ---- the validator --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValidatorOptions:
    """The unsecuredValidator* options of the listener's OAUTHBEARER login module. A bad value
    does not stop Kafka's broker: every authentication then fails without an answer (`error`)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0
    error: str | None = None

    @classmethod
    def of(cls, options: Mapping[str, str]) -> "ValidatorOptions":
        principal = (options.get(PRINCIPAL_CLAIM_OPTION) or "").strip() or "sub"
        scope = (options.get(SCOPE_CLAIM_OPTION) or "").strip() or "scope"
        required = tuple(s for s in (options.get(REQUIRED_SCOPE_OPTION) or "").strip().split(" ") if s)
        bad_scope = next((s for s in required if not _SCOPE_ITEM.fullmatch(s)), None)
        if bad_scope is not None:
            return cls(principal, scope, required, 0, f"Invalid scope value: {bad_scope}")
        skew_text = (options.get(CLOCK_SKEW_OPTION) or "").strip()
        skew = 0
        if skew_text:
            if not re.fullmatch(r"[+-]?[0-9]+", skew_text) or not -2**31 <= int(skew_text) < 2**31:
                return cls(principal, scope, required, 0, f'For input string: "{skew_text}"')
            skew = int(skew_text)
            if skew < 0:
                return cls(principal, scope, required, 0, f"Allowable clock skew millis must not be negative: {skew_text}")
        return cls(principal, scope, required, skew)


@dataclass(frozen=True)
class Challenge:
    """Why a token does not authenticate, as the client is told (RFC 7628's error JSON)."""

    status: str
    scope: str | None = None

    def json(self) -> str:
        text = f'{{"status":"{self.status}"'
        if self.scope is not None:
            text += f', "scope":"{self.scope}"'
        return text + "}"


def validate(token: str, options: ValidatorOptions, now_ms: int) -> UnsecuredJws | Challenge:
    """OAuthBearerUnsecuredValidatorCallbackHandler: the token's shape, then its times, then the
    required scope. Raises Dropped where Kafka's validator throws unexpectedly."""
    if options.error is not None:
        raise Dropped(options.error)
    try:
        jws = parse_unsecured_jws(token, options.principal_claim, options.scope_claim)
    except IllegalToken as exc:
        log.debug("invalid OAUTHBEARER token: %s", exc)
        return Challenge("invalid_token")
    skew = options.clock_skew_ms
    reason = None
    if jws.iat is not None and 1000 * jws.iat > now_ms + skew:
        reason = f"the Issued At value ({jws.iat} seconds) was after the indicated time ({now_ms} ms) plus skew"
    elif now_ms - skew >= 1000 * jws.exp:
        reason = f"the indicated time ({now_ms} ms) minus skew was on or after the Expiration Time ({jws.exp} seconds)"
    elif jws.iat is not None and jws.exp <= jws.iat:
        reason = f"the Expiration Time ({jws.exp} seconds) was not after the Issued At time ({jws.iat} seconds)"
    if reason is not None:
        log.debug("invalid OAUTHBEARER token: %s", reason)
        return Challenge("invalid_token")
    for required in options.required_scope:
        if required not in jws.scope:
            log.debug("OAUTHBEARER token scope %s lacks %s", sorted(jws.scope), required)
            return Challenge("insufficient_scope", "[" + ", ".join(options.required_scope) + "]")
    return jws


class Authenticated(Protocol):
    """What a validated token gives the exchange."""

    @property
    def principal(self) -> str: ...

    @property
    def expires_ms(self) -> int: ...


# a secured validator: (token, now in epoch ms) -> the token's principal and expiry, or a challenge
TokenValidator = Callable[[str, int], "Authenticated | Challenge"]


class OAuthBearerServer:
    """One connection's OAUTHBEARER exchange (OAuthBearerSaslServer), with the unsecured validator
    and its options, or a secured one."""

    def __init__(self, options: ValidatorOptions, clock: Callable[[], float] = time.time,
                 validator: TokenValidator | None = None) -> None:
        self.options = options
        self.clock = clock
        self.validator = validator
        self._challenge: str | None = None
        self.principal: str | None = None
        self.expires_ms: int | None = None  # the token's expiry (epoch ms) once authenticated

    @property
    def complete(self) -> bool:
        return self.principal is not None

    def evaluate(self, data: bytes) -> bytes:
        """The answer to a client message: b"" once authenticated, or the JSON challenge. Raises
        Refused, MalformedFirstMessage or Dropped."""
        if data == CONTROL_A and self._challenge is not None:
            raise Refused(self._challenge)
        self._challenge = None
        first = parse_first_message(data)
        now_ms = int(self.clock() * 1000)
        outcome: Authenticated | Challenge = (validate(first.token, self.options, now_ms) if self.validator is None
                                              else self.validator(first.token, now_ms))
        if isinstance(outcome, Challenge):
            self._challenge = outcome.json()
            return self._challenge.encode()
        if first.authzid and first.authzid != outcome.principal:
            raise Refused(f"Authentication failed: Client requested an authorization id ({first.authzid}) that is "
                          f"different from the token's principal name ({outcome.principal})")
        self.principal, self.expires_ms = outcome.principal, outcome.expires_ms
        return b""


# ---- the login token (the client side) ------------------------------------------------------------
_STRING_CLAIM, _NUMBER_CLAIM, _LIST_CLAIM = "unsecuredLoginStringClaim_", "unsecuredLoginNumberClaim_", "unsecuredLoginListClaim_"
_EXTENSION = "unsecuredLoginExtension_"
_RESERVED_CLAIMS = ("iat", "exp")


class LoginError(ValueError):
    """Options Kafka's unsecured login refuses; a broker with them does not start."""


def _json_text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _list_claim(value: str) -> list[str]:
    """Kafka's list option: its first character is the delimiter of the rest."""
    if len(value) <= 1:
        return []
    delimiter, rest = value[0], value[1:]
    items = rest.split(delimiter)
    while items and items[-1] == "":  # Java's split drops trailing empty strings...
        items.pop()
    if rest.startswith(delimiter) or rest.endswith(delimiter) or delimiter * 2 in rest:
        items.append("")  # ...and Kafka then adds one empty element back
    return items or [""]


def login_token(options: Mapping[str, str], now_s: float) -> str | None:
    """Kafka's OAuthBearerUnsecuredLoginCallbackHandler: the unsecured JWS a broker logs in with,
    built from the unsecuredLogin* options of its OAUTHBEARER login module; None without options
    (a broker that only accepts OAUTHBEARER). Raises LoginError where Kafka's login fails."""
    if not options:
        return None
    if all(name.startswith(_EXTENSION) for name in options):
        raise LoginError("Extensions provided in login context without a token")
    principal_claim = (options.get("unsecuredLoginPrincipalClaimName") or "").strip() or "sub"
    scope_claim = (options.get("unsecuredLoginScopeClaimName") or "").strip() or "scope"
    lifetime_text = options.get("unsecuredLoginLifetimeSeconds", "3600")
    if not re.fullmatch(r"[+-]?[0-9]+", lifetime_text):
        raise LoginError(f'For input string: "{lifetime_text}"')
    members = [f'"exp":{_java_double(math.floor(now_s * 1000) / 1000 + int(lifetime_text))}',
               f'"iat":{_java_double(math.floor(now_s * 1000) / 1000)}']
    for name, value in options.items():
        for prefix in (_STRING_CLAIM, _NUMBER_CLAIM, _LIST_CLAIM):
            if not name.startswith(prefix) or len(name) == len(prefix):
                continue
            claim = name[len(prefix):]
            if claim in _RESERVED_CLAIMS:
                raise LoginError(f"Cannot explicitly set the '{claim}' claim")
            if prefix == _STRING_CLAIM:
                members.append(f"{_json_text(claim)}:{_json_text(value)}")
            elif prefix == _NUMBER_CLAIM:
                try:
                    number = float(value)
                except ValueError:
                    raise LoginError(f'For input string: "{value}"') from None
                members.append(f"{_json_text(claim)}:{_java_double(number)}")
            else:
                members.append(f"{_json_text(claim)}:[{','.join(_json_text(v) for v in _list_claim(value))}]")
    header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    claims = base64.urlsafe_b64encode(("{" + ",".join(members) + "}").encode()).rstrip(b"=").decode()
    token = f"{header}.{claims}."
    try:
        parse_unsecured_jws(token, principal_claim, scope_claim)
    except IllegalToken as exc:
        raise LoginError(str(exc)) from None
    return token


def _java_double(value: float) -> str:
    """A double as JSON; Java would print 1.795683933035E9, which reads back the same."""
    return repr(float(value))


def login_extensions(options: Mapping[str, str]) -> dict[str, str]:
    return {name[len(_EXTENSION):]: value for name, value in options.items() if name.startswith(_EXTENSION)}


def first_message(token: str, extensions: Mapping[str, str] | None = None) -> bytes:
    """The client's first message for a token (no authzid, as Kafka's client sends it)."""
    pairs = "".join(f"{k}={v}\x01" for k, v in (extensions or {}).items())
    return f"n,,\x01auth=Bearer {token}\x01{pairs}\x01".encode()
