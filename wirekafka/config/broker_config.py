"""server.properties keys -> one frozen BrokerConfig, with Apache Kafka's names and defaults.

Also the table of topic-level configs (retention.ms, segment.bytes, ...) with the broker key each
inherits its default from, because DescribeConfigs reports both the value and its source."""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import socket
import ssl
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

from wirekafka.startup_errors import ConfigError
from wirekafka.security import jaas, jvm_properties, tls
from wirekafka.config import kafka_only_keys
from wirekafka.security.kerberos import keytab_login as kerberos_login
from wirekafka.security.oauth import token_login as oauth_login, validator as oauth_validator
from wirekafka.security.principal import SslPrincipalMapper
from wirekafka.security.sasl import oauthbearer as oauth

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
MIN_SEGMENT_BYTES = 1048576  # Kafka 4's minimum for log.segment.bytes and segment.bytes (KIP-1030)


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"expected true or false, got {v!r}")
    return s == "true"


def _int(v: str) -> int:
    return int(v.strip())


def _str(v: str) -> str:
    return v.strip()


def _list(v: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in v.split(",") if p.strip())


def between(lo: int, hi: int) -> Callable[[object], str | None]:
    """Kafka's Range.between validator: None when n is within, else its message."""
    def check(n: object) -> str | None:
        if n < lo:  # type: ignore[operator]
            return f"Value must be at least {lo}"
        return None if n <= hi else f"Value must be no more than {hi}"  # type: ignore[operator]
    return check


def gzip_level(n: object) -> str | None:
    """Kafka's validator of compression.gzip.level."""
    return None if n == -1 or 1 <= n <= 9 else "Value must be between 1 and 9 or equal to -1"  # type: ignore[operator]


