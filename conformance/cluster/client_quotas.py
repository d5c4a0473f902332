"""Client quotas in ZooKeeper, checked the same way on a Kafka 3.9 cluster
(compat-tests/test_zookeeper_launcher.py) and on wirekafka's (compat-tests/test_cluster.py):
AlterClientQuotas through one broker writes /config/users/<user>, /config/users/<user>/clients/
<client>, /config/clients/<default> and /config/ips/<ip> in Kafka's JSON (values as strings: longs
and ints as integers, doubles as Java prints them), next to a user's SCRAM credential, each with a
change notification; another broker then describes them; removing them through that broker
empties the znodes (a user keeps its credential), and an emptied quota znode is deleted."""

from __future__ import annotations

import json

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from conformance.harness.wire import Connection
from testsupport.cluster import wait_for

USER, CLIENT, IP = "quota-zk-user", "quota-zk-app", "127.0.0.3"
_Entry = AlterClientQuotasRequest.EntryData


def _alter(address: str, entity: list[tuple[str, str | None]], ops: dict[str, float | None]) -> None:
    with Connection(address) as conn:
        answer = conn.call(AlterClientQuotasRequest(entries=[_Entry(
            entity=[_Entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            ops=[_Entry.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()])],
            validate_only=False), 1)
    assert [(e.error_code, e.error_message) for e in answer.entries] == [(0, None)], answer


def _described(address: str, entity_type: str, name: str | None) -> dict[str, float]:
    component = DescribeClientQuotasRequest.ComponentData(entity_type=entity_type, match_type=0 if name else 1,
                                                          match=name)
    with Connection(address) as conn:
        answer = conn.call(DescribeClientQuotasRequest(components=[component], strict=True), 1)
    return {v.key: v.value for e in answer.entries for v in e.values}


def _config(client, path: str) -> dict[str, str] | None:
    found = client.exists(path)
    if found is None:
        return None
    stored = json.loads(client.get(path)[0])
    assert stored["version"] == 1, stored
    return stored["config"]


def check_client_quotas(client, addresses: dict[int, str]) -> str:
    """`client`: kazoo on the cluster's chroot; `addresses`: broker id -> host:port."""
    first, *others = sorted(addresses)
    other = addresses[others[-1]]
    admin = AdminClient({"bootstrap.servers": addresses[first]})
    upsert = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          b"quota-secret", b"quota-salt")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    writes = [([("user", USER)], {"producer_byte_rate": 1024.0, "request_percentage": 50.0}, f"users/{USER}"),
              ([("user", USER), ("client-id", CLIENT)], {"consumer_byte_rate": 2048.0}, f"users/{USER}/clients/{CLIENT}"),
              ([("client-id", None)], {"producer_byte_rate": 4096.0}, "clients/<default>"),
              ([("ip", IP)], {"connection_creation_rate": 7.0}, f"ips/{IP}")]
    try:
        for entity, ops, path in writes:
            _alter(addresses[first], entity, ops)
            changes = sorted(client.get_children("/config/changes"))
            notification = json.loads(client.get(f"/config/changes/{changes[-1]}")[0])
            assert notification == {"version": 2, "entity_path": path}, notification
        user_config = _config(client, f"/config/users/{USER}")
        assert user_config is not None and user_config.pop("SCRAM-SHA-256").startswith("salt=")
        assert user_config == {"producer_byte_rate": "1024", "request_percentage": "50.0"}
        assert _config(client, f"/config/users/{USER}/clients/{CLIENT}") == {"consumer_byte_rate": "2048"}
        assert _config(client, "/config/clients/<default>") == {"producer_byte_rate": "4096"}
        assert _config(client, f"/config/ips/{IP}") == {"connection_creation_rate": "7"}
        wait_for(lambda: _described(other, "user", USER) == {"producer_byte_rate": 1024.0, "request_percentage": 50.0},
                 30, f"broker {others[-1]} describing {USER}'s quotas")
        wait_for(lambda: _described(other, "ip", IP) == {"connection_creation_rate": 7.0}, 30,
                 f"broker {others[-1]} describing {IP}'s quota")
        _alter(other, [("user", USER)], {"producer_byte_rate": None, "request_percentage": None})
        _alter(other, [("user", USER), ("client-id", CLIENT)], {"consumer_byte_rate": None})
        assert list(_config(client, f"/config/users/{USER}") or {}) == ["SCRAM-SHA-256"]  # the credential stays
        assert client.exists(f"/config/users/{USER}/clients/{CLIENT}") is None
    finally:  # a default client quota would reach the cluster's other tests
        _alter(other, [("client-id", None)], {"producer_byte_rate": None})
        _alter(other, [("ip", IP)], {"connection_creation_rate": None})
    assert client.exists("/config/clients/<default>") is None and client.exists(f"/config/ips/{IP}") is None
    return (f"quota znodes of {USER}, {USER}/{CLIENT}, the default client and {IP} written with their "
            f"notifications, described by broker {others[-1]}, emptied and removed")
