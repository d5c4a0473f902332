"""A wirekafka broker inside a Python program: for test suites and applications that want a real
Kafka-protocol broker without a JVM, Docker or a separate process to manage.

    from wirekafka.embedded import Broker

    with Broker() as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

A Broker is one single node. By default it runs in a background thread of the calling process,
in a trio event loop of its own, and listens on 127.0.0.1 on a port the OS picks; with
``process=True`` it runs as a child process (``python -m wirekafka.embedded``) instead. Either
way ``start()`` returns once the broker serves, and ``stop()`` shuts it down as SIGTERM shuts
down ``wirekafka serve``: stop accepting, let in-flight requests finish, flush, checkpoint.

Configuration: any server.properties key through ``config`` (a dict of strings), and keys
without ``_`` or ``-`` in their name as keywords too, with ``_`` standing for ``.``
(``num_partitions=3`` is ``num.partitions=3``; True/False become "true"/"false"). Keywords win
over ``config``, which wins over the test-friendly DEFAULTS below.

In a thread the broker shares the process: it leaves signal handlers, logging configuration,
the C library's heap settings (``wirekafka serve`` raises glibc's mmap/trim thresholds) and the
process-wide API tables alone, so several brokers can run side by side. A ZooKeeper-mode broker
changes those tables (it serves AlterPartition and ControlledShutdown), so it needs
``process=True``; ``Cluster(n, zookeeper=...)`` starts n such brokers on the caller's ZooKeeper."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import logging
import os
import select
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import IO, Callable, Mapping

import trio

from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.loader import build_config
from wirekafka.startup_errors import ConfigError, StartupError
from wirekafka.server import logging_setup

log = logging.getLogger(__name__)

#: What an embedded broker starts with unless told otherwise: a port of the OS's choosing on
#: loopback, internal topics a single node can host (replication factor 1, one partition each:
#: created in milliseconds on first use) and no wait before a new group's first rebalance.
DEFAULTS: Mapping[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}
#: What a Cluster's brokers start with beside DEFAULTS: the last broker to stop has nowhere to move
#: its leaderships and asks the controller controlled.shutdown.max.retries times, 1 s apart rather
#: than Kafka's 5 s.
CLUSTER_DEFAULTS: Mapping[str, str] = {"controlled.shutdown.retry.backoff.ms": "1000"}
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 60.0  # above shutdown.timeout.ms' default (30 s): in-flight requests may take that


class BrokerError(RuntimeError):
    """The broker failed to start, failed while running, or did not stop; the message says why."""


class Broker:
    """One embedded single-node broker; see the module's docstring."""

    def __init__(self, config: Mapping[str, str] | None = None, *, data_dir: str | os.PathLike[str] | None = None,
                 keep_data: bool = False, process: bool = False, startup_timeout: float = STARTUP_TIMEOUT_S,
                 **overrides: object) -> None:
        """``data_dir`` (or log.dirs in ``config``) is kept after stop(); without one a temporary
        directory is made at start() and removed at stop() unless ``keep_data``."""
        self.properties: dict[str, str] = {**DEFAULTS, **(config or {}), **keyword_properties(overrides)}
        if data_dir is not None:
            self.properties["log.dirs"] = os.fspath(data_dir)
        self.keep_data = keep_data
        self.process = process
        self.startup_timeout = startup_timeout
        self._runner: _InThread | _InChildProcess | None = None
        self._bootstrap: str | None = None
        self._temp_dir: Path | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def bootstrap_servers(self) -> str:
        """"127.0.0.1:PORT" of the broker's first advertised listener, for a client's bootstrap.servers."""
        if self._bootstrap is None:
            raise BrokerError("the broker is not running: call start() first")
        return self._bootstrap

    @property
    def data_dir(self) -> Path:
        """The broker's log directory (its first one when log.dirs names several)."""
        if "log.dirs" in self.properties:
            return Path(self.properties["log.dirs"].split(",")[0].strip())
        if self._temp_dir is None:
            raise BrokerError("the broker is not running: its temporary data directory is made by start()")
        return self._temp_dir

    @property
    def running(self) -> bool:
        return self._runner is not None

    def start(self) -> Broker:
        """Start the broker and return once it answers requests; BrokerError if it cannot start."""
        if self._runner is not None:
            raise BrokerError("the broker is already running")
        props = dict(self.properties)
        if "log.dirs" not in props:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="wirekafka-"))
            props["log.dirs"] = str(self._temp_dir)
        runner: _InThread | _InChildProcess
        try:
            if self.process:
                runner = _InChildProcess(props)
            else:
                runner = _InThread(_checked_config(props))
            bound = runner.start(self.startup_timeout)
        except BaseException:
            self._remove_temp_dir()
            raise
        self._runner, self._bootstrap = runner, bound
        # Stops a broker its owner forgot (garbage, interpreter exit); a no-op after stop().
        self._finalizer = weakref.finalize(self, _abandon, runner, self._temp_dir if not self.keep_data else None)
        log.info("embedded wirekafka serving on %s (data in %s)", bound, props["log.dirs"])
        return self

    def stop(self) -> None:
        """Shut the broker down as SIGTERM would; BrokerError if it failed while running or at
        shutdown (the temporary directory is removed either way, unless kept)."""
        runner, self._runner, self._bootstrap = self._runner, None, None
        if runner is None:
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        try:
            runner.stop(STOP_TIMEOUT_S)
        finally:
            self._remove_temp_dir()

    def _remove_temp_dir(self) -> None:
        if self._temp_dir is not None and not self.keep_data:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self._bootstrap or "not running"
        return f"Broker({where}, {'child process' if self.process else 'thread'})"


