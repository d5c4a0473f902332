#!/usr/bin/env python3
"""Run a real Apache Kafka broker and Kafka's Java CLI tools on this machine (Python stdlib only).

This is wirekafka's *reference broker*: conformance tests and benchmarks run the same scenario
against wirekafka and against genuine Apache Kafka started from Maven Central jars. Nothing here
is part of the broker itself.

Jars
----
:func:`ensure_jars` resolves ``scripts/maven/kafka/pom.xml`` (``kafka_2.13`` + ``kafka-tools`` +
``kafka-streams`` + log4j2 with its slf4j-1.x binding) with Maven into::

    ${WIREKAFKA_CACHE:-~/.cache/wirekafka}/kafka-<version>/libs/*.jar   (the classpath)
    ${WIREKAFKA_CACHE:-~/.cache/wirekafka}/m2/                          (Maven's local repository)

A marker file (``kafka-<version>/.complete``, holding a hash of the POM and the version) makes a
second call return at once; editing the POM triggers a fresh resolution into a new directory
that then replaces the old one (and drops the class archives made from the old jars), so stale
jars never mix. Concurrent callers serialise on a
``flock``. Needs ``mvn`` and ``java`` (17+) on PATH; ``scripts/install_system_deps.sh`` installs
them from Debian if missing. The Kafka version is :data:`KAFKA_VERSION` (4.3.1, the newest 4.x on
Maven Central when this was written); ``$WIREKAFKA_KAFKA_VERSION`` overrides it, but the tool
class names below were checked against 4.3.1 only. A 3.x version (the ZooKeeper-mode reference,
below) resolves ``scripts/maven/kafka39/pom.xml`` instead (reload4j logging) into its own
``kafka-<version>/`` (:func:`pom_for`).

Broker
------
:class:`RealKafka` starts a single combined KRaft node (``process.roles=broker,controller``,
``node.id=1``) on two free 127.0.0.1 ports, in a temporary work directory::

    with RealKafka() as kafka:           # or kafka = RealKafka().start(); ...; kafka.stop()
        kafka.bootstrap                  # "127.0.0.1:<port>"
        kafka.data_dir                   # log.dirs; partition dirs are data_dir/<topic>-<p>
        kafka.log_path                   # the broker's stdout/stderr (log4j2 console, INFO)

Storage is formatted with ``kafka.tools.StorageTool format --standalone -t <id> -c <props>``
(a single-node *dynamic* quorum, so ``controller.quorum.bootstrap.servers`` is used rather than
``controller.quorum.voters``); the cluster id is a random Kafka-style base64url UUID made in
Python (what ``StorageTool random-uuid`` prints, without paying for a JVM start). The broker runs
as ``java -Xmx512m -cp '<libs>/*' kafka.Kafka server.properties``; start() returns once the
PLAINTEXT port answers a raw ApiVersions v0 request (90 s timeout, the error shows the log tail).
stop() sends SIGTERM (controlled shutdown), waits 30 s, then SIGKILLs; a clean stop exits 143
(the JVM's code for SIGTERM after its shutdown hooks ran); kill() is SIGKILL (a crash). This
process handling is shared with ``scripts/zookeeper.py`` (``scripts/jvm_process.py``). Measured
here (2 cores): start-up including storage format ~3.5 s, stop ~0.5 s. The defaults in
:data:`DEFAULT_BROKER_CONFIG` make a one-node cluster usable (replication factors 1, no initial
rebalance delay) and its log cleaner quick to pick up dirty compacted logs
(log.cleaner.backoff.ms 1 s); anything else is Kafka's own default (e.g. 50 __consumer_offsets
partitions), so behaviour matches a stock broker.

ZooKeeper mode (Kafka 3.9)
--------------------------
Kafka 4 dropped ZooKeeper; wirekafka's cluster mode keeps Kafka 3.9's ZooKeeper layout, so the
reference for replication is a Kafka :data:`KAFKA_ZK_VERSION` (3.9.1) cluster on a real ZooKeeper
(``scripts/zookeeper.py``). ``zookeeper_connect`` turns a RealKafka into a plain ZooKeeper-mode
broker: no storage format (the broker writes ``meta.properties`` itself, and the first one
creates the chroot and ``/cluster/id``), no controller port; server.properties holds
``broker.id``, ``zookeeper.connect``, ``listeners``/``advertised.listeners`` (PLAINTEXT on
127.0.0.1), ``log.dirs`` and :data:`DEFAULT_ZK_BROKER_CONFIG` (replication factors 1 unless
overridden; ``zookeeper.metadata.migration.enable`` is left unset)::

    with ZooKeeperServer() as zk:                                      # scripts/zookeeper.py
        brokers = start_zk_cluster(zk.connect_string + "/kafka39-x", (1, 2, 3), workdir=tmp,
                                   overrides={"default.replication.factor": 3})
        ...                                                            # b.bootstrap, b.run_tool
        stop_all(brokers)                                              # before ZooKeeper stops

or one at a time: ``RealKafka(zookeeper_connect="127.0.0.1:2181/kafka39-x", broker_id=2)``.
start() returns once ApiVersions is answered, which a ZooKeeper-mode broker does only after it
registered in ``/brokers/ids``. Measured here (2 cores): three brokers (-Xmx256m) start in
parallel in 7-13 s (the latter with other test runs on the machine); kafka-topics --create
2-4 s; stop_all ~2.5 s.

Tools
-----
:func:`run_tool` runs a tool's main class with the same classpath, ``-Xmx256m`` (as Kafka's
``kafka-run-class.sh``) and a quiet log4j2 configuration (WARN and above to stderr, so stdout
holds only the tool's own output). :data:`TOOLS` maps the ``bin/*.sh`` names of Kafka's
distribution to main classes; in Kafka 4.3.1 they are (checked with ``unzip -l`` on the jars):

short name (bin/*.sh)        main class (jar)
---------------------------  ------------------------------------------------------------------
kafka-topics                 org.apache.kafka.tools.TopicCommand (kafka-tools)
kafka-console-producer       org.apache.kafka.tools.ConsoleProducer (kafka-tools)
kafka-console-consumer       org.apache.kafka.tools.consumer.ConsoleConsumer (kafka-tools)
kafka-consumer-groups        org.apache.kafka.tools.consumer.group.ConsumerGroupCommand (kafka-tools)
kafka-configs                kafka.admin.ConfigCommand (kafka_2.13, Scala)
kafka-producer-perf-test     org.apache.kafka.tools.ProducerPerformance (kafka-tools)
kafka-consumer-perf-test     org.apache.kafka.tools.ConsumerPerformance (kafka-tools)
kafka-verifiable-producer    org.apache.kafka.tools.VerifiableProducer (kafka-tools)
kafka-verifiable-consumer    org.apache.kafka.tools.VerifiableConsumer (kafka-tools)
kafka-client-compatibility   org.apache.kafka.tools.ClientCompatibilityTest (kafka-tools)
kafka-dump-log               org.apache.kafka.tools.DumpLogSegments (kafka-tools)
kafka-storage                kafka.tools.StorageTool (kafka_2.13, Scala)
kafka-server                 kafka.Kafka (kafka_2.13, Scala)

Note for older versions: ``kafka.admin.TopicCommand`` and ``kafka.tools.DumpLogSegments`` (Scala,
in ``kafka_2.13``) no longer exist in 4.3.1; both moved to ``org.apache.kafka.tools``. TOOLS also
lists the other tools the 4.3.1 distribution has scripts for (acls, transactions, get-offsets...).
Kafka 3.9.1 has its own table, :data:`TOOLS_KAFKA3` (:func:`tools_for` picks by version): there
TopicCommand is already ``org.apache.kafka.tools.TopicCommand`` (``kafka.admin.TopicCommand`` is
gone in 3.9 too), but kafka-console-producer is ``kafka.tools.ConsoleProducer`` and
kafka-dump-log ``kafka.tools.DumpLogSegments`` (Scala), kafka-acls and
kafka-broker-api-versions are ``kafka.admin.*``, and zookeeper-shell is
``org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka``.

CLI
---
::

    python3 scripts/realkafka.py ensure [--version V]   # resolve jars, print the libs directory
    python3 scripts/realkafka.py serve [--port P] [--controller-port C] [--workdir DIR] [--keep]
                                       [--set key=value ...] [--heap 512m] [--timeout 90]
                                       [--version V] [--zookeeper HOST:PORT/CHROOT --broker-id N]
        # start a broker, print its bootstrap ("127.0.0.1:P") on stdout, run until Ctrl-C/SIGTERM
        # (then stop it and exit 0); progress goes to stderr. The JVM is SIGKILLed by the kernel
        # if this process dies (PR_SET_PDEATHSIG).
    python3 scripts/realkafka.py tool [--version V] NAME [ARGS...]
        # e.g. tool kafka-topics --bootstrap-server 127.0.0.1:9092 --list
        # NAME is a tools_for(V) key or a fully qualified main class; stdin/stdout/stderr are
        # passed through and the tool's exit code is returned
    python3 scripts/realkafka.py tools [--version V]    # list tools_for(V)

From tests and the other scripts, import it: ``from scripts import realkafka``.

Environment: ``WIREKAFKA_CACHE`` (cache root), ``WIREKAFKA_KAFKA_VERSION`` (Kafka version),
``WIREKAFKA_KAFKA_ZK_VERSION`` (the ZooKeeper-mode Kafka version, default 3.9.1),
``WIREKAFKA_MVN`` / ``WIREKAFKA_JAVA`` (executables, default ``mvn`` / ``java`` from PATH),
``REALKAFKA_LOG_LEVEL`` (the CLI's log level, default INFO).
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import logging
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger("realkafka")

REPO = Path(__file__).resolve().parent.parent
POM = REPO / "scripts" / "maven" / "kafka" / "pom.xml"
#: The POM for Kafka 3.x (log4j 1.x/reload4j logging, ZooKeeper mode); see :func:`pom_for`.
POM_KAFKA3 = REPO / "scripts" / "maven" / "kafka39" / "pom.xml"

if not __package__:  # run as a file (`python scripts/realkafka.py`): siblings are imported as scripts.*,
    sys.path.insert(0, str(REPO))  # from the repository root, never as top-level modules
from scripts.jvm_process import (  # noqa: E402  (cache_dir is part of this module's API)
    JvmProcess, cache_dir, executable, parse_settings, resolve_with_maven, serve)
from scripts.port_pool import free_ports  # noqa: E402  (part of this module's API too)

#: Apache Kafka version resolved from Maven Central (newest 4.x there when written).
KAFKA_VERSION = os.environ.get("WIREKAFKA_KAFKA_VERSION", "4.3.1")
#: The Kafka version of ZooKeeper-mode brokers (``RealKafka(zookeeper_connect=...)``): 3.9 is
#: the last line with ZooKeeper mode; 4.x is KRaft only.
KAFKA_ZK_VERSION = os.environ.get("WIREKAFKA_KAFKA_ZK_VERSION", "3.9.1")

#: Short tool names (as the distribution's ``bin/<name>.sh`` scripts) -> main class, Kafka 4.3.1.
TOOLS: dict[str, str] = {
    # The ones wirekafka's tests use.
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-client-compatibility": "org.apache.kafka.tools.ClientCompatibilityTest",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    # Broker-side entry points.
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server": "kafka.Kafka",
    # Other tools of the 4.3.1 distribution.
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-jmx": "org.apache.kafka.tools.JmxTool",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-replica-verification": "org.apache.kafka.tools.ReplicaVerificationTool",
    "kafka-share-consumer-perf-test": "org.apache.kafka.tools.ShareConsumerPerformance",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-application-reset": "org.apache.kafka.tools.StreamsResetter",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-verifiable-share-consumer": "org.apache.kafka.tools.VerifiableShareConsumer",
}

#: Short tool names -> main class in Kafka 3.x (checked against 3.9.1 with ``unzip -l``): several
#: tools were still Scala classes in ``kafka_2.13`` (``kafka.admin.*``, ``kafka.tools.*``), and
#: 3.9 has the ZooKeeper-mode ones. :func:`tools_for` picks the table for a version.
TOOLS_KAFKA3: dict[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-client-compatibility": "org.apache.kafka.tools.ClientCompatibilityTest",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server": "kafka.Kafka",
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-broker-api-versions": "kafka.admin.BrokerApiVersionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-jmx": "org.apache.kafka.tools.JmxTool",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-mirror-maker": "kafka.tools.MirrorMaker",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-replica-verification": "org.apache.kafka.tools.ReplicaVerificationTool",
    "kafka-streams-application-reset": "org.apache.kafka.tools.StreamsResetter",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    # ZooKeeper-mode tools of the 3.9 distribution.
    "zookeeper-shell": "org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka",
    "zookeeper-security-migration": "kafka.admin.ZkSecurityMigrator",
    "zookeeper-server-start": "org.apache.zookeeper.server.quorum.QuorumPeerMain",
}

#: JVM options for the broker (the machine has 2 cores; keep it small).
BROKER_JVM_OPTS = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
#: JVM options for CLI tools (kafka-run-class.sh uses -Xmx256M by default). A tool runs for a
#: second or two: the C1 compiler alone and the serial collector cut its CPU time by a third (the
#: test suite runs several hundred tools, mostly beside other tests), and tool_command adds the
#: shared class archive (AppCDS) of the version's tools, which halves the rest.
TOOL_JVM_OPTS = ["-Xmx256m", "-Djava.awt.headless=true", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]

#: Set to 1 (the test suite's conftest.py does) to start brokers for functional tests on a shared
#: archive of the broker's classes (AppCDS, made by the first broker that stops cleanly): a start
#: costs a third less CPU (11 -> 7.4 s here) and wall time. The JIT is left alone: with C1 alone a
#: start costs 4.6 s, but Kafka then took over 30 s for one CreateAcls of 10,000 ACLs. Never for
#: benchmarks: those keep the JVM's defaults.
FAST_START_ENV = "WIREKAFKA_KAFKA_FAST_START"

#: Broker settings every RealKafka gets (beyond listeners/ports/dirs); ``overrides`` win.
DEFAULT_BROKER_CONFIG: dict[str, str] = {
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    # The log cleaner looks for dirty compacted logs every second rather than every 15 s, so the
    # compaction scenarios settle quickly (conformance/test_compaction.py).
    "log.cleaner.backoff.ms": "1000",
}

#: Broker settings of a ZooKeeper-mode (Kafka 3.x) RealKafka: the KRaft defaults without the
#: share-group keys Kafka 3.9 does not know, and one for quick stops. ``overrides`` win.
DEFAULT_ZK_BROKER_CONFIG: dict[str, str] = {
    **{k: v for k, v in DEFAULT_BROKER_CONFIG.items() if not k.startswith("share.")},
    # A broker whose partitions cannot move (the last one up, or all stopping together) retries
    # its controlled shutdown controlled.shutdown.max.retries (3) times, 5 s apart by default:
    # 10-15 s per stop. 500 ms keeps the same protocol and makes a cluster stop take ~2 s.
    "controlled.shutdown.retry.backoff.ms": "500",
}

_TOOLS_LOG4J2 = """\
# Written by scripts/realkafka.py: Kafka CLI tools log WARN and above to stderr only.
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""

