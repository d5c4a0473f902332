"""Kafka 3.9 broker keys that wirekafka accepts without acting on them, and why.

Every key a Kafka 3.9 broker accepts is accepted here with Kafka's type (a value of the wrong type
stops start-up, as Kafka's ConfigDef would), so a server.properties written for Kafka starts
wirekafka. The keys wirekafka gives effect are in config.BROKER_KEYS; the ones below either have
nothing to act on in wirekafka (KRaft settings, JVM plug-ins for features it has not, tiered
storage tuning: a value other than Kafka's default is logged with the reason) or ask for something
wirekafka cannot do safely (a policy plug-in, delegation tokens, tiered storage, a KRaft
migration: such a value stops start-up with the reason, rather than be silently ignored). Types
and defaults are Kafka 3.9.1's, as its DescribeConfigs reports them."""

from __future__ import annotations

import re

BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = (
    "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD")

# key -> (Kafka type, Kafka 3.9's default as text; None: no default)
KEYS: dict[str, tuple[str, str | None]] = {
    "alter.config.policy.class.name": (CLASS, None),
    "alter.log.dirs.replication.quota.window.num": (INT, '11'),
    "alter.log.dirs.replication.quota.window.size.seconds": (INT, '1'),
    "auto.include.jmx.reporter": (BOOLEAN, 'true'),
    "broker.heartbeat.interval.ms": (INT, '2000'),
    "broker.session.timeout.ms": (INT, '9000'),
    "control.plane.listener.name": (STRING, None),
    "controller.listener.names": (STRING, None),
    "controller.quorum.append.linger.ms": (INT, '25'),
    "controller.quorum.bootstrap.servers": (LIST, ''),
    "controller.quorum.election.backoff.max.ms": (INT, '1000'),
    "controller.quorum.election.timeout.ms": (INT, '1000'),
    "controller.quorum.fetch.timeout.ms": (INT, '2000'),
    "controller.quorum.request.timeout.ms": (INT, '2000'),
    "controller.quorum.retry.backoff.ms": (INT, '20'),
    "controller.quorum.voters": (LIST, ''),
    "create.topic.policy.class.name": (CLASS, None),
    "delegation.token.expiry.check.interval.ms": (LONG, '3600000'),
    "delegation.token.expiry.time.ms": (LONG, '86400000'),
    "delegation.token.master.key": (PASSWORD, None),
    "delegation.token.max.lifetime.ms": (LONG, '604800000'),
    "delegation.token.secret.key": (PASSWORD, None),
    "early.start.listeners": (STRING, None),
    "eligible.leader.replicas.enable": (BOOLEAN, 'false'),
    "group.consumer.assignors": (LIST, 'org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor'),
    "group.consumer.heartbeat.interval.ms": (INT, '5000'),
    "group.consumer.max.heartbeat.interval.ms": (INT, '15000'),
    "group.consumer.max.session.timeout.ms": (INT, '60000'),
    "group.consumer.max.size": (INT, '2147483647'),
    "group.consumer.min.heartbeat.interval.ms": (INT, '5000'),
    "group.consumer.min.session.timeout.ms": (INT, '45000'),
    "group.consumer.session.timeout.ms": (INT, '45000'),
    "group.coordinator.append.linger.ms": (INT, '10'),
    "group.coordinator.rebalance.protocols": (LIST, 'classic'),
    "group.coordinator.threads": (INT, '1'),
    "group.share.delivery.count.limit": (INT, '5'),
    "group.share.heartbeat.interval.ms": (INT, '5000'),
    "group.share.max.groups": (SHORT, '10'),
    "group.share.max.heartbeat.interval.ms": (INT, '15000'),
    "group.share.max.record.lock.duration.ms": (INT, '60000'),
    "group.share.max.session.timeout.ms": (INT, '60000'),
    "group.share.max.size": (SHORT, '200'),
    "group.share.min.heartbeat.interval.ms": (INT, '5000'),
    "group.share.min.record.lock.duration.ms": (INT, '15000'),
    "group.share.min.session.timeout.ms": (INT, '45000'),
    "group.share.partition.max.record.locks": (INT, '200'),
    "group.share.record.lock.duration.ms": (INT, '30000'),
    "group.share.session.timeout.ms": (INT, '45000'),
    "initial.broker.registration.timeout.ms": (INT, '60000'),
    "inter.broker.protocol.version": (STRING, '3.9-IV0'),
    "kafka.metrics.reporters": (LIST, ''),
    "log.dir.failure.timeout.ms": (LONG, '30000'),
    "log.flush.start.offset.checkpoint.interval.ms": (INT, '60000'),
    "log.local.retention.bytes": (LONG, '-2'),
    "log.local.retention.ms": (LONG, '-2'),
    "log.message.format.version": (STRING, '3.0-IV1'),
    "log.message.timestamp.difference.max.ms": (LONG, '9223372036854775807'),
    "log.preallocate": (BOOLEAN, 'false'),
    "metadata.log.dir": (STRING, None),
    "metadata.log.max.record.bytes.between.snapshots": (LONG, '20971520'),
    "metadata.log.max.snapshot.interval.ms": (LONG, '3600000'),
    "metadata.log.segment.bytes": (INT, '1073741824'),
    "metadata.log.segment.ms": (LONG, '604800000'),
    "metadata.max.idle.interval.ms": (INT, '500'),
    "metadata.max.retention.bytes": (LONG, '104857600'),
    "metadata.max.retention.ms": (LONG, '604800000'),
    "metric.reporters": (LIST, ''),
    "num.replica.alter.log.dirs.threads": (INT, None),
    "remote.fetch.max.wait.ms": (INT, '500'),
    "remote.log.index.file.cache.total.size.bytes": (LONG, '1073741824'),
    "remote.log.manager.copier.thread.pool.size": (INT, '-1'),
    "remote.log.manager.copy.max.bytes.per.second": (LONG, '9223372036854775807'),
    "remote.log.manager.copy.quota.window.num": (INT, '11'),
    "remote.log.manager.copy.quota.window.size.seconds": (INT, '1'),
    "remote.log.manager.expiration.thread.pool.size": (INT, '-1'),
    "remote.log.manager.fetch.max.bytes.per.second": (LONG, '9223372036854775807'),
    "remote.log.manager.fetch.quota.window.num": (INT, '11'),
    "remote.log.manager.fetch.quota.window.size.seconds": (INT, '1'),
    "remote.log.manager.task.interval.ms": (LONG, '30000'),
    "remote.log.manager.thread.pool.size": (INT, '10'),
    "remote.log.metadata.custom.metadata.max.bytes": (INT, '128'),
    "remote.log.metadata.manager.class.name": (STRING, 'org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager'),
    "remote.log.metadata.manager.class.path": (STRING, None),
    "remote.log.metadata.manager.impl.prefix": (STRING, 'rlmm.config.'),
    "remote.log.metadata.manager.listener.name": (STRING, None),
    "remote.log.reader.max.pending.tasks": (INT, '100'),
    "remote.log.reader.threads": (INT, '10'),
    "remote.log.storage.manager.class.name": (STRING, None),
    "remote.log.storage.manager.class.path": (STRING, None),
    "remote.log.storage.manager.impl.prefix": (STRING, 'rsm.config.'),
    "remote.log.storage.system.enable": (BOOLEAN, 'false'),
    "sasl.client.callback.handler.class": (CLASS, None),
    "sasl.jaas.config": (PASSWORD, None),
    "sasl.kerberos.kinit.cmd": (STRING, '/usr/bin/kinit'),
    "sasl.kerberos.min.time.before.relogin": (LONG, '60000'),
    "sasl.kerberos.ticket.renew.jitter": (DOUBLE, '0.05'),
    "sasl.kerberos.ticket.renew.window.factor": (DOUBLE, '0.8'),
    "sasl.login.callback.handler.class": (CLASS, None),
    "sasl.login.class": (CLASS, None),
    "sasl.login.connect.timeout.ms": (INT, None),
    "sasl.login.read.timeout.ms": (INT, None),
    "sasl.login.refresh.buffer.seconds": (SHORT, '300'),
    "sasl.login.refresh.min.period.seconds": (SHORT, '60'),
    "sasl.login.refresh.window.factor": (DOUBLE, '0.8'),
    "sasl.login.refresh.window.jitter": (DOUBLE, '0.05'),
    "sasl.login.retry.backoff.max.ms": (LONG, '10000'),
    "sasl.login.retry.backoff.ms": (LONG, '100'),
    "sasl.mechanism.controller.protocol": (STRING, 'GSSAPI'),
    "sasl.oauthbearer.clock.skew.seconds": (INT, '30'),
    "sasl.oauthbearer.expected.audience": (LIST, None),
    "sasl.oauthbearer.expected.issuer": (STRING, None),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": (LONG, '3600000'),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": (LONG, '10000'),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": (LONG, '100'),
    "sasl.oauthbearer.jwks.endpoint.url": (STRING, None),
    "sasl.oauthbearer.scope.claim.name": (STRING, 'scope'),
    "sasl.oauthbearer.sub.claim.name": (STRING, 'sub'),
    "sasl.oauthbearer.token.endpoint.url": (STRING, None),
    "sasl.server.callback.handler.class": (CLASS, None),
    "security.providers": (STRING, None),
    "ssl.engine.factory.class": (CLASS, None),
    "ssl.provider": (STRING, None),
    "ssl.secure.random.implementation": (STRING, None),
    "telemetry.max.bytes": (INT, '1048576'),
    "zookeeper.metadata.migration.enable": (BOOLEAN, 'false'),
}

