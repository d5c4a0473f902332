"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1, as a Kafka 4 broker answers
them from its metadata image and its controller's ClientQuotaControlManager.

- Alter: each entry's entity is a map of type to name (a type named twice keeps its last name;
  a null name is the type's default entity). Per entity, in Kafka's order of checks: an entity
  with no type, a type other than user / client-id / ip, an empty name, an ip combined with a
  user or client id, an ip that is neither an address nor a resolvable host; then per key
  (user and client-id entities take producer_byte_rate, consumer_byte_rate, request_percentage
  and controller_mutation_rate; ip entities connection_creation_rate): an unknown key, a value
  not above 0, a value too large for the key's integral type or with a fraction. Every error is
  INVALID_REQUEST with Kafka's message and leaves that entity unchanged. A key given twice in one
  entry, or an entity altered twice in one request, is answered "Ignoring duplicate entity ..."
  (the first alteration of a twice-named entity still applies, as on Kafka's controller).
  validate_only checks without storing. Results are listed in the order of Kafka's HashMap of
  entities.
- Describe: a filter of components (type and match: exact name, the default entity, or any name
  of that type), with `strict` also excluding entities with other types; Kafka's errors for an
  empty or repeated type, an unknown type (UNSUPPORTED_VERSION), a match that contradicts its
  match type, an unknown match type and an ip filter combined with user or client id; the error
  answer carries no entries (null).
- Authorization first, as Kafka's: Describe needs DESCRIBE_CONFIGS on the cluster (else the
  top-level CLUSTER_AUTHORIZATION_FAILED, no message, entries null), Alter ALTER_CONFIGS on the
  cluster (else every entry of the request, as it named its entity, CLUSTER_AUTHORIZATION_FAILED
  with Kafka's message, and nothing checked or changed)."""

from __future__ import annotations

import math
import socket

import trio
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.quotas.entities import (
    CLIENT_ID,
    ENTITY_TYPES,
    INTEGRAL_TYPES,
    IP,
    USER,
    Entity,
    entity_entries,
    entity_hash,
    entity_of,
    entity_text,
    keys_for,
)
from wirekafka.broker.context import RequestContext
from wirekafka.jvm import java_hashmap_order
from wirekafka.protocol.errors import ErrorCode, fits_in_a_string

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

_AlterEntry = AlterClientQuotasResponse.EntryData
_DescribeEntry = DescribeClientQuotasResponse.EntryData
_CLUSTER_REFUSAL = "Cluster authorization failed."


class _Invalid(Exception):
    """One entity's (or a filter's) INVALID_REQUEST, or another code, with Kafka's message."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(fits_in_a_string(message))  # it may quote an entity name
        self.code = code


# ---- AlterClientQuotas ---------------------------------------------------------------------------
def _refused_alter(ctx: RequestContext, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    return AlterClientQuotasResponse(version=ctx.version, throttle_time_ms=0, entries=[
        _AlterEntry(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=_CLUSTER_REFUSAL, entity=[
            _AlterEntry.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in request.entries])


async def handle_alter(ctx: RequestContext, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    if not ctx.authorized_cluster(AclOperation.ALTER_CONFIGS):
        return _refused_alter(ctx, request)
    results: dict[Entity, tuple[ErrorCode, str | None]] = {}
    shapes: dict[Entity, list[tuple[str, str | None]]] = {}  # each entity as its request listed it
    changes: dict[Entity, dict[str, float | None]] = {}
    for entry in request.entries:
        pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
        entity = entity_of(pairs)
        shapes.setdefault(entity, pairs)
        ops: dict[str, float | None] = {}
        duplicate_key = False
        for op in entry.ops:
            duplicate_key |= op.key in ops
            ops.setdefault(op.key, None if op.remove else op.value)
        if duplicate_key or entity in results:
            results[entity] = (ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(entity)}")
            continue
        try:
            await _check_entity(pairs, entity)
            change = _checked_change(ctx, entity, ops, len(entry.ops))
        except _Invalid as exc:
            results[entity] = (exc.code, str(exc))
            continue
        if change:
            changes[entity] = change
        results[entity] = (ErrorCode.NONE, None)
    if changes and not request.validate_only:
        await ctx.state.metadata.alter_client_quotas(changes)
    entries = []
    for entity in java_hashmap_order(results, hash=entity_hash):
        pairs = shapes[entity]
        names = dict(pairs)
        order = java_hashmap_order([t for t, _ in pairs], capacity=len(pairs))
        code, message = results[entity]
        entries.append(_AlterEntry(error_code=code, error_message=message, entity=[
            _AlterEntry.EntityData(entity_type=t, entity_name=names[t]) for t in order]))
    return AlterClientQuotasResponse(version=ctx.version, throttle_time_ms=0, entries=entries)


async def _check_entity(pairs: list[tuple[str, str | None]], entity: Entity) -> None:
    """ClientQuotaControlManager's entity checks, in its order."""
    if not pairs:
        raise _Invalid("Invalid empty client quota entity")
    names = dict(pairs)
    for entity_type in java_hashmap_order([t for t, _ in pairs], capacity=len(pairs)):
        if entity_type not in ENTITY_TYPES:
            raise _Invalid(f"Unhandled client quota entity type: {entity_type}")
        if names[entity_type] == "":
            raise _Invalid(f"Empty {entity_type} not supported")
    if IP in names:
        if USER in names or CLIENT_ID in names:
            # Kafka's message runs "should" and "not" together
            raise _Invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        if not await _resolvable(names[IP]):
            raise _Invalid(f"{names[IP]} is not a valid IP or resolvable host.")


async def _resolvable(host: str | None) -> bool:
    """Java's InetAddress.getByName succeeds: an address, or a name that resolves (null: the
    default entity)."""
    if host is None:
        return True
    try:
        await trio.to_thread.run_sync(socket.getaddrinfo, host, None)
        return True
    except (OSError, UnicodeError):
        return False


def _checked_change(ctx: RequestContext, entity: Entity, ops: dict[str, float | None],
                    count: int) -> dict[str, float | None]:
    """The records an entity's ops make: keys whose value changes, and removals of keys it has."""
    valid = keys_for(entity)
    current = ctx.state.metadata.client_quotas.get(entity)
    change: dict[str, float | None] = {}
    for key in java_hashmap_order(ops, capacity=count):
        value = ops[key]
        if value is None:
            if key in current:
                change[key] = None
            continue
        kind = valid.get(key)
        if kind is None:
            raise _Invalid(f"Invalid configuration key {key}")
        if value <= 0.0:
            raise _Invalid(f"Quota {key} must be greater than 0")
        if kind in INTEGRAL_TYPES:
            limit, article = INTEGRAL_TYPES[kind]
            if value > float(limit):  # compared as Java does, in doubles
                raise _Invalid(f"Proposed value for {key} is too large for {article}.")
            if abs(math.fmod(value, 1.0)) > 1e-6:
                raise _Invalid(f"{key} cannot be a fractional value.")
        if current.get(key) != value:
            change[key] = value
    return change


# ---- DescribeClientQuotas ------------------------------------------------------------------------
def handle_describe(ctx: RequestContext, request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not ctx.authorized_cluster(AclOperation.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(version=ctx.version, throttle_time_ms=0,
                                            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None,
                                            entries=None)
    try:
        exact, specified = _filter(request.components)
    except _Invalid as exc:
        return DescribeClientQuotasResponse(version=ctx.version, throttle_time_ms=0, error_code=exc.code,
                                            error_message=str(exc), entries=None)
    found = ctx.state.metadata.client_quotas.describe(exact, specified, request.strict)
    entries = [_DescribeEntry(
        entity=[_DescribeEntry.EntityData(entity_type=t, entity_name=n) for t, n in entity_entries(entity)],
        values=[_DescribeEntry.ValueData(key=k, value=v) for k, v in quotas.items()])
        for entity, quotas in found]
    # Kafka's image answers an empty message (its data class's default) when it succeeds
    return DescribeClientQuotasResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                        error_message="", entries=entries)


def _filter(components: list) -> tuple[dict[str, str | None], set[str]]:
    """ClientQuotasImage.describe's reading of the filter: exact names (None: the default
    entity) and the types that must be present, with its errors in its order."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for component in components:
        entity_type, match = component.entity_type, component.match
        if not entity_type:
            raise _Invalid("Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise _Invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in ENTITY_TYPES:
            raise _Invalid(f"Unsupported entity type {entity_type}", ErrorCode.UNSUPPORTED_VERSION)
        if component.match_type == MATCH_EXACT:
            if match is None:
                raise _Invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif component.match_type == MATCH_DEFAULT:
            if match is not None:
                raise _Invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif component.match_type == MATCH_SPECIFIED:
            if match is not None:
                raise _Invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(entity_type)
        else:
            raise _Invalid(f"Unknown match type {component.match_type}")
    mentioned = set(exact) | specified
    if IP in mentioned and (USER in mentioned or CLIENT_ID in mentioned):
        raise _Invalid("Invalid entity filter component combination. IP filter component should not be used "
                       "with user or clientId filter component.")
    return exact, specified
