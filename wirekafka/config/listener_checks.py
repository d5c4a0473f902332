"""Kafka's rules on a broker's listeners, checked at start-up: distinct names and ports, a
security protocol wirekafka serves for each, the inter-broker listener advertised, and what a TLS
or SASL listener needs (its stores, its mechanisms' JAAS modules, a GSSAPI or OAUTHBEARER login)."""

from __future__ import annotations

import ipaddress
import logging
import time

from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.listeners import (
    SASL_MECHANISMS,
    SASL_PROTOCOLS,
    SERVED_PROTOCOLS,
    TLS_PROTOCOLS,
    Listener,
    parse_listener,
    security_protocols,
)
from wirekafka.security import jaas, tls
from wirekafka.security.kerberos import keytab_login as kerberos_login
from wirekafka.security.oauth import token_login as oauth_login
from wirekafka.security.oauth import validator as oauth_validator
from wirekafka.security.sasl import oauthbearer as oauth
from wirekafka.startup_errors import ConfigError

log = logging.getLogger(__name__)

OAUTH_LOGIN_FAILED = ("javax.security.auth.login.LoginException: An internal error occurred while retrieving token "
                      "from callback handler")
# Kafka's default OAUTHBEARER validator takes unsigned tokens: whoever connects names the user it
# is. Kafka says so only in its documentation; a broker that serves it says so at start-up.
UNSIGNED_OAUTH_WARNING = ("listener %s accepts unsigned OAUTHBEARER tokens (Kafka's unsecured validator, meant for "
                          "development): any client can log in as any user, User:admin included. For signed "
                          "tokens set listener.name.%s.oauthbearer.sasl.server.callback.handler.class=%s "
                          "with sasl.oauthbearer.jwks.endpoint.url")
JAAS_MISSING = ("Could not find a 'KafkaServer' or '{listener}.KafkaServer' entry in the JAAS configuration. "
                "System property 'java.security.auth.login.config' is {login_config}")


def check_listeners(cfg: BrokerConfig) -> None:
    """Kafka's listener rules: distinct names and ports, every listener's name mapped to a
    security protocol, the inter-broker listener advertised, advertised names among the
    listeners, no advertised 0.0.0.0; a SASL listener's mechanisms and JAAS config. A listener
    that Kafka would serve with TLS stops start-up: serving it as plain TCP, or not at all, would
    betray what the setting asks for."""
    spec = ",".join(cfg.strings("listeners"))
    listeners = cfg.listeners
    if not listeners:
        raise ConfigError("listeners must name at least one listener")
    names = [lst.name for lst in listeners]
    if len(set(names)) != len(names):
        raise ConfigError(f"Each listener must have a different name, listeners: {spec}")
    _check_distinct_ports(listeners, spec)
    protocols = security_protocols(cfg.strings("listener.security.protocol.map"))
    for lst in listeners:
        protocol = protocols.get(lst.name)
        if protocol is None:
            raise ConfigError(f"No security protocol defined for listener {lst.name}")
        if protocol not in SERVED_PROTOCOLS:
            raise ConfigError(f"Invalid value {protocol} for listener {lst.name}'s security protocol: "
                              f"one of {', '.join(SERVED_PROTOCOLS)}")
        if protocol in SASL_PROTOCOLS:
            _check_sasl_listener(cfg, lst.name)
        if protocol in TLS_PROTOCOLS:
            try:
                cfg.tls_context(lst.name, server=True)
            except tls.TlsConfigError as exc:
                raise ConfigError(f"listener {lst.name}: {exc}") from None
    given = [parse_listener(s) for s in cfg.strings("advertised.listeners")] or list(listeners)
    advertised = list(dict.fromkeys(a.name for a in given))
    if cfg["inter.broker.listener.name"] and "security.inter.broker.protocol" in cfg.overridden:
        raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    inter = cfg.inter_broker_listener
    if inter not in advertised:
        raise ConfigError("inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                          f"The valid options based on currently configured listeners are {','.join(advertised)}")
    if any(name not in names for name in advertised):
        raise ConfigError(f"advertised.listeners listener names must be equal to or a subset of the ones defined in "
                          f"listeners. Found {','.join(advertised)}. The valid options based on the current "
                          f"configuration are {','.join(names)}")
    if any(a.host == "0.0.0.0" for a in given):
        raise ConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                          "Use a routable IP address.")
    if protocols[inter] in TLS_PROTOCOLS:
        try:
            cfg.tls_context(inter, server=False)
        except tls.TlsConfigError as exc:
            raise ConfigError(f"inter-broker listener {inter}: {exc}") from None
    if protocols[inter] in SASL_PROTOCOLS and (str(cfg["sasl.mechanism.inter.broker.protocol"])
                                               not in cfg.sasl_mechanisms(inter)):
        raise ConfigError("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when "
                          "SASL is used for inter-broker communication")


