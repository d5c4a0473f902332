"""AlterConfigs (key 33), v0-2, and the resource handling it shares with IncrementalAlterConfigs.

- TOPIC resources: the given set replaces ALL of the topic's overrides (legacy semantics: a
  config left out goes back to its default). Every name and value is validated (INVALID_CONFIG
  with Kafka's message, e.g. "Unknown topic config name: x"); validate_only changes nothing;
  new settings apply to the live logs at once (retention, segment size, flush, ...).
- Kafka's request checks first: a resource named twice (each occurrence: INVALID_REQUEST "Each
  resource must appear at most once."), a key named twice in one resource ("Error due to
  duplicate config keys"), a null value ("Null value not supported for : <keys>").
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION "The topic '<name>' does not exist.".
- BROKER resources (this node's id, or "" for the cluster default): the dynamic broker keys
  (broker/dynamic_config.py: replication throttles, log defaults, thread-pool sizes) are stored
  and take effect on the running brokers; any other key is refused with Kafka's error for a key
  that cannot change at runtime: INVALID_REQUEST "Cannot update these configs dynamically:
  [<keys>]"; a value its type or validator refuses is INVALID_REQUEST with Kafka's text.
  Without ZooKeeper (a Kafka 4 cluster with ELR on) the cluster default's min.insync.replicas
  cannot be removed and the per-broker one cannot be set, INVALID_CONFIG with Kafka's texts.
  Another broker id: INVALID_REQUEST as Kafka.
- A TLS listener's stores (listener.name.<l>.ssl.keystore.location, ...; broker/listener_tls.py)
  on this broker's own resource: the new stores are loaded and checked as Kafka's SslFactory
  checks them (validate_only too), and once stored, new connections on the listener get them.
  The same keys without the prefix, or on the cluster default, are refused with Kafka's
  messages. In ZooKeeper mode the passwords among them are stored in /config/brokers/<id>
  encoded with password.encoder.secret as Kafka 3.9 encodes them (broker/password_encoder.py);
  without that secret, a change that would store one is refused as Kafka 3.9 refuses it, after
  all other checks and only when not validate_only: INVALID_CONFIG "Invalid config value for
  resource ConfigResource(type=BROKER, name='<id>'): Password encoder secret not configured".
- Any other resource type: INVALID_REQUEST "Unknown resource type <n>" (as Kafka for the legacy
  API, which has no broker-logger support).
- Authorization per resource where Kafka's controller checks it, after the checks its broker
  makes before forwarding (duplicates, null values, the broker id, keys and values of a BROKER
  resource) and before the rest: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED, also for
  a topic that does not exist), on the cluster for BROKER and CLIENT_METRICS resources
  (CLUSTER_AUTHORIZATION_FAILED), on the group for GROUP ones (GROUP_AUTHORIZATION_FAILED), each
  with Kafka's message."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence, TypeVar

from kafka.protocol.admin.configs import AlterConfigsRequest, AlterConfigsResponse

from wirekafka.config import dynamic as dynamic_config, topic as topic_config
from wirekafka.config.listener_tls import ListenerContext, listener_store_key
from wirekafka.security.password_encoder import PasswordConfigError
from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.config.enums import TYPE_LIST
from wirekafka.broker.handlers.describe_configs import config_refusal
from wirekafka.config.describe_types import (
    RESOURCE_BROKER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    render,
)
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


class _Config(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str | None: ...


class ConfigResource(Protocol):
    """What a resource of AlterConfigs and one of IncrementalAlterConfigs both have."""

    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...

    @property
    def configs(self) -> Sequence[_Config]: ...


@dataclass(frozen=True)
class _SetOp:
    """An IncrementalAlterConfigs APPEND or SUBTRACT on a broker resource, turned into a SET."""

    name: str
    value: str | None
    config_operation: int


R = TypeVar("R", bound=ConfigResource)
# A resource's change: validates a resource's configs against the topic's current overrides and
# returns the new override set (raising KafkaApiError for Kafka's per-resource errors). It gets the
# request's entries, or for a broker resource also _SetOps, so each change types its own.
ConfigChange = Callable[[Sequence[Any], dict[str, str]], dict[str, str]]
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs' operations
ELR_MIN_ISR_REMOVED = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
ELR_BROKER_MIN_ISR = "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
# The answer for a resource type other than TOPIC and BROKER.
OtherType = Callable[[RequestContext, R], None]


def merge_list(op: int, base: str | None, value: str | None) -> str:
    """APPEND or SUBTRACT on a LIST value as Kafka does it: appended items not already present
    go to the end (each once), subtracted ones are removed wherever they are."""
    items = [x for x in (base or "").split(",") if x]
    given = [x for x in (value or "").split(",") if x]
    if op == APPEND:
        items += [x for x in dict.fromkeys(given) if x not in items]
    else:
        items = [x for x in items if x not in given]
    return ",".join(items)


def check_request_configs(names: Iterable[str], null_names: list[str]) -> None:
    """Kafka's checks on one resource's config list, before anything is looked up."""
    counts = Counter(names)
    if any(n > 1 for n in counts.values()):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    if null_names:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(null_names)}")


def check_authorized(ctx: RequestContext, resource: ConfigResource) -> None:
    """ALTER_CONFIGS on the resource, as Kafka's controller checks it: raises its refusal."""
    refusal = config_refusal(ctx, AclOperation.ALTER_CONFIGS, resource.resource_type,
                             resource.resource_name)
    if refusal is not None:
        raise refusal


