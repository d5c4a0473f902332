"""The features ApiVersions advertises: on a single node transaction.version, supported 0-2 and
finalized at 2 as a fresh Kafka 4.3.1 cluster has it (so Kafka 4.x clients use transaction
version 2), left out of the supported list before v4 as Kafka leaves a minimum of 0 out; in
ZooKeeper mode no features at all, as Kafka 3.9 answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wirekafka.broker.handlers import api_versions
from wirekafka.config.loader import build_config


def _answer(version: int, zookeeper: bool):
    props = {"zookeeper.connect": "127.0.0.1:2181/wk", "broker.id": "1"} if zookeeper else {}
    ctx = SimpleNamespace(version=version, state=SimpleNamespace(config=build_config(props)))
    response = api_versions.handle(ctx, None)  # type: ignore[arg-type]
    return ([(f.name, f.min_version, f.max_version) for f in response.supported_features],
            response.finalized_features_epoch,
            [(f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features])


def test_a_single_node_finalizes_transaction_version_2() -> None:
    assert _answer(4, zookeeper=False) == ([("transaction.version", 0, 2)], 0, [("transaction.version", 2, 2)])
    assert _answer(3, zookeeper=False) == ([], 0, [("transaction.version", 2, 2)])


@pytest.mark.parametrize("version", [3, 4])
def test_zookeeper_mode_advertises_no_features(version: int) -> None:
    assert _answer(version, zookeeper=True) == ([], -1, [])
