"""The broker's server.properties keys as tables: each key's parser and Kafka's default, the
authorizer's keys, Kafka 3.9's keys that Kafka 4 dropped, the ZooKeeper client's TLS keys, the
keys accepted without effect (INERT_KEYS) and Kafka's validators of some values.

BrokerConfig (broker_config.py) holds the values; loader.py reads and checks them against these
tables; DescribeConfigs (describe_types.py) reports their types and defaults."""

from __future__ import annotations

from typing import Callable

from wirekafka.config import kafka_only_keys

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
MIN_SEGMENT_BYTES = 1048576  # Kafka 4's minimum for log.segment.bytes and segment.bytes (KIP-1030)
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def parse_bool(v: str) -> bool:
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"expected true or false, got {v!r}")
    return s == "true"


def parse_int(v: str) -> int:
    return int(v.strip())


def parse_str(v: str) -> str:
    return v.strip()


def parse_list(v: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in v.split(",") if p.strip())


def _number(n: object) -> float:
    """A parsed value a numeric validator checks (an INT, LONG or DOUBLE key's)."""
    if isinstance(n, (int, float)):
        return n
    raise TypeError(f"not a number: {n!r}")


def as_int(value: object) -> int:
    """An integer key's value (parse_int's), or one kept as text (a listener's own setting, a
    dynamic one), as an int."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


def at_least(lo: int) -> Callable[[object], str | None]:
    """Kafka's Range.atLeast validator: None when n is at least lo, else its message."""
    return lambda n: None if _number(n) >= lo else f"Value must be at least {lo}"


def between(lo: int, hi: int) -> Callable[[object], str | None]:
    """Kafka's Range.between validator: None when n is within, else its message."""
    def check(n: object) -> str | None:
        value = _number(n)
        if value < lo:
            return f"Value must be at least {lo}"
        return None if value <= hi else f"Value must be no more than {hi}"
    return check


def gzip_level(n: object) -> str | None:
    """Kafka's validator of compression.gzip.level."""
    value = _number(n)
    return None if value == -1 or 1 <= value <= 9 else "Value must be between 1 and 9 or equal to -1"


