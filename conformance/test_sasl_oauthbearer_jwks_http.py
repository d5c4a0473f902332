"""Kafka's secured OAUTHBEARER validator with its JWKS at an http URL, against Kafka 4.3.1: the
test serves the JWKS on 127.0.0.1 itself (allowed by org.apache.kafka.sasl.oauthbearer.allowed.
urls, given to wirekafka in KAFKA_OPTS), with no expected audience configured. A token signed
with a published key authenticates, unless it names an audience (jose4j's default: an `aud` claim
needs an expected audience to match); a key the provider adds later is unknown at first, so its token is refused, and that unknown kid
makes the broker fetch the JWKS again at once (not an hour later, its refresh interval): a token
with it then authenticates."""

from __future__ import annotations

import http.server
import threading
import time

from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.test_sasl import sasl_listener_settings
from conformance.harness import transcript
from conformance.harness.wire import Connection, poll
from testsupport.jwt_signing import SigningKey, jwks

HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin";')
INVALID = b'{"status":"invalid_token"}'
PUBLISHED = SigningKey.generate("RS256", "rsa-1")
# a key each broker's provider adds once the broker runs (its own, so each broker sees it unknown first)
ADDED = {name: SigningKey.generate("ES256", f"added-{name}") for name in ("wirekafka", "kafka")}


class _Provider(http.server.BaseHTTPRequestHandler):
    """The OAuth provider's JWKS endpoint: the published keys, as they are at each request."""

    keys: list[SigningKey] = [PUBLISHED]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = jwks(*self.keys).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the brokers' fetches are not test output."""


_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
threading.Thread(target=_server.serve_forever, daemon=True).start()
JWKS_URL = f"http://127.0.0.1:{_server.server_address[1]}/jwks"


def _settings(plaintext: int, sasl: int) -> dict[str, str]:
    return {**sasl_listener_settings(plaintext, sasl, {"OAUTHBEARER": JAAS}),
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER,
            "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": JWKS_URL}


own_wirekafka, own_kafka, target = own_two_listener_pair(
    "SASL_PLAINTEXT", _settings, lambda: f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={JWKS_URL}")


def _token(key: SigningKey, **claims: object) -> str:
    now = int(time.time())
    return key.sign({"sub": "alice", "iat": now, "exp": now + 60, **claims})


def _auth_bytes(port: int, token: str) -> bytes:
    """The broker's answer to the token's first message (b"" once authenticated)."""
    with Connection(f"127.0.0.1:{port}") as conn:
        assert conn.call(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
        answer = conn.call(SaslAuthenticateRequest(auth_bytes=f"n,,\x01auth=Bearer {token}\x01\x01".encode()), 2)
        assert answer.error_code == 0
        return answer.auth_bytes


def test_a_token_signed_with_a_published_key(target):
    assert _auth_bytes(target.second, _token(PUBLISHED)) == b""


def test_a_token_naming_an_audience_with_none_expected(target):
    assert _auth_bytes(target.second, _token(PUBLISHED, aud="kafka")) == INVALID


def test_an_unknown_kid_is_refused_then_fetched_at_once(target):
    added = ADDED[target.name]
    _Provider.keys = [*_Provider.keys, added]
    assert _auth_bytes(target.second, _token(added)) == INVALID  # the broker's JWKS is the one of its start
    with transcript.unrecorded():  # until the refetch that refusal started is done (off the record)
        poll(lambda: _auth_bytes(target.second, _token(added)), lambda answer: answer == b"", timeout=30,
             interval=0.1)
    assert _auth_bytes(target.second, _token(added)) == b""