def check_broker_name(ctx: RequestContext, name: str) -> None:
    """A BROKER resource must name this broker or be "" (the cluster default), as in Kafka."""
    if name:
        try:
            broker = int(name)
        except ValueError:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if broker != ctx.state.node_id:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected broker id, expected {ctx.state.node_id}, but received {name}")


def _list_ops_as_sets(ctx: RequestContext, entity: str, configs: Sequence[_Config]) -> list[_Config]:
    """IncrementalAlterConfigs' APPEND/SUBTRACT on a broker resource as SETs: the items added to
    (skipping ones present) or removed from the entity's value, else the static one. Kafka finds
    no broker config by a throttle's name, and refuses the operation on other non-list keys."""
    out: list[_Config] = []
    for c in configs:
        op = getattr(c, "config_operation", SET)
        if op not in (APPEND, SUBTRACT):
            out.append(c)
            continue
        if c.name in dynamic_config.THROTTLE_KEYS or listener_store_key(c.name) is not None:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {c.name}")
        if dynamic_config.UPDATABLE[c.name].type != TYPE_LIST:
            verb = "append" if op == APPEND else "subtract"
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {c.name}")
        current = ctx.state.metadata.broker_configs.of(entity).get(c.name, render(ctx.state.config[c.name]))
        out.append(_SetOp(name=c.name, config_operation=SET, value=merge_list(op, current, c.value)))
    return out


async def _apply_broker(ctx: RequestContext, resource: ConfigResource, change: ConfigChange, validate_only: bool,
                        replaces_all: bool) -> None:
    """Validate a broker resource's change and store it (unless validate_only). Kafka writes
    even an unchanged set (in ZooKeeper mode: the znode and a change notification)."""
    name = resource.resource_name
    check_broker_name(ctx, name)
    configs = list(resource.configs)
    static = [c.name for c in configs
              if not dynamic_config.is_dynamic(c.name) and c.name not in dynamic_config.SSL_STORE_KEYS]
    if static:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                            f"Cannot update these configs dynamically: [{', '.join(static)}]")
    dynamic_config.check_listener_prefix([c.name for c in configs if getattr(c, "config_operation", SET) != DELETE])
    entity = dynamic_config.entity_of(name)
    configs = _list_ops_as_sets(ctx, entity, configs)
    for c in configs:
        if c.value is not None and getattr(c, "config_operation", SET) == SET:
            dynamic_config.check_value(c.name, c.value)
    dynamic = ctx.state.metadata.broker_configs
    new = change(configs, dynamic.of(entity))
    dynamic_config.check_per_broker(entity, new)
    dynamic.check_change(entity, new)
    tls = await _prepare_tls(ctx, entity, new)
    check_authorized(ctx, resource)
    if not ctx.state.config.zookeeper_mode:  # Kafka 4 with ELR on (KIP-966) guards min.insync.replicas
        if name and any(c.name == dynamic_config.MIN_ISR for c in configs):
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, ELR_BROKER_MIN_ISR)
        if not name and dynamic_config.MIN_ISR not in new:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, ELR_MIN_ISR_REMOVED)
    if not validate_only:
        try:
            await ctx.state.metadata.set_broker_configs(entity, new)
        except PasswordConfigError as exc:  # Kafka 3.9's ZkAdminManager wraps its ConfigException so
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"Invalid config value for resource "
                                f"ConfigResource(type=BROKER, name='{name}'): {exc}") from None
        if entity == str(ctx.state.node_id):
            dynamic.listener_tls.install(tls)
            await dynamic.listener_tls.reload_modified()  # Kafka reloads store files on every per-broker change


