"""server.properties and --override KEY=VALUE -> one checked BrokerConfig, as Kafka's broker
reads its configuration at start-up: each key parsed by its type (broker_keys.py), Kafka 3.9's
keys wirekafka does not act on accepted or refused (kafka_only_keys.py), then Kafka's rules on the
whole (listeners: listener_checks.py; the authorizer, plug-in classes, bounds). A configuration
Kafka would refuse stops start-up with ConfigError."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Mapping

from wirekafka.config import environment, kafka_only_keys
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.broker_keys import (
    ACL_ZOOKEEPER_PREFIX,
    AT_LEAST,
    AUTHORIZER_KEYS,
    BROKER_KEYS,
    CHECKED,
    DEFAULT_PRINCIPAL_BUILDER,
    INERT_KEYS,
    MIN_SEGMENT_BYTES,
    RACK_AWARE_SELECTOR,
    STANDARD_AUTHORIZER,
    WIREKAFKA_KEYS,
    ZK_AUTHORIZER,
    ZK_TLS_KEYS,
)
from wirekafka.config.ip_overrides import parse_ip_overrides
from wirekafka.config.listener_checks import check_listeners
from wirekafka.config.sensitive import HIDDEN, is_password, shown
from wirekafka.security.oauth import token_login as oauth_login
from wirekafka.security.oauth import validator as oauth_validator
from wirekafka.security.principal import SslPrincipalMapper
from wirekafka.startup_errors import ConfigError
from wirekafka.storage.properties_file import read_properties

log = logging.getLogger(__name__)

# The listener-prefixed keys wirekafka reads: a listener's SASL mechanisms and a mechanism's
# JAAS configuration (listener.name.sasl_plaintext.plain.sasl.jaas.config), the secured OAUTHBEARER
# validator and login and their settings (security/oauth/validator.py, token_login.py), GSSAPI's service
# name and principal.to.local rules.
_LISTENER_KEY = re.compile(r"^listener\.name\.[^.]+\.(sasl\.enabled\.mechanisms|sasl\.server\.max\.receive\.size|"
                           r"max\.connection\.creation\.rate|"
                           r"[^.]+\.sasl\.jaas\.config|"
                           r"oauthbearer\.sasl\.(?:server|login)\.callback\.handler\.class|"
                           r"(?:oauthbearer\.)?sasl\.(?:oauthbearer|login)\.[a-z.]+|"
                           r"[^.]+\.connections\.max\.reauth\.ms|ssl\.[a-z.]+|"
                           r"sasl\.kerberos\.(?:service\.name|principal\.to\.local\.rules))$", re.IGNORECASE)
# A mechanism's JVM plug-ins on a listener (a secured OAUTHBEARER validator, say): refused, since
# ignoring one would authenticate with the built-in behaviour the operator replaced.
_LISTENER_PLUGIN_KEY = re.compile(r"^listener\.name\.[^.]+\.[^.]+\.sasl\.(?:(?:server|login|client)\.callback\.handler"
                                  r"|login)\.class$", re.IGNORECASE)


def load_config(path: Path | None, overrides: list[str], environ: Mapping[str, str] | None = None) -> BrokerConfig:
    """The broker's configuration: the file (read as java.util.Properties reads it), then the
    KAFKA_* variables of ``environ`` as Apache Kafka's container image reads them (environment.py),
    then each --override KEY=VALUE, each on top of the one before. The file's values are trimmed,
    as Kafka's ConfigDef trims every value it parses (Properties keeps a value's trailing
    whitespace), since wirekafka keeps some values as given (a listener's own settings)."""
    try:
        props = {k: v.strip() for k, v in read_properties(path).items()} if path else {}
    except ValueError as exc:  # a malformed \uXXXX escape
        raise ConfigError(f"{path}: {exc}") from None
    from_environment = environment.properties_from(environ or {})
    for key, value in from_environment.items():
        log.info("%s=%s from the environment", key, shown(key, value))
    props.update({k: v.strip() for k, v in from_environment.items()})  # trimmed as a file's line would be
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--override expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        props[k.strip()] = v
    return build_config(props)


def build_config(props: Mapping[str, str]) -> BrokerConfig:
    values: dict[str, object] = {k: d for k, (_, d) in BROKER_KEYS.items()}
    values.update({k: d for k, (_, d) in AUTHORIZER_KEYS.items()})
    values.update({k: d for k, (_, d) in WIREKAFKA_KEYS.items()})
    for key, raw in props.items():
        own = AUTHORIZER_KEYS.get(key) or WIREKAFKA_KEYS.get(key)
        if own is not None:
            try:
                values[key] = own[0](raw)
            except ValueError as exc:
                raise ConfigError(f"invalid value {_quoted(key, raw)} for {key}: {exc}") from exc
            continue
        if key.startswith(ACL_ZOOKEEPER_PREFIX):
            values[key] = raw.strip()  # AclAuthorizer's own ZooKeeper client settings (_check_authorizer)
            continue
        spec = BROKER_KEYS.get(key)
        if _LISTENER_PLUGIN_KEY.match(key) and raw.strip() and not _is_oauth_handler(key, raw):
            raise ConfigError(f"{key}={raw} is not available in wirekafka: it loads JVM classes (wirekafka serves "
                              f"OAUTHBEARER with Kafka's unsecured validator and login, or its secured validator "
                              f"{oauth_validator.HANDLER_CLASS} and login {oauth_login.HANDLER_CLASSES[0]})")
        if spec is None and _LISTENER_KEY.match(key):
            broker_spec = BROKER_KEYS.get(key.split(".", 3)[3].lower())
            try:  # a key the broker also has is checked against its type
                if broker_spec is not None:
                    broker_spec[0](raw)
            except ValueError as exc:
                raise ConfigError(f"invalid value {_quoted(key, raw)} for {key}: {exc}") from exc
            values[key.lower()] = raw  # a listener's own SASL setting (listener.name.<l>.<...>)
            continue
        # kept as given for their readers: the secured OAUTHBEARER validator and login, the
        # ZooKeeper client (broker/metadata/zk/security.py); checked against Kafka's type where it has one
        if key in oauth_validator.KEYS or key in oauth_login.KEYS or key in ZK_TLS_KEYS:
            kind = ZK_TLS_KEYS[key][0] if key in ZK_TLS_KEYS else kafka_only_keys.KEYS.get(key, (None,))[0]
            try:
                if kind is not None:
                    kafka_only_keys.parse_as(kind, raw)
            except ValueError as exc:
                raise ConfigError(f"Invalid value {shown(key, raw)} for configuration {key}: {exc}") from None
            values[key] = raw.strip()
            continue
        if spec is None and key in kafka_only_keys.KEYS:
            _accept_kafka_only(key, raw)
            continue
        if spec is None:
            log.warning("ignoring unknown config key %s", key)
            continue
        try:
            values[key] = spec[0](raw)
        except ValueError as exc:
            raise ConfigError(f"invalid value {_quoted(key, raw)} for {key}: {exc}") from exc
        if key in INERT_KEYS and values[key] != spec[1]:
            log.warning("%s=%s has no effect in wirekafka: %s", key, shown(key, raw), INERT_KEYS[key])
    cfg = BrokerConfig(values, _given_keys(props))
    _check(cfg, props)
    return cfg


def _check(cfg: BrokerConfig, props: Mapping[str, str]) -> None:
    """Kafka's start-up rules on the whole configuration; ConfigError with its message."""
    if not cfg.zookeeper_mode:
        for key in sorted(k for k in props if k.startswith("zookeeper.") and k in cfg.values):
            log.warning("%s=%s has no effect in wirekafka: there is no ZooKeeper without zookeeper.connect",
                        key, shown(key, props[key]))
    check_listeners(cfg)
    if cfg.int("message.max.bytes") <= 0:
        raise ConfigError("message.max.bytes must be > 0")
    # Kafka 4 (KIP-1030) refuses segments under 1 MiB, and its broker exits with this message.
    # There is no broker-level way round it: tests wanting small segments set the internal
    # topic config internal.segment.bytes (config/topic.py), as Kafka's own tests do.
    if cfg.int("log.segment.bytes") < MIN_SEGMENT_BYTES:
        raise ConfigError(f"Invalid value {cfg['log.segment.bytes']} for configuration log.segment.bytes: "
                          f"Value must be at least {MIN_SEGMENT_BYTES}")
    if cfg.zookeeper_mode:
        _check_zookeeper_broker_id(cfg)
    # Plug-ins are JVM classes: a broker asked for one it cannot load stops, as Kafka's does,
    # rather than run without the policy the operator asked for.
    if cfg["client.quota.callback.class"]:
        raise ConfigError(f"client.quota.callback.class {cfg['client.quota.callback.class']} is not available: "
                          "wirekafka has Kafka's default quota callback only (quotas by user and client id)")
    if cfg["principal.builder.class"] not in (None, "", DEFAULT_PRINCIPAL_BUILDER):
        raise ConfigError(f"principal.builder.class {cfg['principal.builder.class']} is not available: wirekafka has "
                          f"Kafka's {DEFAULT_PRINCIPAL_BUILDER} only")
    for listener in [None, *(lst.name for lst in cfg.listeners)]:  # Kafka parses them when it builds a listener
        rules = (str(cfg["ssl.principal.mapping.rules"]) if listener is None
                 else cfg.listener_own(listener, "ssl.principal.mapping.rules"))
        try:
            SslPrincipalMapper.parse(rules)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    _check_authorizer(cfg)
    selector = cfg["replica.selector.class"]
    if selector not in (None, "", RACK_AWARE_SELECTOR):
        raise ConfigError(f"replica.selector.class {selector} is not available: wirekafka has Kafka's "
                          f"{RACK_AWARE_SELECTOR} only")
    for key, least in AT_LEAST.items():  # Kafka's atLeast(n) validators, and their start-up message
        if cfg.int(key) < least:
            raise ConfigError(f"Invalid value {cfg[key]} for configuration {key}: Value must be at least {least}")
    for key, check in CHECKED.items():
        reason = check(cfg.int(key))
        if reason is not None:
            raise ConfigError(f"Invalid value {cfg[key]} for configuration {key}: {reason}")
    codec = cfg.int("offsets.topic.compression.codec")
    if not 0 <= codec <= 4:  # Kafka's CompressionType.forId, when the group coordinator starts
        raise ConfigError(f"Unknown compression type id: {codec}")
    parse_ip_overrides(str(cfg["max.connections.per.ip.overrides"]))  # refused now, not at the first connection
    # a pool smaller than one request could never admit the largest frame a client may send
    if 0 < cfg.int("queued.max.request.bytes") < cfg.int("socket.request.max.bytes"):
        raise ConfigError("requirement failed: queued.max.request.bytes must be larger or equal to "
                          "socket.request.max.bytes")
    if cfg.int("max.connections.per.ip") == 0 and not cfg["max.connections.per.ip.overrides"]:
        raise ConfigError("requirement failed: max.connections.per.ip can be set to zero only if "
                          "max.connections.per.ip.overrides property is set.")


def _accept_kafka_only(key: str, raw: str) -> None:
    """A Kafka 3.9 key wirekafka does not act on: checked against Kafka's type; a value other than
    Kafka's default is logged as having no effect, or stops start-up where ignoring it would
    not do what the operator asked (kafka_only_keys)."""
    try:
        value = kafka_only_keys.parse(key, raw)
    except ValueError as exc:
        raise ConfigError(f"Invalid value {shown(key, raw)} for configuration {key}: {exc}") from None
    if kafka_only_keys.is_default(key, value):
        return
    kind, reason = kafka_only_keys.treatment(key)
    if kind == kafka_only_keys.REFUSED:
        raise ConfigError(f"{key}={shown(key, raw)} is not available in wirekafka: {reason}")
    log.warning("%s=%s has no effect in wirekafka: %s", key, shown(key, raw), reason)


def _check_authorizer(cfg: BrokerConfig) -> None:
    """The authorizer Kafka's broker of the same mode would load: StandardAuthorizer on the single
    node (a Kafka 4 broker's), AclAuthorizer in a ZooKeeper cluster (Kafka 3.9's). Any other class
    stops start-up, as a class Kafka cannot load does, rather than run without ACLs."""
    name = cfg["authorizer.class.name"]
    if not name:
        return
    if name == ZK_AUTHORIZER and cfg.zookeeper_mode:
        _check_acl_zookeeper(cfg)
    if name != cfg.authorizer_class_name:
        other = "a ZooKeeper-mode cluster" if name == ZK_AUTHORIZER else "the single node (KRaft's)"
        raise ConfigError(f"authorizer.class.name {name} is not available here: wirekafka has Kafka's "
                          f"{cfg.authorizer_class_name} in this mode ({name} belongs to {other}); it does not start"
                          if name in (ZK_AUTHORIZER, STANDARD_AUTHORIZER) else
                          f"authorizer.class.name {name} is not available: wirekafka has Kafka's "
                          f"{cfg.authorizer_class_name} only, so ACLs would not be enforced; it does not start")


def _check_acl_zookeeper(cfg: BrokerConfig) -> None:
    """AclAuthorizer's `authorizer.zookeeper.*` keys: Kafka's authorizer may keep ACLs in another
    ZooKeeper (`authorizer.zookeeper.url`) with its own client settings; wirekafka keeps them in
    the cluster's ZooKeeper through the broker's session. The same ensemble is accepted (its
    timeouts and in-flight limit are then the broker session's); another one, or TLS to it, stops
    start-up rather than leave the ACLs where Kafka's brokers would not look."""
    url = cfg.values.get(ACL_ZOOKEEPER_PREFIX + "url")
    if url is not None and url != str(cfg["zookeeper.connect"]).strip():
        raise ConfigError(f"{ACL_ZOOKEEPER_PREFIX}url={url} is not available: wirekafka keeps ACLs in the "
                          f"cluster's ZooKeeper (zookeeper.connect={cfg['zookeeper.connect']})")
    if (str(cfg.values.get(ACL_ZOOKEEPER_PREFIX + "ssl.client.enable", "false")).lower() == "true"
            and not cfg.bool("zookeeper.ssl.client.enable")):
        raise ConfigError(f"{ACL_ZOOKEEPER_PREFIX}ssl.client.enable is true, but wirekafka keeps ACLs through the "
                          "broker's own ZooKeeper session, which zookeeper.ssl.client.enable=false makes plaintext: "
                          "it does not start rather than send them in the clear")
    for key in sorted(k for k in cfg.values if k.startswith(ACL_ZOOKEEPER_PREFIX)):
        if key not in (ACL_ZOOKEEPER_PREFIX + "url", ACL_ZOOKEEPER_PREFIX + "ssl.client.enable"):
            log.warning("%s=%s has no effect in wirekafka: ACLs are read and written through the broker's own "
                        "ZooKeeper session", key, shown(key, cfg.values[key]))


def _quoted(key: str, raw: str) -> str:
    """A value as start-up errors quote it (repr), a secret as "[hidden]"."""
    return HIDDEN if is_password(key) else repr(raw)


def _given_keys(props: Mapping[str, str]) -> frozenset[str]:
    """The keys of `props` the broker keeps, as its values name them: Kafka's DescribeConfigs lists
    every key a broker was started with (its `originals`), not only the ones it knows."""
    return frozenset(key.lower() if _LISTENER_KEY.match(key) else key for key in props
                     if key in BROKER_KEYS or key in AUTHORIZER_KEYS or key in WIREKAFKA_KEYS
                     or key.startswith(ACL_ZOOKEEPER_PREFIX)
                     or _LISTENER_KEY.match(key))


def _is_oauth_handler(key: str, value: str) -> bool:
    """Kafka's secured OAUTHBEARER validator and login, the callback handlers wirekafka has."""
    key = key.lower()
    return ((key.endswith(".oauthbearer.sasl.server.callback.handler.class")
             and value.strip() == oauth_validator.HANDLER_CLASS)
            or (key.endswith(".oauthbearer.sasl.login.callback.handler.class")
                and value.strip() in oauth_login.HANDLER_CLASSES))


def _check_zookeeper_broker_id(cfg: BrokerConfig) -> None:
    """Kafka 3.9's bounds on broker.id in ZooKeeper mode: ids up to reserved.broker.max.id are
    given by hand and -1 asks for a generated one above it; without generation an id is needed."""
    if cfg.bool("broker.id.generation.enable"):
        if not -1 <= cfg.node_id <= cfg.int("reserved.broker.max.id"):
            raise ConfigError("broker.id must be greater than or equal to -1 and not greater than "
                              "reserved.broker.max.id")
    elif cfg.node_id < 0:
        raise ConfigError("broker.id must be greater than or equal to 0")
