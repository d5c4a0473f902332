"""wirekafka's pytest plugin (entry point ``wirekafka``): a real Kafka-protocol broker for a test
suite, started in the test process the first time a test asks for it.

Fixtures:
- ``wirekafka_broker`` (session): a running embedded Broker; its ``bootstrap_servers`` is what
  clients connect to. Under pytest-xdist each worker process has its own.
- ``wirekafka_topic`` (function): a factory; ``wirekafka_topic(partitions=1, config=None)``
  creates a topic named after the calling test and returns its name; the test's topics are
  deleted when it ends.

Options:
- ``--wirekafka-bootstrap HOST:PORT``: use a broker that is already running (wirekafka, Kafka)
  instead of starting one;
- ``--wirekafka-config KEY=VALUE`` (repeatable; ini: ``wirekafka_config``, one KEY=VALUE a line):
  broker configuration for the embedded broker, over the embedded defaults;
- ``--wirekafka-keep-data``: keep the embedded broker's data directory (its path is logged).

Nothing starts, and nothing is imported beyond this module, until a test uses a fixture."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

import pytest

if TYPE_CHECKING:
    from wirekafka.embedded import Broker

log = logging.getLogger(__name__)

TOPIC_NAME_MAX = 249  # Kafka's limit
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]+")
ADMIN_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class ExternalBroker:
    """A broker the plugin did not start (--wirekafka-bootstrap)."""

    bootstrap_servers: str


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wirekafka", "wirekafka: an embedded Kafka-protocol broker for tests")
    group.addoption("--wirekafka-bootstrap", metavar="HOST:PORT", default=None,
                    help="point wirekafka_broker at this running broker instead of starting one")
    group.addoption("--wirekafka-config", metavar="KEY=VALUE", action="append", default=[],
                    help="a server.properties key for the embedded broker (repeatable)")
    group.addoption("--wirekafka-keep-data", action="store_true", default=False,
                    help="keep the embedded broker's data directory after the session")
    parser.addini("wirekafka_config", type="linelist", default=[],
                  help="server.properties keys for the embedded broker, one KEY=VALUE a line")


def broker_config(lines: list[str]) -> dict[str, str]:
    """KEY=VALUE lines as a config dict; a later line wins."""
    config: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"wirekafka: expected KEY=VALUE, got {line!r}")
        config[key.strip()] = value.strip()
    return config


@pytest.fixture(scope="session")
def wirekafka_broker(pytestconfig: pytest.Config) -> Iterator[Broker | ExternalBroker]:
    """The session's broker: started on first use, stopped (cleanly) at the end of the session."""
    external = pytestconfig.getoption("wirekafka_bootstrap")
    if external:
        yield ExternalBroker(external)
        return
    from wirekafka.embedded import Broker

    given = pytestconfig.getoption("wirekafka_config") or []
    config = broker_config([*pytestconfig.getini("wirekafka_config"), *given])
    keep = bool(pytestconfig.getoption("wirekafka_keep_data"))
    with Broker(config, keep_data=keep) as broker:
        if keep:
            log.warning("wirekafka: the embedded broker's data stays in %s", broker.data_dir)
        yield broker


class _Topics:
    """The session's admin client and topic counter, shared by every test's wirekafka_topic."""

    def __init__(self, bootstrap_servers: str) -> None:
        from kafka.admin import KafkaAdminClient

        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="wirekafka-pytest")
        self.count = 0

    def create(self, base: str, partitions: int, config: Mapping[str, object] | None, replication_factor: int) -> str:
        """A topic under a name no other call of this session used; a name left on an external
        broker by an earlier run is skipped for the next number."""
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        from wirekafka.embedded import property_value

        configs = {k: property_value(v) for k, v in (config or {}).items()}
        while True:
            self.count += 1
            suffix = f"-{self.count}"
            name = base[-(TOPIC_NAME_MAX - len(suffix)):].lstrip("-.") + suffix  # the test's name is at the end
            try:
                self.admin.create_topics([NewTopic(name, partitions, replication_factor, topic_configs=configs)],
                                         timeout_ms=ADMIN_TIMEOUT_MS)
            except TopicAlreadyExistsError:
                continue
            return name

    def delete(self, names: list[str]) -> None:
        from kafka.errors import UnknownTopicOrPartitionError

        for name in names:
            try:
                self.admin.delete_topics([name], timeout_ms=ADMIN_TIMEOUT_MS)
            except UnknownTopicOrPartitionError:
                pass  # the test deleted it itself

    def close(self) -> None:
        self.admin.close()


@pytest.fixture(scope="session")
def _wirekafka_topics(wirekafka_broker: Broker | ExternalBroker) -> Iterator[_Topics]:
    topics = _Topics(wirekafka_broker.bootstrap_servers)
    yield topics
    topics.close()


@pytest.fixture
def wirekafka_topic(request: pytest.FixtureRequest, _wirekafka_topics: _Topics) -> Iterator[Callable[..., str]]:
    """Factory: ``wirekafka_topic(partitions=1, config=None, replication_factor=1)`` creates a
    topic named after the test (its node id, then a number) and returns the name."""
    base = _ILLEGAL.sub("-", request.node.nodeid).strip("-.") or "topic"
    created: list[str] = []

    def make(partitions: int = 1, config: Mapping[str, object] | None = None, replication_factor: int = 1) -> str:
        name = _wirekafka_topics.create(base, partitions, config, replication_factor)
        created.append(name)
        return name

    yield make
    _wirekafka_topics.delete(created)
