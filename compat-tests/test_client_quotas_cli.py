"""Client quotas with Kafka's own tool: kafka-configs sets, describes and deletes quotas of users,
client ids, user + client-id pairs, default entities and ip addresses on wirekafka, and prints
what it prints against Kafka 4.3.1 (the expected lines below were read from a real 4.3.1 broker
given the same commands). Before DescribeClientQuotas existed, `kafka-configs --describe
--entity-type users` failed against wirekafka."""

from __future__ import annotations

from kafka_cli import ok

from conformance.harness.wire import poll


def _configs(bootstrap: str, *args: str) -> str:
    return ok("kafka-configs", "--bootstrap-server", bootstrap, *args).strip()


def test_kafka_configs_quotas(broker, topic_name):
    b = broker.bootstrap
    user, client, ip = f"user-{topic_name}", f"app-{topic_name}", "127.0.0.2"
    users = ("--entity-type", "users", "--entity-name", user)
    pair = (*users, "--entity-type", "clients", "--entity-name", client)
    assert _configs(b, "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048",
                    *users) == f"Completed updating config for user {user}."
    assert _configs(b, "--alter", "--add-config", "request_percentage=50", *pair) == \
        f"Completed updating config for user {user}."
    assert _configs(b, "--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "clients",
                    "--entity-default") == "Completed updating default config for clients in the cluster."
    assert _configs(b, "--alter", "--add-config", "connection_creation_rate=10", "--entity-type", "ips",
                    "--entity-name", ip) == f"Completed updating config for ip {ip}."
    try:
        assert _configs(b, "--describe", *users) == (
            f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0")
        assert (f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
                in _configs(b, "--describe", "--entity-type", "users").splitlines())
        assert _configs(b, "--describe", *pair) == (
            f"Quota configs for user-principal '{user}', client-id '{client}' are request_percentage=50.0")
        assert _configs(b, "--describe", "--entity-type", "clients", "--entity-default") == (
            "Quota configs for the default client-id are producer_byte_rate=4096.0")
        assert (f"Quota configs for ip '{ip}' are connection_creation_rate=10.0"
                in _configs(b, "--describe", "--entity-type", "ips").splitlines())
        assert _configs(b, "--alter", "--delete-config", "producer_byte_rate", *users) == \
            f"Completed updating config for user {user}."
        poll(lambda: _configs(b, "--describe", *users),
             lambda out: out == f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0")
    finally:  # the default client quota would reach every later test's clients on this broker
        _configs(b, "--alter", "--delete-config", "producer_byte_rate", "--entity-type", "clients", "--entity-default")
        _configs(b, "--alter", "--delete-config", "connection_creation_rate", "--entity-type", "ips", "--entity-name", ip)
    assert _configs(b, "--describe", "--entity-type", "clients", "--entity-default") == ""
