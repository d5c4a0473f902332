"""The server side of SASL GSSAPI (RFC 4752) as Java's GSSAPI SaslServer runs it for Kafka, whose
brokers offer only the "auth" quality of protection (no security layer):

1. each client token goes to the GSS-API acceptor, whose answers go back, until the security
   context is established (Kerberos: the AP-REQ, answered with the AP-REP of mutual
   authentication);
2. once it is, the server sends its security-layer offer, wrapped (integrity only): one octet of
   offered layers (1: none) and the largest message it takes, 65536, in three octets. Java sends
   it at once if the acceptor had no last token, otherwise as the answer to the client's next,
   empty, token (anything else fails);
3. the client answers with its choice, wrapped: the layer it picked (must be one offered), its
   own largest message, and optionally an authorization id. Kafka's callback authorizes any
   authorization id and keeps the authenticated name, so the principal is always the one
   Kerberos authenticated. Nothing is sent back: the exchange is complete.

GssapiClient is the other side, as Java's GSSAPI SaslClient runs it for a Kafka broker logging in
to another: context tokens until established (an empty token then asks for the offer), then the
choice: no security layer, Java's 65536-byte buffer, and the client's own principal as
authorization id (Kafka's client passes it).

The security context is passed in (wirekafka/security/kerberos/gssapi_binding.py binds MIT's library); this module
only frames, so it is pure. Its failures are GssapiFailure; the context's own errors pass through."""

from __future__ import annotations

import struct
from typing import Protocol

MECHANISM = "GSSAPI"
NO_SECURITY_LAYER, INTEGRITY, PRIVACY = 1, 2, 4
OFFERED_LAYERS = NO_SECURITY_LAYER  # Kafka's sasl QOP default: "auth"
MAX_RECEIVE = 65536  # Java's SASL default of javax.security.sasl.maxbuffer
# supplementary status bits of an unwrapped token Java's server refuses (its MessageProp checks)
_REFUSED_SUPPLEMENTARY = {2: "Duplicate token", 16: "Gap token", 4: "Old token", 8: "Token not in sequence"}


class AcceptorContext(Protocol):
    established: bool
    peer: str | None

    def accept(self, token: bytes) -> bytes: ...

    def wrap(self, message: bytes, confidential: bool = False) -> bytes: ...

    def unwrap(self, token: bytes) -> tuple[bytes, int]: ...


class InitiatorContext(Protocol):
    established: bool

    def step(self, token: bytes = b"") -> bytes: ...

    def wrap(self, message: bytes, confidential: bool = False) -> bytes: ...

    def unwrap(self, token: bytes) -> tuple[bytes, int]: ...

    def delete(self) -> None: ...


class GssapiFailure(Exception):
    """A peer's token that breaks the exchange (its text is for the log, not the peer)."""


def layer_offer(layers: int = OFFERED_LAYERS, max_receive: int = MAX_RECEIVE) -> bytes:
    """The server's security-layer message before wrapping: layers, then a 24-bit size."""
    return bytes([layers]) + max_receive.to_bytes(3, "big")


def parse_choice(message: bytes, offered: int = OFFERED_LAYERS) -> tuple[int, int, str | None]:
    """(layer, client's max message size, authorization id or None) from the client's unwrapped
    answer; GssapiFailure for one that is too short or picks a layer not offered."""
    if len(message) < 4:
        raise GssapiFailure(f"Final handshake step failed: {len(message)} bytes, expected at least 4")
    layer = message[0]
    if not layer & offered:
        raise GssapiFailure(f"Client selected unsupported protection: {struct.unpack('b', message[:1])[0]}")
    authzid = message[4:].decode("utf-8", "replace") if len(message) > 4 else None
    return layer, int.from_bytes(message[1:4], "big"), authzid


class GssapiServer:
    """One exchange over one acceptor context; evaluate() each client token."""

    def __init__(self, context: AcceptorContext) -> None:
        self.context = context
        self.stage = 0  # 0: establishing the context, 1: owes the offer, 2: awaits the choice
        self.complete = False
        self.authenticated: str | None = None  # the Kerberos principal, once complete
        self.authorization_id: str | None = None  # what the client asked to act as, if anything

    def evaluate(self, token: bytes) -> bytes | None:
        """The answer to a client token; None when nothing is sent (the exchange is complete)."""
        if self.complete:
            raise GssapiFailure("SASL authentication already complete")
        if self.stage == 1:
            if token:
                raise GssapiFailure("Handshake expecting no response data from server")
            return self._offer()
        if self.stage == 2:
            return self._choice(token)
        answer = self.context.accept(token)
        if not self.context.established:
            return answer
        self.stage = 1
        return answer if answer else self._offer()

    def _offer(self) -> bytes:
        self.stage = 2
        return self.context.wrap(layer_offer(), confidential=False)

    def _choice(self, token: bytes) -> None:
        message, supplementary = self.context.unwrap(token)
        for bit, text in _REFUSED_SUPPLEMENTARY.items():
            if supplementary & bit:
                raise GssapiFailure(f"Handshake failure: {text}")
        _layer, _max_receive, self.authorization_id = parse_choice(message)
        self.authenticated = self.context.peer
        self.complete = True
        return None


class GssapiClient:
    """One exchange over one initiator context; evaluate() the server's answers, starting with
    nothing, until `complete`."""

    def __init__(self, context: InitiatorContext, authorization_id: str | None,
                 max_receive: int = MAX_RECEIVE) -> None:
        self.context = context
        self.authorization_id = authorization_id
        self.max_receive = max_receive
        self.established = False  # the context is; the next answer is the server's offer
        self.complete = False

    def evaluate(self, challenge: bytes) -> bytes:
        """The token to send for the server's last answer (b"" before the first)."""
        if self.complete:
            raise GssapiFailure("SASL authentication already complete")
        if not self.established:
            token = self.context.step(challenge)
            self.established = self.context.established
            return token  # empty once established without a last token: asks for the offer
        offer, _supplementary = self.context.unwrap(challenge)
        if len(offer) < 4:
            raise GssapiFailure(f"the server's security-layer offer has {len(offer)} bytes, expected 4")
        if not offer[0] & NO_SECURITY_LAYER:
            raise GssapiFailure(f"No common protection layer between client and server (offered {offer[0]})")
        self.complete = True
        authzid = (self.authorization_id or "").encode()
        return self.context.wrap(layer_offer(NO_SECURITY_LAYER, self.max_receive) + authzid, confidential=False)
