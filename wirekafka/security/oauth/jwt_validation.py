"""Signed JSON Web Tokens as Kafka 4.3.1's secured OAUTHBEARER validator checks them (KIP-768:
OAuthBearerValidatorCallbackHandler with its BrokerJwtValidator, which hands the token to jose4j).

Why its own module: the checks are jose4j's JwtConsumer as Kafka builds it, plus Kafka's claim
rules after it, and none of it touches the wire. Reading JWKs and the signature algorithms
themselves are PyJWT's (a maintained JOSE library); which key is tried, which are too weak and
every claim rule are jose4j's and Kafka's, kept here. In order:
- a JWS compact serialization (three base64url parts) whose header JSON names an algorithm other
  than "none" (DISALLOW_NONE); a "crit" header is refused, as jose4j knows no extension;
- its key: the JWKS keys matching its `kid` (when it has one), the algorithm's key type, a `use`
  of "sig" or none, an `alg` equal to its own or none; several candidates are each tried. A key
  too weak for jose4j (RSA under 2048 bits, an HMAC key shorter than its hash) does not verify;
- the claims: JSON with unique member names; `exp` and `iat` required and numeric (whole seconds,
  jose4j truncates); expired when now minus the clock skew is at or after `exp`; `exp` before
  `iat` or `nbf` refused; not yet valid when now plus the skew is before `nbf`; `aud` when present
  must contain an expected audience (without expected audiences configured, a token carrying `aud`
  is refused: jose4j's default); with expected audiences, `aud` is required; `iss` must equal the
  expected issuer when one is configured; `sub` and `jti`, when present, must be texts;
- Kafka's own: the sub claim (sasl.oauthbearer.sub.claim.name) a non-blank text, the principal
  (trimmed); the scope claim a text (one scope) or a list of non-blank, distinct texts; exp and iat
  not negative.

Every failure is InvalidJwt: Kafka answers all of them alike ({"status":"invalid_token"}); the
reason only goes to the log. UnknownKey is the one the key source acts on (a JWKS refresh)."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec
from jwt import PyJWK, PyJWTError
from jwt.algorithms import get_default_algorithms

from wirekafka.security import bounded_json

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_HASHES = ("256", "384", "512")
_CURVES = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}
MIN_RSA_BITS = 2048  # jose4j's minimum RSA key size


class InvalidJwt(Exception):
    """A token Kafka's validator refuses; the message is the reason, for the log."""


class UnknownKey(InvalidJwt):
    """No key of the JWKS matches the token: a key source may refresh its JWKS for this kid."""

    def __init__(self, kid: str | None) -> None:
        super().__init__(f"no verification key in the JWKS for kid {kid}")
        self.kid = kid


@dataclass(frozen=True)
class Jwk:
    """One verification key of a JWKS, with the members jose4j selects it by."""

    kid: str | None
    kty: str
    use: str | None
    alg: str | None
    key: Any  # a cryptography public key, or bytes for an "oct" key


@dataclass(frozen=True)
class JwtRules:
    """The sasl.oauthbearer.* settings the validator applies."""

    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    scope_claim: str = "scope"
    sub_claim: str = "sub"
    clock_skew_s: int = 30


@dataclass(frozen=True)
class VerifiedToken:
    principal: str
    scope: frozenset[str]
    expires_ms: int
    issued_at_ms: int


# ---- the JWKS ---------------------------------------------------------------------------------------
def _default_algorithm(kty: Any, crv: Any) -> str | None:
    """The algorithm PyJWT should read a key as: by its type and curve alone, never its `alg`
    member, since jose4j selects keys by `alg` later (_candidates) rather than refusing them here."""
    if kty == "RSA":
        return "RS256"
    if kty == "EC":
        return {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}.get(crv)
    if kty == "OKP":
        return "EdDSA" if crv in ("Ed25519", "Ed448") else None
    if kty == "oct":
        return "HS256"
    return None


def _public_key(member: dict[str, Any]) -> Any:
    """The verification key of one JWKS member (a cryptography public key, or bytes for "oct"),
    read by PyJWT; ValueError for a key jose4j would not know."""
    algorithm = _default_algorithm(member.get("kty"), member.get("crv"))
    if algorithm is None:
        raise ValueError(f"unsupported key type {member.get('kty')} {member.get('crv') or ''}".rstrip())
    try:
        key = PyJWK(member, algorithm).key
    except (PyJWTError, ValueError, TypeError, KeyError, binascii.Error) as exc:
        raise ValueError(f"unreadable {member.get('kty')} key: {exc}") from None
    # a JWKS should hold public keys; a published private one verifies as its public half
    return key.public_key() if hasattr(key, "public_key") else key