async def _prepare_tls(ctx: RequestContext, entity: str, new: dict[str, str]) -> list[ListenerContext]:
    """The TLS listeners' new contexts a change of this broker's own settings gives, checked as
    Kafka checks them (raises its refusal); none for the cluster default."""
    if entity != str(ctx.state.node_id):
        return []
    return await ctx.state.metadata.broker_configs.listener_tls.prepare(new)


def unknown_type(ctx: RequestContext, resource: ConfigResource) -> None:
    """The legacy API's answer for the types it does not serve (GROUP and CLIENT_METRICS, which
    wirekafka does not have, only once the principal may alter them)."""
    if resource.resource_type in (RESOURCE_GROUP, RESOURCE_CLIENT_METRICS):
        check_authorized(ctx, resource)
    raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")


async def _apply(ctx: RequestContext, resource: R, change: ConfigChange, validate_only: bool,
                 other_type: OtherType[R], replaces_all: bool) -> None:
    rtype, name = resource.resource_type, resource.resource_name
    if rtype == RESOURCE_BROKER:
        await _apply_broker(ctx, resource, change, validate_only, replaces_all)
        return
    if rtype != RESOURCE_TOPIC:
        other_type(ctx, resource)
        return
    check_authorized(ctx, resource)
    topic = ctx.state.metadata.topic(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    new = change(resource.configs, dict(topic.configs))
    for k, v in new.items():
        reason = topic_config.invalid_reason(k, v)
        if reason:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, reason)
    if not validate_only:
        await ctx.state.metadata.set_topic_configs(topic, new)


async def run_resources(ctx: RequestContext, resources: Sequence[R], validate_only: bool,
                        change: ConfigChange, null_names: Callable[[R], list[str]], other_type: OtherType[R],
                        replaces_all: bool = False) -> list[tuple[R, ErrorCode, str | None]]:
    """Answer each resource of an AlterConfigs (replaces_all) or IncrementalAlterConfigs request:
    (the resource, its error, its error message)."""
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    out = []
    for r in resources:
        try:
            if counts[(r.resource_type, r.resource_name)] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            check_request_configs((c.name for c in r.configs), null_names(r))
            await _apply(ctx, r, change, validate_only, other_type, replaces_all)
            code, message = ErrorCode.NONE, None
        except KafkaApiError as exc:
            code, message = exc.code, exc.message
        out.append((r, code, message))
    return out


def _replace_all(configs: Sequence[AlterConfigsRequest.AlterConfigsResource.AlterableConfig],
                 _current: dict[str, str]) -> dict[str, str]:
    # a null value is refused before (check_request_configs), so every value here is a string
    return {c.name: c.value for c in configs if c.value is not None}


def _nulls(resource: AlterConfigsRequest.AlterConfigsResource) -> list[str]:
    return [c.name for c in resource.configs if c.value is None]


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    answers = await run_resources(ctx, request.resources, bool(request.validate_only),
                                  _replace_all, _nulls, unknown_type, replaces_all=True)
    answer = AlterConfigsResponse.AlterConfigsResourceResponse
    return AlterConfigsResponse(version=ctx.version, throttle_time_ms=0, responses=[
        answer(error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name)
        for r, code, message in answers])
