"""IncrementalAlterConfigs (key 44), v0-1.

- TOPIC resources: per config SET (0), DELETE (1, back to the default), APPEND (2) and SUBTRACT
  (3) — the last two only for list configs (cleanup.policy), INVALID_REQUEST otherwise; names
  and values validated (INVALID_CONFIG); validate_only; applied to the live logs at once.
- BROKER resources: not supported (INVALID_REQUEST); unknown topic UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from kafka.protocol.admin.configs import IncrementalAlterConfigsResponse

from wirekafka.broker import topic_config
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.alter_configs import ConfigChange, run_resources
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _incremental(ctx: RequestContext, resource: object) -> ConfigChange:
    ops = list(resource.configs)  # type: ignore[attr-defined]

    def change(current: dict[str, str]) -> dict[str, str]:
        for op in ops:
            d = topic_config.TOPIC_CONFIGS.get(op.name)
            if d is None:
                raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {op.name}")
            if op.config_operation == SET:
                current[op.name] = op.value
            elif op.config_operation == DELETE:
                current.pop(op.name, None)
            elif op.config_operation in (APPEND, SUBTRACT):
                if d.type != topic_config.TYPE_LIST:
                    raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                                        f"Config value append is not allowed for config key: {op.name}")
                base = current.get(op.name) or topic_config.effective(op.name, current, ctx.state.config)[0]
                items = [x for x in base.split(",") if x]
                given = [x for x in (op.value or "").split(",") if x]
                if op.config_operation == APPEND:
                    items += [x for x in given if x not in items]
                else:
                    items = [x for x in items if x not in given]
                current[op.name] = ",".join(items)
            else:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op.config_operation}")
        return current

    return change


async def handle(ctx: RequestContext, request: object) -> IncrementalAlterConfigsResponse:
    return await run_resources(ctx, request, IncrementalAlterConfigsResponse,  # type: ignore[return-value]
                         lambda r: _incremental(ctx, r))