def parse_jwks(text: str | bytes) -> tuple[Jwk, ...]:
    """A JWKS document's keys. Raises ValueError for a document that is not a JWKS; a key of a
    type or curve jose4j would not know is left out, as jose4j leaves it out."""
    document = bounded_json.parse(json.loads, text)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("a JWKS is a JSON object with a 'keys' list")
    keys = []
    for member in document["keys"]:
        if not isinstance(member, dict):
            raise ValueError("a JWKS key is a JSON object")
        try:
            key = _public_key(member)
        except ValueError:
            continue
        keys.append(Jwk(_text_or_none(member.get("kid")), str(member["kty"]), _text_or_none(member.get("use")),
                        _text_or_none(member.get("alg")), key))
    return tuple(keys)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ---- the signature ----------------------------------------------------------------------------------
def _key_type(alg: str) -> str | None:
    if alg[:2] in ("RS", "PS") and alg[2:] in _HASHES:
        return "RSA"
    if alg in _CURVES:
        return "EC"
    if alg == "EdDSA":
        return "OKP"
    if alg[:2] == "HS" and alg[2:] in _HASHES:
        return "oct"
    return None


def _verifies(alg: str, key: Any, signing_input: bytes, signature: bytes) -> bool:
    """Whether the signature is the key's over the signing input: jose4j's key checks (RSA of at
    least 2048 bits, the curve the algorithm names, an HMAC key as long as its hash), then PyJWT's
    implementation of the algorithm."""
    try:
        if alg[:2] in ("RS", "PS") and key.key_size < MIN_RSA_BITS:
            return False
        if alg in _CURVES and not isinstance(key.curve, _CURVES[alg]):
            return False
        if alg[:2] == "HS" and len(key) * 8 < int(alg[2:]):
            return False
        return bool(get_default_algorithms()[alg].verify(signing_input, key, signature))
    except (InvalidSignature, PyJWTError, AttributeError, TypeError, ValueError):
        return False


def _candidates(keys: Sequence[Jwk], header: dict[str, Any], alg: str) -> list[Jwk]:
    """jose4j's VerificationJwkSelector filter: kid, key type, use and alg."""
    kid = header.get("kid")
    kty = _key_type(alg)
    return [k for k in keys
            if (kid is None or k.kid == kid) and k.kty == kty and k.use in (None, "sig") and k.alg in (None, alg)]


# ---- the token --------------------------------------------------------------------------------------
def _b64decode(text: Any, what: str) -> bytes:
    """A token part, strictly base64url without padding, as jose4j reads it."""
    if not isinstance(text, str) or not _BASE64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError(f"{what} is not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not base64url") from None


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise InvalidJwt(f"An entry for '{name}' already exists. Names must be unique.")
        result[name] = value
    return result


