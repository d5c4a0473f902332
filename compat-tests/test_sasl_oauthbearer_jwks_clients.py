"""A stock client against Kafka's secured OAUTHBEARER validator (KIP-768): confluent-kafka hands
the broker a signed JWT from its token callback (as an application with its own OAuth provider
does); the broker checks it against a JWKS file and lets it produce and consume, while a token
for another audience is refused as an authentication failure.

One broker for the module: a PLAINTEXT listener and a SASL_PLAINTEXT one whose OAUTHBEARER server
callback handler is Kafka's OAuthBearerValidatorCallbackHandler, its JWKS a file: URL allowed by
KAFKA_OPTS. The wire-level answers are compared with Kafka 4.3.1 in
conformance/test_sasl_oauthbearer_jwks.py."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
from confluent_kafka import KafkaError, Producer

from secure_clients import confluent_round_trip
from testsupport.broker_process import BrokerProcess, free_port
from testsupport.jwt_signing import SigningKey, jwks

HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin";')
KEY = SigningKey.generate("RS256", "provider-1")


@pytest.fixture(scope="module")
def sasl_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("oauth-jwks")
    jwks_file = directory / "jwks.json"
    jwks_file.write_text(jwks(KEY))
    url = f"file:{jwks_file}"
    plaintext, sasl = free_port(), free_port()
    proc = BrokerProcess(directory / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER,
        "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": url,
        "sasl.oauthbearer.expected.audience": "kafka",
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"},
        port=plaintext, env={"KAFKA_OPTS": f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={url}"}).start()
    yield f"127.0.0.1:{sasl}"
    proc.stop()


def _client(address: str, audience: str) -> dict[str, object]:
    def token(_config: str) -> tuple[str, float, str, dict[str, str]]:
        now = int(time.time())
        signed = KEY.sign({"sub": "alice", "iat": now, "exp": now + 300, "aud": audience, "scope": "kafka"})
        return signed, now + 300, "alice", {}

    return {"bootstrap.servers": address, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": token}


def test_confluent_kafka_with_a_signed_token(sasl_address: str) -> None:
    values = [b"s1", b"s2"]
    assert confluent_round_trip(_client(sasl_address, "kafka"), "oauth-jwks", values) == values


def test_a_token_for_another_audience_is_an_authentication_failure(sasl_address: str) -> None:
    errors: list[KafkaError] = []
    producer = Producer({**_client(sasl_address, "elsewhere"), "error_cb": errors.append,
                         "message.timeout.ms": 3000})
    producer.produce("oauth-jwks-refused", b"x")
    producer.flush(10)
    assert any(e.code() == KafkaError._AUTHENTICATION and "invalid_token" in e.str() for e in errors), errors
