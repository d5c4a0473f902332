"""Kafka's RequestMetrics per API: requests by version (RequestsPerSec), error codes answered
(ErrorsPerSec, from the response as Kafka's errorCounts gives them) and the time from a request's
last byte read to its response's last byte written (TotalTimeMs), plus the requests being handled
now (the nearest thing to RequestChannel's RequestQueueSize: there is no queue between a
connection and its handler here).

One dict look-up and a few additions per request (the figures of an API live together in one
ApiStats); the collector turns them into families when scraped."""

from __future__ import annotations

from bisect import bisect_left

from wirekafka.broker.metrics.error_counts import count_errors
from wirekafka.broker.metrics.histogram import Histogram


class ApiStats:
    __slots__ = ("versions", "errors", "total_time_ms")

    def __init__(self) -> None:
        self.versions: dict[int, int] = {}  # version -> requests answered
        self.errors: dict[int, int] = {}  # error code -> occurrences
        self.total_time_ms = Histogram()


class RequestMetrics:
    def __init__(self) -> None:
        self.apis: dict[int, ApiStats] = {}  # api key -> its figures
        self.in_flight = 0  # requests read and not yet answered (the connections keep it)

    def _new(self, api_key: int) -> ApiStats:
        stats = self.apis[api_key] = ApiStats()
        return stats

    def finished(self, api_key: int, version: int, elapsed_ms: float) -> None:
        """A request's response has gone out (or none was due), elapsed_ms after it was read."""
        stats = self.apis.get(api_key) or self._new(api_key)
        versions = stats.versions
        versions[version] = versions.get(version, 0) + 1
        histogram = stats.total_time_ms  # Histogram.observe, inlined: this runs for every request
        histogram.counts[bisect_left(histogram.bounds, elapsed_ms)] += 1
        histogram.total += elapsed_ms

    def answered(self, api_key: int, response: object) -> None:
        """Count the error codes of a response body."""
        count_errors(response, (self.apis.get(api_key) or self._new(api_key)).errors)
