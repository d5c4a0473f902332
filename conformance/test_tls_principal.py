"""A TLS client's principal against Kafka 4.3.1: a listener requiring client certificates and
mapping their subject with ssl.principal.mapping.rules names the client "CLIENT-MAPPED" (its
certificate is CN=client; the rule keeps the CN, appends "-mapped" and upper-cases it), and a
user quota on that name throttles the client's produce requests, as Kafka's default principal
builder and quota callback do. A quota for the unmapped subject does not apply.

The pair is this module's own: a PLAINTEXT listener for setting quotas and an SSL one with
ssl.client.auth=required and the mapping rule."""

from __future__ import annotations

import ssl

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.producer.produce import ProduceRequest

from conformance.harness.own_brokers import own_two_listener_pair
from conformance.harness.scenarios import batch
from conformance.harness.wire import Connection, create_topic, poll, unique
from testsupport.tls_material import TlsMaterial, shared

_Entry = AlterClientQuotasRequest.EntryData
MAPPED = "CLIENT-MAPPED"


def _material() -> TlsMaterial:
    return shared("conformance-tls-principal-")


def _settings(plaintext: int, ssl_port: int) -> dict[str, str]:
    return {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SSL://127.0.0.1:{ssl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", **_material().broker_settings("listener.name.ssl."),
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*)$/$1-mapped/U"}


own_wirekafka, own_kafka, target = own_two_listener_pair("SSL", _settings)


def _client_tls() -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(_material().broker_pem))
    context.load_cert_chain(str(_material().client_pem), str(_material().client_key))
    return context


def _set_user_quota(conn: Connection, user: str, value: float | None) -> None:
    answer = conn.call(AlterClientQuotasRequest(entries=[_Entry(
        entity=[_Entry.EntityData(entity_type="user", entity_name=user)],
        ops=[_Entry.OpData(key="producer_byte_rate", value=value or 0.0, remove=value is None)])],
        validate_only=False), 1)
    assert [e.error_code for e in answer.entries] == [0]
    describe = DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
        entity_type="user", match_type=0, match=user)], strict=True)
    expected = [] if value is None else [value]
    poll(lambda: conn.call(describe, 1), lambda r: [v.value for e in r.entries for v in e.values] == expected)


def _produce_throttles(conn: Connection, topic: str, count: int) -> list[int]:
    records = batch([b"p" * 240_000])
    throttles = []
    for _ in range(count):
        answer = conn.call(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])]), 9)
        assert answer.responses[0].partition_responses[0].error_code == 0
        throttles.append(answer.throttle_time_ms)
    return throttles


def test_a_mapped_certificate_principal_gets_its_user_quota(target):
    topic = unique("tls-principal")
    with Connection(target.bootstrap(target.plaintext)) as admin:
        create_topic(admin, topic)
        try:
            _set_user_quota(admin, MAPPED, 50_000)
            with Connection(target.bootstrap(target.second), tls=_client_tls()) as conn:
                throttles = _produce_throttles(conn, topic, 3)
            # 720 kB over the 10 s window is 72 kB/s: (72 - 50) / 50 x 10 s of throttle
            assert throttles[:2] == [0, 0] and 3000 < throttles[2] <= 4500, throttles
            _set_user_quota(admin, MAPPED, None)
            _set_user_quota(admin, "CN=client", 50_000)  # the unmapped subject: not this client's name
            with Connection(target.bootstrap(target.second), tls=_client_tls()) as conn:
                assert _produce_throttles(conn, topic, 3) == [0, 0, 0]
        finally:
            _set_user_quota(admin, "CN=client", None)
