"""ACLs and the decision a Kafka authorizer makes with them.

Kafka's two authorizers decide alike: a Kafka 4 broker's StandardAuthorizer (KRaft) and a Kafka 3.9
ZooKeeper-mode broker's AclAuthorizer. wirekafka accepts the first on the single node and the
second in a cluster (config.py); both are this one class, the store behind it differs.

The rules, as Kafka's:
- a super user (`super.users`, "User:name" entries separated by ";") may do anything;
- the ACLs that apply to a resource are the LITERAL ones on its name, the LITERAL ones on "*"
  and the PREFIXED ones whose name starts it; an entry applies to the session's principal or
  "User:*", and to its host address or "*";
- a DENY that applies wins; else an ALLOW that applies allows. An ALLOW of READ, WRITE, DELETE or
  ALTER implies DESCRIBE, and one of ALTER_CONFIGS implies DESCRIBE_CONFIGS (a DENY implies
  nothing); ALL matches every operation;
- with no ACL at all on the resource (for anyone), `allow.everyone.if.no.acl.found` decides;
  with some, but none allowing, the answer is no."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


_IMPLIES_DESCRIBE = {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                     AclOperation.ALTER}
_IMPLIES_DESCRIBE_CONFIGS = {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}

# The operations each resource type supports (Kafka's ResourceType -> supported AclOperations),
# which an authorized-operations field reports on
OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str          # "User:alice", "User:*"
    host: str               # an address or "*"
    operation: AclOperation
    permission: PermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select by (None or ANY: any value), with Kafka's
    ResourcePatternFilter semantics: MATCH selects the LITERAL pattern of the name, the LITERAL
    wildcard and every PREFIXED pattern the name starts with."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type == PatternType.ANY or self.pattern_type == pattern.pattern_type:
            return self.name == pattern.name
        # MATCH
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD
        if pattern.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission == PermissionType.ANY or self.permission == entry.permission))


def _applies(entry: AccessControlEntry, principals: tuple[str, str], host: str, operation: AclOperation) -> bool:
    if entry.principal not in principals or (entry.host != WILDCARD and entry.host != host):
        return False
    if entry.operation == AclOperation.ALL or entry.operation == operation:
        return True
    if entry.permission != PermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return entry.operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return entry.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


class Authorizer:
    """The ACLs a broker holds (its store keeps them in step: a file on the single node,
    ZooKeeper in a cluster) and the decisions made with them. Synchronous: handlers ask it
    between two awaits."""

    def __init__(self, super_users: Iterable[str], allow_everyone_if_no_acl_found: bool) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: dict[ResourcePattern, set[AccessControlEntry]] = {}
        # the PREFIXED names per resource type: a decision looks up only the patterns that can
        # apply to its resource, however many ACLs there are
        self._prefixes: dict[ResourceType, set[str]] = {}
        # moves with every change of the ACLs: what remembers decisions (a fetch session's quiet
        # partitions) knows when they may no longer hold
        self.generation = 0

    # ---- the ACLs ---------------------------------------------------------------------------------
    def bindings(self) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in self._acls.items() for e in entries]

    def matching(self, selector: AclBindingFilter) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in self._acls.items() if selector.matches_pattern(p)
                for e in entries if selector.matches_entry(e)]

    def add(self, bindings: Iterable[AclBinding]) -> None:
        for b in bindings:
            self._set(b.pattern, self._acls.get(b.pattern, set()) | {b.entry})

    def remove(self, bindings: Iterable[AclBinding]) -> None:
        for b in bindings:
            self._set(b.pattern, self._acls.get(b.pattern, set()) - {b.entry})

    def set_resource(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace one resource pattern's entries (a ZooKeeper change notification re-reads one)."""
        self._set(pattern, set(entries))

    def replace_all(self, bindings: Iterable[AclBinding]) -> None:
        self._acls = {}
        self._prefixes = {}
        self.generation += 1
        self.add(bindings)

    def _set(self, pattern: ResourcePattern, entries: set[AccessControlEntry]) -> None:
        self.generation += 1
        prefixed = pattern.pattern_type == PatternType.PREFIXED
        if entries:
            self._acls[pattern] = entries
            if prefixed:
                self._prefixes.setdefault(pattern.resource_type, set()).add(pattern.name)
        elif self._acls.pop(pattern, None) is not None and prefixed:
            self._prefixes[pattern.resource_type].discard(pattern.name)

    def _patterns_for(self, resource_type: ResourceType, name: str) -> list[ResourcePattern]:
        """The stored patterns that apply to a resource: its literal name, the literal "*", and
        the prefixes that start its name."""
        found = [ResourcePattern(resource_type, name, PatternType.LITERAL)]
        if name != WILDCARD:
            found.append(ResourcePattern(resource_type, WILDCARD, PatternType.LITERAL))
        prefixes = self._prefixes.get(resource_type)
        if prefixes:
            if len(prefixes) <= len(name):
                matching = [p for p in prefixes if name.startswith(p)]
            else:
                matching = [name[:i] for i in range(1, len(name) + 1) if name[:i] in prefixes]
            found.extend(ResourcePattern(resource_type, p, PatternType.PREFIXED) for p in matching)
        return [p for p in found if p in self._acls]

    # ---- decisions --------------------------------------------------------------------------------
    def is_super_user(self, principal: str) -> bool:
        return principal in self.super_users

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """May `principal` (e.g. "User:alice") connected from `host` do `operation` on the resource?"""
        if principal in self.super_users:
            return True
        patterns = self._patterns_for(resource_type, name)
        if not patterns:
            return self.allow_everyone_if_no_acl_found
        principals = (principal, WILDCARD_PRINCIPAL)
        allowed = False
        for pattern in patterns:
            for entry in self._acls[pattern]:
                if _applies(entry, principals, host, operation):
                    if entry.permission == PermissionType.DENY:
                        return False
                    allowed = True
        return allowed

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """May `principal` do `operation` on some resource of the type (Kafka's
        authorizeByResourceType: an idempotent producer's IDEMPOTENT_WRITE-or-any-topic-WRITE,
        a create's cluster-or-some-topic CREATE)? An ALLOW on a literal name or a prefix counts
        unless a DENY on the same literal or a shorter prefix covers it; an ALLOW on "*" counts
        unless a DENY on "*" exists."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow_literal: set[str] = set()
        allow_prefixed: set[str] = set()
        wildcard_allow = False
        for pattern, entries in self._acls.items():
            if pattern.resource_type != resource_type:
                continue
            for e in entries:
                if e.host not in (host, WILDCARD) or e.principal not in (principal, WILDCARD_PRINCIPAL):
                    continue
                if e.operation not in (operation, AclOperation.ALL):
                    continue
                literal = pattern.pattern_type == PatternType.LITERAL
                if e.permission == PermissionType.DENY:
                    if literal and pattern.name == WILDCARD:
                        return False
                    (deny_literal if literal else deny_prefixed).add(pattern.name)
                elif e.permission == PermissionType.ALLOW:
                    if literal and pattern.name == WILDCARD:
                        wildcard_allow = True
                    else:
                        (allow_literal if literal else allow_prefixed).add(pattern.name)
        if wildcard_allow:
            return True
        for literal, names in ((True, allow_literal), (False, allow_prefixed)):
            for allowed in names:
                if literal and allowed in deny_literal:
                    continue
                if not any(allowed[:i] in deny_prefixed for i in range(1, len(allowed) + 1)):
                    return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """Kafka's authorized-operations bit field: bit `op` set for each operation the resource
        type supports that the principal may do on it."""
        return sum(1 << op for op in OPERATIONS[resource_type]
                   if self.authorize(principal, host, op, resource_type, name))


def parse_super_users(text: str) -> frozenset[str]:
    """`super.users`: principals separated by ";" (blank entries ignored, as Kafka splits it)."""
    return frozenset(p.strip() for p in text.split(";") if p.strip())