# key -> (parser, default). The default is Kafka's, except where noted.
DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
BROKER_KEYS: dict[str, tuple[Callable[[str], object], object]] = {
    "node.id": (_int, 1),  # Kafka requires it; a single embedded node is node 1
    "broker.id": (_int, -1),
    # ZooKeeper mode: a broker started without an id gets one from /brokers/seqid, above this
    "broker.id.generation.enable": (_bool, True),
    "reserved.broker.max.id": (_int, 1000),
    "process.roles": (_list, ("broker", "controller")),
    "listeners": (_list, ("PLAINTEXT://127.0.0.1:9092",)),  # Kafka binds all interfaces
    "advertised.listeners": (_list, ()),
    # listener name -> security protocol; wirekafka serves PLAINTEXT only (see _check_listeners)
    "listener.security.protocol.map": (_list, ("SASL_SSL:SASL_SSL", "PLAINTEXT:PLAINTEXT", "SSL:SSL",
                                               "SASL_PLAINTEXT:SASL_PLAINTEXT")),
    "inter.broker.listener.name": (_str, None),
    "security.inter.broker.protocol": (_str, "PLAINTEXT"),
    # the largest frame a connection may send before it has authenticated
    "sasl.server.max.receive.size": (_int, 524288),
    "sasl.enabled.mechanisms": (_list, ("GSSAPI",)),
    "sasl.mechanism.inter.broker.protocol": (_str, "GSSAPI"),
    # GSSAPI (wirekafka/security/kerberos/keytab_login.py); each may also be given per listener (listener.name.<l>.<key>)
    "sasl.kerberos.service.name": (_str, None),
    "sasl.kerberos.principal.to.local.rules": (_list, ("DEFAULT",)),
    "connections.max.reauth.ms": (_int, 0),
    # TLS (wirekafka/security/tls.py); each may also be given per listener (listener.name.<l>.<key>)
    "ssl.protocol": (_str, "TLSv1.3"),
    "ssl.enabled.protocols": (_list, ("TLSv1.2", "TLSv1.3")),
    "ssl.cipher.suites": (_list, ()),
    "ssl.keystore.type": (_str, "JKS"),
    "ssl.keystore.location": (_str, None),
    "ssl.keystore.password": (_str, None),
    "ssl.key.password": (_str, None),
    "ssl.keystore.key": (_str, None),
    "ssl.keystore.certificate.chain": (_str, None),
    "ssl.truststore.type": (_str, "JKS"),
    "ssl.truststore.location": (_str, None),
    "ssl.truststore.password": (_str, None),
    "ssl.truststore.certificates": (_str, None),
    "ssl.client.auth": (_str, "none"),
    "ssl.endpoint.identification.algorithm": (_str, "https"),
    "ssl.keymanager.algorithm": (_str, "SunX509"),
    "ssl.trustmanager.algorithm": (_str, "PKIX"),
    "ssl.principal.mapping.rules": (_str, "DEFAULT"),
    # whether a runtime change of a listener's key store may change its certificates' subject or
    # SubjectAltNames (broker/listener_tls.py)
    "ssl.allow.dn.changes": (_bool, False),
    "ssl.allow.san.changes": (_bool, False),
    "log.dirs": (_list, ()),
    "log.dir": (_str, "/tmp/kafka-logs"),
    "num.partitions": (_int, 1),
    "default.replication.factor": (_int, 1),
    "auto.create.topics.enable": (_bool, True),
    "delete.topic.enable": (_bool, True),
    "log.segment.bytes": (_int, 1073741824),
    "log.roll.ms": (_int, None),
    "log.roll.hours": (_int, 168),
    "log.roll.jitter.ms": (_int, None),
    # the broker's own connections to other brokers: the first attempt's timeout, and its cap
    "socket.connection.setup.timeout.ms": (_int, 10000),
    "socket.connection.setup.timeout.max.ms": (_int, 30000),
    "log.roll.jitter.hours": (_int, 0),
    "log.retention.ms": (_int, None),
    "log.retention.minutes": (_int, None),
    "log.retention.hours": (_int, 168),
    "log.retention.bytes": (_int, -1),
    "log.retention.check.interval.ms": (_int, 300000),
    "log.index.interval.bytes": (_int, 4096),
    "log.index.size.max.bytes": (_int, 10485760),
    "log.flush.interval.messages": (_int, LONG_MAX),
    "log.flush.interval.ms": (_int, None),
    "log.flush.scheduler.interval.ms": (_int, LONG_MAX),
    "log.flush.offset.checkpoint.interval.ms": (_int, 60000),
    "log.segment.delete.delay.ms": (_int, 60000),
    "log.cleanup.policy": (_list, ("delete",)),
    "log.cleaner.enable": (_bool, True),
    "log.cleaner.delete.retention.ms": (_int, 86400000),
    "log.cleaner.min.compaction.lag.ms": (_int, 0),
    "log.cleaner.max.compaction.lag.ms": (_int, LONG_MAX),
    "log.cleaner.min.cleanable.ratio": (float, 0.5),
    "log.cleaner.backoff.ms": (_int, 15000),
    "log.cleaner.threads": (_int, 1),
    "log.cleaner.dedupe.buffer.size": (_int, 134217728),
    "log.cleaner.io.buffer.size": (_int, 524288),
    "log.cleaner.io.buffer.load.factor": (float, 0.9),
    "log.cleaner.io.max.bytes.per.second": (float, 1.7976931348623157e308),
    "log.message.timestamp.type": (_str, "CreateTime"),
    "log.message.timestamp.before.max.ms": (_int, LONG_MAX),
    "log.message.timestamp.after.max.ms": (_int, 3600000),
    "compression.type": (_str, "producer"),
    # the levels a topic's compression.type recompresses with (KIP-390), unless the topic sets its own
    "compression.gzip.level": (_int, -1),
    "compression.lz4.level": (_int, 9),
    "compression.zstd.level": (_int, 3),
    "message.max.bytes": (_int, 1048588),
    "min.insync.replicas": (_int, 1),
    "socket.request.max.bytes": (_int, 104857600),
    "socket.listen.backlog.size": (_int, 50),
    "connections.max.idle.ms": (_int, 600000),
    "max.connections": (_int, INT_MAX),
    "max.connections.per.ip": (_int, INT_MAX),
    # new connections a second, for the whole broker (the inter-broker listener aside when there are
    # others) and per listener (listener.name.<l>.max.connection.creation.rate): over it, accepting waits
    "max.connection.creation.rate": (_int, INT_MAX),
    # the most partitions one DescribeTopicPartitions answer lists
    "max.request.partition.size.limit": (_int, 2000),
    "max.connections.per.ip.overrides": (_str, ""),
    "replica.socket.receive.buffer.bytes": (_int, 65536),
    "fetch.max.bytes": (_int, 57671680),
    "socket.send.buffer.bytes": (_int, 102400),
    "socket.receive.buffer.bytes": (_int, 102400),
    "num.network.threads": (_int, 3),
    "num.io.threads": (_int, 8),
    "background.threads": (_int, 10),
    "num.recovery.threads.per.data.dir": (_int, 2),
    "queued.max.requests": (_int, 500),
    "queued.max.request.bytes": (_int, -1),
    "fetch.purgatory.purge.interval.requests": (_int, 1000),
    "producer.purgatory.purge.interval.requests": (_int, 1000),
    "delete.records.purgatory.purge.interval.requests": (_int, 1),
    "metrics.num.samples": (_int, 2),
    "metrics.sample.window.ms": (_int, 30000),
    "metrics.recording.level": (_str, "INFO"),
    "kafka.metrics.polling.interval.secs": (_int, 10),
    "connection.failed.authentication.delay.ms": (_int, 100),
    "transaction.state.log.load.buffer.size": (_int, 5242880),
    "log.message.downconversion.enable": (_bool, True),  # Kafka 3.9 (ZooKeeper mode)
    "offsets.commit.required.acks": (_int, -1),  # Kafka 3.9 (ZooKeeper mode)
    "offsets.topic.num.partitions": (_int, 50),
    "offsets.topic.replication.factor": (_int, 3),
    "offsets.topic.segment.bytes": (_int, 104857600),
    # the codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) of the group coordinator's batches
    "offsets.topic.compression.codec": (_int, 0),
    "offsets.retention.minutes": (_int, 10080),
    "offsets.retention.check.interval.ms": (_int, 600000),
    "offsets.load.buffer.size": (_int, 5242880),
    "offsets.commit.timeout.ms": (_int, 5000),
    "offset.metadata.max.bytes": (_int, 4096),
    "group.initial.rebalance.delay.ms": (_int, 3000),
    "group.min.session.timeout.ms": (_int, 6000),
    "group.max.session.timeout.ms": (_int, 1800000),
    "group.max.size": (_int, INT_MAX),
    "transaction.state.log.num.partitions": (_int, 50),
    "transaction.state.log.segment.bytes": (_int, 104857600),
    "transaction.state.log.replication.factor": (_int, 3),
    "transaction.state.log.min.isr": (_int, 2),
    "transaction.max.timeout.ms": (_int, 900000),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (_int, 10000),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (_int, 3600000),
    "transactional.id.expiration.ms": (_int, 604800000),
    "producer.id.expiration.ms": (_int, 86400000),
    "producer.id.expiration.check.interval.ms": (_int, 600000),  # internal in Kafka, settable all the same
    "max.incremental.fetch.session.cache.slots": (_int, 1000),
    "request.timeout.ms": (_int, 30000),
    # requests to the controller (AlterPartition; the connection of a ControlledShutdown), as Kafka 3.9
    "controller.socket.timeout.ms": (_int, 30000),
    "controlled.shutdown.enable": (_bool, True),
    "controlled.shutdown.max.retries": (_int, 3),
    "controlled.shutdown.retry.backoff.ms": (_int, 5000),
    # ZooKeeper mode (Kafka 3.9's keys): without zookeeper.connect the broker is one embedded node
    "zookeeper.connect": (_str, None),
    "zookeeper.session.timeout.ms": (_int, 18000),
    "zookeeper.connection.timeout.ms": (_int, None),
    "zookeeper.max.in.flight.requests": (_int, 10),
    "zookeeper.set.acl": (_bool, False),
    "zookeeper.ssl.client.enable": (_bool, False),
    # how a ZooKeeper-mode broker encodes the dynamic passwords it keeps in /config/brokers/<id>
    # (broker/password_encoder.py; keyfactory None: Kafka's default, PBKDF2WithHmacSHA512)
    "password.encoder.secret": (_str, None),
    "password.encoder.old.secret": (_str, None),
    "password.encoder.keyfactory.algorithm": (_str, None),
    "password.encoder.cipher.algorithm": (_str, "AES/CBC/PKCS5Padding"),
    "password.encoder.key.length": (_int, 128),
    "password.encoder.iterations": (_int, 4096),
    "broker.rack": (_str, None),
    "replica.lag.time.max.ms": (_int, 30000),
    # KIP-392: the class that picks a consumer's read replica; Kafka's rack-aware one, or none
    "replica.selector.class": (_str, None),
    "transaction.partition.verification.enable": (_bool, True),
    "replica.fetch.max.bytes": (_int, 1048576),
    "replica.fetch.response.max.bytes": (_int, 10485760),
    "replica.fetch.wait.max.ms": (_int, 500),
    "replica.fetch.min.bytes": (_int, 1),
    "replica.fetch.backoff.ms": (_int, 1000),
    "replica.socket.timeout.ms": (_int, 30000),
    "replica.high.watermark.checkpoint.interval.ms": (_int, 5000),
    "num.replica.fetchers": (_int, 1),
    # the replication throttles' byte rate: the bytes of this many samples of this length
    "replication.quota.window.num": (_int, 11),
    "replication.quota.window.size.seconds": (_int, 1),
    # client quotas (KIP-13, KIP-124, KIP-599): the rates are measured over this many samples of
    # this length; the controller mutation rate over its own window
    "quota.window.num": (_int, 11),
    "quota.window.size.seconds": (_int, 1),
    "controller.quota.window.num": (_int, 11),
    "controller.quota.window.size.seconds": (_int, 1),
    "client.quota.callback.class": (_str, None),
    "authorizer.class.name": (_str, ""),
    "principal.builder.class": (_str, DEFAULT_PRINCIPAL_BUILDER),
    "unclean.leader.election.enable": (_bool, False),
    "auto.leader.rebalance.enable": (_bool, True),
    "leader.imbalance.check.interval.seconds": (_int, 300),
    "leader.imbalance.per.broker.percentage": (_int, 10),
    "shutdown.timeout.ms": (_int, 30000),  # wirekafka: deadline for in-flight requests on SIGTERM
}


