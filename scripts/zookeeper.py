#!/usr/bin/env python3
"""Run a real Apache ZooKeeper server on 127.0.0.1 for wirekafka's cluster mode and its tests.

wirekafka's cluster mode keeps Kafka 3.9's ZooKeeper layout (``/brokers/ids``, ``/controller``,
...), and the reference Kafka 3.9 cluster (``scripts/realkafka.py``, ZooKeeper mode) needs one
too. This starts a standalone ZooKeeper (``ZooKeeperServerMain``) in a work directory, on a free
loopback port, and stops it again. Python stdlib only; nothing here is part of the broker.

Jars: Maven Central first, Debian's package as the fallback
-----------------------------------------------------------
The primary classpath is ``org.apache.zookeeper:zookeeper`` :data:`ZOOKEEPER_VERSION` (3.8.4)
resolved with Maven from ``scripts/maven/zookeeper/pom.xml`` into::

    ${WIREKAFKA_CACHE:-~/.cache/wirekafka}/zookeeper-<version>/libs/*.jar   (~6 MB)
    ${WIREKAFKA_CACHE:-~/.cache/wirekafka}/m2/                              (Maven's local repo)

by the same code as ``realkafka.py`` resolves Kafka with (``jvm_process.resolve_with_maven``: a
marker with the POM's hash makes the second call instant; a ``flock`` serialises concurrent
callers). Why Maven first:

* it is the very server Kafka 3.9.x ships and was tested with (``kafka_2.13`` 3.9.1 depends on
  zookeeper 3.8.4), pinned to the patch release, on any distribution; Debian 12 has 3.8.0 with
  Debian's patches, and another Debian release would silently bring another version;
* Kafka 3.9's resolution (``scripts/maven/kafka39/pom.xml``) pulls the same zookeeper, jute,
  netty, snappy and metrics artifacts into the same ``m2`` repository, so the bytes are
  downloaded once for both; a ZooKeeper alone stays a 6 MB download rather than Kafka's 56 MB.

The fallback is Debian's ``zookeeper`` package (``scripts/install_system_deps.sh`` installs it):
``/usr/share/java/zookeeper.jar``, whose manifest ``Class-Path`` names its dependencies in
``/usr/share/java`` (zookeeper-jute, netty, snappy, dropwizard metrics, jackson, jetty,
commons-cli/io, slf4j-api), plus ``slf4j-simple.jar`` (package libslf4j-java, a dependency) as
the logging backend. It is used when ``mvn`` is missing or resolution fails (no network), or when
asked for with ``source="debian"`` / ``WIREKAFKA_ZOOKEEPER_SOURCE=debian``.

Server
------
::

    with ZooKeeperServer() as zk:            # or ZooKeeperServer(workdir, port).start(timeout=30)
        zk.connect_string                    # "127.0.0.1:<port>" for kazoo / zookeeper.connect
        zk.log_path                          # the server's stdout/stderr (INFO)
        zk.four_letter("mntr")               # srvr, ruok, stat and mntr are enabled

start() writes ``zoo.cfg`` (:meth:`ZooKeeperServer.config`: dataDir in the work dir, the port on
127.0.0.1 only, no AdminServer, tickTime 500 ms, session timeouts 1-60 s, ``forceSync=no``, no
per-address connection limit), runs ``java -Xmx128m -cp <jars>
org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`` and returns once the JVM owns the
listening socket (checked in /proc, so another server on a reused port is never taken for ours)
and ``srvr`` reports it serving (``ruok`` alone answers ``imok`` even from a server whose start
failed half-way). A port picked here that turns out to be taken (the server logs "Address already
in use") is replaced by a fresh one, up to 3 times. stop() sends SIGTERM, waits, then SIGKILLs;
kill() is SIGKILL (a crash). start() after stop() on the same work dir keeps port and data.
Measured here (2 cores): start 0.7-0.8 s with warm jars, stop ~0.4 s.

Secured servers (``zookeeper.set.acl`` tests; ``testsupport/secure_zookeeper.py`` builds on this)
-------------------------------------------------------------------------------------------------
``jvm_opts`` are passed to the JVM before the main class: SASL needs the server's JAAS file
(``-Djava.security.auth.login.config=...``, a ``Server`` section) while its provider can be
named in zoo.cfg (``authProvider.sasl=...``: ZooKeeper turns unknown zoo.cfg keys into
``zookeeper.*`` system properties). ``secure=True`` adds a TLS port::

    zk = ZooKeeperServer(secure=True, settings={"ssl.keyStore.location": ..., ...})
    zk.secure_connect_string                 # "127.0.0.1:<secureClientPort>"

The secure port is picked like the client port (and kept across restarts like it); zoo.cfg
then names it ``secureClientPort`` (on 127.0.0.1) and switches to
``serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory``, the only factory that
speaks TLS (the NIO default has no secure port). The key/trust stores, ``ssl.clientAuth`` and
authentication providers are the caller's ``settings``. The plain client port stays open (Netty
serves both): the readiness check's four-letter words go there, and so can anonymous clients.
Readiness then also waits for the JVM to own the secure port's listening socket.

CLI
---
::

    python3 scripts/zookeeper.py ensure [--source auto|maven|debian]
        # resolve/find the jars (cached) and print the classpath
    python3 scripts/zookeeper.py serve [--port 2181] [--dir DIR] [--set key=value ...]
        # start a server, print its connect string on stdout, run until SIGTERM/SIGINT (then
        # stop it and exit 0). Without --dir a temp dir is used and removed on exit. The JVM is
        # SIGKILLed by the kernel if this process dies (PR_SET_PDEATHSIG).

From tests and the other scripts, import it: ``from scripts import zookeeper``.

Environment: ``WIREKAFKA_CACHE`` (cache root), ``WIREKAFKA_ZOOKEEPER_VERSION`` (Maven version),
``WIREKAFKA_ZOOKEEPER_SOURCE`` (auto, maven or debian), ``WIREKAFKA_MVN`` / ``WIREKAFKA_JAVA``
(executables), ``ZOOKEEPER_LOG_LEVEL`` (the CLI's log level, default INFO).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger("zookeeper")

REPO = Path(__file__).resolve().parent.parent
POM = REPO / "scripts" / "maven" / "zookeeper" / "pom.xml"

if not __package__:  # run as a file (`python scripts/zookeeper.py`): siblings are imported as scripts.*,
    sys.path.insert(0, str(REPO))  # from the repository root, never as top-level modules
from scripts.jvm_process import (  # noqa: E402
    JvmProcess, cache_dir, executable, parse_settings, resolve_with_maven, serve)
from scripts.port_pool import free_ports  # noqa: E402

#: ZooKeeper resolved from Maven Central: the version Kafka 3.9.x depends on.
ZOOKEEPER_VERSION = os.environ.get("WIREKAFKA_ZOOKEEPER_VERSION", "3.8.4")
#: Where Debian's ``libzookeeper-java`` puts the server jar (its manifest lists the rest).
DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
#: slf4j's simple backend from Debian's libslf4j-java (a dependency of libzookeeper-java).
DEBIAN_SLF4J_BACKEND = Path("/usr/share/java/slf4j-simple.jar")

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
#: JVM options: small heap and the serial collector (one light server on a 2-core machine).
JVM_OPTS = ["-XX:+UseSerialGC", "-Djava.awt.headless=true", "-Dzookeeper.jmx.log4j.disable=true"]
#: The four-letter words zoo.cfg enables.
FOUR_LETTER_WORDS = ("srvr", "ruok", "stat", "mntr")

_LOGBACK_XML = """\
<!-- Written by scripts/zookeeper.py: ZooKeeper logs INFO to stdout, which goes to zookeeper.log.
     (Without a configuration logback logs DEBUG.) -->
