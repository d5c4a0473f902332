"""ACLs in ZooKeeper, kept where and as Kafka 3.9's AclAuthorizer keeps them, so a wirekafka
cluster, Kafka 3.9 brokers and Kafka's tools see the same znodes.

The layout (bytes as a Kafka 3.9.1 broker writes them; compat-tests/test_cluster_acls.py reads
both back the same way):
- a LITERAL pattern's entries in `/kafka-acl/<ResourceType>/<name>`, a PREFIXED one's in
  `/kafka-acl-extended/prefixed/<ResourceType>/<name>` (types spelled Topic, Group, Cluster,
  TransactionalId, DelegationToken, User), as
  `{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"}],"version":1}`
  (keys in the order of the java.util.HashMaps Kafka fills; the entries of a Scala set, whose order
  Kafka does not fix: here the znode's order, new entries after);
- a change announced by a sequential znode, `/kafka-acl-changes/acl_changes_<n>` holding
  `TOPIC:<name>` for a literal pattern, `/kafka-acl-extended-changes/acl_changes_<n>` holding
  `{"version":1,"resourceType":"GROUP","name":"<name>","patternType":"PREFIXED"}` for the others.

The behaviour, as AclAuthorizer's:
- start-up creates the ACL and change paths (null data, as Kafka's createAclPaths), reads the
  change notifications (setting the watch), then loads every resource's ACLs into the authorizer:
  a change announced after that read is applied from its notification, one before it is in the load;
- a create or delete updates each resource znode conditionally (updateResourceAcls): read it,
  change its entries, write on the version read (create if absent, delete once empty); a write
  that lost a race is retried after 100-150 ms, up to 10 times; a change to the entries is then
  applied here and announced with a notification;
- every broker follows both change directories (a child watch): each notification newer than the
  last one processed names a resource to re-read (`Authorizer.set_resource`); a session change or
  a safety timeout re-reads them too;
- each time it processes them, every broker deletes the notifications created more than 15
  minutes ago (ZkNodeChangeNotificationListener's changeExpirationMs): nothing else ages them out,
  so a broker must; brokers racing to delete one are fine (an already deleted node is skipped);
- bad data never stops the broker: a resource znode or notification that cannot be read is
  logged and skipped (Kafka 3.9 would fail its start-up on a bad resource znode).

kazoo calls run in worker threads (ZkSession.call); the watch reaches the event loop through the
session (`ChangeFeed`), the one place kazoo's threads meet trio."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Sequence, TypeVar

import trio
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from wirekafka.security.acl.authorizer import (AccessControlEntry, AclBinding, AclOperation, Authorizer, PatternType,
                                         PermissionType, ResourcePattern, ResourceType)
from wirekafka.jvm import java_hashmap_order
from wirekafka.broker.metadata.zk.layout import ZkDataError, dump_json, load_json
from wirekafka.broker.metadata.zk.znode_io import watch_creation
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

log = logging.getLogger(__name__)

LITERAL_ACLS = "/kafka-acl"
EXTENDED_ACLS = "/kafka-acl-extended"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
ACL_VERSION = 1
CHANGE_EVENT_VERSION = 1
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
MAX_UPDATE_RETRIES = 10
RETRY_BACKOFF_MS, RETRY_JITTER_MS = 100, 50
SAFETY_RECHECK_S = 5.0  # re-read the change directories even without a watch firing
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)
RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID,
                  ResourceType.DELEGATION_TOKEN, ResourceType.USER)

_ENTRY_KEYS = java_hashmap_order(["principal", "permissionType", "operation", "host"])
_ACLS_KEYS = java_hashmap_order(["version", "acls"])


# ---- names and paths ------------------------------------------------------------------------------
def pascal_case(enum_name: str) -> str:
    """Kafka's SecurityUtils spelling of an enum name: TRANSACTIONAL_ID -> TransactionalId."""
    return "".join(part[:1].upper() + part[1:].lower() for part in enum_name.split("_") if part)


E = TypeVar("E", bound=Enum)