# Keys accepted with Kafka's names and defaults whose setting does not change what wirekafka
# does, so a value other than the default is reported at start-up rather than dropped silently.
# The authorizer's own keys: read by Kafka's authorizer from the broker's properties, not keys of
# the broker's config (DescribeConfigs does not list them), with the authorizer's defaults.
AUTHORIZER_KEYS: dict[str, tuple[Callable[[str], object], object]] = {
    "super.users": (_str, ""),
    "allow.everyone.if.no.acl.found": (_bool, False),
}
# BROKER_KEYS that Kafka 4 no longer has: ZooKeeper mode's own (the ZooKeeper client, the
# password encoder, broker id generation, controlled shutdown retries) and other 3.x leftovers.
# Kafka 4.3.1's DescribeConfigs does not list them, so a single node lists them only when set.
KAFKA3_ONLY_KEYS = frozenset({
    "zookeeper.connect", "zookeeper.connection.timeout.ms", "zookeeper.session.timeout.ms",
    "zookeeper.max.in.flight.requests", "zookeeper.set.acl", "zookeeper.ssl.client.enable",
    "password.encoder.secret", "password.encoder.old.secret", "password.encoder.keyfactory.algorithm",
    "password.encoder.cipher.algorithm", "password.encoder.key.length", "password.encoder.iterations",
    "broker.id.generation.enable", "reserved.broker.max.id", "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms", "leader.imbalance.per.broker.percentage",
    "log.message.downconversion.enable", "offsets.commit.required.acks",
    "producer.id.expiration.check.interval.ms", "shutdown.timeout.ms"})
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ZK_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ACL_ZOOKEEPER_PREFIX = "authorizer.zookeeper."  # AclAuthorizer's own ZooKeeper client keys

