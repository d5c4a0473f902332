"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer evaluates it: the client's one message is
`[authzid] NUL username NUL password`; the broker's users are the `user_<name>="<password>"`
options of its JAAS login module. Kafka's messages for each refusal reach the client in the
SaslAuthenticate answer, so they are the same here."""

from __future__ import annotations

import hmac
from typing import Mapping

MECHANISM = "PLAIN"


class PlainAuthenticationError(Exception):
    """The client's message does not authenticate; str() is Kafka's message for it."""


def users_of(options: Mapping[str, str]) -> dict[str, str]:
    """username -> password from a PLAIN login module's options (user_<name>=<password>)."""
    return {key[len("user_"):]: value for key, value in options.items() if key.startswith("user_")}


def client_message(username: str, password: str) -> bytes:
    """What a client sends: no authorization id, then the username and password."""
    return b"\x00" + username.encode() + b"\x00" + password.encode()


def authenticate(message: bytes, users: Mapping[str, str]) -> str:
    """The authenticated username, or PlainAuthenticationError with Kafka's message."""
    text = message.decode("utf-8", "replace")
    tokens = text.split("\x00", 3)
    if len(tokens) != 3:
        raise PlainAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    authorization_id, username, password = tokens
    if not username:
        raise PlainAuthenticationError("Authentication failed: username not specified")
    if not password:
        raise PlainAuthenticationError("Authentication failed: password not specified")
    expected = users.get(username)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise PlainAuthenticationError("Authentication failed: Invalid username or password")
    if authorization_id and authorization_id != username:
        raise PlainAuthenticationError("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
    return username
