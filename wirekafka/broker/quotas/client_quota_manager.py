"""Client quota enforcement: Kafka's ClientQuotaManager for produce and fetch bytes, its
ClientRequestQuotaManager for request time and its ControllerMutationQuotaManager for topic and
partition creation and deletion.

Each manager measures a rate per quota sensor and answers how long a request's client must be
throttled. Which connections share a sensor, and which configured quota bounds it, follow
Kafka's default quota callback (user = the session principal's name, ANONYMOUS when there is
none; client = the request header's client id):
- the quotas of this manager's key decide which entity shapes are in use (client id, user, user
  and client id; a shape stops counting when its last quota is removed, as in Kafka 4.1+);
- with one shape, every connection is measured by that shape's names; with several, by the first
  of Kafka's eight levels (users/<u>/clients/<c> ... clients/<default>) that has a quota;
- a default entity's quota bounds each user or client id on its own, never their sum.
With no quota of a key anywhere, its manager records nothing and never throttles."""

from __future__ import annotations

import time
from typing import Callable

from wirekafka.broker.quotas.entities import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotas,
    Entity,
    entity_of,
)
from wirekafka.broker.quotas.stats import INT_MAX, RateSensors, TokenBucket, java_round, violation_ms
from wirekafka.jvm import java_int
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

ANONYMOUS = "ANONYMOUS"  # the principal of a connection that did not authenticate
Tags = tuple[str, str]  # (user, client id) a sensor is measured by; "" for a name not used
_USER_CLIENT = frozenset({USER, CLIENT_ID})


def _levels(user: str, client_id: str) -> list[tuple[int, Entity]]:
    """Kafka's eight quota levels for a user and client id, most specific first."""
    return [
        (1, entity_of([(USER, user), (CLIENT_ID, client_id)])),
        (2, entity_of([(USER, user), (CLIENT_ID, None)])),
        (3, entity_of([(USER, user)])),
        (4, entity_of([(USER, None), (CLIENT_ID, client_id)])),
        (5, entity_of([(USER, None), (CLIENT_ID, None)])),
        (6, entity_of([(USER, None)])),
        (7, entity_of([(CLIENT_ID, client_id)])),
        (8, entity_of([(CLIENT_ID, None)])),
    ]


class QuotaResolver:
    """Tags and bounds of one quota key over the configured quotas; recomputed when they change."""

    def __init__(self, key: str, quotas: ClientQuotas) -> None:
        self.key = key
        self._quotas = quotas
        self._version = -1
        self._shapes: frozenset[frozenset[str]] = frozenset()
        self._bounds: dict[Entity, float] = {}

    def _refresh(self) -> None:
        if self._version == self._quotas.version:
            return
        self._bounds = {e: q[self.key] for e, q in self._quotas.entities().items() if self.key in q}
        self._shapes = frozenset(frozenset(t for t, _ in e) for e in self._bounds)
        self._version = self._quotas.version

    @property
    def enabled(self) -> bool:
        self._refresh()
        return bool(self._shapes)

    def tags(self, user: str, client_id: str) -> Tags:
        self._refresh()
        if len(self._shapes) <= 1:
            shape = next(iter(self._shapes), frozenset({CLIENT_ID}))
            if shape == _USER_CLIENT:
                return user, client_id
            return (user, "") if shape == frozenset({USER}) else ("", client_id)
        for level, entity in _levels(user, client_id):
            if entity in self._bounds:
                if level in (1, 2, 4, 5):
                    return user, client_id
                return (user, "") if level in (3, 6) else ("", client_id)
        return "", client_id

    def bound(self, tags: Tags) -> float | None:
        """The quota bounding a sensor, None for none (Kafka's Long.MAX_VALUE)."""
        self._refresh()
        user, client_id = tags
        if user and client_id:
            wanted = (1, 2, 4, 5)
        elif user:
            wanted = (3, 6)
        elif client_id:
            wanted = (7, 8)
        else:
            return None
        for level, entity in _levels(user, client_id):
            if level in wanted and entity in self._bounds:
                return self._bounds[entity]
        return None