# Kafka 3.9's ZooKeeper TLS keys beside zookeeper.ssl.client.enable: Kafka's type and default, and
# the ZooKeeper client's system property each overrides (read from KAFKA_OPTS when the key is not
# set). broker/replication/zk_security.py reads them.
ZK_TLS_KEYS: dict[str, tuple[str, str | None, str]] = {
    "zookeeper.clientCnxnSocket": (kafka_only_keys.STRING, None, "zookeeper.clientCnxnSocket"),
    "zookeeper.ssl.keystore.location": (kafka_only_keys.STRING, None, "zookeeper.ssl.keyStore.location"),
    "zookeeper.ssl.keystore.password": (kafka_only_keys.PASSWORD, None, "zookeeper.ssl.keyStore.password"),
    "zookeeper.ssl.keystore.type": (kafka_only_keys.STRING, None, "zookeeper.ssl.keyStore.type"),
    "zookeeper.ssl.truststore.location": (kafka_only_keys.STRING, None, "zookeeper.ssl.trustStore.location"),
    "zookeeper.ssl.truststore.password": (kafka_only_keys.PASSWORD, None, "zookeeper.ssl.trustStore.password"),
    "zookeeper.ssl.truststore.type": (kafka_only_keys.STRING, None, "zookeeper.ssl.trustStore.type"),
    "zookeeper.ssl.protocol": (kafka_only_keys.STRING, "TLSv1.2", "zookeeper.ssl.protocol"),
    "zookeeper.ssl.enabled.protocols": (kafka_only_keys.LIST, None, "zookeeper.ssl.enabledProtocols"),
    "zookeeper.ssl.cipher.suites": (kafka_only_keys.LIST, None, "zookeeper.ssl.ciphersuites"),
    "zookeeper.ssl.endpoint.identification.algorithm": (kafka_only_keys.STRING, "HTTPS",
                                                        "zookeeper.ssl.hostnameVerification"),
    "zookeeper.ssl.crl.enable": (kafka_only_keys.BOOLEAN, "false", "zookeeper.ssl.crl"),
    "zookeeper.ssl.ocsp.enable": (kafka_only_keys.BOOLEAN, "false", "zookeeper.ssl.ocsp"),
}
ZK_SECURE_CLIENT_PROPERTY = "zookeeper.client.secure"  # what zookeeper.ssl.client.enable overrides

INERT_KEYS: dict[str, str] = {
    "ssl.protocol": "the protocol versions are ssl.enabled.protocols' (OpenSSL has no separate context protocol)",
    "ssl.keymanager.algorithm": "there is no JVM key manager: keys are read from the key store as they are",
    "ssl.trustmanager.algorithm": "there is no JVM trust manager: OpenSSL verifies against the trust store",
    "num.network.threads": "one event loop serves every connection",
    "num.io.threads": "requests are handled on the event loop, file work in trio's worker threads",
    "num.replica.fetchers": "one fetcher per leader broker",
    "log.cleaner.io.buffer.size": "the cleaner sizes its reads itself",
    "offsets.load.buffer.size": "coordinators load their partitions batch by batch",
    "transaction.state.log.load.buffer.size": "coordinators load their partitions batch by batch",
    "background.threads": "background work runs as tasks on the event loop and in trio's worker threads",
    "num.recovery.threads.per.data.dir": "logs are recovered in trio's worker threads",
    "queued.max.requests": "each connection handles one request at a time, read only when the previous "
                           "is answered (no shared request queue)",
    "queued.max.request.bytes": "there is no shared request queue",
    "fetch.purgatory.purge.interval.requests": "a waiting fetch is woken or times out by itself (no purgatory)",
    "producer.purgatory.purge.interval.requests": "a waiting produce is woken or times out by itself (no purgatory)",
    "delete.records.purgatory.purge.interval.requests": "DeleteRecords waits by itself (no purgatory)",
    "metrics.num.samples": "wirekafka reports no JMX metrics",
    "metrics.sample.window.ms": "wirekafka reports no JMX metrics",
    "metrics.recording.level": "wirekafka reports no JMX metrics",
    "kafka.metrics.polling.interval.secs": "wirekafka reports no JMX metrics",
    "log.message.downconversion.enable": "fetches from v4 return magic-2 batches, which need no down-conversion",
    "offsets.commit.required.acks": "offset commits are written with acks=all, Kafka's default and its only "
                                    "value since 4.0",
    "zookeeper.max.in.flight.requests": "ZooKeeper requests in flight are not limited",
    "replica.high.watermark.checkpoint.interval.ms": "high watermarks are checkpointed with the "
                                                     "recovery checkpoints (log.flush.offset.checkpoint.interval.ms)",
}

@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int


# Kafka's PASSWORD-typed keys: DescribeConfigs reports them sensitive, without their values.
SENSITIVE_KEYS = frozenset({"ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                            "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
                            "password.encoder.secret", "password.encoder.old.secret"})

