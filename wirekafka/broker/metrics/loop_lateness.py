"""How late the event loop runs a 1 ms timer: the broker's own stall meter.

Everything a broker does runs on one trio loop, so any piece of work that holds it (a change of
many partitions' roles, a large decode, a worker thread holding the GIL) delays every request,
replica fetch and ZooKeeper callback behind it. A task that sleeps 1 ms in a loop and records how
late it woke sees such a stall whatever caused it, as `scripts/bench.py --only loop-stall`
measures in-process; this puts the same meter on a running broker, exposed as
`wirekafka_event_loop_lateness_seconds` (a histogram) and `_max_seconds` (the worst since start).

It runs only while the metrics endpoint is configured (started by server/metrics_endpoint.py):
a wake-up a millisecond costs a little CPU even on an idle broker (docs/metrics.md)."""

from __future__ import annotations

import trio
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from wirekafka.broker.metrics.histogram import Histogram

#: The timer's period, s.
PERIOD_S = 0.001
#: Bucket bounds, s: a timer on an idle loop wakes within its millisecond (epoll's timeout is in
#: whole ms); a stall a replica or a ZooKeeper session would notice is hundreds of ms; beyond 5 s
#: everything is late anyway and one +Inf bucket suffices.
BUCKETS_S: tuple[float, ...] = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                                2.5, 5.0)
HISTOGRAM_NAME = "wirekafka_event_loop_lateness_seconds"
MAX_NAME = "wirekafka_event_loop_lateness_max_seconds"


class LoopLateness:
    """The lateness of each wake-up, and the worst one. Owned and updated on the loop alone."""

    def __init__(self) -> None:
        self.histogram = Histogram(BUCKETS_S)
        self.max_seconds = 0.0

    def observe(self, late: float) -> None:
        self.histogram.observe(late)
        if late > self.max_seconds:
            self.max_seconds = late

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sleep PERIOD_S after PERIOD_S until cancelled, observing how far past each deadline
        the loop came back (trio's clock: the loop's own monotonic time)."""
        task_status.started()
        while True:
            due = trio.current_time() + PERIOD_S
            await trio.sleep_until(due)
            self.observe(max(0.0, trio.current_time() - due))

    def families(self) -> list[Metric]:
        histogram = HistogramMetricFamily(HISTOGRAM_NAME, "How late a 1 ms timer on the broker's event loop woke, s "
                                          "(wirekafka's own: Kafka has no event loop)")
        histogram.add_metric([], self.histogram.cumulative(), self.histogram.total)
        worst = GaugeMetricFamily(MAX_NAME, "The latest the 1 ms timer woke since the broker started, s",
                                  value=self.max_seconds)
        return [histogram, worst]
