"""A broker's listeners as Kafka names them: `NAME://host:port`, the security protocol each is
mapped to (listener.security.protocol.map), and the protocols and SASL mechanisms wirekafka
serves. Parsing only: listener_checks.py holds Kafka's rules on a whole configuration."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from wirekafka.security.kerberos import keytab_login as kerberos_login
from wirekafka.startup_errors import ConfigError

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")  # authenticated with SASL
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")  # served over TLS
SERVED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# the login module class whose options each mechanism reads in a JAAS file section (Kafka's
# callback handlers look theirs up by class among the section's modules)
MECHANISM_LOGIN_MODULES: dict[str, tuple[str, ...]] = {
    "PLAIN": ("org.apache.kafka.common.security.plain.PlainLoginModule",),
    "SCRAM-SHA-256": ("org.apache.kafka.common.security.scram.ScramLoginModule",),
    "SCRAM-SHA-512": ("org.apache.kafka.common.security.scram.ScramLoginModule",),
    "OAUTHBEARER": ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",),
    "GSSAPI": kerberos_login.LOGIN_MODULES,
}
# Kafka's listener pattern (its EndPoint uriParseExp): NAME://host:port, host optional or [IPv6].
_LISTENER = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int


def parse_listener(spec: str) -> Listener:
    match = _LISTENER.match(spec.strip())
    if not match or not match.group(1):
        raise ConfigError(f"bad listener {spec!r}: expected NAME://host:port")
    name, host, port = match.groups()
    return Listener(name.upper(), host, int(port))


def security_protocols(entries: Iterable[str]) -> dict[str, str]:
    """listener.security.protocol.map's entries (NAME:PROTOCOL) as listener name -> protocol;
    ConfigError with Kafka's message for an entry without both."""
    entries = tuple(entries)
    out = {}
    for item in entries:
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(f"Invalid value {','.join(entries)} for configuration "
                              f"listener.security.protocol.map: Map entry '{item}' is improperly formatted")
        out[name.strip().upper()] = protocol.strip().upper()
    return out