# The listener-prefixed keys wirekafka reads: a listener's SASL mechanisms and a mechanism's
# JAAS configuration (listener.name.sasl_plaintext.plain.sasl.jaas.config), the secured OAUTHBEARER
# validator and login and their settings (oauth_validator.py, oauth_login.py), GSSAPI's service
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
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")  # authenticated with SASL
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")  # served over TLS
SERVED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
OAUTH_LOGIN_FAILED = ("javax.security.auth.login.LoginException: An internal error occurred while retrieving token "
                      "from callback handler")
JAAS_MISSING = ("Could not find a 'KafkaServer' or '{listener}.KafkaServer' entry in the JAAS configuration. "
                "System property 'java.security.auth.login.config' is {login_config}")
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


def parse_listener(spec: str) -> Listener:
    match = _LISTENER.match(spec.strip())
    if not match or not match.group(1):
        raise ConfigError(f"bad listener {spec!r}: expected NAME://host:port")
    name, host, port = match.groups()
    return Listener(name.upper(), host, int(port))


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

    @property
    def node_id(self) -> int:
        """node.id, or broker.id (its ZooKeeper-mode synonym) when that is the one given. In
        ZooKeeper mode with neither given it is broker.id's default, -1: the id is then read from
        the log dir or generated at start-up (replication/broker_id.py)."""
        if "node.id" in self.overridden:
            return int(self.values["node.id"])  # type: ignore[arg-type]
        if "broker.id" in self.overridden or self.zookeeper_mode:
            return int(self.values["broker.id"])  # type: ignore[arg-type]
        return int(self.values["node.id"])  # type: ignore[arg-type]

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
    def log_dir(self) -> Path:
        dirs = self.values["log.dirs"] or (self.values["log.dir"],)
        return Path(dirs[0])  # type: ignore[index]

    # Parsed once per config (lookups on the request path ask for them): a cached_property keeps
    # its value beside the frozen fields, and a config made by replace() starts without it.
    @functools.cached_property
    def listeners(self) -> tuple[Listener, ...]:
        """Every listener the broker binds, in the order `listeners` names them."""
        return tuple(self._bound(parse_listener(spec)) for spec in self.values["listeners"])  # type: ignore[attr-defined]

    @functools.cached_property
    def advertised_listeners(self) -> tuple[Listener, ...]:
        """What the broker tells clients and other brokers: advertised.listeners when set (only
        those listeners are advertised, as in Kafka), else the listeners. A listener without a
        host (all interfaces) is advertised on loopback, where wirekafka is reached."""
        adv = self.values["advertised.listeners"]
        chosen = tuple(self._bound(parse_listener(spec)) for spec in adv) if adv else self.listeners  # type: ignore[union-attr]
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
        return _security_protocols(self)[listener]

    def _own(self, listener: str, key: str) -> str | None:
        """A listener's own setting of key, listener.name.<listener>.<key> (Kafka's prefix is
        lowercase), None when not given."""
        return self.values.get(f"listener.name.{listener.lower()}.{key}")  # type: ignore[return-value]

    def listener_own_int(self, listener: str, key: str) -> int | None:
        """A listener's own setting of an integer key (listener.name.<l>.<key>), None when not given."""
        own = self._own(listener, key)
        return None if own is None else int(own)

    def sasl_mechanisms(self, listener: str) -> tuple[str, ...]:
        """The SASL mechanisms a listener enables: its own sasl.enabled.mechanisms, else the broker's."""
        own = self._own(listener, "sasl.enabled.mechanisms")
        return _list(own) if own is not None else self.values["sasl.enabled.mechanisms"]  # type: ignore[return-value]

    def listener_value(self, listener: str, key: str) -> object:
        """A key as a listener sees it: its own setting when given, else the broker's."""
        own = self._own(listener, key)
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
        own = self._own(listener, f"{mechanism.lower()}.connections.max.reauth.ms")
        return int(own) if own is not None else self.int("connections.max.reauth.ms")

    def oauth_validator(self, listener: str) -> oauth_validator.ValidatorConfig | None:
        """The listener's secured OAUTHBEARER validator when its server callback handler is Kafka's
        OAuthBearerValidatorCallbackHandler (None: the unsecured default); each sasl.oauthbearer.*
        setting the mechanism's own (listener.name.<l>.oauthbearer.<key>), else the listener's,
        else the broker's. Raises oauth_validator.ValidatorConfigError as Kafka's handler refuses."""
        if not self._own(listener, "oauthbearer.sasl.server.callback.handler.class"):
            return None
        return oauth_validator.configure(functools.partial(self._oauth_setting, listener))

    def oauth_login(self, listener: str) -> oauth_login.LoginConfig | None:
        """The listener's secured OAUTHBEARER login when its login callback handler is Kafka's
        OAuthBearerLoginCallbackHandler (None: the unsecured default), with the options of the
        listener's OAUTHBEARER login module; settings read as for the validator. Raises
        oauth_login.LoginConfigError as Kafka's handler refuses."""
        if (self._own(listener, "oauthbearer.sasl.login.callback.handler.class") or "").strip() \
                not in oauth_login.HANDLER_CLASSES:
            return None
        return oauth_login.configure(functools.partial(self._oauth_setting, listener),
                                     self.jaas_options(listener, "OAUTHBEARER"))

    def _oauth_setting(self, listener: str, key: str) -> str | None:
        """A sasl.oauthbearer.* or sasl.login.* setting as a listener's OAUTHBEARER sees it: the
        mechanism's own (listener.name.<l>.oauthbearer.<key>), else the listener's, else the broker's."""
        found = self._own(listener, f"oauthbearer.{key}")
        found = self._own(listener, key) if found is None else found
        return found if found is not None else self.values.get(key)  # type: ignore[return-value]

    def kerberos_login(self, listener: str) -> kerberos_login.KerberosLogin:
        """The listener's GSSAPI identity: its GSSAPI JAAS module (Krb5LoginModule with a keytab)
        and sasl.kerberos.service.name and sasl.kerberos.principal.to.local.rules as the listener
        sees them. Raises kerberos_login.KerberosLoginError as Kafka's broker refuses to start."""
        module = self.jaas_module(listener, "GSSAPI") or jaas.LoginModule("", "REQUIRED")  # refused below
        own_rules = self._own(listener, "sasl.kerberos.principal.to.local.rules")
        rules = _list(own_rules) if own_rules is not None else self.values["sasl.kerberos.principal.to.local.rules"]
        service = self._own(listener, "sasl.kerberos.service.name")
        service = service.strip() if service is not None else self.values["sasl.kerberos.service.name"]
        return kerberos_login.configure(module.name, dict(module.options), service or None,
                                        rules)  # type: ignore[arg-type]

    def jaas_module(self, listener: str, mechanism: str) -> jaas.LoginModule | None:
        """The listener's JAAS login module for a mechanism: its
        listener.name.<l>.<mechanism>.sasl.jaas.config, else (Kafka's static JAAS configuration) the
        `<listener>.KafkaServer` section of the JAAS file KAFKA_OPTS names, or its `KafkaServer`
        section: the module of the mechanism's class there, or the section's only module. None
        when there is none. Raises jaas.JaasError for text Kafka refuses, OSError for a JAAS file
        that cannot be read."""
        text = self._own(listener, f"{mechanism.lower()}.sasl.jaas.config")
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
        (replication/zk_security.py). Raises as jvm_properties.login_config does."""
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
        return _inter_broker_listener(self) or ""

    def int(self, key: str) -> int:
        return int(self.values[key])  # type: ignore[arg-type]

    def int_if_set(self, key: str) -> int | None:
        """The key's value when the configuration gives it, else None: for settings wirekafka
        applies only when asked (socket buffers, the listen backlog), leaving the OS's otherwise."""
        return self.int(key) if key in self.overridden else None

    def bool(self, key: str) -> bool:
        return bool(self.values[key])

    @property
    def retention_ms(self) -> int:
        v = self.values
        if v["log.retention.ms"] is not None:
            return int(v["log.retention.ms"])  # type: ignore[arg-type]
        if v["log.retention.minutes"] is not None:
            return int(v["log.retention.minutes"]) * 60_000  # type: ignore[arg-type]
        return int(v["log.retention.hours"]) * 3_600_000  # type: ignore[arg-type]

    def _ms_else_hours(self, ms_key: str, hours_key: str) -> int:
        """A duration Kafka reads from its milliseconds key when set, else from its hours key."""
        ms = self.values[ms_key]
        return int(ms) if ms is not None else int(self.values[hours_key]) * 3_600_000  # type: ignore[call-overload]

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
            return int(self.values["log.flush.scheduler.interval.ms"])  # type: ignore[arg-type]
        return int(v)  # type: ignore[arg-type]


