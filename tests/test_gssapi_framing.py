"""RFC 4752's security-layer messages as Java's GSSAPI SaslServer frames them for Kafka (QOP
"auth" only): the server's offer and the client's choice, before wrapping (no KDC needed)."""

from __future__ import annotations

import pytest

from wirekafka.protocol.sasl_gssapi import GssapiFailure, layer_offer, parse_choice


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
