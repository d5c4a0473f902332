"""A kazoo client of a fresh chroot on the tests' ZooKeeper, holding Kafka's top-level paths: for
tests that read and write the cluster's znodes directly, without brokers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient

from wirekafka.broker.metadata.zk.znode_io import create_top_level_paths


@contextmanager
def chrooted(zookeeper: str, chroot: str) -> Iterator[KazooClient]:
    """A started client of `chroot` (created if missing) on `zookeeper`, stopped afterwards."""
    plain = KazooClient(hosts=zookeeper)
    plain.start(timeout=15)
    plain.ensure_path(chroot)
    plain.stop()
    plain.close()
    client = KazooClient(hosts=zookeeper + chroot)
    client.start(timeout=15)
    try:
        create_top_level_paths(client)
        yield client
    finally:
        client.stop()
        client.close()