def read_properties(path: Path) -> dict[str, str]:
    """Java .properties, the subset server.properties files use: key=value or key: value lines."""
    props: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            props[line] = ""
            continue
        props[line[:sep].strip()] = line[sep + 1 :].strip()
    return props


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
                        "ZooKeeper session", key, cfg.values[key])


def _given_keys(props: Mapping[str, str]) -> frozenset[str]:
    """The keys of `props` the broker keeps, as its values name them: Kafka's DescribeConfigs lists
    every key a broker was started with (its `originals`), not only the ones it knows."""
    return frozenset(key.lower() if _LISTENER_KEY.match(key) else key for key in props
                     if key in BROKER_KEYS or key in AUTHORIZER_KEYS or key.startswith(ACL_ZOOKEEPER_PREFIX)
                     or _LISTENER_KEY.match(key))


def build_config(props: Mapping[str, str]) -> BrokerConfig:
    values: dict[str, object] = {k: d for k, (_, d) in BROKER_KEYS.items()}
    values.update({k: d for k, (_, d) in AUTHORIZER_KEYS.items()})
    for key, raw in props.items():
        if key in AUTHORIZER_KEYS:
            try:
                values[key] = AUTHORIZER_KEYS[key][0](raw)
            except ValueError as exc:
                raise ConfigError(f"invalid value {raw!r} for {key}: {exc}") from exc
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
                raise ConfigError(f"invalid value {raw!r} for {key}: {exc}") from exc
            values[key.lower()] = raw  # a listener's own SASL setting (listener.name.<l>.<...>)
            continue
        # kept as given for their readers: the secured OAUTHBEARER validator and login, the
        # ZooKeeper client (zk_security.py); checked against Kafka's type where it has one
        if key in oauth_validator.KEYS or key in oauth_login.KEYS or key in ZK_TLS_KEYS:
            kind = ZK_TLS_KEYS[key][0] if key in ZK_TLS_KEYS else kafka_only_keys.KEYS.get(key, (None,))[0]
            try:
                if kind is not None:
                    kafka_only_keys.parse_as(kind, raw)
            except ValueError as exc:
                raise ConfigError(f"Invalid value {raw} for configuration {key}: {exc}") from None
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
            raise ConfigError(f"invalid value {raw!r} for {key}: {exc}") from exc
        if key in INERT_KEYS and values[key] != spec[1]:
            log.warning("%s=%s has no effect in wirekafka: %s", key, raw, INERT_KEYS[key])
    cfg = BrokerConfig(values, _given_keys(props))
    if not cfg.zookeeper_mode:
        for key in sorted(k for k in props if k.startswith("zookeeper.") and k in values):
            log.warning("%s=%s has no effect in wirekafka: there is no ZooKeeper without zookeeper.connect",
                        key, props[key])
    _check_listeners(cfg)
    if cfg.int("message.max.bytes") <= 0:
        raise ConfigError("message.max.bytes must be > 0")
    # Kafka 4 (KIP-1030) refuses segments under 1 MiB, and its broker exits with this message.
    # There is no broker-level way round it: tests wanting small segments set the internal
    # topic config internal.segment.bytes (broker/topic_config.py), as Kafka's own tests do.
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
        rules = cfg["ssl.principal.mapping.rules"] if listener is None else cfg._own(listener, "ssl.principal.mapping.rules")
        try:
            SslPrincipalMapper.parse(rules)  # type: ignore[arg-type]
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
    if cfg.int("max.connections.per.ip") == 0 and not cfg["max.connections.per.ip.overrides"]:
        raise ConfigError("requirement failed: max.connections.per.ip can be set to zero only if "
                          "max.connections.per.ip.overrides property is set.")
    return cfg