_BROKER_LOG4J2 = """\
# Written by scripts/realkafka.py: the broker logs INFO to stdout, which goes to broker.log.
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.target = SYSTEM_OUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
# Per-request logging is far too chatty even at INFO for some loggers.
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


# Kafka 3.x logs through log4j 1.x (reload4j): same behaviour, log4j 1 syntax.
_TOOLS_LOG4J1 = """\
# Written by scripts/realkafka.py: Kafka 3.x CLI tools log WARN and above to stderr only.
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_BROKER_LOG4J1 = """\
# Written by scripts/realkafka.py: the Kafka 3.x broker logs INFO to stdout (broker.log).
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
"""


# --------------------------------------------------------------------------------------------
# Versions: Kafka 4.x (KRaft only, log4j2) and 3.x (ZooKeeper mode, log4j 1.x)
# --------------------------------------------------------------------------------------------

def _major(version: str) -> int:
    try:
        return int(version.split(".")[0])
    except ValueError:
        raise ValueError(f"not a Kafka version: {version!r}") from None


def pom_for(version: str | None = None) -> Path:
    """The POM that resolves ``version``: ``maven/kafka39`` for 3.x, ``maven/kafka`` otherwise.

    The two differ in logging (3.x: reload4j + slf4j-reload4j; 4.x: log4j2), so they are
    separate throwaway POMs rather than one with a version switch."""
    return POM_KAFKA3 if _major(version or KAFKA_VERSION) < 4 else POM


