"""Dynamic broker configs (broker/dynamic_config.py): Kafka's value checks, the checks of the
whole config a change would give the broker, and a change reaching the running parts: every
topic's log config, min.insync.replicas and producer expiry, kept across a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from wirekafka.config import dynamic as dc
from wirekafka.broker.state import BrokerState
from wirekafka.startup_errors import ConfigError
from wirekafka.config.ip_overrides import parse_csv_map
from wirekafka.config.loader import build_config
from wirekafka.protocol.errors import ErrorCode, KafkaApiError


def _configs(**props: str) -> dc.DynamicBrokerConfigs:
    return dc.DynamicBrokerConfigs(1, build_config({"log.dirs": "/tmp/unused", **props}))


def _refusal(call) -> tuple[ErrorCode, str | None]:
    with pytest.raises(KafkaApiError) as caught:
        call()
    return caught.value.code, caught.value.message


@pytest.mark.parametrize("key, value, message", [
    ("log.segment.bytes", "100", "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576"),
    ("message.max.bytes", "1_000", "Invalid value 1_000 for configuration message.max.bytes: Not a number of type INT"),
    ("message.max.bytes", "2147483648",
     "Invalid value 2147483648 for configuration message.max.bytes: Not a number of type INT"),
    ("log.cleaner.min.cleanable.ratio", "2",
     "Invalid value 2.0 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"),
    ("log.cleanup.policy", "delete,foo", "Invalid value foo for configuration log.cleanup.policy: "
                                         "String must be one of: compact, delete"),
    ("log.preallocate", "yes", "Invalid value yes for configuration log.preallocate: "
                               "Expected value to be either true or false"),
    ("compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: "
                                     "Value must be no more than 22"),
    ("max.connections.per.ip.overrides", "h:1,x", "Error parsing configuration property "
                                                  "'max.connections.per.ip.overrides': begin 0, end -1, length 1"),
    (dc.LEADER_RATE, "-1", f"Invalid value -1 for configuration {dc.LEADER_RATE}: Value must be at least 0"),
])
def test_values_are_checked_as_kafka_checks_them(key: str, value: str, message: str) -> None:
    assert _refusal(lambda: dc.check_value(key, value)) == (ErrorCode.INVALID_REQUEST, message)


def test_overrides_parse_as_kafka_parses_them() -> None:
    assert parse_csv_map("") == {}
    assert parse_csv_map(" h : 3 , a:1:2,") == {"h": 3, "a:1": 2}
    with pytest.raises(ValueError, match='For input string: "x"'):
        parse_csv_map("h:x")


def test_whole_config_checks() -> None:
    configs = _configs()
    assert _refusal(lambda: configs.check_change(dc.DEFAULT_ENTITY, {"log.cleaner.threads": "0"})) == (
        ErrorCode.INVALID_REQUEST, "/ by zero")
    configs.check_change(dc.DEFAULT_ENTITY, {"log.cleaner.threads": "2"})  # at most double: fine
    code, message = _refusal(lambda: configs.check_change("1", {"num.io.threads": "17"}))
    assert "value should not be greater than double the current value 8" in message
    code, message = _refusal(lambda: configs.check_change("1", {"num.io.threads": "3"}))
    assert "value should be at least half the current value 8" in message
    # this broker's own setting wins over the default, so a default it does not see is not checked
    configs.replace("1", {"num.io.threads": "8"})
    configs.check_change(dc.DEFAULT_ENTITY, {"num.io.threads": "100"})
    assert _refusal(lambda: configs.check_change("1", {"log.retention.ms": "0"}))[1] == (
        "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
    configs.check_change("1", {"log.retention.ms": "-5"})  # negative: unlimited
    assert _refusal(lambda: configs.check_change("1", {"max.connections.per.ip": "0"}))[1].startswith(
        "requirement failed: max.connections.per.ip can be set to zero only if")
    configs.check_change("1", {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "h:1"})


def test_current_values_and_observers() -> None:
    configs = _configs(**{"num.io.threads": "6"})
    seen = []
    configs.observe(lambda: seen.append(configs.current_int("num.io.threads")))
    assert configs.current("num.io.threads") == 6 and configs.lookup("num.io.threads") is None
    configs.replace(dc.DEFAULT_ENTITY, {"num.io.threads": "9"})
    configs.replace("1", {"num.io.threads": "12"})
    configs.replace("1", {"num.io.threads": "12"})  # no change: no call
    configs.replace("1", {})
    assert seen == [9, 12, 9]
    assert configs.lookup("num.io.threads") == ("9", dc.SOURCE_DYNAMIC_DEFAULT_BROKER)


def test_a_change_reaches_every_topic_and_survives_a_restart(tmp_path: Path) -> None:
    props = {"log.dirs": str(tmp_path / "data")}
    state = BrokerState(build_config(props))
    state.load()
    metadata = state.metadata
    assert metadata.broker_configs.defaults == {"min.insync.replicas": "1"}  # formatted as Kafka 4 does

    async def main() -> None:
        topic = await metadata.create_topic("t", 2)
        kept = await metadata.create_topic("kept", 1, {"retention.ms": "1000"})
        await metadata.set_broker_configs("1", {"log.retention.ms": "3600000", "producer.id.expiration.ms": "5000"})
        await metadata.set_broker_configs(dc.DEFAULT_ENTITY, {"min.insync.replicas": "2",
                                                               "log.cleanup.policy": "compact,delete"})
        for p in topic.partitions:
            assert (p.log_config.retention_ms, p.log_config.compact) == (3_600_000, True)
            assert (p.min_insync_replicas, p.producer_state.expiration_ms) == (2, 5000)
            assert p.replica_set.effective_min_isr(p.min_insync_replicas) == 1  # one replica: Kafka counts at most that
        assert kept.partitions[0].log_config.retention_ms == 1000  # the topic's override wins

    trio.run(main)
    state.shutdown()
    saved = json.loads((tmp_path / "data" / "wirekafka-topics.json").read_text())["broker_configs"]
    assert saved["1"]["log.retention.ms"] == "3600000"
    again = BrokerState(build_config(props))
    again.load()
    assert again.metadata.topic("t").partitions[0].log_config.retention_ms == 3_600_000
    assert again.metadata.topic("t").partitions[0].producer_state.expiration_ms == 5000
    again.shutdown()


def test_static_overrides_are_still_checked_at_start_up() -> None:
    with pytest.raises(ConfigError, match="does not resolve"):
        build_config({"log.dirs": "/tmp/unused", "max.connections.per.ip.overrides": "no-such-host.invalid:3"})