INERT, REFUSED = "inert", "refused"

# What a key's non-default value does, by the first pattern (a regular expression on the key)
# that matches it: (pattern, treatment, reason).
RULES: tuple[tuple[str, str, str], ...] = (
    (r"(create|alter)\.(topic|config)\.policy\.class\.name|sasl\.(client|server|login)\.callback\.handler\.class"
     r"|sasl\.login\.class|ssl\.engine\.factory\.class|security\.providers",
     REFUSED, "a JVM plug-in class: wirekafka has Kafka's built-in behaviour only, and would not apply it"),
    (r"delegation\.token\.(master|secret)\.key", REFUSED,
     "delegation tokens (KIP-48) are not implemented: clients could not authenticate with them"),
    (r"remote\.log\.storage\.system\.enable", REFUSED,
     "tiered storage (KIP-405) is not implemented: segments would stay local only"),
    (r"zookeeper\.metadata\.migration\.enable", REFUSED, "there is no KRaft controller to migrate to"),
    (r"group\.coordinator\.rebalance\.protocols", REFUSED,
     "only the classic group protocol is implemented (no KIP-848 consumer or share groups)"),
    (r"log\.message\.timestamp\.difference\.max\.ms", REFUSED,
     "removed in Kafka 4: set log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms"),
    (r"inter\.broker\.protocol\.version", REFUSED,
     "wirekafka brokers speak Kafka 3.9's inter-broker protocol (3.9-IV0) only"),
    (r"delegation\.token\..*", INERT, "delegation tokens are not implemented"),
    (r"remote\.(log|fetch)\..*|log\.local\.retention\..*", INERT, "tiered storage is not implemented"),
    (r"controller\.quorum\..*|controller\.listener\.names|metadata\..*|broker\.(heartbeat|session)\..*"
     r"|initial\.broker\.registration\.timeout\.ms|early\.start\.listeners|sasl\.mechanism\.controller\.protocol"
     r"|log\.dir\.failure\.timeout\.ms|eligible\.leader\.replicas\.enable",
     INERT, "a KRaft setting: a ZooKeeper cluster, like Kafka 3.9's, and the single node have no KRaft quorum"),
    (r"control\.plane\.listener\.name", INERT,
     "brokers learn the controller's decisions from ZooKeeper watches: there are no controller-to-broker requests"),
    (r"group\.(consumer|share|coordinator)\..*", INERT,
     "consumer (KIP-848) and share groups are not implemented"),
    (r"log\.message\.format\.version", INERT, "ignored by Kafka itself since 3.0: batches are magic v2"),
    (r"auto\.include\.jmx\.reporter|kafka\.metrics\.reporters|metric\.reporters|telemetry\.max\.bytes", INERT,
     "there is no JVM metrics system to report from"),
    # sasl.kerberos.service.name and sasl.kerberos.principal.to.local.rules take effect (config.BROKER_KEYS)
    (r"sasl\.kerberos\..*", INERT,
     "GSSAPI listeners accept tickets with the keys of their keytab, and a broker logging in to another gets its "
     "tickets with those keys through MIT's library, which gets a new one when the last expires: there is no "
     "kinit to run and no ticket to renew"),
    # the secured validator's and login's settings (oauth_validator.KEYS, oauth_login.KEYS) take
    # effect: build_config reads them first; these are the ones neither reads
    (r"sasl\.oauthbearer\..*", INERT,
     "not read by Kafka's secured OAUTHBEARER validator or login, the OAUTHBEARER plug-ins wirekafka has"),
    (r"sasl\.login\..*", INERT,
     "a broker's login callback handler is set per listener and mechanism "
     "(listener.name.<listener>.oauthbearer.sasl.login.callback.handler.class)"),
    (r"sasl\.jaas\.config", INERT,
     "a broker reads its JAAS text from listener.name.<listener>.<mechanism>.sasl.jaas.config or the JAAS file's "
     "KafkaServer section"),
    (r"ssl\.provider|ssl\.secure\.random\.implementation", INERT,
     "a JVM implementation choice: OpenSSL is used"),
    (r"alter\.log\.dirs\..*|num\.replica\.alter\.log\.dirs\.threads", INERT,
     "replicas are not moved between log directories (AlterReplicaLogDirs)"),
    (r"log\.flush\.start\.offset\.checkpoint\.interval\.ms", INERT,
     "the log start offsets are checkpointed with the recovery points"),
    (r"log\.preallocate", INERT, "preallocation is for file systems that fragment appends (NTFS); Linux's do not"),
)