# key -> (parser, default). The default is Kafka's, except where noted.
DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
BROKER_KEYS: dict[str, tuple[Callable[[str], object], object]] = {
    "node.id": (parse_int, 1),  # Kafka requires it; a single embedded node is node 1
    "broker.id": (parse_int, -1),
    # ZooKeeper mode: a broker started without an id gets one from /brokers/seqid, above this
    "broker.id.generation.enable": (parse_bool, True),
    "reserved.broker.max.id": (parse_int, 1000),
    "process.roles": (parse_list, ("broker", "controller")),
    "listeners": (parse_list, ("PLAINTEXT://127.0.0.1:9092",)),  # Kafka binds all interfaces
    "advertised.listeners": (parse_list, ()),
    # listener name -> security protocol (listener_checks.py: every listener needs one wirekafka serves)
    "listener.security.protocol.map": (parse_list, ("SASL_SSL:SASL_SSL", "PLAINTEXT:PLAINTEXT", "SSL:SSL",
                                                   "SASL_PLAINTEXT:SASL_PLAINTEXT")),
    "inter.broker.listener.name": (parse_str, None),
    "security.inter.broker.protocol": (parse_str, "PLAINTEXT"),
    # the largest frame a connection may send before it has authenticated
    "sasl.server.max.receive.size": (parse_int, 524288),
    "sasl.enabled.mechanisms": (parse_list, ("GSSAPI",)),
    "sasl.mechanism.inter.broker.protocol": (parse_str, "GSSAPI"),
    # GSSAPI (wirekafka/security/kerberos/keytab_login.py); each may also be given per listener (listener.name.<l>.<key>)
    "sasl.kerberos.service.name": (parse_str, None),
    "sasl.kerberos.principal.to.local.rules": (parse_list, ("DEFAULT",)),
    "connections.max.reauth.ms": (parse_int, 0),
    # TLS (wirekafka/security/tls.py); each may also be given per listener (listener.name.<l>.<key>)
    "ssl.protocol": (parse_str, "TLSv1.3"),
    "ssl.enabled.protocols": (parse_list, ("TLSv1.2", "TLSv1.3")),
    "ssl.cipher.suites": (parse_list, ()),
    "ssl.keystore.type": (parse_str, "JKS"),
    "ssl.keystore.location": (parse_str, None),
    "ssl.keystore.password": (parse_str, None),
    "ssl.key.password": (parse_str, None),
    "ssl.keystore.key": (parse_str, None),
    "ssl.keystore.certificate.chain": (parse_str, None),
    "ssl.truststore.type": (parse_str, "JKS"),
    "ssl.truststore.location": (parse_str, None),
    "ssl.truststore.password": (parse_str, None),
    "ssl.truststore.certificates": (parse_str, None),
    "ssl.client.auth": (parse_str, "none"),
    "ssl.endpoint.identification.algorithm": (parse_str, "https"),
    "ssl.keymanager.algorithm": (parse_str, "SunX509"),
    "ssl.trustmanager.algorithm": (parse_str, "PKIX"),
    "ssl.principal.mapping.rules": (parse_str, "DEFAULT"),
    # whether a runtime change of a listener's key store may change its certificates' subject or
    # SubjectAltNames (config/listener_tls.py)
    "ssl.allow.dn.changes": (parse_bool, False),
    "ssl.allow.san.changes": (parse_bool, False),
    "log.dirs": (parse_list, ()),
    "log.dir": (parse_str, "/tmp/kafka-logs"),
    "num.partitions": (parse_int, 1),
    "default.replication.factor": (parse_int, 1),
    "auto.create.topics.enable": (parse_bool, True),
    "delete.topic.enable": (parse_bool, True),
    "log.segment.bytes": (parse_int, 1073741824),
    "log.roll.ms": (parse_int, None),
    "log.roll.hours": (parse_int, 168),
    "log.roll.jitter.ms": (parse_int, None),
    # the broker's own connections to other brokers: the first attempt's timeout, and its cap
    "socket.connection.setup.timeout.ms": (parse_int, 10000),
    "socket.connection.setup.timeout.max.ms": (parse_int, 30000),
    "log.roll.jitter.hours": (parse_int, 0),
    "log.retention.ms": (parse_int, None),
    "log.retention.minutes": (parse_int, None),
    "log.retention.hours": (parse_int, 168),
    "log.retention.bytes": (parse_int, -1),
    "log.retention.check.interval.ms": (parse_int, 300000),
    "log.index.interval.bytes": (parse_int, 4096),
    "log.index.size.max.bytes": (parse_int, 10485760),
    "log.flush.interval.messages": (parse_int, LONG_MAX),
    "log.flush.interval.ms": (parse_int, None),
    "log.flush.scheduler.interval.ms": (parse_int, LONG_MAX),
    "log.flush.offset.checkpoint.interval.ms": (parse_int, 60000),
    "log.segment.delete.delay.ms": (parse_int, 60000),
    "log.cleanup.policy": (parse_list, ("delete",)),
    "log.cleaner.enable": (parse_bool, True),
    "log.cleaner.delete.retention.ms": (parse_int, 86400000),
    "log.cleaner.min.compaction.lag.ms": (parse_int, 0),
    "log.cleaner.max.compaction.lag.ms": (parse_int, LONG_MAX),
    "log.cleaner.min.cleanable.ratio": (float, 0.5),
    "log.cleaner.backoff.ms": (parse_int, 15000),
    "log.cleaner.threads": (parse_int, 1),
    "log.cleaner.dedupe.buffer.size": (parse_int, 134217728),
    "log.cleaner.io.buffer.size": (parse_int, 524288),
    "log.cleaner.io.buffer.load.factor": (float, 0.9),
    "log.cleaner.io.max.bytes.per.second": (float, 1.7976931348623157e308),
    "log.message.timestamp.type": (parse_str, "CreateTime"),
    "log.message.timestamp.before.max.ms": (parse_int, LONG_MAX),
    "log.message.timestamp.after.max.ms": (parse_int, 3600000),
    "compression.type": (parse_str, "producer"),
    # the levels a topic's compression.type recompresses with (KIP-390), unless the topic sets its own
    "compression.gzip.level": (parse_int, -1),
    "compression.lz4.level": (parse_int, 9),
    "compression.zstd.level": (parse_int, 3),
    "message.max.bytes": (parse_int, 1048588),
    "min.insync.replicas": (parse_int, 1),
    "socket.request.max.bytes": (parse_int, 104857600),
    "socket.listen.backlog.size": (parse_int, 50),
    "connections.max.idle.ms": (parse_int, 600000),
    "max.connections": (parse_int, INT_MAX),
    "max.connections.per.ip": (parse_int, INT_MAX),
    # new connections a second, for the whole broker (the inter-broker listener aside when there are
    # others) and per listener (listener.name.<l>.max.connection.creation.rate): over it, accepting waits
    "max.connection.creation.rate": (parse_int, INT_MAX),
    # the most partitions one DescribeTopicPartitions answer lists
    "max.request.partition.size.limit": (parse_int, 2000),
    "max.connections.per.ip.overrides": (parse_str, ""),
    "replica.socket.receive.buffer.bytes": (parse_int, 65536),
    "fetch.max.bytes": (parse_int, 57671680),
    "socket.send.buffer.bytes": (parse_int, 102400),
    "socket.receive.buffer.bytes": (parse_int, 102400),
    "num.network.threads": (parse_int, 3),
    "num.io.threads": (parse_int, 8),
    "background.threads": (parse_int, 10),
    "num.recovery.threads.per.data.dir": (parse_int, 2),
    "queued.max.requests": (parse_int, 500),
    "queued.max.request.bytes": (parse_int, -1),
    "fetch.purgatory.purge.interval.requests": (parse_int, 1000),
    "producer.purgatory.purge.interval.requests": (parse_int, 1000),
    "delete.records.purgatory.purge.interval.requests": (parse_int, 1),
    "metrics.num.samples": (parse_int, 2),
    "metrics.sample.window.ms": (parse_int, 30000),
    "metrics.recording.level": (parse_str, "INFO"),
    "kafka.metrics.polling.interval.secs": (parse_int, 10),
    "connection.failed.authentication.delay.ms": (parse_int, 100),
    "transaction.state.log.load.buffer.size": (parse_int, 5242880),
    "log.message.downconversion.enable": (parse_bool, True),  # Kafka 3.9 (ZooKeeper mode)
    "offsets.commit.required.acks": (parse_int, -1),  # Kafka 3.9 (ZooKeeper mode)
    "offsets.topic.num.partitions": (parse_int, 50),
    "offsets.topic.replication.factor": (parse_int, 3),
    "offsets.topic.segment.bytes": (parse_int, 104857600),
    # the codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) of the group coordinator's batches
    "offsets.topic.compression.codec": (parse_int, 0),
    "offsets.retention.minutes": (parse_int, 10080),
    "offsets.retention.check.interval.ms": (parse_int, 600000),
    "offsets.load.buffer.size": (parse_int, 5242880),
    "offsets.commit.timeout.ms": (parse_int, 5000),
    "offset.metadata.max.bytes": (parse_int, 4096),
    "group.initial.rebalance.delay.ms": (parse_int, 3000),
    "group.min.session.timeout.ms": (parse_int, 6000),
    "group.max.session.timeout.ms": (parse_int, 1800000),
    "group.max.size": (parse_int, INT_MAX),
    "transaction.state.log.num.partitions": (parse_int, 50),
    "transaction.state.log.segment.bytes": (parse_int, 104857600),
    "transaction.state.log.replication.factor": (parse_int, 3),
    "transaction.state.log.min.isr": (parse_int, 2),
    "transaction.max.timeout.ms": (parse_int, 900000),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (parse_int, 10000),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (parse_int, 3600000),
    "transactional.id.expiration.ms": (parse_int, 604800000),
    "producer.id.expiration.ms": (parse_int, 86400000),
    "producer.id.expiration.check.interval.ms": (parse_int, 600000),  # internal in Kafka, settable all the same
    "max.incremental.fetch.session.cache.slots": (parse_int, 1000),
    "request.timeout.ms": (parse_int, 30000),
    # requests to the controller (AlterPartition; the connection of a ControlledShutdown), as Kafka 3.9
    "controller.socket.timeout.ms": (parse_int, 30000),
    "controlled.shutdown.enable": (parse_bool, True),
    "controlled.shutdown.max.retries": (parse_int, 3),
    "controlled.shutdown.retry.backoff.ms": (parse_int, 5000),
    # ZooKeeper mode (Kafka 3.9's keys): without zookeeper.connect the broker is one embedded node
    "zookeeper.connect": (parse_str, None),
    "zookeeper.session.timeout.ms": (parse_int, 18000),
    "zookeeper.connection.timeout.ms": (parse_int, None),
    "zookeeper.max.in.flight.requests": (parse_int, 10),
    "zookeeper.set.acl": (parse_bool, False),
    "zookeeper.ssl.client.enable": (parse_bool, False),
    # how a ZooKeeper-mode broker encodes the dynamic passwords it keeps in /config/brokers/<id>
    # (security/password_encoder.py; keyfactory None: Kafka's default, PBKDF2WithHmacSHA512)
    "password.encoder.secret": (parse_str, None),
    "password.encoder.old.secret": (parse_str, None),
    "password.encoder.keyfactory.algorithm": (parse_str, None),
    "password.encoder.cipher.algorithm": (parse_str, "AES/CBC/PKCS5Padding"),
    "password.encoder.key.length": (parse_int, 128),
    "password.encoder.iterations": (parse_int, 4096),
    "broker.rack": (parse_str, None),
    "replica.lag.time.max.ms": (parse_int, 30000),
    # KIP-392: the class that picks a consumer's read replica; Kafka's rack-aware one, or none
    "replica.selector.class": (parse_str, None),
    "transaction.partition.verification.enable": (parse_bool, True),
    "replica.fetch.max.bytes": (parse_int, 1048576),
    "replica.fetch.response.max.bytes": (parse_int, 10485760),
    "replica.fetch.wait.max.ms": (parse_int, 500),
    "replica.fetch.min.bytes": (parse_int, 1),
    "replica.fetch.backoff.ms": (parse_int, 1000),
    "replica.socket.timeout.ms": (parse_int, 30000),
    "replica.high.watermark.checkpoint.interval.ms": (parse_int, 5000),
    "num.replica.fetchers": (parse_int, 1),
    # the replication throttles' byte rate: the bytes of this many samples of this length
    "replication.quota.window.num": (parse_int, 11),
    "replication.quota.window.size.seconds": (parse_int, 1),
    # client quotas (KIP-13, KIP-124, KIP-599): the rates are measured over this many samples of
    # this length; the controller mutation rate over its own window
    "quota.window.num": (parse_int, 11),
    "quota.window.size.seconds": (parse_int, 1),
    "controller.quota.window.num": (parse_int, 11),
    "controller.quota.window.size.seconds": (parse_int, 1),
    "client.quota.callback.class": (parse_str, None),
    "authorizer.class.name": (parse_str, ""),
    "principal.builder.class": (parse_str, DEFAULT_PRINCIPAL_BUILDER),
    "unclean.leader.election.enable": (parse_bool, False),
    "auto.leader.rebalance.enable": (parse_bool, True),
    "leader.imbalance.check.interval.seconds": (parse_int, 300),
    "leader.imbalance.per.broker.percentage": (parse_int, 10),
    "shutdown.timeout.ms": (parse_int, 30000),  # wirekafka: deadline for in-flight requests on SIGTERM
}


