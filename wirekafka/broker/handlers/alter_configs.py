"""AlterConfigs (key 33), v0-2, and the topic-config changes it shares with
IncrementalAlterConfigs.

- TOPIC resources: the given set replaces all of the topic's overrides (legacy semantics);
  each name and value is validated (INVALID_CONFIG); validate_only changes nothing; the new
  settings apply to the live logs at once (retention, segment size, ...).
- BROKER resources: dynamic broker configs are not supported; answered INVALID_REQUEST.
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; a resource named twice: INVALID_REQUEST."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from kafka.protocol.admin.configs import AlterConfigsResponse

from wirekafka.broker import topic_config
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC
from wirekafka.broker.state import BrokerState
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

ConfigChange = Callable[[dict[str, str]], dict[str, str]]


async def apply_topic_change(state: BrokerState, resource_type: int, name: str, change: ConfigChange,
                       validate_only: bool) -> None:
    """Validate and (unless validate_only) store a new override set computed from the old one."""
    if resource_type == RESOURCE_BROKER:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Dynamic broker configs are not supported by wirekafka")
    if resource_type != RESOURCE_TOPIC:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}")
    topic = state.metadata.topic(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
    new = change(dict(topic.configs))
    for k, v in new.items():
        reason = topic_config.invalid_reason(k, v)
        if reason:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, reason)
    if not validate_only:
        await state.metadata.set_topic_configs(topic, new)


async def run_resources(ctx: RequestContext, request: object, response_cls: type,
                  change_for: Callable[[object], ConfigChange]) -> object:
    """Apply each resource's change and answer per resource (AlterConfigs and Incremental)."""
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)  # type: ignore[attr-defined]
    out = []
    for r in request.resources:  # type: ignore[attr-defined]
        try:
            if counts[(r.resource_type, r.resource_name)] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Duplicate resource in request")
            await apply_topic_change(ctx.state, r.resource_type, r.resource_name, change_for(r),
                               bool(request.validate_only))  # type: ignore[attr-defined]
            code, message = ErrorCode.NONE, None
        except KafkaApiError as exc:
            code, message = exc.code, exc.message
        out.append(response_cls.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name))
    return response_cls(version=ctx.version, throttle_time_ms=0, responses=out)


def _replace_all(resource: object) -> ConfigChange:
    wanted = {c.name: c.value for c in resource.configs}  # type: ignore[attr-defined]
    return lambda _old: dict(wanted)


async def handle(ctx: RequestContext, request: object) -> AlterConfigsResponse:
    return await run_resources(ctx, request, AlterConfigsResponse, _replace_all)  # type: ignore[return-value]
