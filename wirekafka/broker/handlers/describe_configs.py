"""DescribeConfigs (key 32), v1-4.

- TOPIC (2): every topic config in broker/topic_config.py with its value, source (topic override,
  static broker setting or Kafka's default), type (v3+) and, when asked, synonyms (the topic
  override, then the broker key) — filtered by configuration_keys when given.
- BROKER (4) named by this node's id: every server.properties key we know, read-only, source
  STATIC_BROKER_CONFIG when set in the file/overrides else DEFAULT_CONFIG. The cluster-wide
  default resource (empty name) has no dynamic defaults, so it lists nothing.
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; another broker id or another resource type:
  INVALID_REQUEST. Documentation is not provided (null)."""

from __future__ import annotations

from kafka.protocol.admin.configs import DescribeConfigsResponse

from wirekafka.broker import topic_config
from wirekafka.broker.context import RequestContext
from wirekafka.config import BROKER_KEYS, BrokerConfig
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = _Result.DescribeConfigsResourceResult
_Synonym = _Entry.DescribeConfigsSynonym


def render(value: object) -> str | None:
    """A broker config value as Kafka prints it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _topic_entries(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool) -> list:
    state = ctx.state
    topic = state.metadata.topic(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
    broker: BrokerConfig = state.config
    out = []
    for cname in sorted(topic_config.TOPIC_CONFIGS):
        if keys is not None and cname not in keys:
            continue
        d = topic_config.TOPIC_CONFIGS[cname]
        value, source = topic_config.effective(cname, topic.configs, broker)
        syn = []
        if synonyms:
            if cname in topic.configs:
                syn.append(_Synonym(name=cname, value=topic.configs[cname], source=topic_config.SOURCE_DYNAMIC_TOPIC))
            if d.broker_key:
                broker_source = (topic_config.SOURCE_STATIC_BROKER if d.broker_key in broker.overridden
                                 else topic_config.SOURCE_DEFAULT)
                syn.append(_Synonym(name=d.broker_key, value=d.default(broker), source=broker_source))
        out.append(_Entry(name=cname, value=value, read_only=False, config_source=source,
                          is_default=source == topic_config.SOURCE_DEFAULT, is_sensitive=False,
                          synonyms=syn, config_type=d.type, documentation=None))
    return out


def _broker_entries(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool) -> list:
    state = ctx.state
    if name == "":
        return []
    if name != str(state.node_id):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST,
                            f"Unexpected broker id, expected {state.node_id} but received {name}")
    out = []
    for key in sorted(BROKER_KEYS):
        if keys is not None and key not in keys:
            continue
        source = (topic_config.SOURCE_STATIC_BROKER if key in state.config.overridden
                  else topic_config.SOURCE_DEFAULT)
        value = render(state.config[key])
        syn = [_Synonym(name=key, value=value, source=source)] if synonyms else []
        out.append(_Entry(name=key, value=value, read_only=True, config_source=source,
                          is_default=source == topic_config.SOURCE_DEFAULT, is_sensitive=False,
                          synonyms=syn, config_type=topic_config.TYPE_STRING, documentation=None))
    return out


def handle(ctx: RequestContext, request: object) -> DescribeConfigsResponse:
    synonyms = bool(getattr(request, "include_synonyms", False))
    results = []
    for r in request.resources:  # type: ignore[attr-defined]
        keys = list(r.configuration_keys) if r.configuration_keys is not None else None
        try:
            if r.resource_type == RESOURCE_TOPIC:
                entries = _topic_entries(ctx, r.resource_name, keys, synonyms)
            elif r.resource_type == RESOURCE_BROKER:
                entries = _broker_entries(ctx, r.resource_name, keys, synonyms)
            else:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}")
            results.append(_Result(error_code=ErrorCode.NONE, error_message=None, resource_type=r.resource_type,
                                   resource_name=r.resource_name, configs=entries))
        except KafkaApiError as exc:
            results.append(_Result(error_code=exc.code, error_message=exc.message, resource_type=r.resource_type,
                                   resource_name=r.resource_name, configs=[]))
    return DescribeConfigsResponse(version=ctx.version, throttle_time_ms=0, results=results)
