"""Kafka's request quota (request_percentage): the time a request keeps the broker busy.

Kafka charges a client for the time a request-handler thread works on its requests, not for the
time a request waits (for acks=all replicas, or for a fetch's min.bytes). A wirekafka connection's
requests run in the connection's task, so its running time is the sum of the task's steps: this
instrument adds up the steps of the tasks it watches. It is installed only while some
request_percentage quota exists, so an unquoted broker pays nothing for it.

A request's time is recorded once, when its answer is ready: by dispatch for most APIs, by the
Fetch handler itself (it must know the request throttle before it decides to send data). The
throttle goes into the response's throttle_time_ms where its version has one, and the connection
is muted for it. Exempt, as in Kafka: a follower's Fetch, an acks=0 Produce and the
inter-broker WriteTxnMarkers."""

from __future__ import annotations

import time
from typing import Any

import trio

from wirekafka.broker.context import RequestContext
from wirekafka.broker.replica.replica_manager import fetching_replica

PRODUCE, FETCH, CONTROLLED_SHUTDOWN, WRITE_TXN_MARKERS, ALTER_PARTITION = 0, 1, 7, 27, 56
NANOS_TO_PERCENT = 100 / 1e9  # Kafka's ClientRequestQuotaManager: a second of work is 100 (%)


class TaskTimer(trio.abc.Instrument):
    def __init__(self) -> None:
        self._running: dict[trio.lowlevel.Task, int] = {}  # watched task -> ns run so far
        self._step_start: dict[trio.lowlevel.Task, int] = {}
        self.installed = False

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self._running:
            self._step_start[task] = time.perf_counter_ns()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        start = self._step_start.pop(task, None)
        if start is not None and task in self._running:
            self._running[task] += time.perf_counter_ns() - start

    def install(self) -> None:
        if not self.installed:
            trio.lowlevel.add_instrument(self)
            self.installed = True

    def uninstall(self) -> None:
        if self.installed:
            trio.lowlevel.remove_instrument(self)
            self.installed = False
            self._running.clear()
            self._step_start.clear()

    def start(self) -> int:
        """Begin (or go on) counting the current task's running time; the count so far in ns,
        taken as running from now (the current step began before the watch)."""
        task = trio.lowlevel.current_task()
        now = time.perf_counter_ns()
        self._running.setdefault(task, 0)
        self._step_start[task] = now
        return self._running[task]

    def elapsed(self, since: int) -> int:
        """The current task's running time in ns since `since` (a start() value), including the
        step running now; the task stays watched until stop()."""
        task = trio.lowlevel.current_task()
        step = self._step_start.get(task)
        running = self._running.get(task, 0)
        return running - since + (time.perf_counter_ns() - step if step is not None else 0)

    def stop(self) -> None:
        task = trio.lowlevel.current_task()
        self._running.pop(task, None)
        self._step_start.pop(task, None)


TIMER = TaskTimer()


def exempt(api_key: int, body: Any) -> bool:
    if api_key in (CONTROLLED_SHUTDOWN, WRITE_TXN_MARKERS, ALTER_PARTITION):  # inter-broker requests Kafka exempts
        return True
    if api_key == PRODUCE:
        return getattr(body, "acks", 1) == 0
    if api_key == FETCH:
        return fetching_replica(body) >= 0
    return False


def begin(ctx: RequestContext, body: Any) -> None:
    """Start timing a request when its client may be throttled for request time."""
    manager = ctx.state.client_quotas.request
    if not manager.resolver.enabled:
        if TIMER.installed:
            TIMER.uninstall()
        return
    if exempt(ctx.header.api_key, body):
        return
    TIMER.install()
    ctx.timing_since = TIMER.start()


def record(ctx: RequestContext) -> int:
    """Charge the request's time to its client (once); the request throttle time in ms."""
    since = ctx.timing_since
    if since is None:
        return 0
    ctx.timing_since = None
    nanos = max(TIMER.elapsed(since), 0)
    TIMER.stop()
    throttle = ctx.state.client_quotas.request.record(ctx.principal, ctx.client_id, nanos * NANOS_TO_PERCENT)
    ctx.mute(throttle)
    return throttle
