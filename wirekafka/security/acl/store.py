"""Where a broker's ACLs are kept: the seam between the ACL admin APIs and the storage behind them.

`AclStore` is what CreateAcls and DeleteAcls call (wirekafka/broker/handlers/acls.py):
- `await create(bindings)`: persist these ACLs (some may exist already: creating one twice
  keeps one, as Kafka does);
- `await delete(bindings)`: persist their removal (each one was matched by a filter a moment ago;
  one already gone is no error).
When the call returns, the change is durable; the handler then applies it to the broker's
`Authorizer` itself, so a store persists and never decides. Loading at start-up is each store's
own business, since it happens at different moments: `LocalAclStore.load` runs in
`BrokerState.load`, a ZooKeeper store reads Kafka 3.9's /kafka-acl tree once the session is up
(and follows other brokers' changes into `Authorizer.set_resource`).

`LocalAclStore` is the single node's: every ACL in one JSON file in the log dir (Kafka keeps them
in its KRaft metadata log, which one node without a controller quorum does not need), rewritten
whole through a temporary file and a rename, by a worker thread, under a lock that keeps an older
snapshot from landing after a newer one."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable, Protocol, Sequence

import trio

from wirekafka.security.acl.authorizer import (AccessControlEntry, AclBinding, AclOperation, Authorizer, PatternType,
                                         PermissionType, ResourcePattern, ResourceType)
from wirekafka.startup_errors import StartupError
from wirekafka.storage import checkpoint

log = logging.getLogger(__name__)

ACLS_FILE = "wirekafka-acls.json"


class AclStore(Protocol):
    async def create(self, bindings: Sequence[AclBinding]) -> None:
        """Persist these ACLs (an existing one stays one)."""

    async def delete(self, bindings: Sequence[AclBinding]) -> None:
        """Persist the removal of these ACLs (one already gone is no error)."""


def binding_to_json(binding: AclBinding) -> dict[str, str]:
    p, e = binding.pattern, binding.entry
    return {"resourceType": p.resource_type.name, "name": p.name, "patternType": p.pattern_type.name,
            "principal": e.principal, "host": e.host, "operation": e.operation.name,
            "permissionType": e.permission.name}


def binding_from_json(item: dict[str, str]) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType[item["resourceType"]], item["name"], PatternType[item["patternType"]]),
        AccessControlEntry(item["principal"], item["host"], AclOperation[item["operation"]],
                           PermissionType[item["permissionType"]]))


def _sort_key(binding: AclBinding) -> tuple:
    p, e = binding.pattern, binding.entry
    return (p.resource_type, p.pattern_type, p.name, e.principal, e.host, e.operation, e.permission)


class LocalAclStore:
    """The single node's ACLs, in `<log dir>/wirekafka-acls.json`."""

    def __init__(self, log_dir: Path, authorizer: Authorizer) -> None:
        self.path = log_dir / ACLS_FILE
        self._authorizer = authorizer
        self._bindings: set[AclBinding] = set()
        self._save_lock = trio.Lock()

    def load(self) -> None:
        """Read the file into the authorizer (start-up, in BrokerState.load's worker, before the
        broker serves). A file that cannot be read stops start-up rather than leave the broker
        running with fewer ACLs than it was given."""
        if not self.path.exists():
            return
        try:
            saved = json.loads(self.path.read_text())
            bindings = {binding_from_json(item) for item in saved["acls"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StartupError(f"cannot read the ACLs in {self.path}: {exc!r}") from exc
        self._bindings = bindings
        self._authorizer.replace_all(bindings)
        log.info("loaded %d ACLs from %s", len(bindings), self.path)

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        self._bindings.update(bindings)
        await self._persist()

    async def delete(self, bindings: Sequence[AclBinding]) -> None:
        self._bindings.difference_update(bindings)
        await self._persist()

    async def _persist(self) -> None:
        """Write the newest set in a worker: the snapshot is taken once the lock is held, so a
        later change never lands before an earlier one."""
        async with self._save_lock:
            await trio.to_thread.run_sync(checkpoint.atomic_write, self.path, self._snapshot(self._bindings))

    @staticmethod
    def _snapshot(bindings: Iterable[AclBinding]) -> str:
        return json.dumps({"version": 1, "acls": [binding_to_json(b) for b in sorted(bindings, key=_sort_key)]},
                          indent=1)