def treatment(key: str) -> tuple[str, str]:
    """(INERT or REFUSED, reason) for one of KEYS."""
    for pattern, kind, reason in RULES:
        if re.fullmatch(pattern, key):
            return kind, reason
    raise KeyError(key)


def parse(key: str, raw: str) -> object:
    """A value as Kafka's ConfigDef reads its type; ValueError for one it would refuse."""
    return parse_as(KEYS[key][0], raw)


def parse_as(kind: str, raw: str) -> object:
    """A value as Kafka's ConfigDef reads the type `kind`; ValueError for one it would refuse."""
    text = raw.strip()
    if kind == BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ValueError("Expected value to be either true or false")
        return text.lower() == "true"
    if kind in (INT, SHORT, LONG):
        value = int(text)
        bits = {INT: 31, SHORT: 15, LONG: 63}[kind]
        if not -(2**bits) <= value < 2**bits:
            raise ValueError(f"Not a number of type {kind}")
        return value
    if kind == DOUBLE:
        return float(text)
    if kind == LIST:
        return tuple(p.strip() for p in text.split(",") if p.strip())
    return text


# values that mean what the default means (a Kafka 3.9 cluster's brokers may name their version)
SAME_AS_DEFAULT = {"inter.broker.protocol.version": ("3.9", "3.9-IV0")}


def is_default(key: str, value: object) -> bool:
    default = KEYS[key][1]
    if value in SAME_AS_DEFAULT.get(key, ()):
        return True
    if default is None:
        return value in ("", ())
    return value == parse(key, default)
