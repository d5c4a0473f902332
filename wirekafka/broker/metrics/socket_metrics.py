"""Kafka's socket-server-metrics per listener: connections open (connection-count) and
authentications (successful- and failed-authentication-total). Bumped per connection and per
authentication, never per request, so they are always kept: a scrape then tells the truth about
connections opened before it."""

from __future__ import annotations

from collections import Counter


class SocketMetrics:
    def __init__(self) -> None:
        self.connections: Counter[str] = Counter()  # listener -> connections open
        self.failed_authentications: Counter[str] = Counter()
        self.successful_authentications: Counter[str] = Counter()
