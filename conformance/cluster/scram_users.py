"""SCRAM credentials in ZooKeeper, checked the same way on a Kafka 3.9 cluster
(compat-tests/test_zookeeper_launcher.py) and on wirekafka's (compat-tests/test_cluster.py):
AlterUserScramCredentials through one broker writes /config/users/<user> in Kafka's JSON with the
credential in its text form (salt, stored and server keys derived from the password, iterations)
and a change notification; every other broker then describes it; a deletion through another
broker removes the user's znode, as its last config is gone."""

from __future__ import annotations

import json

from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

from testsupport.cluster import wait_for
from wirekafka.security.sasl.scram import ScramCredential, salted_password

USER, PASSWORD, ITERATIONS = "scram-zk-user", "zk-secret", 8192


def _described(address: str) -> list[tuple[object, int]] | None:
    admin = AdminClient({"bootstrap.servers": address})  # alive until the result is in
    try:
        description = admin.describe_user_scram_credentials([USER])[USER].result(15)
    except Exception:  # not there (yet): RESOURCE_NOT_FOUND
        return None
    return [(c.mechanism, c.iterations) for c in description.scram_credential_infos]


def check_scram_users(client, addresses: dict[int, str]) -> str:
    """`client`: kazoo on the cluster's chroot; `addresses`: broker id -> host:port."""
    first, *others = sorted(addresses)
    admin = AdminClient({"bootstrap.servers": addresses[first]})
    upsert = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, ITERATIONS),
                                          PASSWORD.encode(), b"zk-salt")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    raw = client.get(f"/config/users/{USER}")[0].decode()
    stored = json.loads(raw)
    assert stored["version"] == 1 and list(stored["config"]) == ["SCRAM-SHA-256"], raw
    credential = ScramCredential.decode(stored["config"]["SCRAM-SHA-256"])
    assert stored["config"]["SCRAM-SHA-256"].startswith("salt=") and credential.salt == b"zk-salt", raw
    expected = ScramCredential.from_salted_password(
        "SCRAM-SHA-256", b"zk-salt", salted_password("SCRAM-SHA-256", PASSWORD, b"zk-salt", ITERATIONS), ITERATIONS)
    assert credential == expected, raw
    changes = sorted(client.get_children("/config/changes"))
    notification = json.loads(client.get(f"/config/changes/{changes[-1]}")[0])
    assert notification == {"version": 2, "entity_path": f"users/{USER}"}, notification
    for broker in others:
        wait_for(lambda: _described(addresses[broker]) == [(ScramMechanism.SCRAM_SHA_256, ITERATIONS)], 30,
                 f"broker {broker} describing {USER}'s credential")
    deletion = UserScramCredentialDeletion(USER, ScramMechanism.SCRAM_SHA_256)
    deleter = AdminClient({"bootstrap.servers": addresses[others[-1]]})  # alive until the results are in
    for future in deleter.alter_user_scram_credentials([deletion]).values():
        future.result(30)
    assert client.exists(f"/config/users/{USER}") is None  # a user left without configs has no znode
    wait_for(lambda: _described(addresses[first]) is None, 30, f"broker {first} forgetting the credential")
    return (f"/config/users/{USER} written as {raw[:60]}..., described by brokers {others}; "
            "deleted with its last credential")