# Keys accepted with Kafka's names and defaults whose setting does not change what wirekafka
# does, so a value other than the default is reported at start-up rather than dropped silently.
# The authorizer's own keys: read by Kafka's authorizer from the broker's properties, not keys of
# the broker's config (DescribeConfigs does not list them), with the authorizer's defaults.
AUTHORIZER_KEYS: dict[str, tuple[Callable[[str], object], object]] = {
    "super.users": (parse_str, ""),
    "allow.everyone.if.no.acl.found": (parse_bool, False),
}
# Keys Kafka has not (named `wirekafka.`): kept apart from BROKER_KEYS so that DescribeConfigs
# lists them only when set, as it lists any other key a broker was started with.
METRICS_LISTENER = "wirekafka.metrics.listener"  # HOST:PORT of the Prometheus endpoint; unset: none


def parse_listen_address(v: str) -> str | None:
    """A HOST:PORT key's value as given, once it parses (parse_host_port); empty: unset."""
    if not v.strip():
        return None
    parse_host_port(v)
    return v.strip()


def parse_host_port(v: str) -> tuple[str, int]:
    """HOST:PORT as a listener's address is written: a name or IPv4 address, an IPv6 one in
    brackets ([::1]:9404), or no host (:9404, every interface); ValueError otherwise."""
    host, sep, port = v.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT with a port from 0 to 65535, got {v!r}")
    if host.startswith("[") != host.endswith("]") or (":" in host and not host.startswith("[")):
        raise ValueError(f"an IPv6 address goes in brackets ([::1]:9404), got {v!r}")
    return host.strip("[]"), int(port)


WIREKAFKA_KEYS: dict[str, tuple[Callable[[str], object], object]] = {
    METRICS_LISTENER: (parse_listen_address, None),
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
# set). broker/metadata/zk/security.py reads them.
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
