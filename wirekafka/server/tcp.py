"""The listeners, the connection nursery, background tasks and graceful shutdown.

SIGTERM/SIGINT (or the caller's stop event, for a broker embedded off the main thread, where trio
cannot receive signals): stop accepting, close idle connections, let in-flight requests finish under
shutdown.timeout.ms, then flush and close every log, write checkpoints and the clean-shutdown
marker."""

from __future__ import annotations

import errno
import functools
import logging
import signal

import trio

from wirekafka.broker.dispatch import check_table, enable_zk_broker_apis
from wirekafka.broker.handlers import metadata as metadata_answers
from wirekafka.broker.metadata.broker_id import resolve_broker_id
from wirekafka.broker.state import BrokerState
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.config.listeners import SASL_PROTOCOLS
from wirekafka.startup_errors import StartupError
from wirekafka.security.oauth.token_login import LoginFailed, SecuredLogin
from wirekafka.security.sasl import oauthbearer as oauth
from wirekafka.server.background import flush_task, producer_expiration_task, retention_task
from wirekafka.server.connection import serve_connection
from wirekafka.server.connection_quotas import ConnectionQuotas, hold_then_close
from wirekafka.server import gc_policy, metrics_endpoint, startup_log
from wirekafka.server.idle_connections import IdleConnections
from wirekafka.server.memory_pool import RequestMemoryPool
from wirekafka.server.listener_security import ListenerSecurity

log = logging.getLogger(__name__)


async def _log_in(config: BrokerConfig, state: BrokerState) -> None:
    """Kafka's broker logs in on each listener that enables OAUTHBEARER when it starts: with the
    secured login, a token endpoint that gives no usable token stops the start-up. On the
    inter-broker listener the login is the one its connections to other brokers then use, so the
    token fetched here is theirs."""
    peer_sasl = state.peer_security.sasl if state.peer_security is not None else None
    for listener in config.listeners:
        if (config.security_protocol(listener.name) not in SASL_PROTOCOLS
                or oauth.MECHANISM not in config.sasl_mechanisms(listener.name)):
            continue
        login = config.oauth_login(listener.name)
        if login is not None:
            if listener.name == config.inter_broker_listener and peer_sasl is not None and peer_sasl.secured:
                secured = peer_sasl.secured
            else:
                secured = SecuredLogin(login)
            try:
                await secured.token()
            except LoginFailed as exc:
                raise StartupError(f"listener {listener.name}: the OAUTHBEARER login failed: {exc}") from None


