"""Fixtures shared by every test directory: real wirekafka processes on 127.0.0.1."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Iterator

import pytest

from testsupport.broker_process import BrokerProcess
from scripts import realkafka
from scripts import zookeeper as zookeeper_launcher
from testsupport.cluster import WirekafkaCluster

# Real Kafka brokers in tests are there for their answers, not their speed: start them the quick
# way (the C1 compiler and a shared class archive; benchmarks keep the JVM's defaults).
os.environ.setdefault(realkafka.FAST_START_ENV, "1")

# The conformance coverage plugin (it acts on conformance/ only). Registered here because pytest
# accepts pytest_plugins only in the top-level conftest: in conformance/conftest.py it breaks
# `pytest .`, where that conftest is found during collection.
pytest_plugins = ["conformance.harness.coverage"]

#: The longest files of the suite's parallel half (compat-tests/ and faults/, wall seconds each in
#: a parallel run on 2026-11-28: 300 to 900), longest first. scripts/test.sh hands whole files to
#: pytest-xdist workers in collection order (--no-loadscope-reorder): starting these first keeps
#: one of them from being the last file a worker runs while the others sit idle.
LONGEST_FIRST = (
    "compat-tests/test_cluster.py", "compat-tests/test_activity_stream.py",
    "compat-tests/test_zookeeper_launcher.py", "compat-tests/test_java_cli.py",
    "compat-tests/test_spark_kafka.py", "compat-tests/test_exactly_once.py",
    "compat-tests/test_external_suites.py", "compat-tests/test_cluster_clients.py",
    "compat-tests/test_client_quotas_cli.py", "faults/test_nemesis.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """LONGEST_FIRST's files first; every other file keeps its place (a stable sort)."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One wirekafka process shared by a whole test session (tests use unique topic names).

    WIREKAFKA_EXTERNAL_BOOTSTRAP=host:port points the same tests at another broker instead (for
    example real Kafka from `scripts/realkafka.py serve`), to check a scenario against Kafka."""
    external = os.environ.get("WIREKAFKA_EXTERNAL_BOOTSTRAP")
    if external:
        yield SimpleNamespace(bootstrap=external, port=int(external.rsplit(":", 1)[1]))  # type: ignore[misc]
        return
    data = tmp_path_factory.mktemp("wirekafka-shared") / "data"
    proc = BrokerProcess(data, {"group.initial.rebalance.delay.ms": "0"})
    proc.start()
    yield proc
    if proc.alive():
        code = proc.stop()
        assert code == 0, proc.log_tail()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Start dedicated brokers (own data dir, configurable overrides) torn down after the test."""
    started: list[BrokerProcess] = []

    def make(overrides: dict[str, str] | None = None, data_dir: Path | None = None, port: int | None = None,
             start: bool = True) -> BrokerProcess:
        proc = BrokerProcess(data_dir or tmp_path / f"data{len(started)}", overrides, port=port)
        started.append(proc)
        return proc.start() if start else proc

    yield make
    for proc in started:
        if proc.alive():
            proc.stop()


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A fresh topic name per test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real ZooKeeper server (scripts/zookeeper.py) for the session's clusters; each cluster
    lives under its own chroot."""
    server = zookeeper_launcher.ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start(timeout=60)
    yield server.connect_string
    server.stop()


@pytest.fixture
def cluster(tmp_path: Path, zookeeper: str) -> Iterator[WirekafkaCluster]:
    """A 3-broker wirekafka cluster on that ZooKeeper (testsupport/cluster.py)."""
    with WirekafkaCluster(tmp_path, zookeeper) as c:
        yield c
