"""A conformance module's own pair of brokers, for settings that would disturb the shared ones.

The session brokers run realkafka.DEFAULT_BROKER_CONFIG, shared by every scenario, and Kafka
cannot change most broker settings at runtime; a module needing others calls own_broker_pair
with its overrides and binds the three fixtures it returns to the names they carry:

    own_wirekafka, own_kafka, target = own_broker_pair({"group.max.size": "2"})

Each broker starts once for the module (a real Kafka start costs a few seconds); `target` then
gives each test item the broker of its parametrized side, as conftest's `target` does."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable, Iterator

import pytest

from testsupport.broker_process import BrokerProcess, free_port
from scripts import realkafka


@dataclass(frozen=True)
class Broker:
    name: str
    bootstrap: str


def own_broker_pair(overrides: dict[str, str]) -> tuple[Callable, Callable, Callable]:
    @pytest.fixture(scope="module")
    def own_wirekafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
        data = tmp_path_factory.mktemp("conformance-own") / "data"
        proc = BrokerProcess(data, {**realkafka.DEFAULT_BROKER_CONFIG, **overrides}).start()
        yield Broker("wirekafka", proc.bootstrap)
        proc.stop()

    @pytest.fixture(scope="module")
    def own_kafka() -> Iterator[Broker]:
        kafka = realkafka.RealKafka(overrides=overrides).start()
        yield Broker("kafka", kafka.bootstrap)
        kafka.stop()

    @pytest.fixture
    def target(request: pytest.FixtureRequest) -> Broker:
        """This module's broker for the item's side (conftest parametrizes `target` indirectly)."""
        return request.getfixturevalue("own_wirekafka" if request.param == "wirekafka" else "own_kafka")

    return own_wirekafka, own_kafka, target


@dataclass(frozen=True)
class TwoListeners:
    """A broker with a PLAINTEXT listener and a second one, by port."""

    name: str
    plaintext: int
    second: int

    def bootstrap(self, port: int) -> str:
        return f"127.0.0.1:{port}"


def own_two_listener_pair(second: str, settings: Callable[[int, int], dict[str, str]],
                          kafka_opts: Callable[[], str] = lambda: "") -> tuple[Callable, Callable, Callable]:
    """Like own_broker_pair, for brokers with a PLAINTEXT listener and a `second` one (named by
    its listener name): settings(plaintext port, second port) gives the other keys both need
    (advertised.listeners, the protocol map, ...); Kafka also keeps its CONTROLLER listener.
    kafka_opts() gives JVM system properties as KAFKA_OPTS would: Kafka's JVM gets them as options,
    wirekafka the KAFKA_OPTS variable it reads them from."""

    @pytest.fixture(scope="module")
    def own_wirekafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoListeners]:
        plaintext, other = free_port(), free_port()
        overrides = {**realkafka.DEFAULT_BROKER_CONFIG, **settings(plaintext, other),
                     "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},{second}://127.0.0.1:{other}"}
        data = tmp_path_factory.mktemp("conformance-listeners") / "data"
        proc = BrokerProcess(data, overrides, port=plaintext, env={"KAFKA_OPTS": kafka_opts()}).start()
        yield TwoListeners("wirekafka", plaintext, other)
        proc.stop()

    @pytest.fixture(scope="module")
    def own_kafka() -> Iterator[TwoListeners]:
        plaintext, controller, other = free_port(), free_port(), free_port()
        overrides = {**settings(plaintext, other),
                     "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},CONTROLLER://127.0.0.1:{controller},"
                                  f"{second}://127.0.0.1:{other}"}
        kafka = realkafka.RealKafka(overrides=overrides, port=plaintext, controller_port=controller,
                                      jvm_opts=shlex.split(kafka_opts())).start()
        yield TwoListeners("kafka", plaintext, other)
        kafka.stop()

    @pytest.fixture
    def target(request: pytest.FixtureRequest) -> TwoListeners:
        return request.getfixturevalue("own_wirekafka" if request.param == "wirekafka" else "own_kafka")

    return own_wirekafka, own_kafka, target
