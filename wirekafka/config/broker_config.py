"""One frozen BrokerConfig: every server.properties key as given or defaulted (broker_keys.py
names them), with typed accessors for the ones the broker uses and the settings a listener sees
(its own listener.name.<l>.<key> first). loader.py builds it from a file and overrides."""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from wirekafka.config import sensitive
from wirekafka.config.broker_keys import STANDARD_AUTHORIZER, ZK_AUTHORIZER, as_int, parse_list
from wirekafka.config.listeners import (
    MECHANISM_LOGIN_MODULES,
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    Listener,
    parse_listener,
    security_protocols,
)
from wirekafka.security import jaas, jvm_properties, tls
from wirekafka.security.kerberos import keytab_login as kerberos_login
from wirekafka.security.oauth import token_login as oauth_login
from wirekafka.security.oauth import validator as oauth_validator


@dataclass(frozen=True)
class BrokerConfig:
    """Every key as given or defaulted; typed accessors for the ones the broker uses."""

    values: Mapping[str, object]
    # the keys server.properties set: broker keys, the authorizer's, a listener's own settings
    overridden: frozenset[str] = field(default_factory=frozenset)
    # listener name -> the port it was bound to, once bound (with_bound_ports)
    bound_ports: Mapping[str, int] = field(default_factory=dict, hash=False)

    def __getitem__(self, key: str) -> object:
        return self.values[key]

    def __repr__(self) -> str:
        """Its settings with every secret "[hidden]": a config printed by a log line or a failing
        test shows no password."""
        values = {k: sensitive.HIDDEN if v is not None and sensitive.is_password(k) else v
                  for k, v in self.values.items()}
        return f"BrokerConfig(values={values!r}, overridden={sorted(self.overridden)!r})"

    @property
    def node_id(self) -> int:
        """node.id, or broker.id (its ZooKeeper-mode synonym) when that is the one given. In
        ZooKeeper mode with neither given it is broker.id's default, -1: the id is then read from
        the log dir or generated at start-up (broker/metadata/broker_id.py)."""
        if "node.id" in self.overridden:
            return self.int("node.id")
        if "broker.id" in self.overridden or self.zookeeper_mode:
            return self.int("broker.id")
        return self.int("node.id")

    def with_node_id(self, node_id: int) -> "BrokerConfig":
        """This config with broker.id set (a stored or generated id)."""
        return replace(self, values={**self.values, "broker.id": node_id}, overridden=self.overridden | {"broker.id"})

    @property
    def zookeeper_mode(self) -> bool:
        return bool(self.values["zookeeper.connect"])

    @property
    def authorizer_class_name(self) -> str:
        """The authorizer class a Kafka broker of this mode has: AclAuthorizer in a ZooKeeper
        cluster (Kafka 3.9), StandardAuthorizer on the single node (Kafka 4)."""
        return ZK_AUTHORIZER if self.zookeeper_mode else STANDARD_AUTHORIZER

    @property
    def authorizer_enabled(self) -> bool:
        return bool(self.values["authorizer.class.name"])

    @property
    def log_dirs(self) -> tuple[Path, ...]:
        """log.dirs (else log.dir), each named once: where partitions live, one directory each."""
        dirs = self.strings("log.dirs") or (str(self.values["log.dir"]),)
        return tuple(dict.fromkeys(Path(d) for d in dirs))

    @property
    def log_dir(self) -> Path:
        """The first of log.dirs: it also holds the broker's metadata files (Kafka's
        metadata.log.dir defaults to it)."""
        return self.log_dirs[0]

    # Parsed once per config (lookups on the request path ask for them): a cached_property keeps
    # its value beside the frozen fields, and a config made by replace() starts without it.
    @functools.cached_property
    def listeners(self) -> tuple[Listener, ...]:
        """Every listener the broker binds, in the order `listeners` names them."""
        return tuple(self._bound(parse_listener(spec)) for spec in self.strings("listeners"))

    @functools.cached_property
    def advertised_listeners(self) -> tuple[Listener, ...]:
        """What the broker tells clients and other brokers: advertised.listeners when set (only
        those listeners are advertised, as in Kafka), else the listeners. A listener without a
        host (all interfaces) is advertised on loopback, where wirekafka is reached."""
        adv = self.strings("advertised.listeners")
        chosen = tuple(self._bound(parse_listener(spec)) for spec in adv) if adv else self.listeners
        return tuple(Listener(lst.name, lst.host or "127.0.0.1", lst.port) for lst in chosen)

    def with_bound_ports(self, bound: Mapping[str, int]) -> "BrokerConfig":
        """This config with the ports its listeners were bound to: a listener on port 0 is then
        listed, and advertised, on the port the OS gave it, as Kafka advertises it. The values
        stay as given (DescribeConfigs shows them)."""
        return replace(self, bound_ports=dict(bound))

    def _bound(self, lst: Listener) -> Listener:
        return Listener(lst.name, lst.host, self.bound_ports.get(lst.name, 0)) if lst.port == 0 else lst

    def security_protocol(self, listener: str) -> str:
        """The listener's protocol from listener.security.protocol.map."""
        return security_protocols(self.strings("listener.security.protocol.map"))[listener]

    def listener_own(self, listener: str, key: str) -> str | None:
        """A listener's own setting of key, listener.name.<listener>.<key> (Kafka's prefix is
        lowercase), None when not given."""
        return _text(self.values.get(f"listener.name.{listener.lower()}.{key}"))

    def listener_own_int(self, listener: str, key: str) -> int | None:
        """A listener's own setting of an integer key (listener.name.<l>.<key>), None when not given."""
        own = self.listener_own(listener, key)
        return None if own is None else int(own)

    def sasl_mechanisms(self, listener: str) -> tuple[str, ...]:
        """The SASL mechanisms a listener enables: its own sasl.enabled.mechanisms, else the broker's."""
        own = self.listener_own(listener, "sasl.enabled.mechanisms")
        return parse_list(own) if own is not None else self.strings("sasl.enabled.mechanisms")

    def listener_value(self, listener: str, key: str) -> object:
        """A key as a listener sees it: its own setting when given, else the broker's."""
        own = self.listener_own(listener, key)
        if own is not None:
            return own
        value = self.values[key]
        return ",".join(value) if isinstance(value, tuple) else value

    def tls_context(self, listener: str, server: bool) -> ssl.SSLContext | None:
        """The listener's TLS context (server side, or this broker's client side towards it);
        None for a listener without TLS. Raises tls.TlsConfigError."""
        if self.security_protocol(listener) not in TLS_PROTOCOLS:
            return None
        lookup = functools.partial(self.listener_value, listener)
        return tls.server_context(lookup) if server else tls.client_context(lookup)

    def reauth_ms(self, listener: str, mechanism: str) -> int:
        """connections.max.reauth.ms for a listener's mechanism (its own listener.name.<l>.<mechanism>.
        connections.max.reauth.ms first, as Kafka reads it); 0 is no re-authentication."""
        own = self.listener_own(listener, f"{mechanism.lower()}.connections.max.reauth.ms")
        return int(own) if own is not None else self.int("connections.max.reauth.ms")

    def oauth_validator(self, listener: str) -> oauth_validator.ValidatorConfig | None:
        """The listener's secured OAUTHBEARER validator when its server callback handler is Kafka's
        OAuthBearerValidatorCallbackHandler (None: the unsecured default); each sasl.oauthbearer.*
        setting the mechanism's own (listener.name.<l>.oauthbearer.<key>), else the listener's,
        else the broker's. Raises oauth_validator.ValidatorConfigError as Kafka's handler refuses."""
        if not self.listener_own(listener, "oauthbearer.sasl.server.callback.handler.class"):
            return None
        return oauth_validator.configure(functools.partial(self._oauth_setting, listener))

    def oauth_login(self, listener: str) -> oauth_login.LoginConfig | None:
        """The listener's secured OAUTHBEARER login when its login callback handler is Kafka's
        OAuthBearerLoginCallbackHandler (None: the unsecured default), with the options of the
        listener's OAUTHBEARER login module; settings read as for the validator. Raises
        oauth_login.LoginConfigError as Kafka's handler refuses."""
        if (self.listener_own(listener, "oauthbearer.sasl.login.callback.handler.class") or "").strip() \
                not in oauth_login.HANDLER_CLASSES:
            return None
        return oauth_login.configure(functools.partial(self._oauth_setting, listener),
                                     self.jaas_options(listener, "OAUTHBEARER"))

    def _oauth_setting(self, listener: str, key: str) -> str | None:
        """A sasl.oauthbearer.* or sasl.login.* setting as a listener's OAUTHBEARER sees it: the
        mechanism's own (listener.name.<l>.oauthbearer.<key>), else the listener's, else the broker's."""
        found = self.listener_own(listener, f"oauthbearer.{key}")
        found = self.listener_own(listener, key) if found is None else found
        return found if found is not None else _text(self.values.get(key))

    def kerberos_login(self, listener: str) -> kerberos_login.KerberosLogin:
        """The listener's GSSAPI identity: its GSSAPI JAAS module (Krb5LoginModule with a keytab)
        and sasl.kerberos.service.name and sasl.kerberos.principal.to.local.rules as the listener
        sees them. Raises kerberos_login.KerberosLoginError as Kafka's broker refuses to start."""
        module = self.jaas_module(listener, "GSSAPI") or jaas.LoginModule("", "REQUIRED")  # refused below
        own_rules = self.listener_own(listener, "sasl.kerberos.principal.to.local.rules")
        rules = (parse_list(own_rules) if own_rules is not None
                 else self.strings("sasl.kerberos.principal.to.local.rules"))
        service = self.listener_own(listener, "sasl.kerberos.service.name")
        service = service.strip() if service is not None else _text(self.values["sasl.kerberos.service.name"])
        return kerberos_login.configure(module.name, dict(module.options), service or None, rules)

    def jaas_module(self, listener: str, mechanism: str) -> jaas.LoginModule | None:
        """The listener's JAAS login module for a mechanism: its
        listener.name.<l>.<mechanism>.sasl.jaas.config, else (Kafka's static JAAS configuration) the
        `<listener>.KafkaServer` section of the JAAS file KAFKA_OPTS names, or its `KafkaServer`
        section: the module of the mechanism's class there, or the section's only module. None
        when there is none. Raises jaas.JaasError for text Kafka refuses, OSError for a JAAS file
        that cannot be read."""
        text = self.listener_own(listener, f"{mechanism.lower()}.sasl.jaas.config")
        if text is not None:
            return jaas.single_module(text)
        _location, sections = self.jaas_file
        modules = sections.get(f"{listener.lower()}.KafkaServer") or sections.get("KafkaServer") or []
        classes = MECHANISM_LOGIN_MODULES.get(mechanism, ())
        return next((m for m in modules if m.name in classes), modules[0] if len(modules) == 1 else None)

    def jaas_options(self, listener: str, mechanism: str) -> dict[str, str]:
        """The options of the listener's login module for a mechanism ({} without one)."""
        module = self.jaas_module(listener, mechanism)
        return dict(module.options) if module is not None else {}

    @functools.cached_property
    def jaas_file(self) -> tuple[str | None, dict[str, list[jaas.LoginModule]]]:
        """The JAAS file KAFKA_OPTS names, read once as the JVM reads it (its path, its sections):
        the listeners' KafkaServer sections and the ZooKeeper session's Client section
        (broker/metadata/zk/security.py). Raises as jvm_properties.login_config does."""
        return jvm_properties.login_config()

    def inter_broker_sasl(self) -> tuple[str, dict[str, str]] | None:
        """(mechanism, JAAS options) this broker logs in with on the inter-broker listener:
        sasl.mechanism.inter.broker.protocol and the options of that listener's JAAS module for it
        (PLAIN and SCRAM: `username` and `password`; OAUTHBEARER: unsecuredLogin*; GSSAPI: see
        kerberos_login); None when that listener has no SASL."""
        listener = self.inter_broker_listener
        if self.security_protocol(listener) not in SASL_PROTOCOLS:
            return None
        mechanism = str(self["sasl.mechanism.inter.broker.protocol"])
        return mechanism, self.jaas_options(listener, mechanism)

    @functools.cached_property
    def inter_broker_listener(self) -> str:
        """The listener other brokers are reached on: inter.broker.listener.name, else the first
        listener whose protocol is security.inter.broker.protocol (Kafka's rule)."""
        inter = self.values["inter.broker.listener.name"]
        if inter:
            return str(inter).upper()
        protocols = security_protocols(self.strings("listener.security.protocol.map"))
        wanted = str(self.values["security.inter.broker.protocol"]).upper()
        return next((lst.name for lst in self.listeners if protocols.get(lst.name) == wanted), "")

    def int(self, key: str) -> int:
        return as_int(self.values[key])

    def int_if_set(self, key: str) -> int | None:
        """The key's value when the configuration gives it, else None: for settings wirekafka
        applies only when asked (socket buffers, the listen backlog), leaving the OS's otherwise."""
        return self.int(key) if key in self.overridden else None

    def strings(self, key: str) -> tuple[str, ...]:
        """A LIST key's items (parse_list's tuple; empty when not set)."""
        value = self.values[key]
        if isinstance(value, tuple):
            return value
        raise TypeError(f"{key} is not a list: {value!r}")

    def bool(self, key: str) -> bool:
        return bool(self.values[key])

    def text_if_set(self, key: str) -> str | None:
        """A STRING key without a default (broker.rack): its text, None when unset or empty."""
        value = self.values[key]
        return value if isinstance(value, str) and value else None

    @property
    def retention_ms(self) -> int:
        v = self.values
        if v["log.retention.ms"] is not None:
            return self.int("log.retention.ms")
        if v["log.retention.minutes"] is not None:
            return self.int("log.retention.minutes") * 60_000
        return self.int("log.retention.hours") * 3_600_000

    def _ms_else_hours(self, ms_key: str, hours_key: str) -> int:
        """A duration Kafka reads from its milliseconds key when set, else from its hours key."""
        ms = self.values[ms_key]
        return as_int(ms) if ms is not None else self.int(hours_key) * 3_600_000

    @property
    def roll_ms(self) -> int:
        return self._ms_else_hours("log.roll.ms", "log.roll.hours")

    @property
    def roll_jitter_ms(self) -> int:
        """Kafka's logRollTimeJitterMillis: log.roll.jitter.ms, else log.roll.jitter.hours."""
        return self._ms_else_hours("log.roll.jitter.ms", "log.roll.jitter.hours")

    @property
    def flush_interval_ms(self) -> int:
        v = self.values["log.flush.interval.ms"]
        if v is None:
            return self.int("log.flush.scheduler.interval.ms")
        return as_int(v)


def _text(value: object) -> str | None:
    """A setting kept as given (a listener's own, an OAUTHBEARER one); None when not set."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"not text: {value!r}")
