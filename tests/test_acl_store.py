"""The single node's ACL store: what CreateAcls and DeleteAcls persist survives a restart (a new
BrokerState over the same log dir loads it into its authorizer), the file is replaced whole,
and a file that cannot be read stops start-up instead of losing ACLs. And the handlers' side of
the AclStore seam: one call per resource pattern, a store's failure the error of that resource's
ACLs alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest

from wirekafka.security.acl.store import ACLS_FILE, LocalAclStore
from wirekafka.security.acl.authorizer import (AccessControlEntry, AclBinding, AclOperation, Authorizer, PatternType,
                                         PermissionType, ResourcePattern, ResourceType)
from wirekafka.broker.state import BrokerState
from wirekafka.startup_errors import StartupError
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from tests.test_admin_handlers import call

READ = AclBinding(ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
                  AccessControlEntry("User:alice", "*", AclOperation.READ, PermissionType.ALLOW))
DENY = AclBinding(ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED),
                  AccessControlEntry("User:*", "10.0.0.1", AclOperation.ALL, PermissionType.DENY))
CLUSTER = AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
                     AccessControlEntry("User:bob", "*", AclOperation.IDEMPOTENT_WRITE, PermissionType.ALLOW))


def reloaded(log_dir: Path) -> Authorizer:
    authorizer = Authorizer((), False)
    LocalAclStore(log_dir, authorizer).load()
    return authorizer


def test_created_acls_survive_a_reload(tmp_path: Path):
    store = LocalAclStore(tmp_path, Authorizer((), False))

    async def main() -> None:
        await store.create([READ, DENY])
        await store.create([READ, CLUSTER])  # an existing one stays one

    trio.run(main)
    assert sorted(map(repr, reloaded(tmp_path).bindings())) == sorted(map(repr, [READ, DENY, CLUSTER]))


def test_deleted_acls_stay_deleted_and_deleting_a_missing_one_is_no_error(tmp_path: Path):
    store = LocalAclStore(tmp_path, Authorizer((), False))

    async def main() -> None:
        await store.create([READ, DENY, CLUSTER])
        await store.delete([DENY, DENY])
        await store.delete([DENY])

    trio.run(main)
    assert sorted(map(repr, reloaded(tmp_path).bindings())) == sorted(map(repr, [READ, CLUSTER]))


def test_concurrent_changes_land_in_order(tmp_path: Path):
    """Many changes at once: each write takes the newest snapshot under the lock, so the file ends
    with every one of them."""
    store = LocalAclStore(tmp_path, Authorizer((), False))
    bindings = [AclBinding(ResourcePattern(ResourceType.TOPIC, f"t{i}", PatternType.LITERAL), READ.entry)
                for i in range(20)]

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for b in bindings:
                nursery.start_soon(store.create, [b])
        async with trio.open_nursery() as nursery:
            for b in bindings[:10]:
                nursery.start_soon(store.delete, [b])

    trio.run(main)
    assert set(reloaded(tmp_path).bindings()) == set(bindings[10:])
    assert not (tmp_path / (ACLS_FILE + ".tmp")).exists()


def test_the_file_names_the_acls_in_kafkas_terms(tmp_path: Path):
    trio.run(LocalAclStore(tmp_path, Authorizer((), False)).create, [DENY])
    saved = json.loads((tmp_path / ACLS_FILE).read_text())
    assert saved == {"version": 1, "acls": [{
        "resourceType": "GROUP", "name": "app-", "patternType": "PREFIXED", "principal": "User:*",
        "host": "10.0.0.1", "operation": "ALL", "permissionType": "DENY"}]}


def test_load_replaces_what_the_authorizer_held(tmp_path: Path):
    trio.run(LocalAclStore(tmp_path, Authorizer((), False)).create, [READ])
    authorizer = Authorizer((), False)
    authorizer.add([DENY])
    LocalAclStore(tmp_path, authorizer).load()
    assert authorizer.bindings() == [READ]


def test_no_file_means_no_acls(tmp_path: Path):
    assert reloaded(tmp_path).bindings() == []


@pytest.mark.parametrize("text", ["{not json", '{"acls": [{"resourceType": "TOPIC"}]}',
                                  '{"acls": [{"resourceType": "NOPE", "name": "x", "patternType": "LITERAL", '
                                  '"principal": "User:a", "host": "*", "operation": "READ", '
                                  '"permissionType": "ALLOW"}]}'])
def test_an_unreadable_file_stops_start_up(tmp_path: Path, text: str):
    (tmp_path / ACLS_FILE).write_text(text)
    with pytest.raises(StartupError, match="cannot read the ACLs"):
        reloaded(tmp_path)


def broker(log_dir: Path, **overrides: str) -> BrokerState:
    settings = {"log.dirs": str(log_dir), "node.id": "1", **overrides}
    return BrokerState(build_config(settings))


AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def test_a_broker_with_an_authorizer_loads_its_acls_at_start_up(tmp_path: Path):
    first = broker(tmp_path, **AUTHORIZER)
    first.load()
    assert first.acl_store is not None and first.authorizer is not None
    trio.run(first.acl_store.create, [READ, DENY])
    second = broker(tmp_path, **AUTHORIZER)
    second.load()
    assert second.authorizer is not None
    assert set(second.authorizer.bindings()) == {READ, DENY}
    assert second.authorizer.authorize("User:alice", "10.0.0.9", AclOperation.READ, ResourceType.TOPIC, "orders")


def test_a_broker_without_an_authorizer_has_no_acl_store(tmp_path: Path):
    state = broker(tmp_path)
    state.load()
    assert state.authorizer is None and state.acl_store is None
    assert not (tmp_path / ACLS_FILE).exists()


# ---- the handlers over a store that fails (ZooKeeper's can: a lost race, a lost session) ---------
class FailingStore:
    """An AclStore that persists every resource but `broken`, where it raises `error`."""

    def __init__(self, broken: str, error: Exception) -> None:
        self.broken, self.error = broken, error
        self.calls: list[tuple[str, list[AclBinding]]] = []

    async def create(self, bindings):
        await self._persist("create", bindings)

    async def delete(self, bindings):
        await self._persist("delete", bindings)

    async def _persist(self, what: str, bindings) -> None:
        self.calls.append((what, list(bindings)))
        if any(b.pattern.name == self.broken for b in bindings):
            raise self.error


def _acl_on(name: str) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, name, PatternType.LITERAL), READ.entry)


def _creation(b: AclBinding) -> CreateAclsRequest.AclCreation:
    p, e = b.pattern, b.entry
    return CreateAclsRequest.AclCreation(
        resource_type=p.resource_type, resource_name=p.name, resource_pattern_type=p.pattern_type,
        principal=e.principal, host=e.host, operation=e.operation, permission_type=e.permission)


@pytest.mark.parametrize("error,expected", [
    (KafkaApiError(ErrorCode.INVALID_REQUEST, "Failed to create ACL"),
     (ErrorCode.INVALID_REQUEST, "Failed to create ACL")),
    (RuntimeError("Failed to update ACLs after trying a maximum of 10 times"), (ErrorCode.UNKNOWN_SERVER_ERROR, None)),
])
def test_a_store_failure_is_the_error_of_that_resources_acls_only(tmp_path: Path, error, expected):
    """One store call per resource pattern, duplicates made one; what the store refused is not
    applied, and its ACLs carry the store's error (each matched ACL in a DeleteAcls answer)."""
    state = broker(tmp_path, **AUTHORIZER, **{"super.users": "User:ANONYMOUS"})
    state.load()
    store = FailingStore("broken", error)
    state.acl_store = store
    good, other, bad = _acl_on("good"), AclBinding(_acl_on("good").pattern, DENY.entry), _acl_on("broken")
    answer = call(state, CreateAclsRequest(creations=[_creation(b) for b in (good, bad, other, good)]), 3)
    code, message = expected
    assert [(r.error_code, r.error_message) for r in answer.results] == [
        (0, ""), (code, message), (0, ""), (0, "")]
    assert store.calls == [("create", [good, other]), ("create", [bad])]
    assert state.authorizer is not None and set(state.authorizer.bindings()) == {good, other}

    state.authorizer.add([bad])  # as if another broker had created it
    answer = call(state, DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=ResourceType.TOPIC, resource_name_filter=None, pattern_type_filter=PatternType.ANY,
        principal_filter=None, host_filter=None, operation=AclOperation.ANY, permission_type=PermissionType.ANY)]), 3)
    [result] = answer.filter_results
    assert result.error_code == 0
    assert sorted((m.resource_name, m.error_code, m.error_message) for m in result.matching_acls) == [
        ("broken", code, message), ("good", 0, None), ("good", 0, None)]
    assert state.authorizer.bindings() == [bad]