def _json_part(part: str, what: str) -> dict[str, Any]:
    try:
        value = bounded_json.parse(functools.partial(json.loads, object_pairs_hook=_unique_members),
                                   _b64decode(part, what).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJwt(f"the {what} is not base64url JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidJwt(f"the {what} is not a JSON object")
    return value


def _seconds(claims: dict[str, Any], name: str) -> int | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidJwt(f"The value of the '{name}' claim is not the expected type")
    return int(value)  # Number.longValue(): towards zero


def _audience(claims: dict[str, Any]) -> list[str] | None:
    aud = claims.get("aud")
    if aud is None:
        return None
    if isinstance(aud, str):
        return [aud]
    if isinstance(aud, list) and all(isinstance(a, str) for a in aud):
        return aud
    raise InvalidJwt("The value of the 'aud' claim is not the expected type")


def _check_claims(claims: dict[str, Any], rules: JwtRules, now_s: int) -> tuple[int, int]:
    """jose4j's claim validators as Kafka configures them; (exp, iat) in seconds."""
    for name in ("sub", "jti", "iss"):
        if name in claims and claims[name] is not None and not isinstance(claims[name], str):
            raise InvalidJwt(f"The value of the '{name}' claim is not the expected type")
    exp, iat, nbf = _seconds(claims, "exp"), _seconds(claims, "iat"), _seconds(claims, "nbf")
    if exp is None:
        raise InvalidJwt("No Expiration Time (exp) claim present.")
    if iat is None:
        raise InvalidJwt("No Issued At (iat) claim present.")
    skew = rules.clock_skew_s
    if now_s - skew >= exp:
        raise InvalidJwt(f"The JWT is no longer valid - the evaluation time {now_s} is on or after the "
                         f"Expiration Time (exp={exp}) claim value (with {skew} seconds of leeway)")
    if exp < iat:
        raise InvalidJwt(f"The Expiration Time (exp={exp}) claim value cannot be before the Issued At (iat={iat})")
    if nbf is not None and exp < nbf:
        raise InvalidJwt(f"The Expiration Time (exp={exp}) claim value cannot be before the Not Before (nbf={nbf})")
    if nbf is not None and now_s + skew < nbf:
        raise InvalidJwt(f"The JWT is not yet valid as the evaluation time {now_s} is before the Not Before "
                         f"(nbf={nbf}) claim time (with {skew} seconds of leeway)")
    audience = _audience(claims)
    if audience is None and rules.expected_audience:
        raise InvalidJwt("No Audience (aud) claim present.")
    if audience is not None and not set(audience) & set(rules.expected_audience):
        raise InvalidJwt(f"Audience (aud) claim {audience} doesn't contain an acceptable identifier. "
                         f"Expected {list(rules.expected_audience)} as an aud value.")
    if rules.expected_issuer is not None and claims.get("iss") != rules.expected_issuer:
        raise InvalidJwt(f"Issuer (iss) claim value ({claims.get('iss')}) doesn't match expected value of "
                         f"{rules.expected_issuer}")
    return exp, iat


def _kafka_claims(claims: dict[str, Any], rules: JwtRules) -> tuple[str, frozenset[str]]:
    """Kafka's rules after jose4j's (BrokerJwtValidator, ClaimValidationUtils)."""
    raw_scope = claims.get(rules.scope_claim)
    items = [raw_scope] if isinstance(raw_scope, str) else raw_scope if isinstance(raw_scope, list) else []
    scope: set[str] = set()
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise InvalidJwt(f"{rules.scope_claim} value must be non-empty")
        if item.strip() in scope:
            raise InvalidJwt(f"{rules.scope_claim} value must not contain duplicates - {item.strip()} already present")
        scope.add(item.strip())
    sub = claims.get(rules.sub_claim)
    if sub is not None and not isinstance(sub, str):
        raise InvalidJwt(f"Could not extract the '{rules.sub_claim}' claim from the access token")
    if sub is None or not sub.strip():
        raise InvalidJwt(f"{rules.sub_claim} value must be non-empty")
    return sub.strip(), frozenset(scope)


def validate(token: str, keys: Sequence[Jwk], rules: JwtRules, now_s: float) -> VerifiedToken:
    """The token's principal, scope and times once it passes every check; raises InvalidJwt."""
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidJwt(f"a JWS compact serialization has 3 parts, not {len(parts)}")
    header = _json_part(parts[0], "JWS header")
    alg = header.get("alg")
    if not isinstance(alg, str) or alg == "none":
        raise InvalidJwt(f"'{alg}' is not a permitted algorithm")
    if "crit" in header:
        raise InvalidJwt(f"Unrecognized header {header['crit']} marked as critical")
    if _key_type(alg) is None:
        raise InvalidJwt(f"{alg} is an unknown, unsupported or unavailable alg algorithm")
    try:
        signature = _b64decode(parts[2], "signature")
    except ValueError as exc:
        raise InvalidJwt(str(exc)) from None
    candidates = _candidates(keys, header, alg)
    if not candidates:
        raise UnknownKey(header.get("kid") if isinstance(header.get("kid"), str) else None)
    signing_input = f"{parts[0]}.{parts[1]}".encode("ascii")
    if not any(_verifies(alg, k.key, signing_input, signature) for k in candidates):
        raise InvalidJwt("JWS signature is invalid")
    claims = _json_part(parts[1], "JWT claims")
    exp, iat = _check_claims(claims, rules, int(now_s))
    principal, scope = _kafka_claims(claims, rules)
    if exp < 0 or iat < 0:
        raise InvalidJwt("exp and iat values must be non-negative")
    return VerifiedToken(principal, scope, exp * 1000, iat * 1000)