def _check_sasl_listener(cfg: BrokerConfig, listener: str) -> None:
    """A SASL listener needs mechanisms among those wirekafka serves (PLAIN, SCRAM-SHA-256,
    SCRAM-SHA-512, OAUTHBEARER with Kafka's unsecured or secured validator, GSSAPI); each needs its
    JAAS login module, given as the listener's sasl.jaas.config for that mechanism or in the JAAS
    file's KafkaServer section (BrokerConfig.jaas_module). An OAUTHBEARER module with options
    logs in at start-up, as Kafka's broker does: options that make no token stop it. GSSAPI needs
    its service name and the keys of its principal (security/kerberos/keytab_login.py)."""
    mechanisms = cfg.sasl_mechanisms(listener)
    if not mechanisms:
        raise ConfigError("No SASL mechanisms are enabled")
    other = [m for m in mechanisms if m not in SASL_MECHANISMS]
    if other:
        raise ConfigError(f"listener {listener} enables SASL mechanism {other[0]}: wirekafka serves "
                          f"{', '.join(SASL_MECHANISMS)} (set sasl.enabled.mechanisms to those)")
    for mechanism in mechanisms:
        try:
            cfg.reauth_ms(listener, mechanism)
        except ValueError:
            raise ConfigError(f"Invalid value for configuration listener.name.{listener.lower()}."
                              f"{mechanism.lower()}.connections.max.reauth.ms: Not a number of type LONG") from None
        try:
            module = cfg.jaas_module(listener, mechanism)
        except jaas.JaasError as exc:
            raise ConfigError(str(exc)) from None
        except OSError as exc:
            raise ConfigError(f"the JAAS file {exc.filename}: {exc.strerror}") from None
        if module is None:
            raise ConfigError(JAAS_MISSING.format(listener=listener.lower(), login_config=cfg.jaas_file[0] or "not set"))
        if mechanism == "GSSAPI":
            try:
                login = cfg.kerberos_login(listener)
                if login.initiator:
                    kerberos_login.log_in(login)
            except kerberos_login.KerberosLoginError as exc:
                raise ConfigError(str(exc)) from None
        if mechanism == oauth.MECHANISM:
            try:
                if cfg.oauth_login(listener) is None:
                    oauth.login_token(module.options, time.time())
            except oauth.LoginError as exc:
                raise ConfigError(f"{OAUTH_LOGIN_FAILED} ({listener.lower()}: {exc})") from None
            except oauth_login.LoginConfigError as exc:
                raise ConfigError(str(exc)) from None
            try:
                secured = cfg.oauth_validator(listener)
            except (oauth_validator.ValidatorConfigError, ValueError) as exc:
                raise ConfigError(str(exc)) from None
            if secured is None:
                log.warning(UNSIGNED_OAUTH_WARNING, listener, listener.lower(), oauth_validator.HANDLER_CLASS)


def _check_distinct_ports(listeners: tuple[Listener, ...], spec: str) -> None:
    """Kafka's port rule: no two listeners on one port (port 0 picks a free one each), except
    one on an IPv4 address and one on an IPv6 address."""
    by_port: dict[int, list[Listener]] = {}
    for lst in listeners:
        if lst.port != 0:
            by_port.setdefault(lst.port, []).append(lst)
    for port, group in by_port.items():
        if len(group) < 2:
            continue
        families = sorted(family for lst in group if (family := _ip_family(lst.host)) is not None)
        if len(group) - len(families) > 1:
            raise ConfigError(f"Each listener must have a different port, listeners: {spec}")
        if len(families) not in (0, 2):
            raise ConfigError("Each listener must have a different port unless exactly one listener has an IPv4 "
                              f"address and the other IPv6 address, listeners: {spec}, port: {port}")
        if len(families) == 2 and (families != ["4", "6"] or len(group) > 2):
            raise ConfigError("If you have two listeners on the same port then one needs to be IPv4 and the other "
                              f"IPv6, listeners: {spec}, port: {port}")


def _ip_family(host: str) -> str | None:
    """"4" or "6" for an IP address literal, None for a name or an empty host."""
    try:
        return str(ipaddress.ip_address(host).version)
    except ValueError:
        return None