def _by_spelling(enum_type: type[E]) -> Callable[[str], E]:
    """Kafka's lookup of an ACL element by name: the Pascal-case spelling, or that spelling in
    upper case (READ, TRANSACTIONALID); anything else is UNKNOWN."""
    names = {}
    for member in enum_type:
        names[pascal_case(member.name)] = member
        names[pascal_case(member.name).upper()] = member
    return lambda text: names.get(text, names.get(text.upper(), enum_type["UNKNOWN"]))


resource_type_named = _by_spelling(ResourceType)
operation_named = _by_spelling(AclOperation)
permission_named = _by_spelling(PermissionType)


def acl_root(pattern_type: PatternType) -> str:
    """The directory of a pattern type's resources: /kafka-acl, /kafka-acl-extended/prefixed."""
    if pattern_type == PatternType.LITERAL:
        return LITERAL_ACLS
    if pattern_type == PatternType.PREFIXED:
        return f"{EXTENDED_ACLS}/{pattern_type.name.lower()}"
    raise ValueError(f"Invalid pattern type: {pattern_type.name}")


def resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    return f"{acl_root(pattern_type)}/{pascal_case(resource_type.name)}"


def resource_path(pattern: ResourcePattern) -> str:
    return f"{resource_type_path(pattern.pattern_type, pattern.resource_type)}/{pattern.name}"


def describe(pattern: ResourcePattern) -> str:
    """A pattern for the log, in Kafka's words: ResourcePattern(Topic, t1, LITERAL)."""
    return f"ResourcePattern({pascal_case(pattern.resource_type.name)}, {pattern.name}, {pattern.pattern_type.name})"


def change_directory(pattern_type: PatternType) -> str:
    return LITERAL_CHANGES if pattern_type == PatternType.LITERAL else EXTENDED_CHANGES


def change_sequence(child: str) -> int | None:
    """The sequence number of a notification znode's name (acl_changes_0000000007 -> 7), None
    for a name that is not one."""
    digits = child[len(CHANGE_PREFIX):] if child.startswith(CHANGE_PREFIX) else ""
    return int(digits) if digits.isdigit() else None


def acl_paths() -> list[list[str]]:
    """Kafka's createAclPaths, level by level (parents first): each stored pattern type's
    directory with one child per resource type, and the two change directories."""
    roots = [LITERAL_ACLS, EXTENDED_ACLS, LITERAL_CHANGES, EXTENDED_CHANGES]
    extended = [acl_root(t) for t in STORED_PATTERN_TYPES if t != PatternType.LITERAL]
    types = [resource_type_path(t, r) for t in STORED_PATTERN_TYPES for r in RESOURCE_TYPES]
    return [roots, extended, types]


