#!/usr/bin/env python3
"""Run a real Apache Kafka broker and Kafka's Java CLI tools on this machine (Python stdlib only).

This is wirekafka's *reference broker*: conformance tests and benchmarks run the same scenario
against wirekafka and against genuine Apache Kafka started from Maven Central jars. Nothing here
is part of the broker itself.

Jars
----
:func:`ensure_jars` resolves ``scripts/maven/kafka/pom.xml`` (``kafka_2.13`` + ``kafka-tools`` +
log4j2 with its slf4j-1.x binding) with Maven into::

    ${WIREKAFKA_CACHE:-~/.cache/wirekafka}/kafka-<version>/libs/*.jar   (the classpath)
    ${WIREKAFKA_CACHE:-~/.cache/wirekafka}/m2/                          (Maven's local repository)

A marker file (``kafka-<version>/.complete``, holding a hash of the POM and the version) makes a
second call return at once; editing the POM triggers a fresh resolution into a new directory
that then replaces the old one, so stale jars never mix. Concurrent callers serialise on a
``flock``. Needs ``mvn`` and ``java`` (17+) on PATH; ``scripts/install_system_deps.sh`` installs
them from Debian if missing. The Kafka version is :data:`KAFKA_VERSION` (4.3.1, the newest 4.x on
Maven Central when this was written); ``$WIREKAFKA_KAFKA_VERSION`` overrides it, but the tool
class names below were checked against 4.3.1 only.

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
(the JVM's code for SIGTERM after its shutdown hooks ran). Measured here (2 cores): start-up
including storage format ~3.5 s, stop ~0.5 s. The defaults in :data:`DEFAULT_BROKER_CONFIG` make
a one-node cluster usable (replication factors 1, no initial rebalance delay) and its log cleaner
quick to pick up dirty compacted logs (log.cleaner.backoff.ms 1 s); anything else is
Kafka's own default (e.g. 50 __consumer_offsets partitions), so behaviour matches a stock broker.

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

CLI
---
::

    python3 scripts/realkafka.py ensure                 # resolve jars, print the libs directory
    python3 scripts/realkafka.py serve [--port P] [--controller-port C] [--workdir DIR] [--keep]
                                       [--set key=value ...] [--heap 512m] [--timeout 90]
        # start a broker, print its bootstrap ("127.0.0.1:P") on stdout, run until Ctrl-C/SIGTERM
        # (then stop it and exit 0); progress goes to stderr. The JVM is SIGKILLed by the kernel
        # if this process dies (PR_SET_PDEATHSIG).
    python3 scripts/realkafka.py tool NAME [ARGS...]    # e.g. tool kafka-topics --bootstrap-server
                                                        #      127.0.0.1:9092 --list
        # NAME is a TOOLS key or a fully qualified main class; stdin/stdout/stderr are passed
        # through and the tool's exit code is returned
    python3 scripts/realkafka.py tools                  # list TOOLS

From tests, load this file with importlib (``scripts/`` is not a package)::

    spec = importlib.util.spec_from_file_location("realkafka", REPO / "scripts" / "realkafka.py")
    realkafka = importlib.util.module_from_spec(spec); spec.loader.exec_module(realkafka)

Environment: ``WIREKAFKA_CACHE`` (cache root), ``WIREKAFKA_KAFKA_VERSION`` (Kafka version),
``WIREKAFKA_MVN`` / ``WIREKAFKA_JAVA`` (executables, default ``mvn`` / ``java`` from PATH),
``REALKAFKA_LOG_LEVEL`` (the CLI's log level, default INFO).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Iterator, Mapping, Sequence

log = logging.getLogger("realkafka")

REPO = Path(__file__).resolve().parent.parent
POM = REPO / "scripts" / "maven" / "kafka" / "pom.xml"

#: Apache Kafka version resolved from Maven Central (newest 4.x there when written).
KAFKA_VERSION = os.environ.get("WIREKAFKA_KAFKA_VERSION", "4.3.1")

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

#: JVM options for the broker (the machine has 2 cores; keep it small).
BROKER_JVM_OPTS = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
#: JVM options for CLI tools (kafka-run-class.sh uses -Xmx256M by default).
TOOL_JVM_OPTS = ["-Xmx256m", "-Djava.awt.headless=true"]

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


# --------------------------------------------------------------------------------------------
# Jars
# --------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Cache root: ``$WIREKAFKA_CACHE`` or ``~/.cache/wirekafka``."""
    env = os.environ.get("WIREKAFKA_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "wirekafka"


def kafka_home(version: str | None = None) -> Path:
    """``<cache>/kafka-<version>``: holds ``libs/``, the marker and the tools' log4j2 config."""
    return cache_dir() / f"kafka-{version or KAFKA_VERSION}"


def _stamp(version: str) -> str:
    """Marker content: changes when the POM or the version changes."""
    return f"{version} {hashlib.sha256(POM.read_bytes()).hexdigest()}"


def _executable(env_var: str, name: str, hint: str) -> str:
    path = os.environ.get(env_var) or shutil.which(name)
    if not path:
        raise RuntimeError(f"{name!r} not found on PATH ({hint}; scripts/install_system_deps.sh "
                           f"installs it)")
    return path


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_jars(version: str | None = None, *, timeout: float = 1800.0) -> Path:
    """Resolve the Kafka jars with Maven (once) and return the directory to put on the classpath.

    Idempotent and cheap once done: a marker file holding the version and the POM's hash is
    checked first. Otherwise runs ``mvn -q -B -f scripts/maven/kafka/pom.xml
    dependency:copy-dependencies`` into a fresh directory with ``-Dmaven.repo.local=<cache>/m2``
    and swaps it in. Raises RuntimeError (with Maven's output) if resolution fails.
    """
    version = version or KAFKA_VERSION
    home = kafka_home(version)
    libs = home / "libs"
    marker = home / ".complete"
    stamp = _stamp(version)

    def done() -> bool:
        return (marker.is_file() and marker.read_text().strip() == stamp
                and any(libs.glob("kafka_2.13-*.jar")))

    if done():
        log.debug("Kafka %s jars already in %s", version, libs)
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with _flock(home / ".lock"):
        if done():  # another process finished while we waited for the lock
            return libs
        mvn = _executable("WIREKAFKA_MVN", "mvn", "Apache Maven 3.8+ is needed to fetch Kafka")
        tmp = home / f"libs.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
               f"-DoutputDirectory={tmp}", f"-Dmaven.repo.local={cache_dir() / 'm2'}",
               f"-Dkafka.version={version}", "-DincludeScope=runtime"]
        log.info("resolving Apache Kafka %s jars from Maven Central into %s ...", version, libs)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"mvn did not finish in {timeout:.0f}s: {' '.join(cmd)}") from exc
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0 or not any(tmp.glob("kafka_2.13-*.jar")):
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"resolving Kafka {version} failed (exit {proc.returncode}):\n"
                               f"$ {' '.join(cmd)}\n{out[-6000:]}")
        marker.unlink(missing_ok=True)
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
        marker.write_text(stamp + "\n")
        log.info("resolved %d jars in %.1fs", len(list(libs.glob("*.jar"))),
                 time.monotonic() - t0)
    return libs


