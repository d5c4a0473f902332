"""The Prometheus endpoint: GET /metrics on wirekafka.metrics.listener (HOST:PORT), when set.

A small HTTP/1.1 responder on the broker's own trio loop rather than prometheus_client's threaded
server: the figures live on the loop, and reading them from another thread would race the
handlers. One request per connection (the response closes it), the request head bounded to
MAX_HEAD bytes and HEAD_TIMEOUT_S seconds. The scrape reads the state on the loop in chunks
(broker/metrics/collector.py); the text is then written by prometheus_client's generate_latest
in a worker thread, from families that belong to that scrape alone."""

from __future__ import annotations

import functools
import logging
from typing import Iterable

import trio
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from wirekafka.broker.metrics.collector import collect
from wirekafka.broker.state import BrokerState
from wirekafka.config.broker_keys import LONG_MAX, METRICS_LISTENER, parse_host_port
from wirekafka.server.memory_pool import RequestMemoryPool
from wirekafka.startup_errors import StartupError

log = logging.getLogger(__name__)

# The text format generate_latest writes: every name here is a classic one, so the 0.0.4 format
# every Prometheus version reads (newer clients label it 1.0.0, which older servers refuse).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_HEAD = 8192
HEAD_TIMEOUT_S = 10.0


async def serve(state: BrokerState, pool: RequestMemoryPool, *,
                task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve /metrics, and run the event loop's lateness timer (broker/metrics/loop_lateness.py),
    until cancelled; return at once when the key is not set."""
    address = state.config[METRICS_LISTENER]
    if address is None:
        task_status.started()
        return
    host, port = parse_host_port(str(address))
    try:
        listeners = await trio.open_tcp_listeners(port, host=host or None)
    except OSError as exc:
        raise StartupError(f"cannot listen for metrics on {address}: {exc}") from None
    bound = listeners[0].socket.getsockname()[1]
    log.info("metrics endpoint listening on http://%s:%d/metrics", host or "0.0.0.0", bound)
    task_status.started()
    async with trio.open_nursery() as nursery:
        if state.metrics.loop is not None:  # the event loop's stall meter, only with an endpoint to read it
            nursery.start_soon(state.metrics.loop.run)
        await trio.serve_listeners(functools.partial(_answer, state, pool), listeners)


async def _answer(state: BrokerState, pool: RequestMemoryPool, stream: trio.SocketStream) -> None:
    try:
        with trio.move_on_after(HEAD_TIMEOUT_S):
            head = await _read_head(stream)
            if head is None:
                return
            status, body, content_type = await _respond(state, pool, head)
            await stream.send_all(b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                                  % (status.encode(), content_type.encode(), len(body)) + body)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:  # a bug costs one scrape, never the broker
        log.exception("metrics request failed")
    finally:
        await trio.aclose_forcefully(stream)


async def _read_head(stream: trio.SocketStream) -> bytes | None:
    """The request line and headers, None if the client closed or sent more than MAX_HEAD."""
    data = bytearray()
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(MAX_HEAD)
        if not chunk or len(data) + len(chunk) > MAX_HEAD:
            return None
        data += chunk
    return bytes(data)


async def _respond(state: BrokerState, pool: RequestMemoryPool, head: bytes) -> tuple[str, bytes, str]:
    """(status line, body, content type) for a request head."""
    parts = head.split(b"\r\n", 1)[0].split()
    if len(parts) != 3:
        return "400 Bad Request", b"bad request\n", "text/plain"
    method, target = parts[0], parts[1].split(b"?", 1)[0]
    if target != b"/metrics":
        return "404 Not Found", b"only /metrics is served\n", "text/plain"
    if method != b"GET":
        return "405 Method Not Allowed", b"GET only\n", "text/plain"
    families = await collect(state)
    families += pool_families(pool)
    return "200 OK", await trio.to_thread.run_sync(render, families), CONTENT_TYPE


def pool_families(pool: RequestMemoryPool) -> list[Metric]:
    """Kafka's SocketServer memory pool gauges; with no pool Kafka reports Long.MAX_VALUE available."""
    available = pool.available if pool.bounded else LONG_MAX
    used = pool.capacity - pool.available if pool.bounded else 0
    return [GaugeMetricFamily("kafka_network_socketserver_memorypoolavailable", "Bytes left in the request "
                              "memory pool (kafka.network:type=SocketServer,name=MemoryPoolAvailable)", value=available),
            GaugeMetricFamily("kafka_network_socketserver_memorypoolused", "Bytes of requests held in the pool "
                              "(kafka.network:type=SocketServer,name=MemoryPoolUsed)", value=used)]


class _Scrape(Collector):
    """The families of one scrape, as generate_latest reads them."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def render(families: list[Metric]) -> bytes:
    """The text exposition format of families."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape(families))
    return generate_latest(registry)
