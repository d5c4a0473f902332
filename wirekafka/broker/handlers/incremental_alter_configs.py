"""IncrementalAlterConfigs (key 44), v0-1.

- TOPIC resources, per config: SET (0), DELETE (1: back to the inherited value; deleting a name
  that is not a topic config is a no-op, as in Kafka), APPEND (2) and SUBTRACT (3) on list
  configs (cleanup.policy): the items are added (skipping ones present) to, or removed from, the
  topic's override or — without one — Kafka's default for the key. APPEND/SUBTRACT on any other
  key: INVALID_CONFIG "Can't APPEND to key <k> because its type is not LIST.".
- The resulting override set is validated as a whole (INVALID_CONFIG with Kafka's message);
  validate_only changes nothing; accepted changes apply to the live logs at once.
- Request checks shared with AlterConfigs (duplicate resources, duplicate keys, a null value
  for anything but DELETE: INVALID_REQUEST with Kafka's messages); an operation code outside
  0-3: INVALID_REQUEST "Unknown operations type <n>" (Kafka answers UNKNOWN_SERVER_ERROR for
  topics). Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
- BROKER resources: the dynamic broker keys are set and deleted per operation; APPEND and
  SUBTRACT work on list keys (log.cleanup.policy, from the entity's value or else the static
  one) and are refused on the others with Kafka's messages; static keys are refused as in
  AlterConfigs. A listener's store keys (listener.name.<l>.ssl.keystore.location, ...) are
  checked and applied as in AlterConfigs (new TLS connections get the new stores); APPEND and
  SUBTRACT on them, as on the throttles, find no config of that name.

- Authorization as in AlterConfigs (ALTER_CONFIGS on the topic, the cluster, the group, after
  the broker's own checks); a BROKER_LOGGER resource needs ALTER_CONFIGS on the cluster before
  anything else about it is checked (CLUSTER_AUTHORIZATION_FAILED without a message, as Kafka's
  broker answers it).

Not implemented (INVALID_REQUEST with a message, once authorized): BROKER_LOGGER (8) level
changes, CLIENT_METRICS (16) and GROUP (32) configs."""

from __future__ import annotations

from typing import Protocol, Sequence

from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from wirekafka.config import topic as topic_config
from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.broker.handlers.alter_configs import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    check_authorized,
    merge_list,
    run_resources,
    unknown_type,
)
from wirekafka.config.describe_types import (
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    kafka_default,
)
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class _IncrementalOp(Protocol):
    """An entry of IncrementalAlterConfigs, or a list operation a broker resource made a SET."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str | None: ...

    @property
    def config_operation(self) -> int: ...


def _list_change(name: str, op: int, value: str, current: dict[str, str]) -> str:
    d = topic_config.TOPIC_CONFIGS.get(name)
    if d is None or d.type != topic_config.TYPE_LIST:
        raise KafkaApiError(ErrorCode.INVALID_CONFIG,
                            f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")
    base = current.get(name)
    if base is None and d.broker_key:
        base = kafka_default(d.broker_key)
    return merge_list(op, base, value)


def _incremental(configs: Sequence[_IncrementalOp], current: dict[str, str]) -> dict[str, str]:
    for op in configs:
        if op.config_operation == DELETE:
            current.pop(op.name, None)
        elif op.value is None:  # refused before any change (check_request_configs)
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {op.name}")
        elif op.config_operation == SET:
            current[op.name] = op.value
        elif op.config_operation in (APPEND, SUBTRACT):
            current[op.name] = _list_change(op.name, op.config_operation, op.value, current)
        else:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.config_operation}")
    return current


def _nulls(resource: IncrementalAlterConfigsRequest.AlterConfigsResource) -> list[str]:
    configs = resource.configs
    return [c.name for c in configs if c.value is None and c.config_operation != DELETE]


def _other_type(ctx: RequestContext, resource: IncrementalAlterConfigsRequest.AlterConfigsResource) -> None:
    rtype = resource.resource_type
    if rtype == RESOURCE_BROKER_LOGGER:
        if not ctx.authorized_cluster(AclOperation.ALTER_CONFIGS):
            raise KafkaApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Broker logger levels cannot be changed on wirekafka")
    if rtype in (RESOURCE_CLIENT_METRICS, RESOURCE_GROUP):
        check_authorized(ctx, resource)
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Resource type {rtype} is not supported by wirekafka")
    unknown_type(ctx, resource)


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    answers = await run_resources(ctx, request.resources, bool(request.validate_only), _incremental,
                                  _nulls, _other_type)
    answer = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    return IncrementalAlterConfigsResponse(version=ctx.version, throttle_time_ms=0, responses=[
        answer(error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name)
        for r, code, message in answers])