<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>[%d{ISO8601}] %level %msg \\(%logger{36}\\)%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""

#: slf4j-simple (the Debian fallback) is configured with system properties only.
_SLF4J_SIMPLE_OPTS = [
    "-Dorg.slf4j.simpleLogger.logFile=System.out",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
]


# --------------------------------------------------------------------------------------------
# Jars
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerJars:
    """What to run: where the jars came from, their ZooKeeper version and the ``-cp`` value."""

    source: str  # "maven" or "debian"
    version: str
    classpath: str

    def logging_opts(self, workdir: Path) -> list[str]:
        """JVM options that make this classpath's logging backend log INFO to stdout."""
        if self.source == "maven":
            conf = workdir / "logback.xml"
            conf.write_text(_LOGBACK_XML)
            return [f"-Dlogback.configurationFile={conf}"]
        return list(_SLF4J_SIMPLE_OPTS)


def _java() -> str:
    return executable("WIREKAFKA_JAVA", "java", "a Java 11+ runtime is needed to run ZooKeeper")


def ensure_maven_jars(version: str | None = None, *, timeout: float = 900.0) -> Path:
    """Resolve ZooKeeper's server jars with Maven (once) and return the libs directory.

    Idempotent and cheap once done (a marker holding the version and the POM's hash is checked
    first); otherwise resolves into a fresh directory that then replaces the old one, so stale
    jars never mix (:func:`jvm_process.resolve_with_maven`). Raises RuntimeError (with Maven's
    output) if ``mvn`` is missing or fails.
    """
    version = version or ZOOKEEPER_VERSION
    return resolve_with_maven(POM, cache_dir() / f"zookeeper-{version}", version,
                              version_property="zookeeper.version",
                              main_jar=f"zookeeper-{version}.jar", what="Apache ZooKeeper",
                              timeout=timeout, logger=log)