class Cluster:
    """``n`` brokers joined through a ZooKeeper the caller runs (Kafka 3.9's ZooKeeper mode), each
    a child process (``Broker(process=True)``): for tests of replication, leader changes and
    clients that talk to several brokers.

    ``zookeeper`` is a connect string; without a chroot, the cluster gets one of its own
    (``/wirekafka-<uuid>``), so clusters sharing a ZooKeeper never see each other. ``config`` and
    keywords apply to every broker, as for Broker; ``data_dir``, when given, holds a
    ``broker-<id>`` directory per broker. Internal topics and new topics are replicated
    min(n, 3) times by default. start() returns once every broker's Metadata lists all of them
    and names a controller."""

    def __init__(self, n: int = 3, *, zookeeper: str, config: Mapping[str, str] | None = None,
                 data_dir: str | os.PathLike[str] | None = None, keep_data: bool = False,
                 startup_timeout: float = STARTUP_TIMEOUT_S, **overrides: object) -> None:
        connect = zookeeper if "/" in zookeeper else f"{zookeeper}/wirekafka-{uuid.uuid4().hex}"
        replicas = str(min(n, 3))
        base = {**CLUSTER_DEFAULTS, "default.replication.factor": replicas,
                "offsets.topic.replication.factor": replicas, "transaction.state.log.replication.factor": replicas,
                "transaction.state.log.min.isr": str(min(n, 2)),
                **(config or {}), **keyword_properties(overrides), "zookeeper.connect": connect}
        self.zookeeper_connect = connect
        self.startup_timeout = startup_timeout
        self.brokers = [Broker({**base, "broker.id": str(node)}, process=True, keep_data=keep_data,
                               startup_timeout=startup_timeout,
                               data_dir=None if data_dir is None else Path(data_dir) / f"broker-{node}")
                        for node in range(1, n + 1)]

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's address, comma-separated."""
        return ",".join(broker.bootstrap_servers for broker in self.brokers)

    def start(self) -> Cluster:
        """Start the brokers (side by side) and wait until they know each other and the controller."""
        with concurrent.futures.ThreadPoolExecutor(len(self.brokers)) as pool:
            started = [pool.submit(broker.start) for broker in self.brokers]
        failed = [f.exception() for f in started if f.exception() is not None]
        if failed:
            self._stop_started()
            raise BrokerError(f"a broker of the cluster failed to start: {failed[0]}") from failed[0]
        deadline = time.monotonic() + self.startup_timeout
        while not all(_knows_cluster(broker.bootstrap_servers, len(self.brokers)) for broker in self.brokers):
            if time.monotonic() > deadline:
                self._stop_started()
                raise BrokerError(f"the brokers did not form a cluster within {self.startup_timeout:g} s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        """Stop every broker, one after another (each a controlled shutdown); BrokerError with the
        first failure, once all are stopped."""
        errors = self._stop_started()
        if errors:
            raise errors[0]

    def _stop_started(self) -> list[BrokerError]:
        errors = []
        for broker in self.brokers:
            try:
                broker.stop()
            except BrokerError as exc:
                errors.append(exc)
        return errors

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _knows_cluster(bootstrap: str, size: int) -> bool:
    """Whether this broker's own Metadata answer lists ``size`` brokers and a controller (a broker
    serves before its ZooKeeper watches have told it about the others). Metadata v1, sent on a
    connection of its own: a client library would ask whichever broker it liked."""
    from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

    request = MetadataRequest(topics=[], allow_auto_topic_creation=False)
    request.API_VERSION = 1
    request.with_header(correlation_id=1, client_id="wirekafka-cluster-check")
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            size_bytes = _exact(sock, 4)
            payload = _exact(sock, int.from_bytes(size_bytes, "big", signed=True))
    except OSError:
        return False
    answer = MetadataResponse.decode(payload[4:], version=1)  # after the correlation id (header v0)
    return len(answer.brokers) == size and answer.controller_id >= 0


def _exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return buf


def keyword_properties(overrides: Mapping[str, object]) -> dict[str, str]:
    """Keyword arguments as server.properties entries: ``_`` stands for ``.`` in the name, and
    values become the strings a properties file would hold."""
    return {name.replace("_", "."): property_value(value) for name, value in overrides.items()}


def property_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(property_value(v) for v in value)
    return str(value)


def _checked_config(props: Mapping[str, str]) -> BrokerConfig:
    try:
        config = build_config(props)
    except ConfigError as exc:
        raise BrokerError(f"invalid configuration: {exc}") from exc
    if config.zookeeper_mode:
        raise BrokerError("a ZooKeeper-mode broker (zookeeper.connect) changes process-wide API tables: "
                          "start it with process=True")
    return config


def _bootstrap(config: BrokerConfig) -> str:
    first = config.advertised_listeners[0]
    return f"{first.host}:{first.port}"


def _reason(exc: BaseException) -> str:
    """The first leaf of an exception group (trio's nurseries wrap what a task raised), as text."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _abandon(runner: _InThread | _InChildProcess, temp_dir: Path | None) -> None:
    try:
        runner.stop(STOP_TIMEOUT_S)
    except BrokerError as exc:
        log.warning("an abandoned embedded broker stopped with an error: %s", exc)
    finally:
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


class _InThread:
    """The broker's own trio run in a daemon thread; stopped through its stop event (before it
    serves: by cancelling its start-up)."""

    def __init__(self, config: BrokerConfig) -> None:
        from wirekafka.server.tcp import run_broker  # the broker's modules load with the first start

        self._run_broker = run_broker
        self._config = config
        self._ready = threading.Event()  # serving, or ended before it did
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop = trio.Event()
        self._scope = trio.CancelScope()
        self._bound: BrokerConfig | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="wirekafka-broker", daemon=True)

    def start(self, timeout: float) -> str:
        self._thread.start()
        if not self._ready.wait(timeout):
            self._cancel()
            self._thread.join(STOP_TIMEOUT_S)
            raise BrokerError(f"the broker did not start within {timeout:g} s")
        if self._bound is None:
            self._thread.join()
            reason = _reason(self._error) if self._error is not None else "it ended before serving"
            raise BrokerError(f"the broker failed to start: {reason}") from self._error
        return _bootstrap(self._bound)

    def _run(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        with self._scope:
            async with trio.open_nursery() as nursery:
                self._bound = await nursery.start(self._run_broker, self._config, self._stop)
                self._ready.set()

    def _cancel(self) -> None:
        self._call(self._scope.cancel)

    def _call(self, fn: Callable[[], object]) -> None:
        if self._token is None:
            return
        try:
            trio.from_thread.run_sync(fn, trio_token=self._token)
        except trio.RunFinishedError:
            pass  # it has ended already

    def stop(self, timeout: float) -> None:
        self._call(self._stop.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._cancel()
            self._thread.join(timeout)
            raise BrokerError(f"the broker did not shut down within {timeout:g} s")
        if self._error is not None:
            raise BrokerError(f"the broker failed: {_reason(self._error)}") from self._error


class _InChildProcess:
    """`python -m wirekafka.embedded` in a child process: the configuration goes in as a JSON line
    on its stdin (no secret on a command line), one JSON line comes back on its stdout once it
    serves or failed to start; its log goes to the parent's stderr. stop() is SIGTERM. The
    parent holds stdin open while the broker runs, so the child stops when the parent dies."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float) -> str:
        env = _child_environment()
        level = logging.getLevelName(logging.getLogger("wirekafka").getEffectiveLevel())
        proc = self._proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "wirekafka.embedded", str(level)],  # -P: no cwd on its path
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(self._props).encode() + b"\n")
        proc.stdin.flush()  # and kept open: the child stops when it closes (when this process ends)
        line = _read_line(proc.stdout, timeout)
        if line is None:
            proc.kill()
            self._ended(proc)
            raise BrokerError(f"the broker did not start within {timeout:g} s")
        message = _parse(line)
        if "ready" not in message:
            self._ended(proc)
            raise BrokerError(f"the broker failed to start: {message.get('error') or f'exit {proc.returncode}'}")
        return str(message["ready"])

    @staticmethod
    def _ended(proc: subprocess.Popen[bytes]) -> None:
        """Reap the child and close its pipes."""
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()

    def stop(self, timeout: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                self._ended(proc)
                raise BrokerError(f"the broker did not shut down within {timeout:g} s") from None
        assert proc.stdout is not None
        rest = _parse(proc.stdout.read())
        self._ended(proc)
        if proc.returncode != 0:
            raise BrokerError(f"the broker failed: {rest.get('error') or f'exit {proc.returncode}'}")


def _child_environment() -> dict[str, str]:
    """This environment, with the directory this wirekafka was imported from first on the
    child's path when the interpreter would not find it by itself (a source tree on sys.path):
    the child runs the same code as its parent."""
    root = Path(__file__).resolve().parent.parent
    installed = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if root in installed:
        return dict(os.environ)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))


def _read_line(stream: IO[bytes], timeout: float) -> bytes | None:
    """One line from the child within ``timeout`` seconds (b"" if it exited without one)."""
    deadline = time.monotonic() + timeout
    chunks = b""
    fd = stream.fileno()
    while not chunks.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks += chunk
    return chunks


def _parse(line: bytes) -> dict[str, object]:
    try:
        message = json.loads(line) if line.strip() else {}
    except ValueError:
        return {"error": line.decode(errors="replace").strip()}
    return message if isinstance(message, dict) else {}


# -- the child process's side ------------------------------------------------------------------

def _child_main(argv: list[str]) -> int:
    """`python -m wirekafka.embedded LOG_LEVEL`, the configuration as a JSON line on stdin."""
    level = argv[0]
    logging_setup.configure(level)

    def report(**message: str) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    try:
        config = build_config(json.loads(sys.stdin.buffer.readline()))
    except ConfigError as exc:
        report(error=f"invalid configuration: {exc}")
        return 2
    from wirekafka.server.allocator import keep_freed_buffers

    keep_freed_buffers()  # its own process: the heap policy of `wirekafka serve`
    _stop_with_parent()
    try:
        trio.run(_serve_child, config, report)
    except BaseException as exc:  # reported to the parent, which raises it
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        if not isinstance(leaf, StartupError):
            log.exception("the broker failed")
        report(error=_reason(exc))
        return 1
    return 0


async def _serve_child(config: BrokerConfig, report: Callable[..., None]) -> None:
    from wirekafka.server.tcp import run_broker

    async with trio.open_nursery() as nursery:
        # no stop event: SIGTERM stops it; its own process, frozen after start-up: as `wirekafka serve`
        bound = await nursery.start(functools.partial(run_broker, freeze_heap=True), config)
        report(ready=_bootstrap(bound))


def _stop_with_parent() -> None:
    """SIGTERM to this process (a clean shutdown) once stdin, whose other end the parent holds
    until stop(), reads end-of-file: when the parent stopped it without a signal, or died (a
    killed test run leaves no broker behind)."""
    def wait() -> None:
        while os.read(0, 4096):  # unbuffered: a daemon thread must hold no io lock at interpreter exit
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="wirekafka-parent-watch", daemon=True).start()


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
