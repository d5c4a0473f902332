"""ACLs in a ZooKeeper-mode cluster with Kafka 3.9's AclAuthorizer, checked the same way on a real
Kafka 3.9.1 cluster and on wirekafka's (compat-tests/test_cluster_acls.py): one function, so both
are held to the same test.

Each broker has a PLAINTEXT listener (the inter-broker one; its User:ANONYMOUS is a super user, as
an inter-broker principal must be) and a SASL_PLAINTEXT one where admin (a super user), alice and
bob log in with PLAIN. The check:
- ACLs created as admin through broker 1 are in ZooKeeper in Kafka's paths and exact bytes
  (/kafka-acl/Topic/<name>, /kafka-acl-extended/prefixed/Group/<prefix>), announced by change
  notifications (`TOPIC:<name>`, the extended JSON event);
- broker 2 lists them in DescribeAcls (it learnt them from the notifications);
- alice's Metadata on broker 3 shows a topic only once she is granted DESCRIBE on it (through
  broker 1), and no longer once the grant is deleted (through broker 1 again): the resource znode
  left empty is removed, and the deletion announced."""

from __future__ import annotations

import json

from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from testsupport.cluster import wait_for

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
AUTHORIZER_SETTINGS = {"authorizer.class.name": ACL_AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS"}


def listener_overrides(plaintext: int, sasl: int) -> dict[str, str]:
    """One broker's listeners: PLAINTEXT (inter-broker) on `plaintext`, SASL_PLAINTEXT (PLAIN) on `sasl`."""
    listeners = f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    return {"listeners": listeners, "advertised.listeners": listeners,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}


def sasl_admin(sasl: str, user: str) -> AdminClient:
    """An admin client logged in as `user` (PLAIN) on the SASL listener `sasl`."""
    return AdminClient({"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                        "sasl.username": user, "sasl.password": f"{user}-secret"})


def _changes(client, directory: str) -> list[bytes]:
    """The change notifications' data, in sequence order."""
    return [client.get(f"{directory}/{c}")[0] for c in sorted(client.get_children(directory))]


def _data(client, path: str) -> bytes | None:
    stat = client.exists(path)
    return client.get(path)[0] if stat is not None else None


def visible(sasl: str, user: str, topic: str) -> bool:
    """Whether `user`'s Metadata (all topics) on the SASL listener `sasl` lists `topic`."""
    return topic in sasl_admin(sasl, user).list_topics(timeout=10).topics


def check_cluster_acls(client, sasl: dict[int, str], prefix: str = "acl") -> str:
    """`client`: kazoo on the cluster's chroot; `sasl`: broker id -> its SASL listener's
    host:port (brokers 1, 2 and 3). Returns a summary with the znodes read."""
    topic, hidden = f"{prefix}-topic", f"{prefix}-hidden"
    admin1 = sasl_admin(sasl[1], "admin")
    for name in (topic, hidden):
        admin1.create_topics([NewTopic(name, 1, 3)], request_timeout=30)[name].result(30)
    allow_read = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)
    deny_bob = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "127.0.0.1",
                          AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY)
    group_all = AclBinding(ResourceType.GROUP, f"{prefix}-g", ResourcePatternType.PREFIXED, "User:alice", "*",
                           AclOperation.ALL, AclPermissionType.ALLOW)
    for future in admin1.create_acls([allow_read, deny_bob, group_all], request_timeout=30).values():
        future.result(30)

    topic_path, group_path = f"/kafka-acl/Topic/{topic}", f"/kafka-acl-extended/prefixed/Group/{prefix}-g"
    topic_acls = (b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"},'
                  b'{"principal":"User:bob","permissionType":"Deny","host":"127.0.0.1","operation":"DescribeConfigs"}'
                  b'],"version":1}')
    group_acls = b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"All"}],"version":1}'
    assert _data(client, topic_path) == topic_acls, _data(client, topic_path)
    assert _data(client, group_path) == group_acls, _data(client, group_path)
    assert client.get("/kafka-acl/Topic")[0] is None  # Kafka's createAclPaths writes no data
    assert f"TOPIC:{topic}".encode() in _changes(client, "/kafka-acl-changes")
    group_event = {"version": 1, "resourceType": "GROUP", "name": f"{prefix}-g", "patternType": "PREFIXED"}
    assert json.dumps(group_event, separators=(",", ":")).encode() in _changes(client, "/kafka-acl-extended-changes")
    assert all(c.startswith("acl_changes_") and len(c) == len("acl_changes_") + 10
               for d in ("/kafka-acl-changes", "/kafka-acl-extended-changes") for c in client.get_children(d))

    admin2 = sasl_admin(sasl[2], "admin")
    wanted = {allow_read, deny_bob, group_all}
    shown = wait_for(lambda: (lambda found: found if wanted <= found else None)(
                         set(admin2.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                                                   None, None, AclOperation.ANY,
                                                                   AclPermissionType.ANY)).result(30))),
                     30, "broker 2 to list the ACLs created through broker 1")

    assert not visible(sasl[3], "alice", hidden)
    describe = AclBinding(ResourceType.TOPIC, hidden, ResourcePatternType.LITERAL, "User:alice", "*",
                          AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    for future in admin1.create_acls([describe], request_timeout=30).values():
        future.result(30)
    wait_for(lambda: visible(sasl[3], "alice", hidden), 30, "alice to see the topic on broker 3 after the grant")
    hidden_path = f"/kafka-acl/Topic/{hidden}"
    assert _data(client, hidden_path) == (b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*",'
                                          b'"operation":"Describe"}],"version":1}')

    before = len(_changes(client, "/kafka-acl-changes"))
    deleted = admin1.delete_acls([AclBindingFilter(ResourceType.TOPIC, hidden, ResourcePatternType.LITERAL,
                                                   "User:alice", None, AclOperation.ANY, AclPermissionType.ANY)],
                                 request_timeout=30)
    assert [list(f.result(30)) for f in deleted.values()] == [[describe]]
    wait_for(lambda: not visible(sasl[3], "alice", hidden), 30, "alice to lose the topic on broker 3")
    assert _data(client, hidden_path) is None  # left empty: the resource znode is gone
    changes = _changes(client, "/kafka-acl-changes")
    assert len(changes) == before + 1 and changes[-1] == f"TOPIC:{hidden}".encode(), changes
    return (f"{topic_path}: {topic_acls.decode()}\n{group_path}: {group_acls.decode()}\n"
            f"broker 2 listed {len(shown)} ACLs; alice saw {hidden} on broker 3 only while granted DESCRIBE")
