"""DescribeConfigs (key 32), v1-4.

- TOPIC (2): every topic config of broker/topic_config.py with its effective value, source,
  type (v3+) and, when include_synonyms is set, Kafka's synonym chain: the topic override, then
  the broker keys it inherits from, source by source (this broker's dynamic setting
  DYNAMIC_BROKER_CONFIG, the cluster default's DYNAMIC_DEFAULT_BROKER_CONFIG — a Kafka 4
  cluster is formatted with min.insync.replicas there —, STATIC_BROKER_CONFIG where
  server.properties sets them, then DEFAULT_CONFIG where Kafka has a non-null default), cut to
  start at the topic config's own broker key — so retention.ms without log.retention.ms set
  lists no broker synonym, as in Kafka. The source is the first synonym's, DEFAULT_CONFIG when
  there is none.
- BROKER (4) named by this node's id: every server.properties key wirekafka knows (and any
  dynamic key set), with Kafka's type, value (lists comma-joined, booleans lowercase, unset as
  null) and the same synonym rules (log.retention.ms/minutes/hours, log.roll.*,
  log.flush.interval.ms share a chain); read_only is false for the keys it can change at
  runtime (broker/dynamic_config.py). The cluster-default resource (empty name) lists the keys
  set there, min.insync.replicas among them.
- BROKER_LOGGER (8) named by this node's id: the root logger and wirekafka's loggers with their
  effective levels in log4j's names.
- configuration_keys filters (null or empty = all; unknown keys are skipped); the result's
  error_message is "" on success, as Kafka sends it.
- Errors as Kafka: unknown topic UNKNOWN_TOPIC_OR_PARTITION (no message); an illegal topic
  name INVALID_TOPIC_EXCEPTION with Kafka's "Topic name is invalid: ..." texts; a broker id that
  is not a number or not ours INVALID_REQUEST with a message; any other resource type
  INVALID_REQUEST with Kafka's generic text for it.

- The dynamic replication throttles are listed once set, type LONG, with the same sources.
- The keys the broker was started with that are not broker keys of Kafka's are listed too, as
  Kafka lists every key of its `originals`: the authorizer's (super.users,
  allow.everyone.if.no.acl.found, ZooKeeper mode's authorizer.zookeeper.*) with Kafka's type
  UNKNOWN, so sensitive and without a value; a listener's own settings (listener.name.<l>.<key>,
  listener.name.<l>.<mechanism>.sasl.jaas.config) with their base key's type, sensitive when
  that is PASSWORD (else their value as given). All read_only, source STATIC_BROKER_CONFIG,
  their synonyms the key, then the base key's static setting and default.
- A listener's store keys set on this broker (listener.name.<l>.ssl.keystore.location, ...) are
  listed as Kafka lists them: read_only, the base key's type, passwords and inline keys
  sensitive (no value, here or in a synonym), source DYNAMIC_BROKER_CONFIG, and the synonyms
  the key, then its base key's static setting and default.
- Authorization per resource, as Kafka's: DESCRIBE_CONFIGS on the topic, on the cluster for
  BROKER, BROKER_LOGGER and CLIENT_METRICS resources, on the group for GROUP ones. A refused
  resource answers TOPIC_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED /
  GROUP_AUTHORIZATION_FAILED with Kafka's message and no configs, without looking further (an
  unknown topic is not told apart); Kafka lists the allowed resources first, then the refused.

Deliberate deviations: the broker keys Kafka can change at runtime but wirekafka only reads at
start-up (connection limits, producer.id.expiration.ms, ...) are read_only, and so is every
logger; so are the store keys without a listener prefix (ssl.keystore.location, ...), which
Kafka marks writable though it refuses them without the prefix.
Not implemented: GROUP (32) and CLIENT_METRICS (16) configs (INVALID_REQUEST: wirekafka has
neither KIP-848 groups nor client metrics); documentation (always null)."""

from __future__ import annotations

import logging

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.broker.metadata.cluster_metadata import MAX_TOPIC_NAME, Topic, topic_name_error
from wirekafka.config import dynamic as dynamic_config
from wirekafka.config import topic as tc
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import BROKER_KEYS, KAFKA3_ONLY_KEYS
from wirekafka.config.describe_types import (
    EMPTY_LIST_DEFAULTS,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    broker_synonyms,
    broker_type,
    kafka_default,
    render,
)
from wirekafka.config.enums import TYPE_PASSWORD, TYPE_UNKNOWN
from wirekafka.protocol.errors import ErrorCode, KafkaApiError
from wirekafka.security.acl.authorizer import CLUSTER_NAME, AclOperation, ResourceType