def _accept_kafka_only(key: str, raw: str) -> None:
    """A Kafka 3.9 key wirekafka does not act on: checked against Kafka's type; a value other than
    Kafka's default is logged as having no effect, or stops start-up where ignoring it would
    not do what the operator asked (kafka_only_keys)."""
    try:
        value = kafka_only_keys.parse(key, raw)
    except ValueError as exc:
        raise ConfigError(f"Invalid value {raw} for configuration {key}: {exc}") from None
    if kafka_only_keys.is_default(key, value):
        return
    kind, reason = kafka_only_keys.treatment(key)
    if kind == kafka_only_keys.REFUSED:
        raise ConfigError(f"{key}={raw} is not available in wirekafka: {reason}")
    log.warning("%s=%s has no effect in wirekafka: %s", key, raw, reason)


RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
# Keys with other validators: their messages.
CHECKED: dict[str, Callable[[object], str | None]] = {
    "compression.gzip.level": gzip_level, "compression.lz4.level": between(1, 17),
    "compression.zstd.level": between(-131072, 22)}
# Keys Kafka's ConfigDef bounds with atLeast(n).
AT_LEAST = {"group.max.size": 1, "replication.quota.window.num": 1, "replication.quota.window.size.seconds": 1,
            "quota.window.num": 1, "quota.window.size.seconds": 1, "controller.quota.window.num": 1,
            "controller.quota.window.size.seconds": 1,
            "socket.listen.backlog.size": 1, "fetch.max.bytes": 1024, "max.connections": 0,
            "max.connection.creation.rate": 0, "max.request.partition.size.limit": 1,
            "max.connections.per.ip": 0, "log.roll.jitter.hours": 0, "password.encoder.key.length": 8,
            "password.encoder.iterations": 1024}


def parse_csv_map(value: str, key: str = "max.connections.per.ip.overrides") -> dict[str, int]:
    """A "name:count,..." setting as Kafka parses it: split around commas, each entry at its last
    colon, both sides trimmed. ValueError with the text of the Java exception Kafka answers for
    an entry without a colon or a count that is not an INT."""
    out: dict[str, int] = {}
    entries = re.split(r"\s*,\s*", value) if value else []
    while entries and entries[-1] == "":  # Java's split drops trailing empty strings
        entries.pop()
    for entry in entries:
        colon = entry.rfind(":")
        if colon < 0:
            raise ValueError(f"Error parsing configuration property '{key}': begin 0, end -1, length {len(entry)}")
        count = entry[colon + 1:].strip()
        if not re.fullmatch(r"[+-]?\d+", count) or not -2**31 <= int(count) < 2**31:
            raise ValueError(f'For input string: "{count}"')
        out[entry[:colon].strip()] = int(count)
    return out


def resolve_ip_overrides(value: str) -> tuple[dict[str, int], list[str]]:
    """max.connections.per.ip.overrides as address -> count, host names resolved as Kafka does
    when it applies the setting; also the names that did not resolve. ValueError: see
    parse_csv_map."""
    out: dict[str, int] = {}
    unresolved = []
    for host, limit in parse_csv_map(value).items():
        try:
            out[socket.gethostbyname(host)] = limit
        except OSError:
            unresolved.append(host)
    return out, unresolved


