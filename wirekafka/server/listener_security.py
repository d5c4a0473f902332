"""What a listener asks of each connection before serving its requests, by its security protocol
(Kafka's): PLAINTEXT nothing, SSL a TLS handshake, SASL_PLAINTEXT a SASL exchange, SASL_SSL both,
TLS first.

A TLS listener's context is looked up per connection (`tls()`), because an admin may replace
its stores at runtime (broker/listener_tls.py): new connections get the new certificate,
existing ones keep theirs."""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass
from typing import Callable, cast

from wirekafka.config.listener_tls import ListenerTls
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.security.principal import SslPrincipalMapper
from wirekafka.security.sasl.scram import CredentialLookup
from wirekafka.server.sasl_authenticator import SaslSettings


@dataclass(frozen=True)
class ListenerSecurity:
    tls: Callable[[], ssl.SSLContext] | None = None  # the listener's current context
    sasl: SaslSettings | None = None
    # names a TLS client by its certificate (ssl.principal.mapping.rules)
    principal_mapper: SslPrincipalMapper = SslPrincipalMapper.parse("DEFAULT")
    # the largest frame read before a SASL client has authenticated (sasl.server.max.receive.size)
    sasl_max_receive: int = 524288

    @classmethod
    def of(cls, config: BrokerConfig, listener: str, scram: CredentialLookup, tls: ListenerTls) -> "ListenerSecurity":
        """Built once per listener at start-up (build_config has checked that both can be);
        scram finds a user's SCRAM credential in the cluster metadata when a client logs in, tls
        (started) holds the TLS listeners' current contexts."""
        context = functools.partial(tls.context, listener) if listener in tls.listeners() else None
        return cls(context, SaslSettings.of_listener(config, listener, scram),
                   SslPrincipalMapper.parse(str(config.listener_value(listener, "ssl.principal.mapping.rules"))),
                   # listener_value is typed object; this key's value is an int or its text
                   int(cast("int | str", config.listener_value(listener, "sasl.server.max.receive.size"))))


PLAINTEXT = ListenerSecurity()
