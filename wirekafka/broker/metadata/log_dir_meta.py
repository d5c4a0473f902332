"""meta.properties in each of log.dirs: which cluster and broker the directories belong to.

Every directory holds one, as Kafka writes and checks them at start-up: all must name the same
cluster (Kafka's "Invalid cluster.id" otherwise), and each this broker. A directory without one is
formatted: on the single node as Kafka 4's `kafka-storage format` writes it (version 1, cluster.id,
node.id and the directory's own directory.id), in a ZooKeeper cluster as Kafka 3.9 writes it
(version 0, broker.id, cluster.id)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Iterable

from wirekafka.broker.metadata.broker_id import broker_id_in
from wirekafka.startup_errors import StartupError
from wirekafka.storage import properties_file

log = logging.getLogger(__name__)
META_FILE = "meta.properties"


def _stored(log_dirs: Iterable[Path]) -> dict[Path, dict[str, str]]:
    """Each dir's meta.properties that exists, checked to name one cluster."""
    metas = {path: properties_file.read_properties(path)
             for d in log_dirs if (path := d / META_FILE).exists()}
    clusters = [(path, meta["cluster.id"]) for path, meta in metas.items() if meta.get("cluster.id")]
    for path, read in clusters[1:]:
        if read != clusters[0][1]:
            raise StartupError(f"Invalid cluster.id in: {path}. Expected {clusters[0][1]}, but read {read}")
    return metas


def load_kraft_meta(log_dirs: Iterable[Path], node_id: int, new_id: Callable[[], str]) -> str:
    """The single node's cluster id, from the dirs' meta.properties; new_id() names a new cluster
    when none has one. StartupError for a dir of another node."""
    log_dirs = list(log_dirs)
    metas = _stored(log_dirs)
    for path, meta in metas.items():
        if int(meta.get("node.id", node_id)) != node_id:
            raise StartupError(f"node.id {node_id} does not match {meta['node.id']} in {path}")
    cluster_id = next((m["cluster.id"] for m in metas.values() if m.get("cluster.id")), "") or new_id()
    for d in log_dirs:
        if d / META_FILE not in metas:
            properties_file.write_properties(d / META_FILE, {"cluster.id": cluster_id, "directory.id": new_id(),
                                                            "node.id": str(node_id), "version": "1"})
            log.info("formatted %s with cluster id %s", d, cluster_id)
    return cluster_id


def load_zk_meta(log_dirs: Iterable[Path], node_id: int, zk_cluster_id: str) -> str:
    """Check the dirs against the cluster's id in ZooKeeper (a dir formatted for another cluster
    or broker is refused, as Kafka 3.9 refuses it) and format those without meta.properties."""
    log_dirs = list(log_dirs)
    metas = _stored(log_dirs)
    for path, meta in metas.items():
        stored = meta.get("cluster.id")
        if stored and stored != zk_cluster_id:
            raise StartupError(
                f"The Cluster ID {zk_cluster_id} doesn't match stored clusterId Some({stored}) in "
                f"meta.properties. The broker is trying to join the wrong cluster. Configured "
                f"zookeeper.connect may be wrong.")
        stored_id = broker_id_in(meta)
        if stored_id is not None and stored_id != node_id:
            raise StartupError(f"Stored node id {stored_id} doesn't match previous node id {node_id} in {path}")
    for d in log_dirs:
        if d / META_FILE not in metas:
            properties_file.write_properties(d / META_FILE, {"version": "0", "broker.id": str(node_id),
                                                            "cluster.id": zk_cluster_id})
            log.info("formatted %s for cluster %s", d, zk_cluster_id)
    return zk_cluster_id