def debian_jars() -> ServerJars | None:
    """Debian's ZooKeeper server (package ``zookeeper``/``libzookeeper-java``), or None.

    The jar's manifest ``Class-Path`` brings its dependencies; only a logging backend is added.
    The version is read from the versioned jar beside it (``zookeeper-3.8.0.jar``)."""
    if not DEBIAN_JAR.is_file():
        return None
    entries = [str(DEBIAN_JAR)]
    if DEBIAN_SLF4J_BACKEND.is_file():
        entries.append(str(DEBIAN_SLF4J_BACKEND))
    else:  # the server runs, but silently (slf4j falls back to its no-op logger)
        log.warning("%s missing (package libslf4j-java): ZooKeeper will log nothing",
                    DEBIAN_SLF4J_BACKEND)
    versions = sorted(p.name[len("zookeeper-"):-len(".jar")]
                      for p in DEBIAN_JAR.parent.glob("zookeeper-[0-9]*.jar"))
    return ServerJars("debian", versions[-1] if versions else "unknown", ":".join(entries))


def server_jars(source: str | None = None) -> ServerJars:
    """The classpath to run: ``source`` is "maven", "debian" or "auto" (the default, also from
    ``$WIREKAFKA_ZOOKEEPER_SOURCE``): Maven first, Debian's package if Maven cannot deliver."""
    source = source or os.environ.get("WIREKAFKA_ZOOKEEPER_SOURCE") or "auto"
    if source not in ("auto", "maven", "debian"):
        raise ValueError(f"ZooKeeper source must be auto, maven or debian, not {source!r}")
    maven_error: Exception | None = None
    if source in ("auto", "maven"):
        try:
            libs = ensure_maven_jars()
            return ServerJars("maven", ZOOKEEPER_VERSION, str(libs / "*"))
        except RuntimeError as exc:
            if source == "maven":
                raise
            maven_error = exc
    debian = debian_jars()
    if debian is not None:
        if maven_error is not None:
            log.warning("ZooKeeper from Maven unavailable (%s); using Debian's %s",
                        str(maven_error).splitlines()[0], DEBIAN_JAR)
        return debian
    raise RuntimeError(f"no ZooKeeper server jars: {DEBIAN_JAR} is missing (Debian package "
                       f"zookeeper; scripts/install_system_deps.sh)"
                       + (f" and Maven failed: {maven_error}" if maven_error else ""))


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------

def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (someone else may take it before we bind it)."""
    return free_ports(1, host)[0]


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command and return the whole answer ("" on any error)."""
    chunks = []
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode(errors="replace")


