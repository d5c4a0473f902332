"""AlterConfigs (key 33), v0-2, and the resource handling it shares with IncrementalAlterConfigs.

- TOPIC resources: the given set replaces ALL of the topic's overrides (legacy semantics: a
  config left out goes back to its default). Every name and value is validated (INVALID_CONFIG
  with Kafka's message, e.g. "Unknown topic config name: x"); validate_only changes nothing;
  new settings apply to the live logs at once (retention, segment size, flush, ...).
- Kafka's request checks first: a resource named twice (each occurrence: INVALID_REQUEST "Each
  resource must appear at most once."), a key named twice in one resource ("Error due to
  duplicate config keys"), a null value ("Null value not supported for : <keys>").
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION "The topic '<name>' does not exist.".
- BROKER resources (this node's id, or "" for the cluster default): wirekafka has no dynamic
  broker configs, so any key is refused with Kafka's own error for a key that cannot change at
  runtime: INVALID_REQUEST "Cannot update these configs dynamically: [<keys>]"; an empty set
  changes nothing and succeeds. Another broker id: INVALID_REQUEST as Kafka. (Deleting a
  replication throttle with IncrementalAlterConfigs succeeds: it is never set.)
- Any other resource type: INVALID_REQUEST "Unknown resource type <n>" (as Kafka for the legacy
  API, which has no broker-logger support)."""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from kafka.protocol.admin.configs import AlterConfigsResponse

from wirekafka.broker import topic_config
from wirekafka.broker.context import RequestContext
from wirekafka.config import DYNAMIC_BROKER_CONFIGS
from wirekafka.broker.handlers.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

# A resource's change: validates the request's configs against the topic's current overrides
# and returns the new override set (raising KafkaApiError for Kafka's per-resource errors).
ConfigChange = Callable[[object, dict[str, str]], dict[str, str]]
DELETE = 1  # IncrementalAlterConfigs' DELETE operation
# The answer for a resource type other than TOPIC and BROKER.
OtherType = Callable[[object], None]


def check_request_configs(names: Iterable[str], null_names: list[str]) -> None:
    """Kafka's checks on one resource's config list, before anything is looked up."""
    counts = Counter(names)
    if any(n > 1 for n in counts.values()):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    if null_names:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(null_names)}")


def refuse_broker_change(ctx: RequestContext, name: str, keys: list[str]) -> None:
    """No broker config of wirekafka can change at runtime: Kafka's answer for such keys."""
    if name:
        try:
            broker = int(name)
        except ValueError:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if broker != ctx.state.node_id:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected broker id, expected {ctx.state.node_id}, but received {name}")
    if keys:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                            f"Cannot update these configs dynamically: [{', '.join(keys)}]")


def unknown_type(resource: object) -> None:
    raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")  # type: ignore[attr-defined]


async def _apply(ctx: RequestContext, resource: object, change: ConfigChange, validate_only: bool,
           other_type: OtherType) -> None:
    rtype, name = resource.resource_type, resource.resource_name  # type: ignore[attr-defined]
    if rtype == RESOURCE_BROKER:
        refuse_broker_change(ctx, name, [c.name for c in resource.configs  # type: ignore[attr-defined]
                                         if not (getattr(c, "config_operation", None) == DELETE
                                                 and c.name in DYNAMIC_BROKER_CONFIGS)])
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
                  null_names: Callable[[object], list[str]], other_type: OtherType) -> object:
    """Answer each resource of an AlterConfigs or IncrementalAlterConfigs request."""
    resources = list(request.resources)  # type: ignore[attr-defined]
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    out = []
    for r in resources:
        try:
            if counts[(r.resource_type, r.resource_name)] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            check_request_configs((c.name for c in r.configs), null_names(r))
            await _apply(ctx, r, change, bool(request.validate_only), other_type)  # type: ignore[attr-defined]
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
                         _replace_all, _nulls, unknown_type)