def parse_ip_overrides(value: str) -> dict[str, int]:
    """max.connections.per.ip.overrides at start-up: address -> count; a malformed entry or a
    host name that does not resolve stops start-up."""
    try:
        out, unresolved = resolve_ip_overrides(value)
    except ValueError as exc:
        raise ConfigError(f"Invalid value {value} for configuration max.connections.per.ip.overrides: {exc}") from None
    if unresolved:
        raise ConfigError(f"Invalid value {value} for configuration max.connections.per.ip.overrides: "
                          f"host {unresolved[0]!r} does not resolve")
    return out


def _security_protocols(cfg: BrokerConfig) -> dict[str, str]:
    """listener.security.protocol.map as listener name -> protocol."""
    out = {}
    for item in cfg["listener.security.protocol.map"]:  # type: ignore[attr-defined]
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(f"Invalid value {','.join(cfg['listener.security.protocol.map'])} for configuration "  # type: ignore[arg-type]
                              f"listener.security.protocol.map: Map entry '{item}' is improperly formatted")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


def _inter_broker_listener(cfg: BrokerConfig) -> str | None:
    inter = cfg["inter.broker.listener.name"]
    if inter:
        return str(inter).upper()
    protocols = _security_protocols(cfg)
    wanted = str(cfg["security.inter.broker.protocol"]).upper()
    return next((lst.name for lst in cfg.listeners if protocols.get(lst.name) == wanted), None)


def _check_listeners(cfg: BrokerConfig) -> None:
    """Kafka's listener rules: distinct names and ports, every listener's name mapped to a
    security protocol, the inter-broker listener advertised, advertised names among the
    listeners, no advertised 0.0.0.0; a SASL listener's mechanisms and JAAS config. A listener
    that Kafka would serve with TLS stops start-up: serving it as plain TCP, or not at all, would
    betray what the setting asks for."""
    spec = ",".join(cfg["listeners"])  # type: ignore[arg-type]
    listeners = cfg.listeners
    if not listeners:
        raise ConfigError("listeners must name at least one listener")
    names = [lst.name for lst in listeners]
    if len(set(names)) != len(names):
        raise ConfigError(f"Each listener must have a different name, listeners: {spec}")
    _check_distinct_ports(listeners, spec)
    protocols = _security_protocols(cfg)
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
    given = [parse_listener(s) for s in cfg["advertised.listeners"]] or list(listeners)  # type: ignore[attr-defined]
    advertised = list(dict.fromkeys(a.name for a in given))
    if cfg["inter.broker.listener.name"] and "security.inter.broker.protocol" in cfg.overridden:
        raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    inter = _inter_broker_listener(cfg) or ""
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
    file's KafkaServer section (BrokerConfig.jaas_module). An OAUTHBEARER module with options logs in at start-up, as Kafka's broker does: options
    that make no token stop it. GSSAPI needs its service name and the keys of its principal
    (kerberos_login.py)."""
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
                cfg.oauth_validator(listener)
            except (oauth_validator.ValidatorConfigError, ValueError) as exc:
                raise ConfigError(str(exc)) from None


def _is_oauth_handler(key: str, value: str) -> bool:
    """Kafka's secured OAUTHBEARER validator and login, the callback handlers wirekafka has."""
    key = key.lower()
    return ((key.endswith(".oauthbearer.sasl.server.callback.handler.class")
             and value.strip() == oauth_validator.HANDLER_CLASS)
            or (key.endswith(".oauthbearer.sasl.login.callback.handler.class")
                and value.strip() in oauth_login.HANDLER_CLASSES))


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
        with_ip = [lst for lst in group if _ip_family(lst.host) is not None]
        if len(group) - len(with_ip) > 1:
            raise ConfigError(f"Each listener must have a different port, listeners: {spec}")
        if len(with_ip) not in (0, 2):
            raise ConfigError("Each listener must have a different port unless exactly one listener has an IPv4 "
                              f"address and the other IPv6 address, listeners: {spec}, port: {port}")
        if len(with_ip) == 2 and (sorted(_ip_family(lst.host) for lst in with_ip) != ["4", "6"]  # type: ignore[type-var]
                                  or len(group) > 2):
            raise ConfigError("If you have two listeners on the same port then one needs to be IPv4 and the other "
                              f"IPv6, listeners: {spec}, port: {port}")


def _ip_family(host: str) -> str | None:
    """"4" or "6" for an IP address literal, None for a name or an empty host."""
    try:
        return str(ipaddress.ip_address(host).version)
    except ValueError:
        return None


def _check_zookeeper_broker_id(cfg: BrokerConfig) -> None:
    """Kafka 3.9's bounds on broker.id in ZooKeeper mode: ids up to reserved.broker.max.id are
    given by hand and -1 asks for a generated one above it; without generation an id is needed."""
    if cfg.bool("broker.id.generation.enable"):
        if not -1 <= cfg.node_id <= cfg.int("reserved.broker.max.id"):
            raise ConfigError("broker.id must be greater than or equal to -1 and not greater than "
                              "reserved.broker.max.id")
    elif cfg.node_id < 0:
        raise ConfigError("broker.id must be greater than or equal to 0")


def load_config(path: Path | None, overrides: list[str]) -> BrokerConfig:
    props = read_properties(path) if path else {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--override expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        props[k.strip()] = v
    return build_config(props)