def tools_for(version: str | None = None) -> dict[str, str]:
    """The short-name -> main-class table for ``version``: :data:`TOOLS` or
    :data:`TOOLS_KAFKA3`."""
    return TOOLS_KAFKA3 if _major(version or KAFKA_VERSION) < 4 else TOOLS


def _log4j_config(version: str, kind: str, directory: Path) -> str:
    """Write the tools' or broker's logging config for ``version`` into ``directory`` and return
    the JVM system property that points at it (log4j2 for 4.x, log4j 1.x for 3.x)."""
    if _major(version) < 4:
        text = _TOOLS_LOG4J1 if kind == "tools" else _BROKER_LOG4J1
        path = _write_if_changed(directory / f"log4j-{kind}.properties", text)
        return f"-Dlog4j.configuration=file:{path}"
    text = _TOOLS_LOG4J2 if kind == "tools" else _BROKER_LOG4J2
    name = "log4j2-tools.properties" if kind == "tools" else "log4j2.properties"
    return f"-Dlog4j2.configurationFile={_write_if_changed(directory / name, text)}"


# --------------------------------------------------------------------------------------------
# Jars
# --------------------------------------------------------------------------------------------

def kafka_home(version: str | None = None) -> Path:
    """``<cache>/kafka-<version>``: holds ``libs/``, the marker and the tools' log4j2 config."""
    return cache_dir() / f"kafka-{version or KAFKA_VERSION}"


