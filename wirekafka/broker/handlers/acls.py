"""DescribeAcls (key 29), CreateAcls (30) and DeleteAcls (31), v1-3 (Kafka 4 no longer serves v0),
as a Kafka 4.3.1 broker answers them.

Without an authorizer (authorizer.class.name unset, Kafka's default):
- SECURITY_DISABLED, "No Authorizer is configured on the broker" for a describe, "No Authorizer
  is configured." for every creation and every deletion filter.

With one (StandardAuthorizer on the single node, AclAuthorizer in ZooKeeper mode; see
wirekafka/security/acl/authorizer.py):
- DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER on it (ALTER implies
  DESCRIBE): else CLUSTER_AUTHORIZATION_FAILED for the describe, for every creation and every
  filter, with a message in Kafka's shape ("Request ... needs ALTER permission.").
- DescribeAcls answers every ACL the filter selects (Kafka's ResourcePatternFilter: MATCH selects
  the literal name, the literal "*" and every prefix of the name), one resource per pattern with
  its entries. Kafka groups them in Java hash maps keyed by enum identity hashes, so its order
  differs from one run to the next; wirekafka lists them sorted (type, pattern type, name, then
  principal, host, operation, permission). Success carries error_message "" as Kafka's does.
- CreateAcls: a creation whose resource type, operation or permission is ANY or whose pattern type
  is ANY or MATCH cannot become an ACL binding at all: UNKNOWN_SERVER_ERROR (no message) for every
  creation of the request and none is created, as Kafka fails the whole request. Otherwise each
  creation on its own, in Kafka's order of checks: a CLUSTER resource not named kafka-cluster; an
  empty name; a resource type, pattern type, operation or permission code Kafka does not know
  ("Invalid resourceType UNKNOWN", ...); a principal without ":" ("Could not parse principal from
  `x` ...") — INVALID_REQUEST each. The rest are created (a duplicate is a success and stays one
  ACL); hosts and operations are not checked further, as Kafka does not. Success carries "".
  A KRaft controller writes at most 10,000 records for one request: when the creations that pass
  the broker's checks (the first two above) hold more ACLs new to the cluster than that (one per
  distinct binding not yet there), Kafka creates none of them and answers each of those creations
  POLICY_VIOLATION "Unable to perform excessively large batch operation." (ZooKeeper mode's
  AclAuthorizer has no such bound).
- DeleteAcls: a filter with an unknown resource or pattern type code gets INVALID_REQUEST "Unknown
  patternFilter.", one with an unknown operation or permission "Unknown entryFilter."; each other
  filter lists the ACLs it matched before any of the request's deletions (two filters matching the
  same ACL both list it), and every matched ACL is deleted. Matching nothing is a success with
  no ACLs.
- Changes are persisted by the broker's ACL store (wirekafka/security/acl/store.py: the log dir's
  file, or ZooKeeper's /kafka-acl tree), one resource pattern at a time, and applied to the
  authorizer before the answer (Kafka applies them from its metadata log a moment later). A
  resource the store fails on (in ZooKeeper: a name that cannot be a znode, a race lost too often,
  a lost session) gives its error to that resource's creations, or to each of its matched ACLs in
  a DeleteAcls answer (their own error fields), and stays as it was; the other resources go ahead.

Either way, a request with an UNKNOWN (0) resource type, pattern type, operation or permission is
one Kafka cannot parse: the connection is closed before any authorization, as Kafka closes it."""

from __future__ import annotations

import logging
from enum import IntEnum
from typing import Any, TypeVar

from kafka.protocol.admin.acl import (CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
                                      DescribeAclsRequest, DescribeAclsResponse)

from wirekafka.security.acl.authorizer import (CLUSTER_NAME, AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                         PatternType, PermissionType, ResourcePattern, ResourceType)
from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

log = logging.getLogger(__name__)