# ---- resource znodes ------------------------------------------------------------------------------
def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A resource znode's data (Kafka's AclEntry.toJsonCompatibleMap through Jackson)."""
    listed = [_entry_json(e) for e in entries]
    document = {"version": ACL_VERSION, "acls": listed}
    return dump_json({k: document[k] for k in _ACLS_KEYS})


def _entry_json(entry: AccessControlEntry) -> dict[str, str]:
    fields = {"principal": entry.principal, "permissionType": pascal_case(entry.permission.name),
              "operation": pascal_case(entry.operation.name), "host": entry.host}
    return {k: fields[k] for k in _ENTRY_KEYS}


def decode_acls(data: bytes | None) -> list[AccessControlEntry]:
    """A resource znode's entries, in the znode's order. No data is no entries; a version other
    than 1, a principal without its type or a missing field is refused, as Kafka refuses them;
    an operation or permission Kafka does not know reads as UNKNOWN (matching nothing)."""
    if not data:
        return []
    document = load_json(data, "resource ACLs")
    if document.get("version") != ACL_VERSION:
        raise ZkDataError(f"resource ACLs have an unsupported version: {data!r}")
    acls = document.get("acls")
    if not isinstance(acls, list):
        raise ZkDataError(f"resource ACLs have no list of acls: {data!r}")
    entries: list[AccessControlEntry] = []
    for item in acls:
        principal, permission, host, operation = (item.get(k) if isinstance(item, dict) else None
                                                  for k in ("principal", "permissionType", "host", "operation"))
        if not (isinstance(principal, str) and isinstance(permission, str) and isinstance(host, str)
                and isinstance(operation, str)):
            raise ZkDataError(f"an ACL entry lacks a field: {item!r}")
        if ":" not in principal:
            raise ZkDataError(f"expected a string in format principalType:principalName but got {principal}")
        entry = AccessControlEntry(principal, host, operation_named(operation), permission_named(permission))
        if entry not in entries:
            entries.append(entry)
    return entries


# ---- change notifications ---------------------------------------------------------------------------
def encode_change(pattern: ResourcePattern) -> bytes:
    """A notification's data: `TOPIC:name` (literal), Kafka's ExtendedAclChangeEvent (others)."""
    if pattern.pattern_type == PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return dump_json({"version": CHANGE_EVENT_VERSION, "resourceType": pattern.resource_type.name,
                  "name": pattern.name, "patternType": pattern.pattern_type.name})


def decode_change(directory: str, data: bytes | None) -> ResourcePattern:
    """The resource pattern a notification in `directory` names; ZkDataError if it names none."""
    if directory == LITERAL_CHANGES:
        text = (data or b"").decode(errors="replace")
        type_name, colon, name = text.partition(":")
        if not colon:
            raise ZkDataError(f"expected a string in format ResourceType:ResourceName but got {text}")
        return _pattern(type_name, name, PatternType.LITERAL, text)
    event = load_json(data or b"", "ACL change event")
    version, type_name, name, pattern_name = (event.get(k) for k in ("version", "resourceType", "name",
                                                                     "patternType"))
    if not isinstance(version, int) or version > CHANGE_EVENT_VERSION:
        raise ZkDataError(f"Acl change event received for unsupported version: {version}")
    if not (isinstance(type_name, str) and isinstance(name, str) and isinstance(pattern_name, str)):
        raise ZkDataError(f"Failed to parse ACL change event: {data!r}")
    pattern_type = PatternType.__members__.get(pattern_name, PatternType.UNKNOWN)
    return _pattern(type_name, name, pattern_type, data)


def _pattern(type_name: str, name: str, pattern_type: PatternType, data: object) -> ResourcePattern:
    resource_type = ResourceType.__members__.get(type_name.upper(), ResourceType.UNKNOWN)
    if resource_type not in RESOURCE_TYPES or pattern_type not in STORED_PATTERN_TYPES:
        raise ZkDataError(f"Failed to convert ACL change event to resource: {data!r}")
    return ResourcePattern(resource_type, name, pattern_type)


# ---- the store --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResourceUpdate:
    """A resource's entries before and after a conditional update (equal: nothing changed)."""

    before: tuple[AccessControlEntry, ...]
    after: tuple[AccessControlEntry, ...]


