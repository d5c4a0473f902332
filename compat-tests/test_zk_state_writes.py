"""The controller's partition state writes (znode_io.write_states) on a real ZooKeeper: they go
in transactions of many writes, and each write still gets its own outcome: its new version, the
error of a state that moved meanwhile (only that write fails, not the others of its
transaction), or ControllerMovedError for all once another controller bumped the epoch."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError

from testsupport.zk_chroot import chrooted

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.controller import LeaderAndIsr, StateWrite

pytestmark = pytest.mark.zookeeper
PARTITIONS = 250  # three transactions: 100, 100 and 50 writes


@contextmanager
def _controller(zookeeper: str, chroot: str) -> Iterator[tuple[KazooClient, int]]:
    """A client of a fresh chroot, as the controller (with its epoch's znode version)."""
    with chrooted(zookeeper, chroot) as client:
        io.claim_controller(client, 1)
        yield client, client.exists(zl.CONTROLLER_EPOCH).version


def _state(leader: int, epoch: int) -> LeaderAndIsr:
    return LeaderAndIsr(leader, epoch, (1, 2, 3), 1)


def _new_topic(client: KazooClient, name: str) -> list[StateWrite]:
    io.create_topic_znodes(client, name, uuid.uuid4(), {p: [1, 2, 3] for p in range(PARTITIONS)}, {})
    return [StateWrite(name, p, _state(1, 0), None) for p in range(PARTITIONS)]


def test_new_states_then_elections_each_get_their_version(zookeeper: str, tmp_path) -> None:
    with _controller(zookeeper, f"/states-{tmp_path.name}") as (client, epoch_version):
        writes = _new_topic(client, "t")
        assert io.write_states(client, writes, epoch_version) == [0] * PARTITIONS
        moved = [StateWrite("t", p, _state(2, 1), 0) for p in range(PARTITIONS)]
        assert io.write_states(client, moved, epoch_version) == [1] * PARTITIONS
        data, stat = client.get(zl.partition_state_path("t", PARTITIONS - 1))
        assert stat.version == 1 and io._decode_state(data) == _state(2, 1)


def test_a_write_that_lost_a_race_fails_alone(zookeeper: str, tmp_path) -> None:
    """A state that moved since the read, and a new state someone else created: those two
    writes fail; the rest of their transactions are written."""
    with _controller(zookeeper, f"/race-{tmp_path.name}") as (client, epoch_version):
        writes = _new_topic(client, "t")
        client.create(zl.partition_state_path("t", 7), io.encode_state(_state(3, 0)), makepath=True)
        results = io.write_states(client, writes, epoch_version)
        assert isinstance(results[7], NodeExistsError)
        assert results[:7] + results[8:] == [0] * (PARTITIONS - 1)
        client.set(zl.partition_state_path("t", 150), io.encode_state(_state(3, 1)))  # now at version 1
        moved = [StateWrite("t", p, _state(2, 1), 0) for p in range(PARTITIONS) if p != 7]
        results = io.write_states(client, moved, epoch_version)
        assert isinstance(results[149], BadVersionError) and not isinstance(results[149], io.ControllerMovedError)
        assert results[:149] + results[150:] == [1] * (PARTITIONS - 2)
        assert io._decode_state(client.get(zl.partition_state_path("t", 150))[0]) == _state(3, 1)


def test_a_replaced_controller_writes_nothing(zookeeper: str, tmp_path) -> None:
    with _controller(zookeeper, f"/moved-{tmp_path.name}") as (client, epoch_version):
        writes = _new_topic(client, "t")
        client.set(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(9))  # another controller since
        results = io.write_states(client, writes, epoch_version)
        assert all(isinstance(r, io.ControllerMovedError) for r in results)
        assert client.exists(zl.partition_state_path("t", 0)) is None
