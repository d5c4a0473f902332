"""Replication throttles: the throttled-replicas lists, Kafka's SimpleRate, the quota bound and
the dynamic broker configs it comes from."""

from __future__ import annotations

import pytest

from wirekafka.config import dynamic as dc
from wirekafka.config.loader import build_config
from wirekafka.broker.quotas.stats import SimpleRate
from wirekafka.broker.quotas.replication_quota import ALL, ReplicationQuota, lists_partition, throttled_partitions
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def test_throttled_partitions_keep_this_brokers_entries() -> None:
    assert throttled_partitions("0:1,1:2, 2:1 ,3:3", 1) == frozenset({0, 2})
    assert throttled_partitions("0:1,1:2", 5) == frozenset()
    assert throttled_partitions(" * ", 1) is ALL
    assert lists_partition("*", 7, 12)
    assert lists_partition("4:7", 7, 4) and not lists_partition("4:7", 7, 5) and not lists_partition("4:7", 8, 4)
    assert not lists_partition(None, 1, 0) and not lists_partition("", 1, 0)


def test_simple_rate_divides_by_the_time_since_the_oldest_sample_at_least_one_window() -> None:
    rate = SimpleRate(samples=11, window_ms=1000)
    assert rate.measure(0) == 0.0
    rate.record(1000, 0)
    assert rate.measure(0) == 1000.0  # one window at least: 1000 B / 1 s
    assert rate.measure(500) == 1000.0
    assert rate.measure(4000) == 250.0  # 1000 B over 4 s
    rate.record(3000, 4000)  # a new sample (the first one is complete)
    assert rate.measure(4000) == 1000.0  # 4000 B over 4 s
    assert rate.measure(8000) == 500.0


def test_simple_rate_forgets_samples_older_than_all_windows() -> None:
    rate = SimpleRate(samples=3, window_ms=1000)
    rate.record(9000, 0)
    rate.record(300, 1000)
    assert rate.measure(2000) == pytest.approx(9300 / 2)
    assert rate.measure(3000) == pytest.approx(300 / 2)  # the 0 ms sample expired at 3000 ms
    rate.record(600, 3500)
    rate.record(600, 4600)  # a fourth slot: Kafka keeps samples + 1, one overlapping the window
    # the 1000 ms sample expires too (its last event 3.6 s old) and restarts empty at 4600; the
    # slot reset at 3000 ms is now the oldest start: 1200 B over 1.6 s, as Kafka's SampledStat has it
    assert rate.measure(4600) == pytest.approx(1200 / 1.6)


def test_quota_is_exceeded_only_above_a_finite_bound() -> None:
    now = [100.0]
    bound = [dc.UNLIMITED]
    quota = ReplicationQuota(lambda: bound[0], samples=11, window_s=1, clock=lambda: now[0])
    quota.record(10_000_000)
    assert not quota.exceeded()  # unlimited
    bound[0] = 10_000_000
    assert not quota.exceeded()  # exactly at the bound is acceptable, as Kafka's upper bound
    bound[0] = 9_999_999
    assert quota.exceeded()
    now[0] += 2  # 10 MB over 2 s
    assert not quota.exceeded()


def test_dynamic_configs_resolve_per_broker_then_default_then_unlimited() -> None:
    configs = dc.DynamicBrokerConfigs(2, build_config({}))
    assert configs.rate(dc.LEADER_RATE) == dc.UNLIMITED
    configs.replace(dc.DEFAULT_ENTITY, {dc.LEADER_RATE: "300", dc.FOLLOWER_RATE: "400"})
    configs.replace("3", {dc.LEADER_RATE: "5"})  # another broker's: not ours
    assert (configs.rate(dc.LEADER_RATE), configs.rate(dc.FOLLOWER_RATE)) == (300, 400)
    configs.replace("2", {dc.LEADER_RATE: "100"})
    assert (configs.rate(dc.LEADER_RATE), configs.rate(dc.FOLLOWER_RATE)) == (100, 400)
    configs.replace("2", {})
    assert configs.rate(dc.LEADER_RATE) == 300 and "2" not in configs.snapshot()


@pytest.mark.parametrize("value, message", [
    ("-1", "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"),
    ("abc", "Invalid value abc for configuration leader.replication.throttled.rate: Not a number of type LONG"),
    ("1.5", "Invalid value 1.5 for configuration leader.replication.throttled.rate: Not a number of type LONG"),
    ("", "Invalid value  for configuration leader.replication.throttled.rate: Not a number of type LONG"),
    ("9223372036854775808", "Invalid value 9223372036854775808 for configuration leader.replication.throttled.rate: "
                            "Not a number of type LONG"),
])
def test_invalid_throttle_values_are_refused_with_kafkas_text(value: str, message: str) -> None:
    with pytest.raises(KafkaApiError) as err:
        dc.check_value(dc.LEADER_RATE, value)
    assert (err.value.code, err.value.message) == (ErrorCode.INVALID_REQUEST, message)


def test_valid_throttle_values() -> None:
    for value in ("0", "1048576", " 42 ", str(dc.UNLIMITED)):
        dc.check_value(dc.FOLLOWER_RATE, value)