SOURCE_BROKER_LOGGER = 6

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = _Result.DescribeConfigsResourceResult
_Synonym = _Entry.DescribeConfigsSynonym
# Kafka's INVALID_REQUEST text when the exception carries no message of its own.
_INVALID_REQUEST_TEXT = ("This most likely occurs because of a request being malformed by the client library or the "
                         "message was sent to an incompatible broker. See the broker logs for more details.")
# Where each config resource type's ACLs live, and Kafka's answer when they refuse
_CLUSTER_REFUSAL = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
_REFUSALS: dict[int, tuple[ErrorCode, str]] = {
    RESOURCE_TOPIC: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
    RESOURCE_GROUP: (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
    RESOURCE_BROKER: _CLUSTER_REFUSAL, RESOURCE_BROKER_LOGGER: _CLUSTER_REFUSAL, RESOURCE_CLIENT_METRICS: _CLUSTER_REFUSAL,
}
_LOG4J_LEVELS = [(logging.CRITICAL, "FATAL"), (logging.ERROR, "ERROR"), (logging.WARNING, "WARN"),
                 (logging.INFO, "INFO"), (logging.DEBUG, "DEBUG")]


def _entry(name: str, value: str | None, synonyms: list[_Synonym], with_synonyms: bool, config_type: int,
           read_only: bool) -> _Entry:
    source = synonyms[0].source if synonyms else tc.SOURCE_DEFAULT
    if dynamic_config.is_sensitive(name):
        config_type = TYPE_PASSWORD
    # Kafka's PASSWORD keys, and the keys it cannot type: never shown, here or in a synonym
    sensitive = config_type in (TYPE_PASSWORD, TYPE_UNKNOWN)
    if sensitive:
        value = None
        synonyms = [_Synonym(name=s.name, value=None, source=s.source) for s in synonyms]
    return _Entry(name=name, value=value, read_only=read_only, config_source=source,
                  is_default=source == tc.SOURCE_DEFAULT, is_sensitive=sensitive,
                  synonyms=synonyms if with_synonyms else [], config_type=config_type, documentation=None)


def _invalid_topic_name(name: str) -> str | None:
    """Kafka's DescribeConfigs text for an illegal topic name, None for a legal one."""
    if not topic_name_error(name):
        return None
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is invalid: the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    return (f"Topic name is invalid: '{name}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'")


def _topic_entries(ctx: RequestContext, name: str, with_synonyms: bool) -> list[_Entry]:
    reason = _invalid_topic_name(name)
    if reason:
        raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    topic: Topic | None = ctx.state.metadata.topic(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    config, dynamic = ctx.state.config, ctx.state.metadata.broker_configs
    out = []
    for cname in tc.listed_configs(topic.configs):
        d = tc.TOPIC_CONFIGS[cname]
        synonyms = []
        if cname in topic.configs:
            synonyms.append(_Synonym(name=cname, value=topic.configs[cname], source=tc.SOURCE_DYNAMIC_TOPIC))
        if d.broker_key:
            synonyms += broker_synonyms(config, dynamic, d.broker_key)
        value = tc.effective(cname, topic.configs, config, dynamic)[0]
        out.append(_entry(cname, value, synonyms, with_synonyms, d.type, read_only=False))
    return out


def _check_broker_id(ctx: RequestContext, name: str, allow_empty: bool) -> None:
    node = ctx.state.node_id
    if not name:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        broker = int(name)
    except ValueError:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if broker != node:
        expected = f"{node} or empty string," if allow_empty else f"{node}"
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {expected} but received {name}")


def _read_only(ctx: RequestContext, key: str) -> bool:
    """Kafka marks the keys it can change at runtime writable. The throttles are among them in
    Kafka 4, not in Kafka 3.9's ZooKeeper mode (they are quota configs there)."""
    if key in dynamic_config.THROTTLE_KEYS:
        return ctx.state.config.zookeeper_mode
    return key not in dynamic_config.UPDATABLE


def _originals(config: BrokerConfig) -> set[str]:
    """The keys the broker was started with that wirekafka keeps apart from its broker keys
    (the authorizer's, a listener's own settings): Kafka lists them with the others."""
    return {k for k in config.overridden if k not in BROKER_KEYS}


def _broker_entries(ctx: RequestContext, name: str, with_synonyms: bool) -> list[_Entry]:
    """Every broker key with its value as this broker sees it (the cluster default's resource:
    only the keys set there), and its synonyms."""
    config, dynamic = ctx.state.config, ctx.state.metadata.broker_configs
    out = []
    if name == "":
        for key, value in sorted(dynamic.defaults.items()):
            synonyms = [_Synonym(name=key, value=value, source=tc.SOURCE_DYNAMIC_DEFAULT_BROKER)]
            out.append(_entry(key, value, synonyms, with_synonyms, broker_type(key), _read_only(ctx, key)))
        return out
    _check_broker_id(ctx, name, allow_empty=True)
    originals = _originals(config)
    known = set(BROKER_KEYS) if config.zookeeper_mode else {
        k for k in BROKER_KEYS if k not in KAFKA3_ONLY_KEYS or k in config.overridden}
    for key in sorted(known | set(dynamic.own) | set(dynamic.defaults) | originals):
        synonyms = broker_synonyms(config, dynamic, key)
        found = dynamic.lookup(key)
        value = (found[0] if found is not None else render(config[key]) if key in BROKER_KEYS or key in originals
                 else kafka_default(key))
        if value is None and key in EMPTY_LIST_DEFAULTS:
            value = ""
        out.append(_entry(key, value, synonyms, with_synonyms, broker_type(key), _read_only(ctx, key)))
    return out


def _log4j_level(logger: logging.Logger) -> str:
    level = logger.getEffectiveLevel()
    return next((n for lvl, n in _LOG4J_LEVELS if level >= lvl), "TRACE")


def _logger_entries(ctx: RequestContext, name: str) -> list[_Entry]:
    _check_broker_id(ctx, name, allow_empty=False)
    names = ["root"] + sorted(n for n, lg in logging.root.manager.loggerDict.items()
                              if n.split(".")[0] == "wirekafka" and isinstance(lg, logging.Logger))
    return [_Entry(name=n, value=_log4j_level(logging.getLogger(None if n == "root" else n)), read_only=True,
                   config_source=SOURCE_BROKER_LOGGER, is_default=False, is_sensitive=False, synonyms=[],
                   config_type=0, documentation=None)
            for n in names]


def _entries(ctx: RequestContext, resource: DescribeConfigsRequest.DescribeConfigsResource, with_synonyms: bool) -> list[_Entry]:
    rtype, name = resource.resource_type, resource.resource_name
    if rtype == RESOURCE_TOPIC:
        return _topic_entries(ctx, name, with_synonyms)
    if rtype == RESOURCE_BROKER:
        return _broker_entries(ctx, name, with_synonyms)
    if rtype == RESOURCE_BROKER_LOGGER:
        return _logger_entries(ctx, name)
    if rtype == RESOURCE_GROUP:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Group configs are not supported by wirekafka")
    if rtype == RESOURCE_CLIENT_METRICS:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Client metrics subscriptions are not supported by wirekafka")
    raise KafkaApiError(ErrorCode.INVALID_REQUEST, _INVALID_REQUEST_TEXT)


def config_refusal(ctx: RequestContext, operation: AclOperation, resource_type: int, name: str) -> KafkaApiError | None:
    """Kafka's refusal of `operation` (DESCRIBE_CONFIGS, ALTER_CONFIGS) on a config resource, None
    when it is allowed or the type is not one Kafka authorizes (its own error comes later)."""
    if resource_type == RESOURCE_TOPIC:
        allowed = ctx.authorized(operation, ResourceType.TOPIC, name)
    elif resource_type == RESOURCE_GROUP:
        allowed = ctx.authorized(operation, ResourceType.GROUP, name)
    elif resource_type in _REFUSALS:
        allowed = ctx.authorized(operation, ResourceType.CLUSTER, CLUSTER_NAME)
    else:
        return None
    return None if allowed else KafkaApiError(*_REFUSALS[resource_type])


def _result(ctx: RequestContext, resource: DescribeConfigsRequest.DescribeConfigsResource, with_synonyms: bool) -> _Result:
    r = resource
    wanted = set(r.configuration_keys or ())
    try:
        entries = [e for e in _entries(ctx, r, with_synonyms) if not wanted or e.name in wanted]
        code, message = ErrorCode.NONE, ""
    except KafkaApiError as exc:
        entries, code, message = [], exc.code, exc.message if exc.message is not None else ""
    return _Result(error_code=code, error_message=message, resource_type=r.resource_type,
                   resource_name=r.resource_name, configs=entries)


def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    with_synonyms = bool(getattr(request, "include_synonyms", False))
    allowed, refused = [], []
    for r in request.resources:
        refusal = config_refusal(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
        if refusal is None:
            allowed.append(_result(ctx, r, with_synonyms))
        else:
            refused.append(_Result(error_code=refusal.code, error_message=refusal.message, resource_type=r.resource_type,
                                   resource_name=r.resource_name, configs=[]))
    return DescribeConfigsResponse(version=ctx.version, throttle_time_ms=0, results=allowed + refused)