def ensure_jars(version: str | None = None, *, timeout: float = 1800.0) -> Path:
    """Resolve the Kafka jars with Maven (once) and return the directory to put on the classpath.

    Idempotent and cheap once done: a marker file holding the version and the POM's hash is
    checked first. Otherwise runs ``mvn -q -B -f scripts/maven/kafka/pom.xml
    dependency:copy-dependencies`` (``maven/kafka39/pom.xml`` for a 3.x version, see
    :func:`pom_for`) into a fresh directory with ``-Dmaven.repo.local=<cache>/m2`` and swaps it
    in (:func:`jvm_process.resolve_with_maven`). Raises RuntimeError (with Maven's output) if
    resolution fails.
    """
    version = version or KAFKA_VERSION
    return resolve_with_maven(pom_for(version), kafka_home(version), version,
                              version_property="kafka.version", main_jar="kafka_2.13-*.jar",
                              what="Apache Kafka", timeout=timeout, logger=log)


def _write_if_changed(path: Path, text: str) -> Path:
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _java() -> str:
    return executable("WIREKAFKA_JAVA", "java", "a Java 17+ runtime is needed to run Kafka")


def tool_command(main_class: str, args: Sequence[str], *, version: str | None = None,
                 jvm_opts: Sequence[str] | None = None) -> list[str]:
    """The ``java ...`` argv that runs a Kafka tool (``main_class`` may be a short name of
    :func:`tools_for` the version)."""
    version = version or KAFKA_VERSION
    libs = ensure_jars(version)
    logging_opt = _log4j_config(version, "tools", libs.parent)
    main_class = tools_for(version).get(main_class, main_class)
    return [_java(), *(TOOL_JVM_OPTS if jvm_opts is None else jvm_opts), *_shared_classes(version, libs),
            logging_opt, "-cp", str(libs / "*"), main_class, *args]


