"""max.connection.creation.rate, the broker-wide connection creation rate (KIP-612), on a real
wirekafka process and on real Kafka 4.3.1 with the same setting, so that both are seen to
behave alike: connections over the rate are not refused but accepted late, one per throttle
time, and it can be changed at runtime for the cluster (IncrementalAlterConfigs).

With a rate of 5, a fresh broker's first 50 connections fit the padded 10 s window; each further
one waits about 200 ms ((51 / 10 - 5) / 5 x 10 s) before the broker accepts the next."""

from __future__ import annotations

import time

from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest
from raw_connections import connect_with_api_versions, outcomes, wirekafka_and_kafka

from conformance.harness.wire import Connection

RATE = {"max.connection.creation.rate": "5"}
_Resource = IncrementalAlterConfigsRequest.AlterConfigsResource


bootstrap = wirekafka_and_kafka(RATE)


def test_connections_over_the_broker_rate_are_accepted_late(bootstrap: str) -> None:
    port = int(bootstrap.rsplit(":", 1)[1])
    began = time.monotonic()
    answers = outcomes(connect_with_api_versions(port, 55), timeout=10)
    elapsed = time.monotonic() - began
    assert [o for o, _ in answers] == ["answered"] * 55, answers
    # five connections past the burst allowance, each about 200 ms behind the one before
    assert elapsed >= 0.6, elapsed
    with Connection(bootstrap) as admin:
        answer = admin.call(IncrementalAlterConfigsRequest(resources=[_Resource(
            resource_type=4, resource_name="", configs=[_Resource.AlterableConfig(
                name="max.connection.creation.rate", config_operation=0, value="1000")])], validate_only=False), 1)
        assert [(r.error_code, r.error_message) for r in answer.responses] == [(0, None)]