def _owns_listener(pid: int, port: int) -> bool:
    """True if process ``pid`` holds a TCP socket listening on ``port`` (read from /proc).

    This is what tells our server from another one that took the port meanwhile: both would
    answer four-letter words, but only ours holds the listening socket's inode."""
    listening: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st ... inode (10th); st 0A is LISTEN
            if len(fields) > 9 and fields[3] == "0A" and fields[1].endswith(f":{port:04X}"):
                listening.add(fields[9])
    if not listening:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:[") and target[8:-1] in listening:
                return True
    return False


class ZooKeeperServer(JvmProcess):
    """One standalone Apache ZooKeeper server on 127.0.0.1.

    Parameters
    ----------
    workdir:    directory for zoo.cfg, the logging config, zookeeper.log and data/; a fresh temp
                dir (removed by stop() unless ``keep_workdir``) when None.
    port:       fixed client port; a free one is picked (and replaced if taken) when None.
    source:     "auto" (default), "maven" or "debian": see :func:`server_jars`.
    heap:       -Xmx (default 128m).
    settings:   extra/overriding zoo.cfg entries (e.g. ``{"forceSync": "yes"}``).
    secure:     also listen for TLS clients on a ``secureClientPort`` with the Netty connection
                factory (the stores and ``ssl.*`` entries come in ``settings``).
    secure_port: fixed secure port; a free one is picked (and replaced if taken) when None.
    jvm_opts:   more JVM options (a JAAS file for SASL, system properties).
    die_with_parent: ask Linux to SIGKILL the JVM if the thread that started it dies
                (PR_SET_PDEATHSIG). None (default) does so when start() runs on the main thread,
                the one thread that lives as long as the process; a worker thread would take the
                server down with it when it ends.
    """

    label = "ZooKeeper"
    log_name = "zookeeper.log"
    config_name = "zoo.cfg"
    tmp_prefix = "zookeeper-"
    readiness = "serve"
    log = log

    def __init__(self, workdir: str | os.PathLike | None = None, port: int | None = None, *,
                 source: str | None = None, heap: str = "128m",
                 settings: Mapping[str, object] | None = None, keep_workdir: bool = False,
                 die_with_parent: bool | None = None, secure: bool = False,
                 secure_port: int | None = None, jvm_opts: Sequence[str] = ()) -> None:
        super().__init__(workdir, keep_workdir=keep_workdir, die_with_parent=die_with_parent)
        self._fixed_port = port
        self.port = port
        self.secure = secure or secure_port is not None
        self._fixed_secure_port = secure_port
        self.secure_port = secure_port
        self.jvm_opts = tuple(jvm_opts)
        self.source = source
        self.heap = heap
        self.settings = {k: str(v) for k, v in (settings or {}).items()}
        self.jars: ServerJars | None = None
        self._served = False  # once served, restarts keep the port: clients know it

    # -- paths / info ----------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:<port>"``: kazoo's ``hosts``, Kafka's ``zookeeper.connect``."""
        return self.address

    @property
    def secure_connect_string(self) -> str:
        """``"127.0.0.1:<secureClientPort>"``: where TLS clients connect (``secure=True``)."""
        if not self.secure:
            raise RuntimeError("ZooKeeperServer has no secure port (secure=False)")
        if self.secure_port is None:
            raise RuntimeError("ZooKeeperServer not started")
        return f"{self.host}:{self.secure_port}"

    def four_letter(self, word: str, timeout: float = 2.0) -> str:
        """The server's answer to a four-letter word (srvr, ruok, stat, mntr); "" on error."""
        if self.port is None:
            raise RuntimeError("ZooKeeperServer not started")
        return four_letter_word(self.host, self.port, word, timeout)

    def config(self) -> dict[str, str]:
        """The zoo.cfg entries this server runs (or will run) with.

        tickTime 500 ms makes ZooKeeper's default session bounds 1-10 s; they are set explicitly
        to 1-60 s so a client gets the timeout it asks for (Kafka's 18 s default included) and
        a test can still ask for 1 s. forceSync=no: no fsync per transaction (a crashed *process*
        loses nothing, only a crashed machine would). maxClientCnxns=0: every client comes from
        127.0.0.1, and a cluster test easily exceeds the default 60 connections per address."""
        cfg = {
            "tickTime": "500",
            "initLimit": "10",
            "syncLimit": "5",
            "dataDir": str(self.data_dir),
            "clientPort": str(self.port),
            "clientPortAddress": self.host,
            "minSessionTimeout": "1000",
            "maxSessionTimeout": "60000",
            "maxClientCnxns": "0",
            "admin.enableServer": "false",
            "4lw.commands.whitelist": ",".join(FOUR_LETTER_WORDS),
            "forceSync": "no",
        }
        if self.secure:
            cfg.update({"secureClientPort": str(self.secure_port),
                        "secureClientPortAddress": self.host,
                        "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory"})
        cfg.update(self.settings)
        return cfg

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> "ZooKeeperServer":
        """Start the server and wait (``timeout`` s per attempt) until it serves on its port.

        On a first start, ports picked here (the client port, and the secure one if any) move to
        new free ones if one was taken meanwhile (3 attempts); a fixed port (either), or a restart
        after stop()/kill() (which keeps its ports and data: clients know them), gets one attempt.
        Raises RuntimeError with the log's tail on failure; the JVM is then killed and a temp work
        dir removed (keep_workdir=True keeps it for inspection)."""
        if self.alive():
            return self
        self.jars = server_jars(self.source)
        self._prepare_workdir()
        fixed = self._fixed_port is not None or self._fixed_secure_port is not None
        self._start_attempts(1 if fixed or self._served else 3,
                             lambda: self._start_once(timeout, keep_ports=self._served))
        self._served = True
        return self

    def _start_once(self, timeout: float, keep_ports: bool) -> None:
        assert self.jars is not None
        if not keep_ports:
            if self._fixed_port is None:
                self.port = free_port(self.host)
            if self.secure and self._fixed_secure_port is None:
                self.secure_port = free_port(self.host)
        t0 = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("# Written by scripts/zookeeper.py\n"
                                    + "".join(f"{k}={v}\n" for k, v in self.config().items()))
        proc = self._launch([_java(), f"-Xmx{self.heap}", *JVM_OPTS, *self.jvm_opts,
                             *self.jars.logging_opts(self._wd), "-cp", self.jars.classpath,
                             MAIN_CLASS, str(self.config_path)])
        log.info("started ZooKeeper %s (%s) pid %d on %s%s, log %s", self.jars.version,
                 self.jars.source, proc.pid, self.connect_string,
                 f" (TLS on {self.secure_port})" if self.secure else "", self.log_path)
        self._wait_ready(timeout)
        log.info("ZooKeeper ready on %s after %.1fs", self.connect_string, time.monotonic() - t0)

    def _ready(self) -> bool:
        # Our JVM holds the listening socket (not another server that took the port meanwhile),
        # and serves: `ruok` says imok as soon as the port is bound, even if loading the database
        # then failed; `srvr` says "This ZooKeeper instance is not currently serving requests"
        # until the server really runs, and its statistics from then on.
        # A secure port is bound by its own factory, after the plain one: wait for it too.
        assert self.proc is not None and self.port is not None
        return (_owns_listener(self.proc.pid, self.port)
                and (not self.secure or _owns_listener(self.proc.pid, self.secure_port))
                and "Zookeeper version:" in self.four_letter("srvr"))

    def _broken(self) -> bool:
        # ZooKeeperServerMain's thread died (e.g. a missing class) while the port's threads keep
        # the JVM up, answering but never serving: fail now, not at the timeout.
        return "Thread[main," in self._log_since_start()

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        return f"<ZooKeeperServer {state} {self.port and self.connect_string}>"


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def _serve(ns: argparse.Namespace) -> int:
    server = ZooKeeperServer(ns.dir, ns.port, source=ns.source, heap=ns.heap,
                             settings=parse_settings(ns.set), die_with_parent=True)
    return serve(server, lambda: server.start(timeout=ns.timeout))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python3 scripts/zookeeper.py`` (see the module docstring)."""
    logging.basicConfig(level=os.environ.get("ZOOKEEPER_LOG_LEVEL", "INFO"),
                        format="zookeeper: %(message)s", stream=sys.stderr)
    parser = argparse.ArgumentParser(prog="zookeeper.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ensure", help="resolve/find the server jars (cached), print the classpath")
    p.add_argument("--source", choices=("auto", "maven", "debian"), help="default: auto")
    p = sub.add_parser("serve", help="run a server, print its connect string, stop on SIGTERM")
    p.add_argument("--port", type=int, help="client port (default: a free one)")
    p.add_argument("--dir", help="work directory (default: a temp dir, removed on exit)")
    p.add_argument("--source", choices=("auto", "maven", "debian"), help="default: auto")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a zoo.cfg entry (repeatable)")
    p.add_argument("--heap", default="128m", help="-Xmx (default 128m)")
    p.add_argument("--timeout", type=float, default=30.0, help="start-up timeout in seconds")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if ns.command == "ensure":
        jars = server_jars(ns.source)
        log.info("ZooKeeper %s from %s", jars.version, jars.source)
        print(jars.classpath)
        return 0
    return _serve(ns)  # the other command: argparse accepts no third


if __name__ == "__main__":
    sys.exit(main())