def _shared_classes(version: str, libs: Path) -> list[str]:
    """The option that maps the tools' class archive: made once per version's jars (next to them,
    so a new resolution drops it) by a kafka-topics run whose admin client gives up on a closed
    port after a second, having loaded the client, network and protocol classes most tools use.
    A JVM that cannot use the archive (another JDK) ignores it silently."""
    archive = libs.parent / "tools.jsa"
    if not archive.is_file():
        import fcntl

        with open(libs.parent / ".tools-jsa.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not archive.is_file():
                tmp = libs.parent / f".tools.{os.getpid()}.jsa"
                config = _write_if_changed(libs.parent / "archive-run.properties",
                                           "default.api.timeout.ms=1500\nrequest.timeout.ms=1000\n")
                cmd = [_java(), *TOOL_JVM_OPTS, f"-XX:ArchiveClassesAtExit={tmp}",
                       _log4j_config(version, "tools", libs.parent), "-cp", str(libs / "*"),
                       tools_for(version)["kafka-topics"], "--bootstrap-server", "127.0.0.1:9", "--list",
                       "--command-config", str(config)]
                try:
                    subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
                except subprocess.TimeoutExpired:
                    log.warning("no shared class archive for Kafka %s's tools: the archiving run timed out", version)
                if tmp.is_file():
                    tmp.replace(archive)
    return [f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else []


def run_tool(main_class: str, args: Sequence[str], timeout: float, input: bytes | None = None,
             *, version: str | None = None, jvm_opts: Sequence[str] | None = None,
             env: Mapping[str, str] | None = None, check: bool = False,
             ) -> subprocess.CompletedProcess:
    """Run a Kafka Java CLI tool and return its CompletedProcess (stdout/stderr as bytes).

    ``main_class`` is a fully qualified class or a :func:`tools_for` key (``"kafka-topics"``).
    ``input`` is fed to stdin (stdin is /dev/null otherwise). Logging is WARN+ to stderr.
    Raises subprocess.TimeoutExpired (after killing the JVM) past ``timeout`` seconds, and
    CalledProcessError on a non-zero exit when ``check``.
    """
    cmd = tool_command(main_class, args, version=version, jvm_opts=jvm_opts)
    log.debug("running %s", " ".join(cmd))
    return subprocess.run(cmd, input=input, stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=timeout, check=check,
                          env=None if env is None else {**os.environ, **env})


# --------------------------------------------------------------------------------------------
# Broker
# --------------------------------------------------------------------------------------------

def random_cluster_id() -> str:
    """A cluster id as ``StorageTool random-uuid`` makes: 16 random bytes, base64url, no padding.

    (Kafka's Uuid.randomUuid also never returns ids whose text starts with '-'.)"""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def api_versions_probe(host: str, port: int, timeout: float = 2.0) -> bool:
    """Send a raw ApiVersions v0 request; True if a well-formed error-free response comes back."""
    correlation_id = 0x5EED
    client_id = b"realkafka-probe"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(s, 4)
            (size,) = struct.unpack(">i", head)
            if not 6 <= size <= 1 << 20:
                return False
            payload = _recv_exact(s, size)
    except OSError:
        return False
    got_cid, error_code = struct.unpack_from(">ih", payload)
    return got_cid == correlation_id and error_code == 0


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


class RealKafka(JvmProcess):
    """One real Apache Kafka node on 127.0.0.1: a combined KRaft broker+controller, or, given
    ``zookeeper_connect``, a ZooKeeper-mode broker (Kafka 3.9) that joins that cluster.

    Parameters
    ----------
    workdir:        directory for server.properties, the log4j config, broker.log and data/;
                    a fresh temp dir (removed by stop() unless ``keep_workdir``) when None.
    overrides:      extra/overriding server.properties entries (strings).
    port, controller_port: fixed ports; free ones are picked when None (no controller port in
                    ZooKeeper mode).
    version:        Kafka version; default :data:`KAFKA_VERSION`, or :data:`KAFKA_ZK_VERSION`
                    in ZooKeeper mode (which needs a 3.x version).
    zookeeper_connect: ``host:port[/chroot]``: run a ZooKeeper-mode broker (no storage format;
                    Kafka creates the chroot, writes meta.properties and makes the cluster id).
    broker_id:      ``broker.id`` in ZooKeeper mode (default 1).
    heap:           broker -Xmx (default 512m).
    start_timeout:  seconds start() waits for ApiVersions to be answered.
    die_with_parent: ask Linux to SIGKILL the JVM if the thread that started it dies
                    (PR_SET_PDEATHSIG). Only safe when start() runs on a long-lived thread
                    (the CLI's main thread); off by default.

    Attributes after start(): ``bootstrap`` ("127.0.0.1:P"), ``port``, ``controller_port``,
    ``cluster_id``, ``workdir``, ``data_dir``, ``log_path``, ``config_path``, ``proc``.
    """

    label = "Kafka"
    log_name = "broker.log"
    config_name = "server.properties"
    tmp_prefix = "realkafka-"
    bind_errors = ("Address already in use", "BindException")
    # Kafka 3.9 exits at start-up (kafka.Kafka: "fatal exception during startup") while the
    # ephemeral /brokers/ids/<id> of its killed or halted last run is still held by that run's
    # unexpired session (KafkaZkClient.registerBroker), when its new session expires before
    # start-up ends (seen once in a nemesis run, on the /feature read), and when it cannot reach
    # ZooKeeper within zookeeper.connection.timeout.ms: a supervisor starts it again
    restartable_exit_errors = ("does not match current session", "KeeperErrorCode = Session expired",
                               "ZooKeeperClientTimeoutException")
    readiness = "answer ApiVersions"
    poll_interval = 0.2
    log = log

    def __init__(self, workdir: str | os.PathLike | None = None, *,
                 overrides: Mapping[str, object] | None = None, port: int | None = None,
                 controller_port: int | None = None, version: str | None = None,
                 zookeeper_connect: str | None = None, broker_id: int = 1,
                 heap: str = "512m", start_timeout: float = 90.0, keep_workdir: bool = False,
                 die_with_parent: bool = False, jvm_opts: Sequence[str] = ()) -> None:
        super().__init__(workdir, keep_workdir=keep_workdir, die_with_parent=die_with_parent)
        self.zookeeper_connect = zookeeper_connect
        self.broker_id = broker_id
        self.version = version or (KAFKA_ZK_VERSION if zookeeper_connect else KAFKA_VERSION)
        if zookeeper_connect and _major(self.version) >= 4:
            raise ValueError(f"Kafka {self.version} has no ZooKeeper mode (use 3.9.x)")
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self._fixed_port, self._fixed_controller_port = port, controller_port
        self.port = port
        self.controller_port: int | None = controller_port
        self.heap = heap
        self.jvm_opts = tuple(jvm_opts)  # more JVM options (what KAFKA_OPTS gives Kafka's scripts)
        self.start_timeout = start_timeout
        self.cluster_id: str | None = None

    # -- paths / info ----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:<port>"`` for clients."""
        return self.address

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        """A partition's directory under ``data_dir`` (``log.dirs``)."""
        return self.data_dir / f"{topic}-{partition}"

    def config(self) -> dict[str, str]:
        """The server.properties entries this node runs (or will run) with."""
        if self.zookeeper_connect:
            cfg = {
                "broker.id": str(self.broker_id),
                "zookeeper.connect": self.zookeeper_connect,
                "listeners": f"PLAINTEXT://{self.host}:{self.port}",
                "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
                "log.dirs": str(self.data_dir),
                **DEFAULT_ZK_BROKER_CONFIG,
            }
            cfg.update(self.overrides)
            return cfg
        cfg = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:"
                         f"{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **DEFAULT_BROKER_CONFIG,
        }
        cfg.update(self.overrides)
        return cfg

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "RealKafka":
        """Resolve jars, format storage (KRaft), start the JVM, wait until ApiVersions answers.

        Retries (up to 3 times) with new ports if the picked ones were taken meanwhile.
        Raises RuntimeError with the broker log's tail if it exits or times out; the JVM is
        then killed and a temp work dir removed (keep_workdir=True keeps it for inspection).
        Calling start() again after stop() on a kept/explicit work dir restarts the node on
        the same ports and data without re-formatting.
        """
        if self.alive():
            return self
        libs = ensure_jars(self.version)
        self._prepare_workdir()
        # A restart on an already formatted data dir keeps its ports (the controller endpoint
        # is recorded in the KRaft bootstrap checkpoint; in ZooKeeper mode the other brokers
        # know the advertised one) and its data. A ZooKeeper-mode broker writes meta.properties
        # itself on its first start.
        restart = (self.data_dir / "meta.properties").is_file() and self.port is not None
        attempts = 1 if restart or self._fixed_port or self._fixed_controller_port else 3
        self._start_attempts(attempts, lambda: self._start_once(libs, restart))
        return self

    def _start_once(self, libs: Path, restart: bool) -> None:
        wd = self._wd
        t0 = time.monotonic()
        logging_opt = _log4j_config(self.version, "broker", wd)
        if not restart:
            if self.zookeeper_connect:
                self.port = self._fixed_port or free_ports(1, self.host)[0]
            else:
                ports = free_ports(2, self.host)
                self.port = self._fixed_port or ports[0]
                self.controller_port = self._fixed_controller_port or ports[1]
            shutil.rmtree(self.data_dir, ignore_errors=True)
            # exist_ok: a data dir that is a mount point (the nemesis's tmpfs, faults/disks.py)
            # is emptied but stays
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if self.zookeeper_connect:
                self._write_config()
            else:
                self._format()
        log.debug("storage ready in %.1fs", time.monotonic() - t0)

        proc = self._launch([_java(), f"-Xmx{self.heap}", *BROKER_JVM_OPTS, *self._fast_start_opts(libs),
                             *self.jvm_opts, logging_opt,
                             f"-Dkafka.logs.dir={wd / 'logs'}",
                             "-cp", str(libs / "*"), "kafka.Kafka", str(self.config_path)])
        log.info("started Kafka %s pid %d on %s (%s), log %s", self.version, proc.pid,
                 self.bootstrap, f"broker.id {self.broker_id}, ZooKeeper {self.zookeeper_connect}"
                 if self.zookeeper_connect else f"controller :{self.controller_port}",
                 self.log_path)
        self._wait_ready(self.start_timeout)
        if self.cluster_id is None:  # ZooKeeper mode: Kafka made it (/cluster/id)
            self.cluster_id = self._meta_properties().get("cluster.id")
        log.info("Kafka ready on %s after %.1fs (incl. storage format)", self.bootstrap,
                 time.monotonic() - t0)

    def _ready(self) -> bool:
        assert self.port is not None
        return api_versions_probe(self.host, self.port, timeout=2.0)

    def _meta_properties(self) -> dict[str, str]:
        try:
            lines = (self.data_dir / "meta.properties").read_text().splitlines()
        except OSError:
            return {}
        return dict(line.split("=", 1) for line in lines
                    if "=" in line and not line.startswith("#"))

    def _write_config(self) -> None:
        self.config_path.write_text(
            "# Written by scripts/realkafka.py\n"
            + "".join(f"{k}={v}\n" for k, v in self.config().items()))

    def _format(self) -> None:
        """Write server.properties and run ``kafka-storage format --standalone``."""
        self._write_config()
        self.cluster_id = random_cluster_id()
        fmt = run_tool("kafka.tools.StorageTool",
                       ["format", "--standalone", "-t", self.cluster_id, "-c", str(self.config_path)],
                       timeout=120, version=self.version)
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed (exit {fmt.returncode}):\n"
                               f"{fmt.stdout.decode(errors='replace')}"
                               f"{fmt.stderr.decode(errors='replace')}")

    def _fast_start_opts(self, libs: Path) -> list[str]:
        """FAST_START_ENV's JVM options: map the broker class archive, or, while there is none,
        have this JVM write one when it exits (stop() puts it in place)."""
        self._archiving = None
        if os.environ.get(FAST_START_ENV) != "1":
            return []
        archive = libs.parent / "broker.jsa"
        if archive.is_file():
            return [f"-XX:SharedArchiveFile={archive}"]
        self._archiving = (libs.parent / f".broker.{os.getpid()}.{id(self)}.jsa", archive)
        return [f"-XX:ArchiveClassesAtExit={self._archiving[0]}"]

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (controlled shutdown), wait ``timeout`` s, then SIGKILL. Returns the exit code.

        Removes the work directory if it was a temp dir made by start() (unless keep_workdir)."""
        code = super().stop(timeout)
        archiving = getattr(self, "_archiving", None)
        if archiving is not None and archiving[0].is_file():
            archiving[0].replace(archiving[1])  # atomic: a concurrent broker maps the old or none
        return code

    def run_tool(self, main_class: str, args: Sequence[str], timeout: float,
                 input: bytes | None = None, **kw) -> subprocess.CompletedProcess:
        """:func:`run_tool` with this broker's Kafka version."""
        return run_tool(main_class, args, timeout, input, version=self.version, **kw)

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        mode = f" broker.id={self.broker_id} zk" if self.zookeeper_connect else ""
        return f"<RealKafka {self.version}{mode} {state} {self.port and self.bootstrap}>"


