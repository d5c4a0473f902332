"""AlterConfigs (key 33), v0-2, and the resource handling it shares with IncrementalAlterConfigs.

- TOPIC resources: the given set replaces ALL of the topic's overrides (legacy semantics: a
  config left out goes back to its default). Every name and value is validated (INVALID_CONFIG
  with Kafka's message, e.g. "Unknown topic config name: x"); validate_only changes nothing;
  new settings apply to the live logs at once (retention, segment size, flush, ...).
- Kafka's request checks first: a resource named twice (each occurrence: INVALID_REQUEST "Each
  resource must appear at most once."), a key named twice in one resource ("Error due to
  duplicate config keys"), a null value ("Null value not supported for : <keys>").
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION "The topic '<name>' does not exist.".
- BROKER resources (this node's id, or "" for the cluster default): the dynamic replication
  throttles (broker/dynamic_config.py) are stored and take effect on the running brokers; any
  other key is refused with Kafka's error for a key that cannot change at runtime:
  INVALID_REQUEST "Cannot update these configs dynamically: [<keys>]"; a throttle that is not a
  non-negative LONG is INVALID_REQUEST with Kafka's text (its code for these keys). Another broker id: INVALID_REQUEST as
  Kafka.
- Any other resource type: INVALID_REQUEST "Unknown resource type <n>" (as Kafka for the legacy
  API, which has no broker-logger support)."""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from kafka.protocol.admin.configs import AlterConfigsResponse

from wirekafka.broker import dynamic_config, topic_config
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

# A resource's change: validates the request's configs against the topic's current overrides
# and returns the new override set (raising KafkaApiError for Kafka's per-resource errors).
ConfigChange = Callable[[object, dict[str, str]], dict[str, str]]
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs' operations
ELR_MIN_ISR_REMOVED = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
# The answer for a resource type other than TOPIC and BROKER.
OtherType = Callable[[object], None]


def check_request_configs(names: Iterable[str], null_names: list[str]) -> None:
    """Kafka's checks on one resource's config list, before anything is looked up."""
    counts = Counter(names)
    if any(n > 1 for n in counts.values()):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    if null_names:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(null_names)}")


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


async def _apply_broker(ctx: RequestContext, resource: object, change: ConfigChange, validate_only: bool,
                        replaces_all: bool) -> None:
    """Validate a broker resource's change and store it (unless validate_only). Kafka writes
    even an unchanged set (in ZooKeeper mode: the znode and a change notification)."""
    name = resource.resource_name  # type: ignore[attr-defined]
    check_broker_name(ctx, name)
    configs = list(resource.configs)  # type: ignore[attr-defined]
    static = [c.name for c in configs if c.name not in dynamic_config.DYNAMIC_KEYS]
    if static:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                            f"Cannot update these configs dynamically: [{', '.join(static)}]")
    listed = [c.name for c in configs if getattr(c, "config_operation", None) in (APPEND, SUBTRACT)]
    if listed:  # the throttles are LONGs: Kafka finds no list config by that name
        raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {listed[0]}")
    if not name and replaces_all and not ctx.state.config.zookeeper_mode:
        # AlterConfigs replaces the whole cluster default, and a Kafka 4 cluster's default holds
        # min.insync.replicas, which it refuses to drop while ELR is on (wirekafka cannot set it).
        raise KafkaApiError(ErrorCode.INVALID_CONFIG, ELR_MIN_ISR_REMOVED)
    entity = dynamic_config.entity_of(name)
    new = change(resource, ctx.state.metadata.broker_configs.of(entity))
    for c in configs:
        if c.name in new:
            dynamic_config.check_value(c.name, new[c.name])
    if not validate_only:
        await ctx.state.metadata.set_broker_configs(entity, new)


def unknown_type(resource: object) -> None:
    raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")  # type: ignore[attr-defined]


async def _apply(ctx: RequestContext, resource: object, change: ConfigChange, validate_only: bool,
                 other_type: OtherType, replaces_all: bool) -> None:
    rtype, name = resource.resource_type, resource.resource_name  # type: ignore[attr-defined]
    if rtype == RESOURCE_BROKER:
        await _apply_broker(ctx, resource, change, validate_only, replaces_all)
        return
    if rtype != RESOURCE_TOPIC:
        other_type(resource)
        return
    topic = ctx.state.metadata.topic(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    new = change(resource, dict(topic.configs))
    for k, v in new.items():
        reason = topic_config.invalid_reason(k, v)
        if reason:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, reason)
    if not validate_only:
        await ctx.state.metadata.set_topic_configs(topic, new)


async def run_resources(ctx: RequestContext, request: object, response_cls: type, change: ConfigChange,
                        null_names: Callable[[object], list[str]], other_type: OtherType,
                        replaces_all: bool = False) -> object:
    """Answer each resource of an AlterConfigs (replaces_all) or IncrementalAlterConfigs request."""
    resources = list(request.resources)  # type: ignore[attr-defined]
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    out = []
    for r in resources:
        try:
            if counts[(r.resource_type, r.resource_name)] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            check_request_configs((c.name for c in r.configs), null_names(r))
            await _apply(ctx, r, change, bool(request.validate_only), other_type,  # type: ignore[attr-defined]
                         replaces_all)
            code, message = ErrorCode.NONE, None
        except KafkaApiError as exc:
            code, message = exc.code, exc.message
        out.append(response_cls.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name))
    return response_cls(version=ctx.version, throttle_time_ms=0, responses=out)


def _replace_all(resource: object, _current: dict[str, str]) -> dict[str, str]:
    return {c.name: c.value for c in resource.configs}  # type: ignore[attr-defined]


def _nulls(resource: object) -> list[str]:
    return [c.name for c in resource.configs if c.value is None]  # type: ignore[attr-defined]


async def handle(ctx: RequestContext, request: object) -> AlterConfigsResponse:
    return await run_resources(ctx, request, AlterConfigsResponse,  # type: ignore[return-value]
                               _replace_all, _nulls, unknown_type, replaces_all=True)
