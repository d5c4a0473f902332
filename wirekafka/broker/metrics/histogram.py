"""A cumulative-bucket histogram of durations, the shape Prometheus histograms are exposed in.

Kafka's timers (TotalTimeMs, LogFlushRateAndTimeMs) are Yammer histograms read through JMX as a
count and percentiles; a Prometheus histogram (buckets, count, sum) keeps the count under the
exporter's name (`<name>_count`) and lets PromQL compute any quantile over any window, which
percentiles frozen in the broker cannot."""

from __future__ import annotations

from bisect import bisect_left

# Milliseconds: from a sub-millisecond request on an idle broker to a fetch waiting its 500 ms
# fetch.max.wait.ms and beyond (a request times out at 30 s by default).
MS_BUCKETS: tuple[float, ...] = (0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


class Histogram:
    """Observations counted into the bucket of the smallest bound at or above them (the last,
    unbounded bucket for the rest): one bisect and two additions per observation."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...] = MS_BUCKETS) -> None:
        if list(bounds) != sorted(set(bounds)):
            raise ValueError(f"bucket bounds must increase: {bounds}")
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, observations at or below it) for every bound and "+Inf", as exposed."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts):
            running += n
            out.append(("+Inf" if bound == float("inf") else _le(bound), running))
        return out


def _le(bound: float) -> str:
    """A bound as Prometheus client libraries write `le` (a float: "1.0", "0.25")."""
    return repr(float(bound))