def start_zk_cluster(zookeeper_connect: str, broker_ids: Sequence[int] = (1, 2, 3), *,
                     workdir: str | os.PathLike, overrides: Mapping[str, object] | None = None,
                     broker_overrides: Mapping[int, Mapping[str, object]] | None = None,
                     ports: Mapping[int, int] | None = None, version: str | None = None, heap: str = "256m",
                     start_timeout: float = 90.0, jvm_opts: Sequence[str] = (),
                     broker_env: Mapping[int, Mapping[str, str]] | None = None) -> list[RealKafka]:
    """Start ZooKeeper-mode brokers ``broker_ids`` on one ZooKeeper, all at once, and return
    them once every one answers ApiVersions (each has joined ``/brokers/ids`` by then).
    ``overrides`` apply to every broker, ``broker_overrides[id]`` to one (its ``broker.rack``);
    ``ports[id]``, when given, is that broker's client port (its listeners may name more);
    ``jvm_opts`` go to every JVM (what KAFKA_OPTS gives Kafka's scripts); ``broker_env[id]`` is
    added to one broker's environment (at every start).

    Each broker gets ``workdir/broker-<id>``. The JVMs start in parallel threads: most of a
    start is JVM and Scala class loading, which overlaps well even on 2 cores. If any fails, the
    ones that came up are stopped and the first error is raised. Stop them with
    :func:`stop_all` before the ZooKeeper server (a broker without its ZooKeeper retries for
    ``zookeeper.session.timeout.ms`` before giving up)."""
    root = Path(workdir)
    brokers = [RealKafka(root / f"broker-{i}", zookeeper_connect=zookeeper_connect, broker_id=i,
                         overrides={**(overrides or {}), **(broker_overrides or {}).get(i, {})},
                         port=(ports or {}).get(i), version=version, heap=heap,
                         start_timeout=start_timeout, jvm_opts=jvm_opts) for i in broker_ids]
    for b in brokers:
        b.env.update((broker_env or {}).get(b.broker_id, {}))
    with concurrent.futures.ThreadPoolExecutor(len(brokers)) as pool:
        futures = [pool.submit(b.start) for b in brokers]
        errors = [f.exception() for f in futures]
    failed = [e for e in errors if e is not None]
    if failed:
        stop_all(brokers)
        raise failed[0]
    return brokers