class ClientQuotaManager:
    """One key's rates (produce bytes, fetch bytes or request time) and throttle times."""

    def __init__(self, key: str, quotas: ClientQuotas, samples: int, window_s: int,
                 max_throttle_ms: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.resolver = QuotaResolver(key, quotas)
        self._samples = samples
        self._window_s = window_s
        self._max_throttle_ms = max_throttle_ms
        self._clock = clock
        self._sensors: RateSensors[Tags] = RateSensors(samples, window_s * 1000)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def record(self, user: str, client_id: str, value: float) -> int:
        """Record a request's value; the throttle time in ms (0: within the quota). The value stays
        recorded when the quota is violated, as in Kafka."""
        if not self.resolver.enabled:
            return 0
        now = self.now_ms()
        tags = self.resolver.tags(user, client_id)
        rate = self._sensors.get(tags, now)
        rate.record(value, now)
        bound = self.resolver.bound(tags)
        return 0 if bound is None else violation_ms(rate, bound, now, self._max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take a recorded value back (a throttled fetch sends nothing)."""
        if self.resolver.enabled:
            now = self.now_ms()
            self._sensors.get(self.resolver.tags(user, client_id), now).record(-value, now)

    def max_value_in_window(self, user: str, client_id: str) -> int:
        """The most a client may take in one window: its bound times samples - 1 windows (Kafka
        caps a consumer's fetch size with it), saturating at the int range."""
        if not self.resolver.enabled:
            return INT_MAX
        bound = self.resolver.bound(self.resolver.tags(user, client_id))
        if bound is None:
            return INT_MAX
        return min(int(bound * (self._samples - 1) * self._window_s), INT_MAX)


class ControllerMutationQuota:
    """Kafka's controller mutation quota: a token bucket per sensor, charged one permit per
    partition created or deleted. Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
    v5+): a topic asked for while the bucket is in debt fails with THROTTLING_QUOTA_EXCEEDED;
    permissive (older versions): every topic is charged and only a throttle time comes back."""

    def __init__(self, quotas: ClientQuotas, samples: int, window_s: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.resolver = QuotaResolver(CONTROLLER_MUTATION_RATE, quotas)
        self._samples = samples
        self._window_s = window_s
        self._clock = clock
        self._buckets: dict[Tags, TokenBucket] = {}

    def for_request(self, user: str, client_id: str, strict: bool) -> MutationPermits:
        if not self.resolver.enabled:
            return MutationPermits(None, strict, self._clock)
        tags = self.resolver.tags(user, client_id)
        bound = self.resolver.bound(tags)
        if bound is None:
            return MutationPermits(None, strict, self._clock)
        now = int(self._clock() * 1000)
        bucket = self._buckets.get(tags)
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket(bound, self._samples, self._window_s, now)
        bucket.rate = bound  # a changed quota applies from the next refill; the tokens are kept
        return MutationPermits(bucket, strict, self._clock)


class MutationPermits:
    """One request's use of its client's mutation bucket (none: unbounded)."""

    def __init__(self, bucket: TokenBucket | None, strict: bool, clock: Callable[[], float]) -> None:
        self._bucket = bucket
        self._strict = strict
        self._clock = clock
        self._throttle_ms = 0
        self._violated_at = 0.0

    def take(self, partitions: int) -> None:
        """Charge one topic's partitions, or KafkaApiError THROTTLING_QUOTA_EXCEEDED (no message
        on the wire: Kafka drops its default message) when a strict request's bucket is in debt."""
        if not self.allowed():
            raise KafkaApiError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
        self.charge(partitions)

    def allowed(self) -> bool:
        """Strict: whether the next topic may go ahead (the bucket is not in debt)."""
        if self._bucket is None or not self._strict:
            return True
        now = int(self._clock() * 1000)
        throttle = self._bucket.throttle_ms(now)
        if throttle > 0:
            self._throttle_ms, self._violated_at = throttle, self._clock()
            return False
        return True

    def charge(self, partitions: int) -> None:
        if self._bucket is None:
            return
        now = int(self._clock() * 1000)
        self._bucket.record(partitions, now)
        if not self._strict:
            throttle = self._bucket.throttle_ms(now)
            if throttle > 0:
                self._throttle_ms, self._violated_at = throttle, self._clock()

    def throttle_ms(self) -> int:
        """What is left of the last violation's throttle time."""
        if not self._throttle_ms:
            return 0
        elapsed = java_int(java_round((self._clock() - self._violated_at) * 1000))
        return max(0, self._throttle_ms - elapsed)


class ClientQuotaManagers:
    """The broker's client quota managers, reading the cluster's configured quotas."""

    def __init__(self, quotas: ClientQuotas, config: BrokerConfig, clock: Callable[[], float] = time.monotonic) -> None:
        samples, window_s = config.int("quota.window.num"), config.int("quota.window.size.seconds")
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, quotas, samples, window_s, clock=clock)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, quotas, samples, window_s, clock=clock)
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, quotas, samples, window_s,
                                          max_throttle_ms=window_s * 1000, clock=clock)
        self.mutation = ControllerMutationQuota(quotas, config.int("controller.quota.window.num"),
                                                config.int("controller.quota.window.size.seconds"), clock)