def _write_if_changed(path: Path, text: str) -> Path:
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _java() -> str:
    return _executable("WIREKAFKA_JAVA", "java", "a Java 17+ runtime is needed to run Kafka")


def tool_command(main_class: str, args: Sequence[str], *, version: str | None = None,
                 jvm_opts: Sequence[str] | None = None) -> list[str]:
    """The ``java ...`` argv that runs a Kafka tool (``main_class`` may be a TOOLS short name)."""
    libs = ensure_jars(version)
    conf = _write_if_changed(libs.parent / "log4j2-tools.properties", _TOOLS_LOG4J2)
    main_class = TOOLS.get(main_class, main_class)
    return [_java(), *(TOOL_JVM_OPTS if jvm_opts is None else jvm_opts),
            f"-Dlog4j2.configurationFile={conf}", "-cp", str(libs / "*"), main_class, *args]


def run_tool(main_class: str, args: Sequence[str], timeout: float, input: bytes | None = None,
             *, version: str | None = None, jvm_opts: Sequence[str] | None = None,
             env: Mapping[str, str] | None = None, check: bool = False,
             ) -> subprocess.CompletedProcess:
    """Run a Kafka Java CLI tool and return its CompletedProcess (stdout/stderr as bytes).

    ``main_class`` is a fully qualified class or a :data:`TOOLS` key (``"kafka-topics"``).
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


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free TCP ports on ``host`` (all bound at once so they differ)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


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


_live: "weakref.WeakSet[RealKafka]" = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for kafka in list(_live):
        with contextlib.suppress(Exception):
            kafka.stop()


class RealKafka:
    """One real Apache Kafka node (combined KRaft broker+controller) on 127.0.0.1.

    Parameters
    ----------
    workdir:        directory for server.properties, log4j2.properties, broker.log and data/;
                    a fresh temp dir (removed by stop() unless ``keep_workdir``) when None.
    overrides:      extra/overriding server.properties entries (strings).
    port, controller_port: fixed ports; free ones are picked when None.
    heap:           broker -Xmx (default 512m).
    start_timeout:  seconds start() waits for ApiVersions to be answered.
    die_with_parent: ask Linux to SIGKILL the JVM if the thread that started it dies
                    (PR_SET_PDEATHSIG). Only safe when start() runs on a long-lived thread
                    (the CLI's main thread); off by default.

    Attributes after start(): ``bootstrap`` ("127.0.0.1:P"), ``port``, ``controller_port``,
    ``cluster_id``, ``workdir``, ``data_dir``, ``log_path``, ``config_path``, ``proc``.
    """

    host = "127.0.0.1"

    def __init__(self, workdir: str | os.PathLike | None = None, *,
                 overrides: Mapping[str, object] | None = None, port: int | None = None,
                 controller_port: int | None = None, version: str | None = None,
                 heap: str = "512m", start_timeout: float = 90.0, keep_workdir: bool = False,
                 die_with_parent: bool = False) -> None:
        self.version = version or KAFKA_VERSION
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self._fixed_port, self._fixed_controller_port = port, controller_port
        self.port: int | None = port
        self.controller_port: int | None = controller_port
        self.heap = heap
        self.start_timeout = start_timeout
        self.die_with_parent = die_with_parent
        self._own_workdir = workdir is None
        self.keep_workdir = keep_workdir
        self.workdir: Path | None = None if workdir is None else Path(workdir)
        self.cluster_id: str | None = None
        self.proc: subprocess.Popen | None = None
        self._log_fh = None

    # -- paths / info ----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:<port>"`` for clients."""
        if self.port is None:
            raise RuntimeError("RealKafka not started")
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        """``log.dirs``: partition directories are ``data_dir / f"{topic}-{partition}"``."""
        return self._wd / "data"

    @property
    def log_path(self) -> Path:
        return self._wd / "broker.log"

    @property
    def config_path(self) -> Path:
        return self._wd / "server.properties"

    @property
    def _wd(self) -> Path:
        if self.workdir is None:
            raise RuntimeError("RealKafka not started")
        return self.workdir

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of broker.log (empty if none yet)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except (OSError, RuntimeError):
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def config(self) -> dict[str, str]:
        """The server.properties entries this node runs (or will run) with."""
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
        """Resolve jars, format storage, start the JVM, and wait until ApiVersions is answered.

        Retries (up to 3 times) with new ports if the picked ones were taken meanwhile.
        Raises RuntimeError with the broker log's tail if it exits or times out; the JVM is
        then killed and a temp work dir removed (keep_workdir=True keeps it for inspection).
        Calling start() again after stop() on a kept/explicit work dir restarts the node on
        the same ports and data without re-formatting.
        """
        if self.alive():
            return self
        libs = ensure_jars(self.version)
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="realkafka-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        # A restart on an already formatted data dir keeps its ports (the controller endpoint
        # is recorded in the KRaft bootstrap checkpoint) and its data.
        restart = (self.data_dir / "meta.properties").is_file() and self.port is not None
        attempts = 1 if restart or self._fixed_port or self._fixed_controller_port else 3
        _live.add(self)
        try:
            for attempt in range(1, attempts + 1):
                try:
                    self._start_once(libs, restart)
                    return self
                except _PortClash:
                    log.warning("port clash on attempt %d, retrying with new ports", attempt)
                    if attempt == attempts:
                        raise RuntimeError(
                            f"broker could not bind its ports:\n{self.log_tail()}") from None
            raise AssertionError("unreachable")
        except BaseException:
            # Kill the JVM and remove a temp work dir (the error already carries the log tail).
            self.stop()
            raise

    def _start_once(self, libs: Path, restart: bool) -> None:
        wd = self._wd
        t0 = time.monotonic()
        log4j_conf = wd / "log4j2.properties"
        log4j_conf.write_text(_BROKER_LOG4J2)
        if not restart:
            ports = free_ports(2, self.host)
            self.port = self._fixed_port or ports[0]
            self.controller_port = self._fixed_controller_port or ports[1]
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir.mkdir(parents=True)
            self._format()
        log.debug("storage ready in %.1fs", time.monotonic() - t0)

        cmd = [_java(), f"-Xmx{self.heap}", *BROKER_JVM_OPTS,
               f"-Dlog4j2.configurationFile={log4j_conf}", f"-Dkafka.logs.dir={wd / 'logs'}",
               "-cp", str(libs / "*"), "kafka.Kafka", str(self.config_path)]
        self._log_fh = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log_fh,
                                     stderr=subprocess.STDOUT, cwd=wd, start_new_session=True,
                                     preexec_fn=_pdeathsig if self.die_with_parent else None)
        log.info("started Kafka %s pid %d on %s (controller :%d), log %s", self.version,
                 self.proc.pid, self.bootstrap, self.controller_port, self.log_path)
        deadline = time.monotonic() + self.start_timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                self._close_log()
                tail = self.log_tail()
                if "Address already in use" in tail or "BindException" in tail:
                    raise _PortClash()
                raise RuntimeError(f"Kafka broker exited with {code} during start-up; "
                                   f"its log ({self.log_path}) ends with:\n{tail}")
            if api_versions_probe(self.host, self.port, timeout=2.0):
                break
            if time.monotonic() > deadline:
                self._kill()
                raise RuntimeError(f"Kafka broker did not answer ApiVersions on {self.bootstrap} "
                                   f"within {self.start_timeout:g}s; its log ({self.log_path}) "
                                   f"ends with:\n{self.log_tail()}")
            time.sleep(0.2)
        log.info("Kafka ready on %s after %.1fs (incl. storage format)", self.bootstrap,
                 time.monotonic() - t0)

    def _format(self) -> None:
        """Write server.properties and run ``kafka-storage format --standalone``."""
        self.config_path.write_text(
            "# Written by scripts/realkafka.py\n"
            + "".join(f"{k}={v}\n" for k, v in self.config().items()))
        self.cluster_id = random_cluster_id()
        fmt = run_tool("kafka.tools.StorageTool",
                       ["format", "--standalone", "-t", self.cluster_id, "-c", str(self.config_path)],
                       timeout=120, version=self.version)
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed (exit {fmt.returncode}):\n"
                               f"{fmt.stdout.decode(errors='replace')}"
                               f"{fmt.stderr.decode(errors='replace')}")

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (controlled shutdown), wait ``timeout`` s, then SIGKILL. Returns the exit code.

        Removes the work directory if it was a temp dir made by start() (unless keep_workdir)."""
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    log.warning("Kafka pid %d ignored SIGTERM for %.0fs; killing", self.proc.pid,
                                timeout)
                    self._kill()
            code = self.proc.returncode
            log.info("Kafka pid %d stopped (exit %s)", self.proc.pid, code)
        self._close_log()
        _live.discard(self)
        if self._own_workdir and not self.keep_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        return code

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def run_tool(self, main_class: str, args: Sequence[str], timeout: float,
                 input: bytes | None = None, **kw) -> subprocess.CompletedProcess:
        """:func:`run_tool` with this broker's Kafka version."""
        return run_tool(main_class, args, timeout, input, version=self.version, **kw)

    def __enter__(self) -> "RealKafka":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        return f"<RealKafka {self.version} {state} {self.port and self.bootstrap}>"