class ZkAclStore:
    """The authorizer's ACLs kept in ZooKeeper, shared by every broker of the cluster."""

    def __init__(self, authorizer: Authorizer, session: ZkSession, clock: Callable[[], float] = time.time) -> None:
        self.authorizer = authorizer
        self.zk = session
        self.clock = clock
        self._feed = session.feed()
        self._lock = trio.Lock()  # one update or notification round at a time (Kafka's `lock`)
        self._processed: dict[str, int] = {}  # change directory -> last sequence applied

    async def load(self) -> None:
        """Start-up: create Kafka's ACL paths, note the notifications already there (they are
        covered by the load), load every resource's ACLs and age out old notifications."""
        async with self._lock:
            await self.zk.call(_create_acl_paths, self.zk.client)
            listed = await self.zk.call(_list_changes, self.zk.client, self._feed.watcher)
            self._processed = {d: max((s for s, _ in children), default=-1) for d, children in listed.items()}
            bindings = await self.zk.call(_load_all, self.zk.client)
            self.authorizer.replace_all(bindings)
            log.info("loaded %d ACLs from ZooKeeper", len(bindings))
            await self.zk.call(_purge_changes, self.zk.client, listed, self._now_ms())

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Follow the change notifications until cancelled."""
        task_status.started()
        while True:
            await self._feed.wait(SAFETY_RECHECK_S)
            if not self.zk.connected:
                continue
            try:
                await self.process_changes()
            except Exception:  # ZooKeeper unreachable meanwhile: the next round retries  # noqa: BLE001
                log.warning("reading ACL change notifications failed; retrying", exc_info=True)
                await trio.sleep(0.2)
                self._feed.mark(None)

    async def process_changes(self) -> None:
        """Apply the notifications newer than the last one applied, re-reading the resources
        they name, then delete those older than 15 minutes."""
        async with self._lock:
            listed = await self.zk.call(_list_changes, self.zk.client, self._feed.watcher)
            for directory, children in listed.items():
                for sequence, child in children:
                    if sequence <= self._processed.get(directory, -1):
                        continue
                    await self._apply_change(directory, child)
                    self._processed[directory] = sequence
            await self.zk.call(_purge_changes, self.zk.client, listed, self._now_ms())

    async def _apply_change(self, directory: str, child: str) -> None:
        path = f"{directory}/{child}"
        try:
            data = await self.zk.call(_data, self.zk.client, path)
            if data is None:
                log.warning("read no data from %s", path)
                return
            pattern = decode_change(directory, data)
            entries, _version = await self.zk.call(_read_resource, self.zk.client, pattern)
        except ZkDataError as exc:
            log.warning("ignoring the ACL change notification %s: %s", path, exc)
            return
        log.info("ACL change notification %s for %s: %d entries", path, describe(pattern), len(entries))
        self.authorizer.set_resource(pattern, entries)

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        """Persist the bindings (AclStore): each resource's znode gains those it lacks. Nothing
        is written if a name would not be one znode: Kafka 3.9 refuses such a creation
        (InvalidRequestException "Failed to create ACL")."""
        if any("/" in b.pattern.name for b in bindings):
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Failed to create ACL")
        await self._update_each(bindings, lambda current, mine: current + [e for e in mine if e not in current])

    async def delete(self, bindings: Sequence[AclBinding]) -> None:
        """Persist the bindings' removal (AclStore); a resource left empty loses its znode."""
        await self._update_each(bindings, lambda current, mine: [e for e in current if e not in mine])

    async def _update_each(self, bindings: Sequence[AclBinding],
                           change: Callable[[list[AccessControlEntry], list[AccessControlEntry]],
                                            list[AccessControlEntry]]) -> None:
        """Update each resource the bindings name, and apply what ZooKeeper now holds for it (other
        brokers' changes included). A ZooKeeper failure, or a race lost MAX_UPDATE_RETRIES times,
        is raised after the resources before it were written."""
        by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for binding in bindings:
            by_pattern.setdefault(binding.pattern, []).append(binding.entry)
        async with self._lock:
            for pattern, mine in by_pattern.items():
                update = await self.zk.call(_update_resource, self.zk.client, pattern,
                                            lambda current, mine=mine: change(current, mine))
                if update.after != update.before:
                    self.authorizer.set_resource(pattern, update.after)
                    log.info("updated the ACLs of %s: %d entries", describe(pattern), len(update.after))

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)


# ---- ZooKeeper reads and writes (worker threads) ------------------------------------------------------
Listing = dict[str, list[tuple[int, str]]]  # change directory -> (sequence, child name), ascending


def _create_acl_paths(client) -> None:
    """Create what is missing, a level at a time (pipelined), with no data, as Kafka does."""
    for level in acl_paths():
        for request in [client.create_async(path, None) for path in level]:
            try:
                request.get()
            except NodeExistsError:
                pass


def _list_changes(client, watch: Callable) -> Listing:
    """The notifications in both change directories (setting the child watch on each). A
    directory found missing is watched for its creation."""
    listed: Listing = {}
    for directory in (LITERAL_CHANGES, EXTENDED_CHANGES):
        try:
            children = client.get_children(directory, watch=watch)
        except NoNodeError:
            watch_creation(client, [directory], watch)
            children = []
        listed[directory] = sorted((s, c) for c in children if (s := change_sequence(c)) is not None)
    return listed


