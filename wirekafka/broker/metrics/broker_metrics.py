"""One broker's metrics: what the request and produce/fetch paths count, and the socket figures.

The hot-path parts (requests, topics) and the event loop's timer (loop) exist only when
wirekafka.metrics.listener is set: with no endpoint to read them, the paths skip them at the cost
of one `is None` test, and no timer runs. Each broker of a process (an embedded cluster) has its
own, so no figure is shared between brokers."""

from __future__ import annotations

from wirekafka.broker.metrics.loop_lateness import LoopLateness
from wirekafka.broker.metrics.request_metrics import RequestMetrics
from wirekafka.broker.metrics.socket_metrics import SocketMetrics
from wirekafka.broker.metrics.topic_metrics import TopicMetrics


class BrokerMetrics:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.requests: RequestMetrics | None = RequestMetrics() if enabled else None
        self.topics: TopicMetrics | None = TopicMetrics() if enabled else None
        self.loop: LoopLateness | None = LoopLateness() if enabled else None
        self.sockets = SocketMetrics()