NO_AUTHORIZER = "No Authorizer is configured."
MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's QuorumController: records one request may write
_TOO_LARGE = (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
FILTER_FIELDS = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")
_Resource = DescribeAclsResponse.DescribeAclsResource
_Description = DescribeAclsResponse.DescribeAclsResource.AclDescription
_FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
_Matching = DeleteAclsResponse.DeleteAclsFilterResult.DeleteAclsMatchingAcl
UNKNOWN = 0  # the UNKNOWN code of ACL resource types, pattern types, operations and permissions
E = TypeVar("E", bound=IntEnum)


def _code(cls: type[E], code: int) -> E:
    """A code as Kafka's fromCode reads it: one it does not know is UNKNOWN."""
    return cls(code) if code in cls._value2member_map_ else cls(UNKNOWN)


def _close_on_unknown(items: list, *fields: str) -> None:
    if any(getattr(item, f) == UNKNOWN for item in items for f in fields):
        raise CloseConnection("ACL request with UNKNOWN elements (Kafka cannot parse the request)")


def _denied(ctx: RequestContext, api: str, operation: AclOperation) -> str | None:
    """Kafka's cluster authorization failure message, or None when the session may do `operation`
    on the cluster. Kafka's message prints its request object (connection ids, hash codes); this one names
    the request, the principal and its address."""
    if ctx.authorized_cluster(operation):
        return None
    return f"Request {api} from {ctx.kafka_principal} at {ctx.client_host} needs {operation.name} permission."


# ---- DescribeAcls -----------------------------------------------------------------------------
def handle_describe(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    _close_on_unknown([request], *FILTER_FIELDS)
    denied = _denied(ctx, "DescribeAcls", AclOperation.DESCRIBE)
    if denied is not None:
        return _describe_response(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied, [])
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return _describe_response(ctx, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker", [])
    return _describe_response(ctx, ErrorCode.NONE, "", _resources(authorizer.matching(_selector(request))))


def _describe_response(ctx: RequestContext, code: ErrorCode, message: str, resources: list) -> DescribeAclsResponse:
    return DescribeAclsResponse(version=ctx.version, throttle_time_ms=0, error_code=code, error_message=message,
                                resources=resources)


def _resources(bindings: list[AclBinding]) -> list[Any]:
    """One resource per pattern, with its entries (see the module docstring for the order)."""
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, []).append(b.entry)
    return [_Resource(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
                      acls=[_Description(principal=e.principal, host=e.host, operation=e.operation,
                                         permission_type=e.permission) for e in sorted(entries, key=_entry_key)])
            for p, entries in sorted(by_pattern.items(), key=lambda item: _pattern_key(item[0]))]


def _pattern_key(p: ResourcePattern) -> tuple:
    return (p.resource_type, p.pattern_type, p.name)


def _entry_key(e: AccessControlEntry) -> tuple:
    return (e.principal, e.host, e.operation, e.permission)


def _selector(f: Any) -> AclBindingFilter:
    """A DescribeAcls request's or a DeleteAcls filter's fields (the two share their names) as a
    filter."""
    return AclBindingFilter(_code(ResourceType, f.resource_type_filter), f.resource_name_filter,
                            _code(PatternType, f.pattern_type_filter), f.principal_filter, f.host_filter,
                            _code(AclOperation, f.operation), _code(PermissionType, f.permission_type))


# ---- CreateAcls -------------------------------------------------------------------------------
async def handle_create(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    creations = request.creations
    _close_on_unknown(creations, "resource_type", "resource_pattern_type", "operation", "permission_type")
    denied = _denied(ctx, "CreateAcls", AclOperation.ALTER)
    if denied is not None:
        return _create_response(ctx, [(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)] * len(creations))
    if ctx.state.authorizer is None:
        return _create_response(ctx, [(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)] * len(creations))
    maybe_bindings = [_binding(c) for c in creations]
    if None in maybe_bindings:  # Kafka fails the whole request
        return _create_response(ctx, [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * len(creations))
    bindings = [b for b in maybe_bindings if b is not None]
    results: list[tuple[ErrorCode, str | None]] = []
    by_pattern: dict[ResourcePattern, list[int]] = {}  # the valid creations of each resource
    for i, b in enumerate(bindings):
        error = _broker_error(b) or _controller_error(b)
        results.append((ErrorCode.NONE, "") if error is None else (ErrorCode.INVALID_REQUEST, error))
        if error is None:
            by_pattern.setdefault(b.pattern, []).append(i)
    if not ctx.state.config.zookeeper_mode and _too_many_records(ctx, bindings, by_pattern):
        return _create_response(ctx, [_TOO_LARGE if _broker_error(b) is None else result
                                      for b, result in zip(bindings, results)])
    for indexes in by_pattern.values():
        failure = await _change(ctx, [bindings[i] for i in indexes], deleting=False)
        if failure is not None:
            for i in indexes:
                results[i] = failure
    return _create_response(ctx, results)


async def _change(ctx: RequestContext, bindings: list[AclBinding], deleting: bool
                  ) -> tuple[ErrorCode, str | None] | None:
    """Persist the creation or deletion of one resource pattern's ACLs through the broker's ACL
    store, then apply it to the authorizer; or the error the store met, which Kafka reports for
    each ACL of that resource (its ZooKeeper-mode authorizer updates one resource znode at a time)."""
    authorizer, store = ctx.state.authorizer, ctx.state.acl_store
    assert authorizer is not None and store is not None, "an authorizer comes with its ACL store"
    bindings = list(dict.fromkeys(bindings))  # a creation repeated in one request is one ACL
    try:
        await (store.delete(bindings) if deleting else store.create(bindings))
    except KafkaApiError as exc:
        return exc.code, exc.message
    except Exception:
        log.exception("the ACL store failed to %s %s", "delete" if deleting else "create", bindings)
        return ErrorCode.UNKNOWN_SERVER_ERROR, None
    (authorizer.remove if deleting else authorizer.add)(bindings)
    return None


def _binding(c: Any) -> AclBinding | None:
    """The creation as an AclBinding, or None where it has ANY (or the pattern type MATCH), which
    Kafka's ResourcePattern and AccessControlEntry constructors refuse before any validation."""
    rtype, ptype = _code(ResourceType, c.resource_type), _code(PatternType, c.resource_pattern_type)
    operation, permission = _code(AclOperation, c.operation), _code(PermissionType, c.permission_type)
    if (rtype == ResourceType.ANY or ptype in (PatternType.ANY, PatternType.MATCH) or operation == AclOperation.ANY
            or permission == PermissionType.ANY):
        return None
    return AclBinding(ResourcePattern(rtype, c.resource_name, ptype),
                      AccessControlEntry(c.principal, c.host, operation, permission))


def _too_many_records(ctx: RequestContext, bindings: list[AclBinding], by_pattern: dict[ResourcePattern, list[int]]
                      ) -> bool:
    """Whether Kafka's controller would need more than MAX_RECORDS_PER_USER_OP records for the
    valid creations: one per distinct binding the cluster does not have yet."""
    authorizer = ctx.state.authorizer
    assert authorizer is not None
    wanted = {bindings[i] for indexes in by_pattern.values() for i in indexes}
    return len(wanted - set(authorizer.bindings())) > MAX_RECORDS_PER_USER_OP


def _broker_error(binding: AclBinding) -> str | None:
    """Why Kafka's broker refuses this creation before the controller sees it, or None."""
    p = binding.pattern
    if p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not p.name:
        return "Invalid empty resource name"
    return None


def _controller_error(binding: AclBinding) -> str | None:
    """Why Kafka's controller (validateNewAcl) refuses this creation, or None."""
    p, e = binding.pattern, binding.entry
    if p.resource_type == ResourceType.UNKNOWN:
        return "Invalid resourceType UNKNOWN"
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {p.pattern_type.name}"
    if e.operation == AclOperation.UNKNOWN:
        return "Invalid operation UNKNOWN"
    if e.permission not in (PermissionType.ALLOW, PermissionType.DENY):
        return f"Invalid permissionType {e.permission.name}"
    if ":" not in e.principal:
        return (f"Could not parse principal from `{e.principal}` (no colon is present separating the principal "
                f"type from the principal name)")
    return None


def _create_response(ctx: RequestContext, results: list[tuple[ErrorCode, str | None]]) -> CreateAclsResponse:
    result = CreateAclsResponse.AclCreationResult
    return CreateAclsResponse(version=ctx.version, throttle_time_ms=0, results=[
        result(error_code=code, error_message=message) for code, message in results])


# ---- DeleteAcls -------------------------------------------------------------------------------
async def handle_delete(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    filters = request.filters
    _close_on_unknown(filters, *FILTER_FIELDS)
    denied = _denied(ctx, "DeleteAcls", AclOperation.ALTER)
    if denied is not None:
        return _delete_response(ctx, [(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied, [])] * len(filters), {})
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return _delete_response(ctx, [(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER, [])] * len(filters), {})
    results: list[tuple[ErrorCode, str | None, list[AclBinding]]] = []
    for selector in map(_selector, filters):
        error = _filter_error(selector)
        if error is not None:
            results.append((ErrorCode.INVALID_REQUEST, error, []))
        else:
            results.append((ErrorCode.NONE, None, sorted(authorizer.matching(selector), key=_binding_key)))
    by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
    for b in dict.fromkeys(b for _, _, matched in results for b in matched):
        by_pattern.setdefault(b.pattern, []).append(b)
    failures: dict[ResourcePattern, tuple[ErrorCode, str | None]] = {}
    for pattern, doomed in by_pattern.items():
        failure = await _change(ctx, doomed, deleting=True)
        if failure is not None:
            failures[pattern] = failure
    return _delete_response(ctx, results, failures)


def _filter_error(selector: AclBindingFilter) -> str | None:
    """Kafka's validateFilter: a filter naming a code it does not know."""
    if selector.resource_type == ResourceType.UNKNOWN or selector.pattern_type == PatternType.UNKNOWN:
        return "Unknown patternFilter."
    if selector.operation == AclOperation.UNKNOWN or selector.permission == PermissionType.UNKNOWN:
        return "Unknown entryFilter."
    return None


def _binding_key(b: AclBinding) -> tuple:
    return (*_pattern_key(b.pattern), *_entry_key(b.entry))


def _delete_response(ctx: RequestContext, results: list[tuple[ErrorCode, str | None, list[AclBinding]]],
                     failures: dict[ResourcePattern, tuple[ErrorCode, str | None]]) -> DeleteAclsResponse:
    """The filters' results; a matched ACL whose deletion failed (`failures`, by resource pattern)
    carries that error itself, as Kafka's matching_acls entries do."""
    return DeleteAclsResponse(version=ctx.version, throttle_time_ms=0, filter_results=[
        _FilterResult(error_code=code, error_message=message,
                      matching_acls=[_matching(b, *failures.get(b.pattern, (ErrorCode.NONE, None))) for b in matched])
        for code, message, matched in results])


def _matching(b: AclBinding, code: ErrorCode, message: str | None) -> Any:
    return _Matching(error_code=code, error_message=message, resource_type=b.pattern.resource_type,
                     resource_name=b.pattern.name, pattern_type=b.pattern.pattern_type, principal=b.entry.principal,
                     host=b.entry.host, operation=b.entry.operation, permission_type=b.entry.permission)