def _purge_changes(client, listed: Listing, now_ms: int) -> None:
    """Delete the notifications created more than CHANGE_EXPIRATION_MS before now_ms."""
    stats = {f"{d}/{c}": client.exists_async(f"{d}/{c}") for d, children in listed.items() for _, c in children}
    old = [path for path, request in stats.items()
           if (stat := request.get()) is not None and now_ms - stat.ctime > CHANGE_EXPIRATION_MS]
    for path, request in [(p, client.delete_async(p)) for p in old]:
        try:
            request.get()
            log.debug("purged the ACL change notification %s", path)
        except NoNodeError:
            pass


def _data(client, path: str) -> bytes | None:
    try:
        return client.get(path)[0]
    except NoNodeError:
        return None


def _read_resource(client, pattern: ResourcePattern) -> tuple[list[AccessControlEntry], int | None]:
    """A resource's entries and its znode's version (None: no znode, no entries)."""
    try:
        data, stat = client.get(resource_path(pattern))
    except NoNodeError:
        return [], None
    return decode_acls(data), stat.version


def _load_all(client) -> list[AclBinding]:
    """Every resource's entries (Kafka's loadAllAcls), the reads of each level pipelined. A
    directory of a resource type Kafka does not know, or a resource znode that cannot be read,
    is logged and skipped."""
    type_dirs: dict[str, tuple[PatternType, ResourceType]] = {}
    for pattern_type in STORED_PATTERN_TYPES:
        for name in client.get_children(acl_root(pattern_type)):
            resource_type = resource_type_named(name)
            if resource_type in RESOURCE_TYPES:
                type_dirs[f"{acl_root(pattern_type)}/{name}"] = (pattern_type, resource_type)
            else:
                log.warning("ignoring unknown ResourceType: %s", name)
    listings = {path: client.get_children_async(path) for path in type_dirs}
    reads: dict[ResourcePattern, tuple[str, Any]] = {}  # kazoo's IAsyncResult per znode
    for path, listing in listings.items():
        pattern_type, resource_type = type_dirs[path]
        for name in listing.get():
            reads[ResourcePattern(resource_type, name, pattern_type)] = (f"{path}/{name}",
                                                                         client.get_async(f"{path}/{name}"))
    bindings: list[AclBinding] = []
    for pattern, (path, read) in reads.items():
        try:
            data = read.get()[0]
            bindings += [AclBinding(pattern, e) for e in decode_acls(data)]
        except NoNodeError:
            continue  # deleted since the listing
        except ZkDataError as exc:
            log.warning("ignoring the ACLs in %s: %s", path, exc)
    return bindings


def _update_resource(client, pattern: ResourcePattern,
                     change: Callable[[list[AccessControlEntry]], list[AccessControlEntry]]) -> ResourceUpdate:
    """Kafka's updateResourceAcls: read, change, write conditionally on the version read
    (create when absent, delete when left empty); a lost race is retried after a backoff, up to
    MAX_UPDATE_RETRIES times. The notification follows a change of the entries."""
    path = resource_path(pattern)
    for _attempt in range(MAX_UPDATE_RETRIES + 1):
        current, version = _read_resource(client, pattern)
        fresh = change(current)
        try:
            if fresh and version is not None:
                client.set(path, encode_acls(fresh), version=version)
            elif fresh:
                client.create(path, encode_acls(fresh))
            elif version is not None:
                client.delete(path, version=version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            time.sleep((RETRY_BACKOFF_MS + random.randrange(RETRY_JITTER_MS)) / 1000)
            continue
        if fresh != current:
            client.create(f"{change_directory(pattern.pattern_type)}/{CHANGE_PREFIX}", encode_change(pattern),
                          sequence=True)
        return ResourceUpdate(tuple(current), tuple(fresh))
    raise RuntimeError(f"Failed to update ACLs for {pattern} after trying a maximum of {MAX_UPDATE_RETRIES} times")
