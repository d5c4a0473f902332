"""The ACLs a ZooKeeper-mode broker with ``zookeeper.set.acl=true`` puts on its znodes, checked the
same way on a real Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py) and on wirekafka's:
one function, so both are held to the same test.

Kafka 3.9.1's rule (``ZkData.defaultAcls``), as read back from its znodes over SASL DIGEST-MD5
(id ``sasl:<user>``), over SASL GSSAPI (id ``sasl:<full principal>``) and over TLS with a client
certificate (id ``x509:<subject DN>``):

- every znode, the chroot Kafka creates included: ALL (31) for the broker's authenticated id,
  then READ (1) for world:anyone;
- the credentials' subtrees, /config/users, /config/brokers and /delegation_token/tokens, each
  with its children: ALL for the broker's id only (/delegation_token itself and its
  token_changes are readable by all: the sensitive root is /delegation_token/tokens);
- /consumers (the old consumers', written by clients): ALL for world:anyone.

The check makes the broker write a topic, a SCRAM credential (/config/users/<user>) and a dynamic
broker config (/config/brokers/<id>), both with a change notification, then walks the whole tree
under the reader's chroot. The reader must hold the broker's id, or be a super user: a znode only
the broker may read does not show its ACL to anyone else either (ZooKeeper wants READ or ADMIN
for getACL)."""

from __future__ import annotations

from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   ResourceType, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import Permissions

from testsupport.cluster import wait_for

TOPIC = "acl-secured"
USER = "acl-scram-user"
THROTTLE = "leader.replication.throttled.rate"  # a per-broker dynamic config Kafka and wirekafka accept
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
OPEN_PATHS = ("/consumers",)
WORLD = ("world", "anyone")

AclList = list[tuple[int, str, str]]  # (perms, scheme, id), in ZooKeeper's order


def expected_acls(path: str, writer_id: tuple[str, str]) -> AclList:
    """Kafka 3.9's ACL list for a znode at ``path`` (relative to the chroot) created by a broker
    whose session is authenticated as ``writer_id`` (scheme, id)."""
    if path in OPEN_PATHS:
        return [(Permissions.ALL, *WORLD)]
    if any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS):
        return [(Permissions.ALL, *writer_id)]
    return [(Permissions.ALL, *writer_id), (Permissions.READ, *WORLD)]


def required_paths(broker_ids: list[str]) -> list[str]:
    """The znodes any ZooKeeper-mode broker has written by the time the check looks."""
    state = f"/brokers/topics/{TOPIC}/partitions/0/state"
    return [*(f"/brokers/ids/{b}" for b in broker_ids), f"/brokers/topics/{TOPIC}", state, "/brokers/seqid",
            "/controller", "/controller_epoch", "/cluster/id", f"/config/topics/{TOPIC}", "/config/changes",
            "/config/users", f"/config/users/{USER}", "/config/brokers", f"/config/brokers/{broker_ids[0]}",
            "/consumers", "/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block"]


def _acls(client: KazooClient, path: str) -> AclList:
    return [(acl.perms, acl.id.scheme, acl.id.id) for acl in client.get_acls(path)[0]]


def _walk(client: KazooClient) -> dict[str, AclList]:
    """Every znode under the client's chroot (the chroot itself as "/"; ZooKeeper's own /zookeeper
    when there is none is left out) -> its ACLs. A znode gone between listing and reading (a
    processed notification) is skipped."""
    found: dict[str, AclList] = {}
    pending = ["/"]
    while pending:
        path = pending.pop()
        try:
            if path != "/" or client.chroot:
                found[path] = _acls(client, path)
            children = client.get_children(path)
        except NoNodeError:
            continue
        pending.extend(f"{path.rstrip('/')}/{child}" for child in children
                       if client.chroot or path != "/" or child != "zookeeper")
    return dict(sorted(found.items()))


def _outcome(action) -> str:
    try:
        action()
    except NoAuthError:
        return "NoAuthError"
    return "ok"