async def run_broker(config: BrokerConfig, stop: trio.Event | None = None, *, freeze_heap: bool = False,
                     task_status: trio.TaskStatus[BrokerConfig] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until SIGTERM/SIGINT, or until ``stop`` is set when one is given (signals are then
    left alone). Started with ``nursery.start``, it reports the configuration with the ports the
    listeners were bound to once every listener accepts connections. With ``freeze_heap`` (a
    process of the broker's own only: it is process-wide), what start-up loaded is frozen out of
    the cyclic collector before serving (see gc_policy)."""
    startup_log.log_startup(config)
    if config.zookeeper_mode:
        enable_zk_broker_apis()
    check_table()
    config = await resolve_broker_id(config)  # ZooKeeper mode without broker.id: stored or generated
    # Bound before the broker registers, as Kafka's socket server is: a listener on port 0 gets a
    # port from the OS, and that port is the one advertised (Kafka's ephemeral-port correction).
    # Connections wait in the backlog until the accept loops start.
    # socket.listen.backlog.size when set; unset, the OS's maximum rather than Kafka's 50,
    # which makes a burst of 100 connects wait out 1 s SYN retransmits (scripts/bench.py connect)
    bound = [(listener, await trio.open_tcp_listeners(listener.port, host=listener.host or None,
                                                      backlog=config.int_if_set("socket.listen.backlog.size")))
             for listener in config.listeners]
    config = config.with_bound_ports({listener.name: _bound_port(servers) for listener, servers in bound})
    state = BrokerState(config)
    await _log_in(config, state)
    for log_dir in state.log_dirs:  # before anything of this run is deleted
        await state.deletes.adopt_leftovers(log_dir)
    if config.zookeeper_mode:
        await state.join_cluster()
    else:
        await trio.to_thread.run_sync(state.load)
    idle = IdleConnections(config.int("connections.max.idle.ms") / 1000)
    pool = RequestMemoryPool(config.int("queued.max.request.bytes"))
    try:
        tls = state.metadata.broker_configs.listener_tls
        securities = {listener.name: ListenerSecurity.of(config, listener.name, state.metadata.scram.get, tls)
                      for listener, _ in bound}
        # a secured OAUTHBEARER validator's JWKS, read or fetched before serving (StartupError if not)
        jwks_sources = [s.sasl.secured.source for s in securities.values()
                        if s.sasl is not None and s.sasl.secured is not None]
        for source in jwks_sources:
            await source.load()
        async with trio.open_nursery() as background:
            if freeze_heap:  # before a cluster broker's first reconcile opens its replicas (gc_policy)
                await background.start(gc_policy.keep_heap_frozen, lambda: state.partitions_opened)
            await background.start(retention_task, state)
            await background.start(flush_task, state)
            await background.start(producer_expiration_task, state)
            await background.start(idle.run)
            await background.start(state.cleaner.run)
            await background.start(state.deletes.run)
            await background.start(state.groups.run_timers)
            await background.start(state.transactions.run_timers)
            await background.start(state.log_dir_failures.halt_when_offline)
            await background.start(metrics_endpoint.serve, state, pool)
            if config.zookeeper_mode:
                await background.start(state.run_cluster)
                await background.start(metadata_answers.keep_parts_built, state.metadata)
            else:
                await background.start(state.load_coordinators)
            quotas = ConnectionQuotas(state.metadata.broker_configs, state.metadata.client_quotas)
            await tls.start()  # the stores as set now, the dynamic ones included
            for source in jwks_sources:
                background.start_soon(source.run)
            if freeze_heap:  # every partition is open by now, in a cluster too (run_cluster's first reconcile)
                gc_policy.freeze_startup_heap()
            async with trio.open_nursery() as connections:
                accepting: list[trio.CancelScope] = []  # one per accept loop: a scope has one `with`

                async def accept_loop(server: trio.SocketListener, name: str, security: ListenerSecurity,
                                      scope: trio.CancelScope) -> None:
                    with scope:
                        await _accept(server, name, security, quotas, connections, state, idle, pool)

                for listener, servers in bound:
                    security = securities[listener.name]
                    for server in servers:
                        accepting.append(trio.CancelScope())
                        connections.start_soon(accept_loop, server, listener.name, security, accepting[-1])
                log.info("wirekafka node %d listening on %s (cluster id %s, log dir %s)", state.node_id,
                         ", ".join(f"{lst.host}:{lst.port} [{lst.name}]" for lst in config.listeners),
                         state.cluster_id, state.log_dir)
                task_status.started(config)
                await _stop_requested(stop)
                if config.zookeeper_mode and config.bool("controlled.shutdown.enable"):
                    await state.controlled_shutdown()
                for scope in accepting:
                    scope.cancel()
                idle.shut_down()
                connections.cancel_scope.deadline = trio.current_time() + config.int("shutdown.timeout.ms") / 1000
            background.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(state.shutdown)
            await state.leave_cluster()
        log.info("shut down cleanly")


async def _stop_requested(stop: trio.Event | None) -> None:
    """Return when the broker is asked to stop: the event when given, else SIGTERM or SIGINT."""
    if stop is not None:
        await stop.wait()
        log.info("stop requested, shutting down")
        return
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received signal %d, shutting down", signum)
            break


# accept() errors that mean "out of resources for now": wait and try again (as trio's serve_listeners).
_ACCEPT_RETRY = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}


def _bound_port(servers: list[trio.SocketListener]) -> int:
    """The port a listener got (the one asked for, or the OS's pick for port 0)."""
    return servers[0].socket.getsockname()[1]


async def _accept(server: trio.SocketListener, listener: str, security: ListenerSecurity, quotas: ConnectionQuotas,
                  nursery: trio.Nursery, state: BrokerState, idle: IdleConnections, pool: RequestMemoryPool) -> None:
    """Accept connections on one listener within the connection quotas, each served in its own task.
    Connections over their address's connection rate are held (unread) in tasks of their own, and
    closed at once when accepting stops, as Kafka's acceptor closes them when it shuts down."""
    async with trio.open_nursery() as held:
        await _accept_into(server, listener, security, quotas, nursery, held, state, idle, pool)


async def _accept_into(server: trio.SocketListener, listener: str, security: ListenerSecurity,
                       quotas: ConnectionQuotas, nursery: trio.Nursery, held: trio.Nursery, state: BrokerState,
                       idle: IdleConnections, pool: RequestMemoryPool) -> None:
    while True:
        await quotas.wait_for_slot()
        try:
            stream = await server.accept()
        except OSError as exc:
            quotas.release(None)
            if exc.errno not in _ACCEPT_RETRY:
                raise
            log.error("accept failed (%s); retrying in 0.1 s", exc)
            await trio.sleep(0.1)
            continue
        except BaseException:
            quotas.release(None)
            raise
        address = _address(stream)
        try:
            await quotas.wait_for_creation_rate(listener)
            throttle = await quotas.throttle_ms(address)  # a checkpoint only to resolve a quota's host name
        except BaseException:
            quotas.release(None)
            await trio.aclose_forcefully(stream)
            raise
        if throttle > 0:  # over its connection rate: not counted (the slot came back), held, then closed
            log.debug("delaying closing of connection from %s for %d ms", address, throttle)
            held.start_soon(hold_then_close, stream, throttle)
            continue
        if not quotas.admit(address):
            log.info("closing connection from %s: too many connections from that address (max %d)", address,
                     quotas.overrides.get(address, quotas.per_ip))
            quotas.release(None)
            await stream.aclose()
            continue
        try:
            quotas.configure(stream.socket)
        except OSError:  # the client is already gone
            quotas.release(address)
            await stream.aclose()
            continue
        nursery.start_soon(serve_connection, stream, state, listener, idle,
                           functools.partial(quotas.release, address), security, pool)


def _address(stream: trio.SocketStream) -> str:
    try:
        return str(stream.socket.getpeername()[0])
    except OSError:
        return "?"
