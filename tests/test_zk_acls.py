"""Kafka 3.9's ACL znodes (wirekafka/broker/metadata/zk/acl_znodes.py): paths, the resource and change
notification bytes against what a Kafka 3.9.1 broker with AclAuthorizer wrote (read back with
kazoo), decoding what Kafka accepts and refusing what it refuses, and the conditional update,
notification and purge steps on an in-memory ZooKeeper."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from wirekafka.security.acl.authorizer import (AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType,
                                         ResourcePattern, ResourceType)
from wirekafka.broker.metadata.zk import acl_znodes as za
from wirekafka.broker.metadata.zk.layout import ZkDataError

ALICE_READ = AccessControlEntry("User:alice", "*", AclOperation.READ, PermissionType.ALLOW)
BOB_DENY = AccessControlEntry("User:bob", "127.0.0.1", AclOperation.DESCRIBE_CONFIGS, PermissionType.DENY)
T1 = ResourcePattern(ResourceType.TOPIC, "t1", PatternType.LITERAL)
PRE = ResourcePattern(ResourceType.GROUP, "pre", PatternType.PREFIXED)

# written by Kafka 3.9.1 (AclAuthorizer) for CreateAcls of these bindings
KAFKA_T1 = (b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"},'
            b'{"principal":"User:bob","permissionType":"Deny","host":"127.0.0.1","operation":"DescribeConfigs"}],'
            b'"version":1}')
KAFKA_CLUSTER = (b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*",'
                 b'"operation":"IdempotentWrite"}],"version":1}')
KAFKA_GROUP_CHANGE = b'{"version":1,"resourceType":"GROUP","name":"pre","patternType":"PREFIXED"}'


# ---- paths ----------------------------------------------------------------------------------------
def test_resource_paths_spell_types_as_kafka() -> None:
    assert za.resource_path(T1) == "/kafka-acl/Topic/t1"
    assert za.resource_path(PRE) == "/kafka-acl-extended/prefixed/Group/pre"
    assert za.resource_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "*", PatternType.LITERAL)) == \
        "/kafka-acl/TransactionalId/*"
    assert za.resource_path(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)) == \
        "/kafka-acl/Cluster/kafka-cluster"
    assert za.resource_path(ResourcePattern(ResourceType.DELEGATION_TOKEN, "d", PatternType.PREFIXED)) == \
        "/kafka-acl-extended/prefixed/DelegationToken/d"
    assert za.resource_path(ResourcePattern(ResourceType.USER, "u", PatternType.LITERAL)) == "/kafka-acl/User/u"
    with pytest.raises(ValueError):
        za.acl_root(PatternType.MATCH)


def test_acl_paths_are_what_kafka_creates_at_start() -> None:
    """The znodes a Kafka 3.9.1 broker with AclAuthorizer had created before any ACL existed."""
    kafka = {"/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended", "/kafka-acl-extended/prefixed",
             "/kafka-acl-extended-changes"}
    kafka |= {f"{root}/{t}" for root in ("/kafka-acl", "/kafka-acl-extended/prefixed")
              for t in ("Cluster", "DelegationToken", "Group", "Topic", "TransactionalId", "User")}
    levels = za.acl_paths()
    assert {p for level in levels for p in level} == kafka
    created: set[str] = {"/"}
    for level in levels:  # every parent comes in an earlier level
        assert all(p.rsplit("/", 1)[0] or "/" in created for p in level)
        created |= set(level)


def test_change_sequence() -> None:
    assert za.change_sequence("acl_changes_0000000007") == 7
    assert za.change_sequence("acl_changes_") is None
    assert za.change_sequence("config_change_0000000001") is None


# ---- resource znodes --------------------------------------------------------------------------------
def test_resource_acls_encode_as_kafka_wrote_them() -> None:
    assert za.encode_acls([ALICE_READ, BOB_DENY]) == KAFKA_T1
    cluster_entry = AccessControlEntry("User:alice", "*", AclOperation.IDEMPOTENT_WRITE, PermissionType.ALLOW)
    assert za.encode_acls([cluster_entry]) == KAFKA_CLUSTER


def test_resource_acls_decode_in_order_and_round_trip() -> None:
    assert za.decode_acls(KAFKA_T1) == [ALICE_READ, BOB_DENY]
    every = [AccessControlEntry("User:*", "*", op, PermissionType.ALLOW)
             for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
    assert za.decode_acls(za.encode_acls(every)) == every


def test_resource_acls_decode_what_kafka_accepts() -> None:
    """The layout's documented example (spaces, another key order), upper-case names, an
    operation Kafka does not know (UNKNOWN), a duplicate (a set), no data."""
    doc = (b'{"version": 1, "acls": [ { "host":"host1", "permissionType": "Deny","operation": "Read",'
           b'"principal": "User:alice"}, {"host":"*", "permissionType": "ALLOW", "operation": "DESCRIBECONFIGS",'
           b'"principal": "User:bob"}, {"host":"*", "permissionType": "Allow", "operation": "Fly",'
           b'"principal": "User:bob"}, { "host":"host1", "permissionType": "Deny","operation": "Read",'
           b'"principal": "User:alice"}]}')
    assert za.decode_acls(doc) == [
        AccessControlEntry("User:alice", "host1", AclOperation.READ, PermissionType.DENY),
        AccessControlEntry("User:bob", "*", AclOperation.DESCRIBE_CONFIGS, PermissionType.ALLOW),
        AccessControlEntry("User:bob", "*", AclOperation.UNKNOWN, PermissionType.ALLOW)]
    assert za.decode_acls(None) == [] and za.decode_acls(b"") == []


@pytest.mark.parametrize("data", [
    b'{"version":2,"acls":[]}',
    b'{"acls":[]}',
    b'{"version":1}',
    b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","host":"*","operation":"Read"}]}',
    b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read"}]}',
    b'{"version":1,"acls":["x"]}',
    b'not json',
    b'[1]',
])
def test_resource_acls_kafka_refuses(data: bytes) -> None:
    with pytest.raises(ZkDataError):
        za.decode_acls(data)


# ---- change notifications -----------------------------------------------------------------------------
def test_change_notifications_encode_as_kafka_wrote_them() -> None:
    assert za.encode_change(T1) == b"TOPIC:t1"
    assert za.encode_change(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)) == \
        b"CLUSTER:kafka-cluster"
    assert za.encode_change(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "*", PatternType.LITERAL)) == \
        b"TRANSACTIONAL_ID:*"
    assert za.encode_change(PRE) == KAFKA_GROUP_CHANGE
    assert za.change_directory(PatternType.LITERAL) == "/kafka-acl-changes"
    assert za.change_directory(PatternType.PREFIXED) == "/kafka-acl-extended-changes"


def test_change_notifications_decode() -> None:
    assert za.decode_change(za.LITERAL_CHANGES, b"TOPIC:t1") == T1
    assert za.decode_change(za.LITERAL_CHANGES, b"Topic:a:b") == ResourcePattern(ResourceType.TOPIC, "a:b",
                                                                                  PatternType.LITERAL)
    assert za.decode_change(za.EXTENDED_CHANGES, KAFKA_GROUP_CHANGE) == PRE
    # Kafka reads a literal pattern from the extended directory too (and re-reads that resource)
    assert za.decode_change(za.EXTENDED_CHANGES, b'{"version":1,"resourceType":"Group","name":"g",'
                                                 b'"patternType":"LITERAL"}') == \
        ResourcePattern(ResourceType.GROUP, "g", PatternType.LITERAL)


@pytest.mark.parametrize("directory, data", [
    (za.LITERAL_CHANGES, b"no separator"),
    (za.LITERAL_CHANGES, b"BROKER:x"),
    (za.LITERAL_CHANGES, b"ANY:x"),
    (za.EXTENDED_CHANGES, b'{"version":2,"resourceType":"GROUP","name":"pre","patternType":"PREFIXED"}'),
    (za.EXTENDED_CHANGES, b'{"version":1,"resourceType":"GROUP","name":"pre","patternType":"prefixed"}'),
    (za.EXTENDED_CHANGES, b'{"version":1,"resourceType":"GROUP","patternType":"PREFIXED"}'),
    (za.EXTENDED_CHANGES, b"TOPIC:t1"),
    (za.EXTENDED_CHANGES, None),
])
def test_change_notifications_that_name_no_resource(directory: str, data: bytes | None) -> None:
    with pytest.raises(ZkDataError):
        za.decode_change(directory, data)


# ---- updates, notifications and purging on an in-memory ZooKeeper ---------------------------------------
@dataclass
class _Stat:
    version: int
    ctime: int


class _Done:
    def __init__(self, fn) -> None:
        try:
            self.value, self.error = fn(), None
        except Exception as e:  # noqa: BLE001 - handed back like kazoo's async result
            self.value, self.error = None, e

    def get(self):
        if self.error is not None:
            raise self.error
        return self.value


class _FakeZk:
    """Enough of kazoo's client for zk_acls' worker functions: versions, sequential nodes,
    creation times; `races` bumps a path's version just before the next conditional write."""

    def __init__(self, now_ms: int = 10_000_000) -> None:
        self.nodes: dict[str, tuple[bytes | None, _Stat]] = {"/": (None, _Stat(0, 0))}
        self.sequence: dict[str, int] = {}
        self.now_ms = now_ms
        self.races: dict[str, int] = {}

    def _parent(self, path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def create(self, path: str, value: bytes | None = b"", sequence: bool = False) -> str:
        if sequence:
            n = self.sequence.get(self._parent(path), 0)
            self.sequence[self._parent(path)] = n + 1
            path = f"{path}{n:010d}"
        if path in self.nodes:
            raise NodeExistsError()
        if self._parent(path) not in self.nodes:
            raise NoNodeError()
        self.nodes[path] = (value, _Stat(0, self.now_ms))
        return path

    def create_async(self, path: str, value: bytes | None = b""):
        return _Done(lambda: self.create(path, value))

    def _race(self, path: str) -> None:
        if self.races.get(path):
            self.races[path] -= 1
            data, stat = self.nodes[path]
            self.nodes[path] = (data, _Stat(stat.version + 1, stat.ctime))

    def set(self, path: str, value: bytes, version: int = -1) -> _Stat:
        if path not in self.nodes:
            raise NoNodeError()
        self._race(path)
        stat = self.nodes[path][1]
        if version != -1 and version != stat.version:
            raise BadVersionError()
        self.nodes[path] = (value, _Stat(stat.version + 1, stat.ctime))
        return self.nodes[path][1]

    def delete(self, path: str, version: int = -1) -> None:
        if path not in self.nodes:
            raise NoNodeError()
        self._race(path)
        if version != -1 and version != self.nodes[path][1].version:
            raise BadVersionError()
        del self.nodes[path]

    def delete_async(self, path: str):
        return _Done(lambda: self.delete(path))

    def get(self, path: str, watch=None):
        if path not in self.nodes:
            raise NoNodeError()
        return self.nodes[path]

    def get_async(self, path: str, watch=None):
        return _Done(lambda: self.get(path))

    def exists_async(self, path: str, watch=None):
        return _Done(lambda: self.nodes[path][1] if path in self.nodes else None)

    def get_children(self, path: str, watch=None) -> list[str]:
        if path not in self.nodes:
            raise NoNodeError()
        return [p.rsplit("/", 1)[1] for p in self.nodes if p != "/" and self._parent(p) == path]

    def get_children_async(self, path: str, watch=None):
        return _Done(lambda: self.get_children(path))

    def data(self, path: str) -> bytes | None:
        return self.nodes[path][0]


def _zk() -> _FakeZk:
    zk = _FakeZk()
    za._create_acl_paths(zk)
    return zk


def _add(entries):
    return lambda current: current + [e for e in entries if e not in current]


def test_created_paths_have_no_data_as_kafka_leaves_them() -> None:
    zk = _zk()
    assert zk.data("/kafka-acl/Topic") is None and zk.data("/kafka-acl-extended/prefixed") is None
    za._create_acl_paths(zk)  # again: nothing fails on existing nodes


def test_update_creates_sets_and_deletes_with_notifications() -> None:
    zk = _zk()
    update = za._update_resource(zk, T1, _add([ALICE_READ]))
    assert update == za.ResourceUpdate((), (ALICE_READ,))
    assert zk.data("/kafka-acl/Topic/t1") == za.encode_acls([ALICE_READ])
    za._update_resource(zk, T1, _add([BOB_DENY]))
    assert zk.data("/kafka-acl/Topic/t1") == KAFKA_T1  # existing entries first, then the new one
    assert zk.nodes["/kafka-acl/Topic/t1"][1].version == 1
    unchanged = za._update_resource(zk, T1, _add([ALICE_READ]))
    assert unchanged.before == unchanged.after
    assert zk.nodes["/kafka-acl/Topic/t1"][1].version == 2  # written anyway, as Kafka does
    assert zk.get_children(za.LITERAL_CHANGES) == ["acl_changes_0000000000", "acl_changes_0000000001"]
    assert {zk.data(f"{za.LITERAL_CHANGES}/{c}") for c in zk.get_children(za.LITERAL_CHANGES)} == {b"TOPIC:t1"}
    za._update_resource(zk, T1, lambda current: [])
    assert "/kafka-acl/Topic/t1" not in zk.nodes  # an empty resource loses its znode
    assert len(zk.get_children(za.LITERAL_CHANGES)) == 3
    za._update_resource(zk, PRE, _add([ALICE_READ]))
    assert zk.data("/kafka-acl-extended/prefixed/Group/pre") == za.encode_acls([ALICE_READ])
    assert zk.data(f"{za.EXTENDED_CHANGES}/acl_changes_0000000000") == KAFKA_GROUP_CHANGE


def test_update_retries_a_lost_race_on_the_version(monkeypatch) -> None:
    monkeypatch.setattr(za.time, "sleep", lambda s: None)
    zk = _zk()
    za._update_resource(zk, T1, _add([ALICE_READ]))
    zk.races["/kafka-acl/Topic/t1"] = 2
    za._update_resource(zk, T1, _add([BOB_DENY]))
    assert za.decode_acls(zk.data("/kafka-acl/Topic/t1")) == [ALICE_READ, BOB_DENY]
    zk.races["/kafka-acl/Topic/t1"] = za.MAX_UPDATE_RETRIES + 1
    with pytest.raises(RuntimeError, match="after trying a maximum of 10 times"):
        za._update_resource(zk, T1, lambda current: [])


def test_load_all_reads_every_resource_and_skips_bad_ones() -> None:
    zk = _zk()
    za._update_resource(zk, T1, _add([ALICE_READ, BOB_DENY]))
    za._update_resource(zk, PRE, _add([ALICE_READ]))
    zk.create("/kafka-acl/Group/broken", b"{not json")
    zk.create("/kafka-acl/Widget", None)
    zk.create("/kafka-acl/Widget/w", za.encode_acls([ALICE_READ]))
    assert set(za._load_all(zk)) == {AclBinding(T1, ALICE_READ), AclBinding(T1, BOB_DENY),
                                     AclBinding(PRE, ALICE_READ)}


def test_changes_are_listed_in_order_and_old_ones_purged() -> None:
    zk = _zk()
    for _ in range(3):
        zk.create(f"{za.LITERAL_CHANGES}/{za.CHANGE_PREFIX}", b"TOPIC:t1", sequence=True)
        zk.now_ms += 10 * 60 * 1000
    zk.create(f"{za.LITERAL_CHANGES}/stray", b"")
    listed = za._list_changes(zk, lambda event: None)
    assert listed == {za.LITERAL_CHANGES: [(0, "acl_changes_0000000000"), (1, "acl_changes_0000000001"),
                                           (2, "acl_changes_0000000002")], za.EXTENDED_CHANGES: []}
    # now: 30 minutes after the first, 20 after the second, 10 after the third
    za._purge_changes(zk, listed, zk.now_ms)
    assert sorted(zk.get_children(za.LITERAL_CHANGES)) == ["acl_changes_0000000002", "stray"]
    za._purge_changes(zk, listed, zk.now_ms)  # already deleted ones are skipped


def test_a_missing_change_directory_is_watched_for_its_creation() -> None:
    zk = _FakeZk()
    watched: list[str] = []
    zk.exists_async = lambda path, watch=None: (watched.append(path), _Done(lambda: None))[1]  # type: ignore[method-assign]
    assert za._list_changes(zk, lambda event: None) == {za.LITERAL_CHANGES: [], za.EXTENDED_CHANGES: []}
    assert watched == [za.LITERAL_CHANGES, za.EXTENDED_CHANGES]


class _Session:
    """ZkSession's surface the store uses, calling kazoo's stand-in directly."""

    def __init__(self, client: _FakeZk) -> None:
        self.client = client
        self.connected = True

    async def call(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)

    def feed(self):
        from wirekafka.broker.metadata.zk.session import ChangeFeed
        return ChangeFeed(self)  # type: ignore[arg-type]


def test_two_brokers_share_acls_through_the_notifications() -> None:
    """Broker A's create and delete reach broker B's authorizer through the change notifications
    (B re-reads each named resource); a broker starting later loads them all; notifications
    older than 15 minutes go when either processes them."""
    import trio

    from wirekafka.security.acl.authorizer import Authorizer

    zk = _FakeZk()

    def broker() -> tuple[Authorizer, za.ZkAclStore]:
        authorizer = Authorizer([], False)
        return authorizer, za.ZkAclStore(authorizer, _Session(zk), clock=lambda: zk.now_ms / 1000)  # type: ignore[arg-type]

    async def main() -> None:
        (auth_a, a), (auth_b, b) = broker(), broker()
        await a.load()
        await b.load()
        await a.create([AclBinding(T1, ALICE_READ), AclBinding(PRE, ALICE_READ), AclBinding(T1, BOB_DENY)])
        assert set(auth_a.bindings()) == {AclBinding(T1, ALICE_READ), AclBinding(T1, BOB_DENY),
                                          AclBinding(PRE, ALICE_READ)}
        assert auth_b.bindings() == []
        await b.process_changes()
        assert set(auth_b.bindings()) == set(auth_a.bindings())
        assert auth_b.authorize("User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "t1")
        await a.delete([AclBinding(T1, ALICE_READ), AclBinding(PRE, ALICE_READ)])
        await b.process_changes()
        assert auth_b.bindings() == [AclBinding(T1, BOB_DENY)]
        await b.process_changes()  # nothing new: nothing re-read
        zk.nodes["/kafka-acl/Topic/t1"] = (b"garbage", zk.nodes["/kafka-acl/Topic/t1"][1])
        zk.create(f"{za.LITERAL_CHANGES}/{za.CHANGE_PREFIX}", b"TOPIC:t1", sequence=True)
        await b.process_changes()  # a resource that cannot be read is skipped, the rest kept
        assert auth_b.bindings() == [AclBinding(T1, BOB_DENY)]

        auth_c, c = broker()
        zk.create("/kafka-acl/Group/g", za.encode_acls([BOB_DENY]))
        zk.now_ms += za.CHANGE_EXPIRATION_MS + 1
        await c.load()  # the unreadable topic znode skipped, the group loaded
        assert auth_c.bindings() == [AclBinding(ResourcePattern(ResourceType.GROUP, "g", PatternType.LITERAL),
                                                BOB_DENY)]
        assert zk.get_children(za.LITERAL_CHANGES) == [] and zk.get_children(za.EXTENDED_CHANGES) == []

        with pytest.raises(Exception, match="Failed to create ACL"):
            await a.create([AclBinding(ResourcePattern(ResourceType.TOPIC, "a/b", PatternType.LITERAL), ALICE_READ)])

    trio.run(main)


def test_a_feed_of_its_own_beside_the_metadata() -> None:
    """The ACL store's watches wake its own feed, not the metadata's reconcile loop, and the
    metadata's do not wake it; a session change marks both (ZkSession, one hand-over point)."""
    import trio
    from types import SimpleNamespace

    from kazoo.client import KazooState

    from wirekafka.broker.metadata.zk.session import ZkSession

    async def main() -> None:
        session = ZkSession("127.0.0.1:1", 1000, 1000)  # never started: only the bookkeeping is used
        session._token = trio.lowlevel.current_trio_token()
        acls = session.feed()
        acls.watcher(SimpleNamespace(path=za.LITERAL_CHANGES))
        session.cache.watch(SimpleNamespace(path="/brokers/ids"))
        await trio.sleep(0)  # the watchers post to the loop, as from kazoo's thread
        assert await acls.wait(1) == {za.LITERAL_CHANGES}
        assert await session.wait_changed(1) == {"/brokers/ids"}
        session._on_state(KazooState.CONNECTED)
        await trio.sleep(0)
        assert await acls.wait(1) == {None} and await session.wait_changed(1) == {None}
        assert await acls.wait(0.01) == set()

    trio.run(main)
