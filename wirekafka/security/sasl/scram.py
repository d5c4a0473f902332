"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer and
ScramSaslClient run them, and the stored credential Kafka keeps per user and mechanism.

A credential is what AlterUserScramCredentials stores: the salt, the iteration count and, derived
from the salted password the client sends, StoredKey = H(HMAC(salted, "Client Key")) and
ServerKey = HMAC(salted, "Server Key"); never the password. ZooKeeper holds it as
`salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>` (Kafka's ScramCredentialUtils).

The exchange is two SaslAuthenticate round trips: client-first `n,[a=authzid],n=user,r=nonce`
→ server-first `r=nonce+server nonce,s=salt,i=iterations`; client-final `c=biws,r=nonce,p=proof`
→ server-final `v=signature`. Kafka sends the client only a generic message for most failures
(unknown user, wrong proof, bad message) so as not to tell which; GenericFailure carries those."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Callable

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# AlterUserScramCredentials / DescribeUserScramCredentials number the mechanisms
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF = {name: number for number, name in MECHANISM_TYPES.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384

_CLIENT_FIRST = re.compile(r"^n,(a=(?P<authzid>[^,]*))?,n=(?P<saslname>[^,]+),r=(?P<nonce>[^,]+)(?P<extensions>.*)$")
_CLIENT_FINAL = re.compile(r"^c=(?P<channel>[^,]*),r=(?P<nonce>[^,]+)(?P<extensions>.*),p=(?P<proof>[^,]+)$")
_SERVER_FIRST = re.compile(r"^r=(?P<nonce>[^,]+),s=(?P<salt>[^,]+),i=(?P<iterations>[0-9]+)(?P<extensions>.*)$")
_SERVER_FINAL = re.compile(r"^(e=(?P<error>[^,]+)|v=(?P<signature>[^,]+))(?P<extensions>.*)$")


class ScramFailure(Exception):
    """The exchange fails; str() is the message Kafka sends the client."""


class GenericFailure(ScramFailure):
    """A failure Kafka reports without detail (its SaslException): the client is told only that
    authentication failed with this mechanism; reason is for the broker's log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _hmac(digest: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digest).digest()


def _h(digest: str, data: bytes) -> bytes:
    return hashlib.new(digest, data).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: str, salt: bytes, salted: bytes, iterations: int) -> "ScramCredential":
        digest = MECHANISMS[mechanism]
        client_key = _hmac(digest, salted, b"Client Key")
        return cls(salt, _h(digest, client_key), _hmac(digest, salted, b"Server Key"), iterations)

    def encode(self) -> str:
        """Kafka's ZooKeeper form of the credential."""
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def decode(cls, text: str) -> "ScramCredential":
        fields = dict(part.split("=", 1) for part in text.split(","))
        return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                   base64.b64decode(fields["server_key"]), int(fields["iterations"]))


def username(saslname: str) -> str:
    """RFC 5802's saslname: "," and "=" travel as "=2C" and "=3D"."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


def saslname(user: str) -> str:
    return user.replace("=", "=3D").replace(",", "=2C")


# (username, mechanism) -> the stored credential, None for a user without one
CredentialLookup = Callable[[str, str], "ScramCredential | None"]


class ScramServer:
    """One connection's SCRAM exchange on the broker's side."""

    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        self.digest = MECHANISMS[mechanism]
        self.lookup = lookup
        self.principal: str | None = None
        self.complete = False
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""

    def evaluate(self, message: bytes) -> bytes:
        """The answer to the client's next message; ScramFailure when it does not authenticate."""
        if self._credential is None:
            return self._first(message.decode("utf-8", "replace"))
        return self._final(message.decode("utf-8", "replace"))

    def _first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.match(text)
        if match is None:
            raise GenericFailure(f"Invalid SCRAM client first message format: {text}")
        user = username(match["saslname"])
        credential = self.lookup(user, self.mechanism)
        if credential is None:
            raise GenericFailure("Authentication failed: Invalid user credentials")
        if match["authzid"] and match["authzid"] != user:
            raise ScramFailure("Authentication failed: Client requested an authorization id that is different "
                               "from username")
        if credential.iterations < MIN_ITERATIONS:
            raise GenericFailure(f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} "
                                 f"for {self.mechanism}")
        self._credential, self.principal = credential, user
        self._client_first_bare = text[text.index("n=", 2):]
        nonce = match["nonce"] + secrets.token_urlsafe(24)
        self._server_first = (f"r={nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        match = _CLIENT_FINAL.match(text)
        if match is None:
            raise GenericFailure(f"Invalid SCRAM client final message format: {text}")
        if match["nonce"] != self._server_first[2:self._server_first.index(",")]:
            raise GenericFailure("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.digest, credential.stored_key, auth_message)
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except ValueError:
            raise GenericFailure("Invalid client credentials") from None
        client_key = bytes(a ^ b for a, b in zip(proof, signature)) if len(proof) == len(signature) else b""
        if not hmac.compare_digest(_h(self.digest, client_key), credential.stored_key):
            raise GenericFailure("Invalid client credentials")
        self.complete = True
        server_signature = _hmac(self.digest, credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()


class ScramClient:
    """The client's side (a broker logging in to another broker, and tests)."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None) -> None:
        self.mechanism, self.digest = mechanism, MECHANISMS[mechanism]
        self.password = password
        self.nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={saslname(user)},r={self.nonce}"
        self._server_signature = b""

    def first_message(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        match = _SERVER_FIRST.match(text)
        if match is None or not match["nonce"].startswith(self.nonce):
            raise ScramFailure(f"Invalid SCRAM server first message: {text}")
        salted = salted_password(self.mechanism, self.password, base64.b64decode(match["salt"]),
                                 int(match["iterations"]))
        without_proof = f"c=biws,r={match['nonce']}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = _hmac(self.digest, salted, b"Client Key")
        signature = _hmac(self.digest, _h(self.digest, client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = _hmac(self.digest, _hmac(self.digest, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        match = _SERVER_FINAL.match(server_final.decode())
        if match is None or match["error"] or base64.b64decode(match["signature"]) != self._server_signature:
            raise ScramFailure(f"Invalid SCRAM server final message: {server_final!r}")