class _PortClash(Exception):
    pass


def _pdeathsig() -> None:  # runs in the child between fork and exec
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def _serve(ns: argparse.Namespace) -> int:
    overrides = {}
    for item in ns.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        overrides[key] = value
    stop = threading.Event()
    got = []

    def on_signal(signum, _frame):
        got.append(signum)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    kafka = RealKafka(ns.workdir, overrides=overrides, port=ns.port,
                      controller_port=ns.controller_port, heap=ns.heap,
                      start_timeout=ns.timeout, keep_workdir=ns.keep, die_with_parent=True)
    try:
        kafka.start()
        print(kafka.bootstrap, flush=True)
        log.info("serving; workdir %s; Ctrl-C or SIGTERM to stop", kafka.workdir)
        while not stop.wait(0.5):
            if not kafka.alive():
                log.error("Kafka exited unexpectedly (%s); log ends with:\n%s",
                          kafka.proc.returncode if kafka.proc else None, kafka.log_tail())
                return 1
        log.info("got signal %s, stopping", got[0] if got else "?")
        return 0
    finally:
        kafka.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python3 scripts/realkafka.py`` (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=os.environ.get("REALKAFKA_LOG_LEVEL", "INFO"),
                        format="realkafka: %(message)s", stream=sys.stderr)
    if argv and argv[0] == "tool":
        # Hand-parsed: everything after the name goes to the tool untouched.
        if len(argv) < 2:
            print("usage: realkafka.py tool NAME|MAIN_CLASS [ARGS...]\n(names: realkafka.py tools)",
                  file=sys.stderr)
            return 2
        name = argv[1]
        if name not in TOOLS and "." not in name:
            print(f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}", file=sys.stderr)
            return 2
        cmd = tool_command(name, argv[2:])
        return subprocess.call(cmd)

    parser = argparse.ArgumentParser(prog="realkafka.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ensure", help="resolve the Kafka jars (cached) and print the libs directory")
    sub.add_parser("tools", help="list the tool short names and main classes")
    sub.add_parser("tool", help="run a tool: tool NAME|MAIN_CLASS [ARGS...]")
    p = sub.add_parser("serve", help="run a broker, print its bootstrap, stop on Ctrl-C/SIGTERM")
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
        print(ensure_jars())
        return 0
    if ns.command == "tools":
        width = max(map(len, TOOLS))
        for name, cls in TOOLS.items():
            print(f"{name:<{width}}  {cls}")
        return 0
    if ns.command == "serve":
        return _serve(ns)
    parser.error(f"unknown command {ns.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
