"""broker.id in ZooKeeper mode (Kafka 3.9's bounds, checked on Kafka 3.9.1): -1 (the default)
asks for a generated id, hand-given ids stop at reserved.broker.max.id, and without generation an
id must be given. Single-node mode keeps node.id's default of 1."""

from __future__ import annotations

import pytest

from wirekafka.broker.metadata.broker_id import stored_broker_id
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config

ZK = {"log.dirs": "/tmp/unused", "zookeeper.connect": "127.0.0.1:2181"}


def test_zookeeper_mode_without_an_id_asks_for_one() -> None:
    assert build_config(ZK).node_id == -1
    assert build_config({"log.dirs": "/tmp/unused"}).node_id == 1  # the embedded single node
    assert build_config({**ZK, "node.id": "4"}).node_id == 4
    given = build_config(ZK).with_node_id(1001)
    assert given.node_id == 1001 and given["broker.id"] == 1001 and "broker.id" in given.overridden


@pytest.mark.parametrize("props, message", [
    ({"broker.id": "1001"}, "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id"),
    ({"broker.id": "-2"}, "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id"),
    ({"broker.id.generation.enable": "false"}, "broker.id must be greater than or equal to 0"),
])
def test_kafkas_bounds_on_broker_id(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        build_config({**ZK, **props})


def test_bounds_move_with_reserved_broker_max_id() -> None:
    assert build_config({**ZK, "broker.id": "1001", "reserved.broker.max.id": "2000"}).node_id == 1001
    assert build_config({**ZK, "broker.id": "0", "broker.id.generation.enable": "false"}).node_id == 0
    assert build_config({"log.dirs": "/tmp/unused", "broker.id": "5000"}).node_id == 5000  # not ZooKeeper mode


def test_stored_broker_id_comes_from_meta_properties(tmp_path) -> None:
    assert stored_broker_id(tmp_path) is None
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=1003\ncluster.id=abc\n")
    assert stored_broker_id(tmp_path) == 1003