def stop_all(nodes: Sequence[RealKafka], timeout: float = 30.0) -> list[int | None]:
    """stop() ``nodes`` in parallel (SIGTERM, so each does its controlled shutdown); returns the
    exit codes in order."""
    if not nodes:
        return []
    with concurrent.futures.ThreadPoolExecutor(len(nodes)) as pool:
        return list(pool.map(lambda n: n.stop(timeout), nodes))


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def _serve(ns: argparse.Namespace) -> int:
    kafka = RealKafka(ns.workdir, overrides=parse_settings(ns.set), port=ns.port,
                      controller_port=ns.controller_port, version=ns.version,
                      zookeeper_connect=ns.zookeeper, broker_id=ns.broker_id, heap=ns.heap,
                      start_timeout=ns.timeout, keep_workdir=ns.keep, die_with_parent=True)
    return serve(kafka, kafka.start)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python3 scripts/realkafka.py`` (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=os.environ.get("REALKAFKA_LOG_LEVEL", "INFO"),
                        format="realkafka: %(message)s", stream=sys.stderr)
    if argv and argv[0] == "tool":
        # Hand-parsed: everything after the name goes to the tool untouched.
        version = None
        if len(argv) >= 3 and argv[1] == "--version":
            version, argv = argv[2], argv[:1] + argv[3:]
        if len(argv) < 2:
            print("usage: realkafka.py tool [--version V] NAME|MAIN_CLASS [ARGS...]\n"
                  "(names: realkafka.py tools [--version V])", file=sys.stderr)
            return 2
        name = argv[1]
        tools = tools_for(version)
        if name not in tools and "." not in name:
            print(f"unknown tool {name!r}; known: {', '.join(sorted(tools))}", file=sys.stderr)
            return 2
        cmd = tool_command(name, argv[2:], version=version)
        return subprocess.call(cmd)

    parser = argparse.ArgumentParser(prog="realkafka.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ensure", help="resolve the Kafka jars (cached), print the libs directory")
    p.add_argument("--version", help=f"Kafka version (default {KAFKA_VERSION})")
    p = sub.add_parser("tools", help="list the tool short names and main classes")
    p.add_argument("--version", help=f"Kafka version (default {KAFKA_VERSION})")
    sub.add_parser("tool", help="run a tool: tool NAME|MAIN_CLASS [ARGS...]")
    p = sub.add_parser("serve", help="run a broker, print its bootstrap, stop on Ctrl-C/SIGTERM")
    p.add_argument("--version", help=f"Kafka version (default {KAFKA_VERSION}; "
                                     f"{KAFKA_ZK_VERSION} with --zookeeper)")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                   help="run a ZooKeeper-mode broker (Kafka 3.x) on this zookeeper.connect")
    p.add_argument("--broker-id", type=int, default=1, help="broker.id with --zookeeper")
    p.add_argument("--port", type=int, help="PLAINTEXT port (default: a free one)")
    p.add_argument("--controller-port", type=int, help="CONTROLLER port (default: a free one)")
    p.add_argument("--workdir", help="work directory (default: a temp dir, removed on exit)")
    p.add_argument("--keep", action="store_true", help="keep the temp work directory on exit")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a server.properties entry (repeatable)")
    p.add_argument("--heap", default="512m", help="broker -Xmx (default 512m)")
    p.add_argument("--timeout", type=float, default=90.0, help="start-up timeout in seconds")
    ns = parser.parse_args(argv)
    if ns.command == "ensure":
        print(ensure_jars(ns.version))
        return 0
    if ns.command == "tools":
        tools = tools_for(ns.version)
        width = max(map(len, tools))
        for name, cls in tools.items():
            print(f"{name:<{width}}  {cls}")
        return 0
    if ns.command == "serve":
        return _serve(ns)
    parser.error(f"unknown command {ns.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
