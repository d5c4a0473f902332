"""What a listener asks of each connection before serving its requests, by its security protocol
(Kafka's): PLAINTEXT nothing, SSL a TLS handshake, SASL_PLAINTEXT a SASL exchange, SASL_SSL both,
TLS first."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from wirekafka.config import BrokerConfig
from wirekafka.principal import SslPrincipalMapper
from wirekafka.protocol.sasl_scram import CredentialLookup
from wirekafka.server.sasl_authenticator import SaslSettings


@dataclass(frozen=True)
class ListenerSecurity:
    tls: ssl.SSLContext | None = None
    sasl: SaslSettings | None = None
    # names a TLS client by its certificate (ssl.principal.mapping.rules)
    principal_mapper: SslPrincipalMapper = SslPrincipalMapper.parse("DEFAULT")
    # the largest frame read before a SASL client has authenticated (sasl.server.max.receive.size)
    sasl_max_receive: int = 524288

    @classmethod
    def of(cls, config: BrokerConfig, listener: str, scram: CredentialLookup) -> "ListenerSecurity":
        """Built once per listener at start-up (build_config has checked that both can be);
        scram finds a user's SCRAM credential in the cluster metadata when a client logs in."""
        return cls(config.tls_context(listener, server=True), SaslSettings.of_listener(config, listener, scram),
                   SslPrincipalMapper.parse(str(config.listener_value(listener, "ssl.principal.mapping.rules"))),
                   int(config.listener_value(listener, "sasl.server.max.receive.size")))  # type: ignore[arg-type]


PLAINTEXT = ListenerSecurity()
