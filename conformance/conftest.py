"""Targets for the conformance scenarios: a wirekafka process and/or a real Apache Kafka 4.x.

`--target wirekafka|kafka|both` picks them; without the option wirekafka always runs, and real
Kafka runs too when WIREKAFKA_CONFORMANCE_KAFKA=1 (the test script sets it) or when Kafka's jars
are already cached. Each scenario is collected once per target, so its id ends in [wirekafka] or
[kafka] and the report can put the two side by side."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import pytest

from testsupport.broker_process import BrokerProcess
from testsupport.java_tools import realkafka as _realkafka_module


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--target", choices=["wirekafka", "kafka", "both"], default=None,
                     help="conformance target broker(s)")


def _targets(config: pytest.Config) -> list[str]:
    chosen = config.getoption("--target")
    if chosen == "both":
        return ["wirekafka", "kafka"]
    if chosen:
        return [chosen]
    targets = ["wirekafka"]
    if os.environ.get("WIREKAFKA_CONFORMANCE_KAFKA") == "1":
        targets.append("kafka")
    else:
        try:
            rk = _realkafka_module()
            if (rk.kafka_home() / ".complete").exists():
                targets.append("kafka")
        except Exception:
            pass
    return targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        metafunc.parametrize("target", _targets(metafunc.config), indirect=True, scope="session")


@dataclass
class Target:
    name: str
    bootstrap: str
    node_id: int = 1


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if request.param == "wirekafka":
        proc = BrokerProcess(tmp_path_factory.mktemp("conformance-wirekafka") / "data",
                             {"group.initial.rebalance.delay.ms": "0"})
        proc.start()
        yield Target("wirekafka", proc.bootstrap)
        proc.stop()
    else:
        rk = _realkafka_module()
        kafka = rk.RealKafka()
        kafka.start()
        yield Target("kafka", kafka.bootstrap)
        kafka.stop()
