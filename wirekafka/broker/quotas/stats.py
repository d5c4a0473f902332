"""The measurements Kafka's quotas are decided on, reproduced to the millisecond: a sampled
windowed sum (SampledStat), the Rate client quotas use and the SimpleRate replication throttles
use on top of it, and the TokenBucket of the controller mutation quota.

Throttle times are the ones Kafka computes, so that a client slowed by wirekafka is slowed by
the same amount as by Kafka (QuotaUtils.throttleTime: how long until the rate would be back at
the bound, rounded half up as Java's Math.round)."""

from __future__ import annotations

import math
from typing import Generic, Hashable, TypeVar

from wirekafka.jvm import java_int

INT_MAX = 2**31 - 1
SENSOR_EXPIRY_MS = 3600 * 1000  # Kafka drops a quota sensor idle this long
_EXPIRY_CHECK_MS = 30_000  # and looks for idle ones this often (Metrics' ExpireSensorTask)
K = TypeVar("K", bound=Hashable)


class SampledStat:
    """`samples` + 1 samples of at most `window_ms` each (the extra one overlaps the window's
    start). A new sample begins at the first record after the current one has lasted a window;
    a sample whose last event is `samples` windows old is reset."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(samples, 1)
        self.window_ms = max(window_ms, 1)
        self._starts: list[int] = []
        self._last_events: list[int] = []
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._starts:
            self._append(now_ms)
        elif now_ms - self._starts[self._current] >= self.window_ms:
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._starts):
                self._append(now_ms)
            else:
                self._reset(self._current, now_ms)
        self._values[self._current] += value
        self._last_events[self._current] = now_ms

    def _append(self, now_ms: int) -> None:
        self._starts.append(now_ms)
        self._last_events.append(now_ms)
        self._values.append(0.0)

    def _reset(self, i: int, now_ms: int) -> None:
        self._starts[i] = self._last_events[i] = now_ms
        self._values[i] = 0.0

    def purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for i, last in enumerate(self._last_events):
            if now_ms - last >= expire:
                self._reset(i, now_ms)

    def total(self, now_ms: int) -> float:
        self.purge(now_ms)
        return sum(self._values)

    def oldest_start(self, now_ms: int) -> int:
        self.purge(now_ms)
        return min(self._starts, default=now_ms)


class Rate(SampledStat):
    """Kafka's Rate: the sum per second over a window never shorter than samples - 1 full windows
    (plus the current one's elapsed part), so a new client is measured over that long."""

    def window_size_ms(self, now_ms: int) -> int:
        elapsed = now_ms - self.oldest_start(now_ms)
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        return self.total(now_ms) / (self.window_size_ms(now_ms) / 1000)


class SimpleRate(Rate):
    """Kafka's SimpleRate (replication quotas): the window is the time since the oldest sample
    began, at least one window."""

    def window_size_ms(self, now_ms: int) -> int:
        return max(now_ms - self.oldest_start(now_ms), self.window_ms)


class RateSensors(Generic[K]):
    """A quota's Rate per sensor key (a client's tags, an address), created on first use; one
    unused for an hour is dropped with its history, as Kafka expires quota sensors."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self._samples = samples
        self._window_ms = window_ms
        self._rates: dict[K, Rate] = {}
        self._used: dict[K, int] = {}
        self._next_expiry_ms = 0

    def __contains__(self, key: object) -> bool:
        return key in self._rates

    def get(self, key: K, now_ms: int) -> Rate:
        if now_ms >= self._next_expiry_ms:
            for idle in [k for k, used in self._used.items() if now_ms - used > SENSOR_EXPIRY_MS]:
                del self._rates[idle], self._used[idle]
            self._next_expiry_ms = now_ms + _EXPIRY_CHECK_MS
        self._used[key] = now_ms
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = Rate(self._samples, self._window_ms)
        return rate


class TokenBucket:
    """Kafka's TokenBucket (controller mutations): `rate` tokens a second up to a burst of
    samples x window x rate, starting full; a record takes tokens and may leave it negative."""

    def __init__(self, rate: float, samples: int, window_s: int, now_ms: int) -> None:
        self.rate = rate
        self._burst_windows = max(samples, 1) * max(window_s, 1)
        self.tokens = self.burst
        self._last_ms = now_ms

    @property
    def burst(self) -> float:
        return self._burst_windows * self.rate

    def refill(self, now_ms: int) -> float:
        self.tokens = min(self.burst, self.tokens + self.rate * (now_ms - self._last_ms) / 1000)
        self._last_ms = now_ms
        return self.tokens

    def record(self, permits: float, now_ms: int) -> None:
        self.refill(now_ms)
        self.tokens = min(self.burst, self.tokens - permits)

    def throttle_ms(self, now_ms: int) -> int:
        """How long until the bucket is no longer in debt (0 when it is not). Kafka casts it to an
        int: an overflowed throttle wraps, and Kafka then does not throttle at all."""
        tokens = self.refill(now_ms)
        return java_int(java_round(-tokens / self.rate * 1000)) if tokens < 0 else 0


def java_round(x: float) -> int:
    """Java's Math.round(double): half up, NaN to 0, saturating at the long range."""
    if math.isnan(x):
        return 0
    if x >= 2**63:
        return 2**63 - 1
    if x <= -(2**63):
        return -(2**63)
    return math.floor(x + 0.5)


def violation_ms(rate: Rate, bound: float, now_ms: int, cap_ms: int | None = None) -> int:
    """After a record: 0 while the rate is within bound (Quota.acceptable: only above it
    violates), else Kafka's throttle time, at most cap_ms when given (QuotaUtils.
    boundedThrottleTime: a bound of 0 then gives the cap). Never negative: an overflowed
    throttle is no throttle, as in Kafka."""
    if rate.measure(now_ms) <= bound:
        return 0
    throttle = throttle_ms(rate, bound, now_ms)
    if cap_ms is not None:
        throttle = cap_ms if bound <= 0 else min(throttle, cap_ms)
    return max(throttle, 0)


def throttle_ms(rate: Rate, bound: float, now_ms: int) -> int:
    """QuotaUtils.throttleTime for a rate above its bound, narrowed to an int as Kafka does."""
    observed = rate.measure(now_ms)
    window = rate.window_size_ms(now_ms)
    return java_int(java_round((observed - bound) / bound * window)) if bound > 0 else -1
