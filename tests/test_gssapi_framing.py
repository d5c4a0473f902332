"""RFC 4752's security-layer messages as Java's GSSAPI SaslServer frames them for Kafka (QOP
"auth" only): the server's offer and the client's choice, before wrapping (no KDC needed)."""

from __future__ import annotations

import pytest

from wirekafka.security.sasl.gssapi import GssapiClient, GssapiFailure, layer_offer, parse_choice


def test_the_offer_is_no_security_layer_and_javas_65536_byte_buffer() -> None:
    assert layer_offer() == b"\x01\x01\x00\x00"
    assert layer_offer(7, 0x123456) == b"\x07\x12\x34\x56"


def test_the_choice_names_a_layer_a_size_and_maybe_an_authorization_id() -> None:
    assert parse_choice(b"\x01\x00\x00\x00") == (1, 0, None)
    assert parse_choice(b"\x01\x01\x00\x00alice@EXAMPLE.COM") == (1, 65536, "alice@EXAMPLE.COM")
    assert parse_choice("\x01\x00\x00\x00jürgen".encode()) == (1, 0, "jürgen")


@pytest.mark.parametrize("message, error", [
    (b"\x02\x00\x00\x00", "Client selected unsupported protection: 2"),  # integrity: not offered
    (b"\x04\x00\x00\x00", "Client selected unsupported protection: 4"),  # privacy: not offered
    (b"\x80\x00\x00\x00", "Client selected unsupported protection: -128"),  # Java prints a signed byte
    (b"\x01\x00\x00", "Final handshake step failed"),
])
def test_choices_java_refuses(message: bytes, error: str) -> None:
    with pytest.raises(GssapiFailure, match=error):
        parse_choice(message)


class _FakeInitiator:
    """A context established by the server's first answer; wrap and unwrap are the identity."""

    established = False

    def step(self, token: bytes = b"") -> bytes:
        self.established = bool(token)
        return b"" if token else b"ap-req"

    def wrap(self, message: bytes, confidential: bool = False) -> bytes:
        return message

    def unwrap(self, token: bytes) -> tuple[bytes, int]:
        return token, 0


def test_the_client_chooses_no_layer_javas_buffer_and_names_itself() -> None:
    client = GssapiClient(_FakeInitiator(), "kafka/localhost@R")
    assert client.evaluate(b"") == b"ap-req" and not client.established
    assert client.evaluate(b"ap-rep") == b"" and client.established and not client.complete
    assert client.evaluate(b"\x07\x00\x10\x00") == b"\x01\x01\x00\x00kafka/localhost@R" and client.complete
    with pytest.raises(GssapiFailure, match="already complete"):
        client.evaluate(b"")


@pytest.mark.parametrize("offer, error", [(b"\x04\x01\x00\x00", "No common protection layer"),
                                          (b"\x01\x00", "offer has 2 bytes")])
def test_offers_the_client_refuses(offer: bytes, error: str) -> None:
    client = GssapiClient(_FakeInitiator(), None)
    client.evaluate(b"")
    client.evaluate(b"ap-rep")
    with pytest.raises(GssapiFailure, match=error):
        client.evaluate(offer)
