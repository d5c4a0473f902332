"""What ``scripts/realkafka.py`` and ``scripts/zookeeper.py`` share: running a JVM from Maven jars.

Both launchers start one Java server as a child process on 127.0.0.1, in a work directory, with
its stdout/stderr in a log file there, and resolve its jars with Maven into the same cache. The
common part lives here (Python stdlib only; nothing here is part of the broker):

* :func:`cache_dir`, :func:`executable` and :func:`resolve_with_maven`: a POM's runtime
  dependencies copied once into ``<cache>/<name>-<version>/libs`` (a marker holding the version
  and the POM's hash makes a second call instant; a ``flock`` serialises concurrent callers; a
  fresh directory replaces the old one, so stale jars never mix), with ``<cache>/m2`` as Maven's
  local repository for both;
* :func:`pdeathsig` (PR_SET_PDEATHSIG between fork and exec; ports come from ``port_pool.py``);
* :class:`JvmProcess`, the base class of ``RealKafka`` and ``ZooKeeperServer``: the work
  directory, the JVM's start (log file, new session, retries on fresh ports after a bind
  failure, waiting until the subclass says it is ready), stop() (SIGTERM, wait, SIGKILL), kill()
  (SIGKILL), ``with`` support, and an atexit hook that stops whatever is still running;
* :func:`parse_settings` and :func:`serve`, the two CLIs' ``serve`` command.

The launchers import it as ``scripts.jvm_process`` whether they run as files or are imported
(a launcher run as a file first puts the repository root on ``sys.path``), so one module serves
both.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Callable, Iterator, Sequence

log = logging.getLogger("jvm_process")


# --------------------------------------------------------------------------------------------
# Jars
# --------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Cache root: ``$WIREKAFKA_CACHE`` or ``~/.cache/wirekafka`` (shared by both launchers)."""
    env = os.environ.get("WIREKAFKA_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "wirekafka"


def executable(env_var: str, name: str, hint: str) -> str:
    """``$env_var``, else ``name`` on PATH; RuntimeError (with ``hint``) if neither."""
    path = os.environ.get(env_var) or shutil.which(name)
    if not path:
        raise RuntimeError(f"{name!r} not found on PATH ({hint}; scripts/install_system_deps.sh "
                           f"installs it)")
    return path


@contextlib.contextmanager
def flock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block."""
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def resolve_with_maven(pom: Path, home: Path, version: str, *, version_property: str,
                       main_jar: str, what: str, timeout: float,
                       logger: logging.Logger = log) -> Path:
    """Copy ``pom``'s runtime dependencies into ``home/libs`` with Maven (once); return libs.

    Runs ``mvn -q -B -f <pom> dependency:copy-dependencies -D<version_property>=<version>
    -DincludeScope=runtime`` with ``-Dmaven.repo.local=<cache>/m2`` into a fresh directory that
    then replaces ``libs``. A marker (``home/.complete``) holding the version and the POM's hash,
    together with a jar matching the glob ``main_jar`` in libs, makes later calls return at once;
    ``home/.lock`` serialises concurrent callers. A new resolution (a changed POM or version)
    removes the class archives (``home/*.jsa``) made from the jars it replaces. ``what`` names
    the software in messages ("Apache Kafka"). Raises RuntimeError (with Maven's output) if
    ``mvn`` is missing, fails, takes longer than ``timeout`` seconds or does not produce
    ``main_jar``.
    """
    libs = home / "libs"
    marker = home / ".complete"
    stamp = f"{version} {hashlib.sha256(pom.read_bytes()).hexdigest()}"

    def done() -> bool:
        return (marker.is_file() and marker.read_text().strip() == stamp
                and any(libs.glob(main_jar)))

    if done():
        logger.debug("%s %s jars already in %s", what, version, libs)
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with flock(home / ".lock"):
        if done():  # another process finished while we waited for the lock
            return libs
        mvn = executable("WIREKAFKA_MVN", "mvn", f"Apache Maven 3.8+ is needed to fetch {what}")
        tmp = home / f"libs.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
               f"-DoutputDirectory={tmp}", f"-Dmaven.repo.local={cache_dir() / 'm2'}",
               f"-D{version_property}={version}", "-DincludeScope=runtime"]
        logger.info("resolving %s %s jars from Maven Central into %s ...", what, version, libs)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"mvn did not finish in {timeout:.0f}s: {' '.join(cmd)}") from exc
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0 or not any(tmp.glob(main_jar)):
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"resolving {what} {version} failed (exit {proc.returncode}):\n"
                               f"$ {' '.join(cmd)}\n{out[-6000:]}")
        marker.unlink(missing_ok=True)
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
        # Class archives (AppCDS: realkafka's tools.jsa and broker.jsa) beside libs list the jars
        # they were made from; a JVM given one made from other jars cannot use it and says so on
        # stdout ("[warning][cds,dynamic] Unable to use shared archive"), in the middle of a
        # tool's output. Drop them: the next run makes them again from the new jars.
        for archive in home.glob("*.jsa"):
            archive.unlink(missing_ok=True)
        marker.write_text(stamp + "\n")
        logger.info("resolved %d jars in %.1fs", len(list(libs.glob("*.jar"))),
                    time.monotonic() - t0)
    return libs


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------

def pdeathsig() -> None:
    """Ask Linux to SIGKILL this process when the thread that forked it dies (PR_SET_PDEATHSIG).

    Meant as ``preexec_fn``: it runs in the child between fork and exec."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class PortClash(Exception):
    """The JVM exited because a port picked for it was taken meanwhile: try again on new ones.

    The message is the log line that says so."""


class RestartableExit(Exception):
    """The JVM exited during start-up for a reason a supervisor (systemd's Restart=on-failure)
    starts it again for, and that passes: its previous run's registration still in ZooKeeper (an
    ephemeral znode of a session not expired yet, after a kill or a halt), or its ZooKeeper
    session lost before start-up ended. The message is the log line."""


_live: "weakref.WeakSet[JvmProcess]" = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for process in list(_live):
        with contextlib.suppress(Exception):
            process.stop()


class JvmProcess:
    """A JVM child process on 127.0.0.1 in a work directory, logging to a file there.

    The part of ``RealKafka`` and ``ZooKeeperServer`` that is the same. A subclass names itself
    (:attr:`label`, :attr:`log_name`, ...), implements start() with :meth:`_prepare_workdir`,
    :meth:`_start_attempts` (retries after a :class:`PortClash`), :meth:`_launch` and
    :meth:`_wait_ready`, and says when the JVM is ready (:meth:`_ready`) or will never be
    (:meth:`_broken`).

    ``workdir`` None means a fresh temp dir made by start() and removed by stop() unless
    ``keep_workdir``. ``die_with_parent``: ask Linux to SIGKILL the JVM if the thread that
    started it dies (PR_SET_PDEATHSIG); None does so when start() runs on the main thread, the
    one thread that lives as long as the process.
    """

    host = "127.0.0.1"
    #: The server's name in log messages and errors ("Kafka", "ZooKeeper").
    label = "JVM"
    #: The log file's name in the work directory (the JVM's stdout and stderr).
    log_name = "jvm.log"
    #: The configuration file's name in the work directory.
    config_name = "jvm.properties"
    #: Prefix of a temp work directory.
    tmp_prefix = "jvm-"
    #: Log text of a JVM that could not bind its port: start() then retries on new ports.
    bind_errors: tuple[str, ...] = ("Address already in use",)
    #: Log text of a JVM that exited during start-up for a passing reason (RestartableExit):
    #: start() then starts it again, a second apart, for up to restart_wait_s.
    restartable_exit_errors: tuple[str, ...] = ()
    restart_wait_s = 60.0
    #: What _wait_ready() waits for, for its timeout error: "<label> did not <readiness> on ...".
    readiness = "start"
    #: Seconds between two readiness checks.
    poll_interval = 0.1
    #: The launcher's logger.
    log = log

    def __init__(self, workdir: str | os.PathLike | None, *, keep_workdir: bool,
                 die_with_parent: bool | None) -> None:
        self.port: int | None = None
        self.keep_workdir = keep_workdir
        self.die_with_parent = die_with_parent
        self._own_workdir = workdir is None
        self.workdir: Path | None = None if workdir is None else Path(workdir)
        self.proc: subprocess.Popen | None = None
        self._log_fh = None
        self._log_start = 0  # the log's size when the JVM started (it is appended to)
        self.env: dict[str, str] = {}  # added to the JVM's environment at each start (a fault's preload, say)

    # -- paths / info ----------------------------------------------------------------------

    @property
    def _wd(self) -> Path:
        if self.workdir is None:
            raise RuntimeError(f"{type(self).__name__} not started")
        return self.workdir

    @property
    def address(self) -> str:
        """``"127.0.0.1:<port>"``: where clients connect."""
        if self.port is None:
            raise RuntimeError(f"{type(self).__name__} not started")
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        """``<workdir>/data``: the server's data (kept across restarts)."""
        return self._wd / "data"

    @property
    def config_path(self) -> Path:
        """The configuration file start() writes for the JVM."""
        return self._wd / self.config_name

    @property
    def log_path(self) -> Path:
        """The JVM's stdout/stderr, appended to across restarts."""
        return self._wd / self.log_name

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the log (empty if none yet)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except (OSError, RuntimeError):
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _log_since_start(self) -> str:
        """What the JVM logged since its last start."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._log_start)
                return fh.read().decode(errors="replace")
        except (OSError, RuntimeError):
            return ""

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "JvmProcess":
        raise NotImplementedError

    def _ready(self) -> bool:
        """True once the JVM serves (checked every :attr:`poll_interval` s by _wait_ready)."""
        raise NotImplementedError

    def _broken(self) -> bool:
        """True if the running JVM can no longer become ready (fail now, not at the timeout)."""
        return False

    def _prepare_workdir(self) -> Path:
        """The work directory, made (a temp dir if none was given) if missing."""
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=self.tmp_prefix))
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir

    def _start_attempts(self, attempts: int, start_once: Callable[[], None]) -> None:
        """Call ``start_once`` (which picks its ports) until it returns, at most ``attempts``
        times while it raises :class:`PortClash`, and again a second apart while it raises
        :class:`RestartableExit`, for up to restart_wait_s. On any error the JVM is stopped, a temp work
        dir removed (unless keep_workdir) and a RuntimeError with the log's tail raised."""
        _live.add(self)
        try:
            clashes = 0
            give_up = time.monotonic() + self.restart_wait_s
            while True:
                try:
                    start_once()
                    return
                except PortClash as exc:
                    clashes += 1
                    self.log.warning("%s found port %s taken (attempt %d of %d): %s", self.label,
                                     self.port, clashes, attempts, exc)
                    if clashes >= attempts:
                        raise RuntimeError(f"{self.label} found its port taken {attempts} time(s) ({exc}); "
                                           f"its log ({self.log_path}) ends with:\n{self.log_tail()}") from None
                except RestartableExit as exc:
                    if time.monotonic() > give_up:
                        raise RuntimeError(f"{self.label} still exited during start-up after "
                                           f"{self.restart_wait_s:g}s of restarts ({exc}); its log "
                                           f"({self.log_path}) ends with:\n{self.log_tail()}") from None
                    self.log.warning("%s exited during start-up: starting it again, as a supervisor would (%s)",
                                     self.label, exc)
                    time.sleep(1.0)
        except BaseException:
            self.stop()
            raise

    def _launch(self, cmd: Sequence[str]) -> subprocess.Popen:
        """Start ``cmd`` in the work dir, in a new session, stdout and stderr to the log."""
        die = (threading.current_thread() is threading.main_thread()
               if self.die_with_parent is None else self.die_with_parent)
        self._log_fh = open(self.log_path, "ab")
        self._log_start = self._log_fh.tell()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log_fh,
                                     stderr=subprocess.STDOUT, cwd=self._wd,
                                     env={**os.environ, **self.env} if self.env else None,
                                     start_new_session=True,
                                     preexec_fn=pdeathsig if die else None)
        return self.proc

    def _wait_ready(self, timeout: float) -> None:
        """Wait until :meth:`_ready`. Raises :class:`PortClash` if the JVM exits after logging
        one of :attr:`bind_errors` (anywhere since its start, not only in the tail),
        :class:`RestartableExit` after one of :attr:`restartable_exit_errors`; otherwise, if it exits, is :meth:`_broken` or is not ready
        within ``timeout`` s, kills it and raises RuntimeError with the log's tail."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                self._close_log()
                for line in self._log_since_start().splitlines():
                    if any(text in line for text in self.bind_errors):
                        raise PortClash(line.strip())
                    if any(text in line for text in self.restartable_exit_errors):
                        raise RestartableExit(line.strip())
                problem = f"exited with {code} during start-up"
            elif self._ready():
                return
            elif self._broken():
                problem = "failed during start-up"
            elif time.monotonic() > deadline:
                problem = f"did not {self.readiness} on {self.host}:{self.port} within {timeout:g}s"
            else:
                time.sleep(self.poll_interval)
                continue
            self.kill()
            raise RuntimeError(f"{self.label} {problem}; its log ({self.log_path}) ends with:\n"
                               f"{self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait ``timeout`` s, then SIGKILL. Returns the exit code (143 after SIGTERM).

        Removes the work directory if it was a temp dir made by start() (unless keep_workdir)."""
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.log.warning("%s pid %d ignored SIGTERM for %.0fs; killing", self.label,
                                     self.proc.pid, timeout)
                    self.kill()
            code = self.proc.returncode
            self.log.info("%s pid %d stopped (exit %s)", self.label, self.proc.pid, code)
        self._close_log()
        _live.discard(self)
        if self._own_workdir and not self.keep_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        return code

    def kill(self) -> None:
        """SIGKILL: a crash at whatever moment the server is in. start() restarts it."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def parse_settings(items: Sequence[str]) -> dict[str, str]:
    """``--set KEY=VALUE`` arguments as a dict (SystemExit for an item without ``=``)."""
    settings = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        settings[key] = value
    return settings


def serve(server: JvmProcess, start: Callable[[], object]) -> int:
    """The CLIs' ``serve`` command: call ``start`` (which starts ``server``), print the server's
    address on stdout and run until SIGINT or SIGTERM; then stop it and return 0, or 1 if the
    JVM exited by itself first. The server is stopped on any way out."""
    stop = threading.Event()
    got: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        got.append(signum)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    logger = server.log
    try:
        start()
        print(server.address, flush=True)
        logger.info("serving; workdir %s; Ctrl-C or SIGTERM to stop", server.workdir)
        while not stop.wait(0.5):
            if not server.alive():
                logger.error("%s exited unexpectedly (%s); log ends with:\n%s", server.label,
                             server.proc.returncode if server.proc else None, server.log_tail())
                return 1
        logger.info("got signal %s, stopping", got[0] if got else "?")
        return 0
    finally:
        server.stop()
