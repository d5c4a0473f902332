"""Signed JWTs and their JWKS for tests of Kafka's secured OAUTHBEARER validator: a key pair per
algorithm, its public half as a JWK, and compact JWS tokens signed with it (RFC 7515/7518)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

_HASHES = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_CURVES = {"ES256": (ec.SECP256R1, "P-256", 32), "ES384": (ec.SECP384R1, "P-384", 48),
           "ES512": (ec.SECP521R1, "P-521", 66)}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64_int(value: int, size: int | None = None) -> str:
    return b64url(value.to_bytes(size or (value.bit_length() + 7) // 8, "big"))


@dataclass(frozen=True)
class SigningKey:
    """A private key, the algorithm it signs with and the kid its JWK carries."""

    alg: str
    kid: str
    private: Any

    @classmethod
    def generate(cls, alg: str, kid: str, rsa_bits: int = 2048) -> "SigningKey":
        if alg[:2] in ("RS", "PS"):
            return cls(alg, kid, rsa.generate_private_key(public_exponent=65537, key_size=rsa_bits))
        if alg in _CURVES:
            return cls(alg, kid, ec.generate_private_key(_CURVES[alg][0]()))
        if alg == "EdDSA":
            return cls(alg, kid, ed25519.Ed25519PrivateKey.generate())
        if alg[:2] == "HS":  # a shared secret as long as the hash (jose4j's minimum)
            return cls(alg, kid, os.urandom(int(alg[2:]) // 8))
        raise ValueError(alg)

    def jwk(self, **members: Any) -> dict[str, Any]:
        if self.alg[:2] == "HS":
            return {"kty": "oct", "k": b64url(self.private), "kid": self.kid, "alg": self.alg, **members}
        public = self.private.public_key()
        if self.alg[:2] in ("RS", "PS"):
            numbers = public.public_numbers()
            jwk = {"kty": "RSA", "n": _b64_int(numbers.n), "e": _b64_int(numbers.e)}
        elif self.alg in _CURVES:
            numbers, size = public.public_numbers(), _CURVES[self.alg][2]
            jwk = {"kty": "EC", "crv": _CURVES[self.alg][1], "x": _b64_int(numbers.x, size),
                   "y": _b64_int(numbers.y, size)}
        else:
            jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64url(public.public_bytes(Encoding.Raw, PublicFormat.Raw))}
        return {**jwk, "kid": self.kid, "use": "sig", "alg": self.alg, **members}

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        return self.sign_payload(json.dumps(claims).encode(), **header)

    def sign_payload(self, payload: bytes, **header: Any) -> str:
        """A token whose claims part is payload as given (for JSON the json module would not write)."""
        head = {"alg": self.alg, "kid": self.kid, "typ": "JWT", **header}
        signing_input = f"{b64url(json.dumps(head).encode())}.{b64url(payload)}".encode()
        return f"{signing_input.decode()}.{b64url(self._signature(signing_input))}"

    def _signature(self, data: bytes) -> bytes:
        if self.alg[:2] == "HS":
            return hmac.new(self.private, data, getattr(hashlib, f"sha{self.alg[2:]}")).digest()
        if self.alg == "EdDSA":
            return self.private.sign(data)
        digest = _HASHES[self.alg[2:]]()
        if self.alg.startswith("RS"):
            return self.private.sign(data, padding.PKCS1v15(), digest)
        if self.alg.startswith("PS"):
            pss = padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
            return self.private.sign(data, pss, digest)
        r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(digest)))
        size = _CURVES[self.alg][2]
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def jwks(*keys: SigningKey) -> str:
    """The JWKS document publishing the keys' public halves."""
    return json.dumps({"keys": [k.jwk() for k in keys]})