def _make_the_broker_write(bootstrap: str, broker_ids: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    replicas = min(len(broker_ids), 3)
    admin.create_topics([NewTopic(TOPIC, 1, replicas, config={"min.insync.replicas": "1"})])[TOPIC].result(30)
    upsert = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                          b"acl-secret", b"acl-salt")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    throttle = ConfigResource(ResourceType.BROKER, broker_ids[0], incremental_configs=[
        ConfigEntry(THROTTLE, "1048576", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([throttle]).values():
        future.result(30)


def _summary(acls: dict[str, AclList]) -> str:
    groups: dict[tuple, list[str]] = {}
    for path, acl in acls.items():
        groups.setdefault(tuple(acl), []).append(path)
    return "; ".join(f"{len(paths)} znode(s) {[f'{p}:{s}:{i}' for p, s, i in acl]}"
                     + (f" ({', '.join(paths)})" if len(paths) <= 6 else "")
                     for acl, paths in sorted(groups.items(), key=lambda item: -len(item[1])))


def check_secure_acls(reader: KazooClient, writer_id: tuple[str, str], anonymous: KazooClient,
                      bootstrap: str) -> str:
    """Make the cluster at ``bootstrap`` write its znodes, then assert each one's ACLs follow
    Kafka 3.9's rule for a broker authenticated as ``writer_id`` (("sasl", "kafka"),
    ("x509", "CN=client")) and that ``anonymous`` cannot write or read what the rule keeps from
    it. ``reader`` (authenticated as the broker, or a super user) and ``anonymous`` are kazoo
    clients on the cluster's chroot. Returns a short summary."""
    broker_ids = sorted(reader.get_children("/brokers/ids"), key=int)
    assert broker_ids, "no broker registered"
    _make_the_broker_write(bootstrap, broker_ids)
    state = f"/brokers/topics/{TOPIC}/partitions/0/state"
    wait_for(lambda: reader.exists(state), 30, f"{state} written by the controller")

    acls = _walk(reader)
    listing = "\n".join(f"  {path}: {acl}" for path, acl in acls.items())
    missing = [path for path in required_paths(broker_ids) if path not in acls]
    assert not missing, f"znodes missing: {missing}; found:\n{listing}"
    wrong = {path: acl for path, acl in acls.items() if acl != expected_acls(path, writer_id)}
    assert not wrong, (f"ACLs not Kafka 3.9's for {writer_id}: "
                       + ", ".join(f"{p}: {a} != {expected_acls(p, writer_id)}" for p, a in wrong.items())
                       + f"\nall:\n{listing}")

    outcomes = {
        "set /brokers/topics": _outcome(lambda: anonymous.set("/brokers/topics", b"")),
        "create /brokers/topics/<t>": _outcome(lambda: anonymous.create("/brokers/topics/anonymous", b"{}")),
        f"read /brokers/topics/{TOPIC}": _outcome(lambda: anonymous.get(f"/brokers/topics/{TOPIC}")),
        "read /config/users": _outcome(lambda: anonymous.get_children("/config/users")),
        f"read /config/users/{USER}": _outcome(lambda: anonymous.get(f"/config/users/{USER}")),
        f"read /config/brokers/{broker_ids[0]}": _outcome(lambda: anonymous.get(f"/config/brokers/{broker_ids[0]}")),
        "create and delete /consumers/<c>": _outcome(lambda: (anonymous.create("/consumers/anonymous", b""),
                                                              anonymous.delete("/consumers/anonymous"))),
    }
    assert outcomes == {"set /brokers/topics": "NoAuthError", "create /brokers/topics/<t>": "NoAuthError",
                        f"read /brokers/topics/{TOPIC}": "ok", "read /config/users": "NoAuthError",
                        f"read /config/users/{USER}": "NoAuthError",
                        f"read /config/brokers/{broker_ids[0]}": "NoAuthError",
                        "create and delete /consumers/<c>": "ok"}, outcomes
    return (f"{len(acls)} znodes: {_summary(acls)}\n"
            f"anonymous: {', '.join(f'{what} -> {result}' for what, result in outcomes.items())}")
