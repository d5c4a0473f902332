"""The two kinds of cluster a schedule runs on, set up the same way: three wirekafka brokers
(testsupport/cluster.py) or three Kafka 3.9.1 ZooKeeper-mode brokers (scripts/realkafka.py), each
on its own chroot of one ZooKeeper, with the same settings, and one topic of replication factor 3
and min.insync.replicas=2 whose partitions all have a leader and a full ISR before the first fault
(and, when the transactional copy job runs, its output topic made the same way);
the controller and leader epochs are watched in ZooKeeper throughout (faults/epochs.py).
Each broker reaches ZooKeeper through a link the nemesis can cut (faults/proxy.py), and has two
listeners: PLAINTEXT for clients and REPLICATION (inter.broker.listener.name), which its peers
reach through another such link: cutting it isolates the broker from the other brokers alone.
When the schedule fills disks, each broker's log dir is a tmpfs of its own (faults/disks.py),
mounted before the broker first starts and unmounted after it stopped; nothing else is on it."""

from __future__ import annotations

import logging
from contextlib import nullcontext
from pathlib import Path
from typing import ContextManager, Iterable

from confluent_kafka.admin import AdminClient, NewTopic

from faults.checkers import Verdict
from faults.copy_job import CopyJob
from faults.disks import tmpfs_disks
from faults.epochs import EpochWatch
from faults.nemesis import NodeLinks, run_schedule
from faults.proxy import Link
from faults.schedule import DISK_FULL, SLOW_DISK, Fault
from faults.slow_disk import SlowDisk
from scripts import realkafka
from testsupport.broker_process import free_port
from testsupport.cluster import SESSION_TIMEOUT_MS, WirekafkaCluster, every_broker_knows_the_cluster, wait_for

NODES = (1, 2, 3)
# what both clusters run with: the test cluster's ZooKeeper session and ISR lag
SETTINGS = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), "replica.lag.time.max.ms": "4000",
            "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
            "offsets.topic.num.partitions": "5", "transaction.state.log.num.partitions": "5",
            "unclean.leader.election.enable": "false"}
SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000
REPLICA_LAG_S = int(SETTINGS["replica.lag.time.max.ms"]) / 1000
_LOG = logging.getLogger("librdkafka")
# each log dir's tmpfs when the schedule fills disks: the run writes a few MB per broker (the
# internal topics included), so a full disk is one filler file away, and memory stays small
DISK_MB = 48
# the workload's topics roll a segment every 10 s, so that a full disk also meets a roll (Kafka 4
# and wirekafka refuse a segment.bytes under 1 MB, which this workload takes minutes to fill)
TOPIC_CONFIG = {"min.insync.replicas": "2", "segment.ms": "10000"}
GROUP_MEMBERS = 3  # the consumer group's consumers, when it runs


def _disks(directories: Iterable[Path], faults: list[Fault]) -> ContextManager[None]:
    """The log dirs on tmpfs if a fault (or a part of a combined one) fills a disk."""
    if any(DISK_FULL in f.kinds() for f in faults):
        return tmpfs_disks(directories, DISK_MB)
    return nullcontext()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _LOG})
    admin.create_topics([NewTopic(topic, partitions, 3, config=dict(TOPIC_CONFIG))])[topic].result(30)

    def every_isr_full() -> bool:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        return len(meta.partitions) == partitions and all(
            p.leader >= 0 and len(p.isrs) == 3 for p in meta.partitions.values())

    wait_for(every_isr_full, 60, f"{topic}'s partitions led with full ISRs")


def on_wirekafka(workdir: Path, zookeeper: str, topic: str, partitions: int, faults: list[Fault],
                 rate: float = 100.0, copy: bool = False, group: bool = False) -> Verdict:
    links = _links(zookeeper, workdir)
    cluster = WirekafkaCluster(workdir, zookeeper, overrides=SETTINGS)
    for node, broker in cluster.brokers.items():
        broker.overrides.update(_through_links(broker.port, links[node], cluster.chroot))
        broker.env.update(_disk_env(links[node], faults))
    try:
        with _disks([b.data_dir for b in cluster.brokers.values()], faults), cluster:
            copier = _create_topics(cluster.bootstrap, topic, partitions, copy, workdir)
            with EpochWatch(zookeeper + cluster.chroot, topic, partitions) as watch:
                verdict = run_schedule(cluster.brokers, links, lambda: cluster.bootstrap, topic, partitions, faults,
                                       rate, copier, GROUP_MEMBERS if group else 0)
            verdict.went_back = watch.went_back
            return verdict
    finally:
        _close(links)


def on_kafka39(workdir: Path, zookeeper: str, topic: str, partitions: int, faults: list[Fault],
               rate: float = 100.0, copy: bool = False, group: bool = False) -> Verdict:
    chroot = f"/nemesis-k39-{workdir.name}"
    links = _links(zookeeper, workdir)
    ports = {n: free_port() for n in NODES}
    brokers: list = []
    # RealKafka's data dir is <workdir>/broker-<id>/data (scripts/jvm_process.py)
    with _disks([workdir / f"broker-{n}" / "data" for n in NODES], faults):
        try:
            return _run_kafka39(workdir, zookeeper, chroot, links, ports, brokers, topic, partitions, faults, rate,
                                copy, group)
        finally:
            realkafka.stop_all(brokers)
            _close(links)


def _run_kafka39(workdir: Path, zookeeper: str, chroot: str, links: dict[int, NodeLinks], ports: dict[int, int],
                 brokers: list, topic: str, partitions: int, faults: list[Fault], rate: float, copy: bool,
                 group: bool) -> Verdict:
    """on_kafka39's run; the brokers it starts are put in `brokers`, for the caller to stop."""
    brokers[:] = realkafka.start_zk_cluster(
        zookeeper + chroot, NODES, workdir=workdir, heap="256m", version=realkafka.KAFKA_ZK_VERSION,
        overrides=SETTINGS, ports=ports,
        broker_overrides={n: _through_links(ports[n], links[n], chroot) for n in NODES},
        broker_env={n: _disk_env(links[n], faults) for n in NODES})
    bootstrap = ",".join(b.bootstrap for b in brokers)
    wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in brokers]), 60,
             "every Kafka 3.9 broker naming all brokers and the controller")
    copier = _create_topics(bootstrap, topic, partitions, copy, workdir)
    with EpochWatch(zookeeper + chroot, topic, partitions) as watch:
        verdict = run_schedule({b.broker_id: b for b in brokers}, links, lambda: bootstrap, topic, partitions,
                               faults, rate, copier, GROUP_MEMBERS if group else 0)
    verdict.went_back = watch.went_back
    return verdict


def _create_topics(bootstrap: str, topic: str, partitions: int, copy: bool, workdir: Path) -> CopyJob | None:
    """The workload's topic; with copy, the copy job's output topic too, and the job (not started)."""
    create_topic(bootstrap, topic, partitions)
    if not copy:
        return None
    create_topic(bootstrap, f"{topic}-copy", partitions)
    return CopyJob(bootstrap, topic, f"{topic}-copy", workdir / "copy-job.log")


def _links(zookeeper: str, workdir: Path) -> dict[int, NodeLinks]:
    """Each node's links: to the ZooKeeper server (a connect string of one 127.0.0.1:port), and
    to its own inter-broker listener on a port picked here; and its disk's delay switch (a
    control file in workdir)."""
    host, port = zookeeper.split("/", 1)[0].rsplit(":", 1)
    return {n: NodeLinks(Link((host, int(port))), Link(("127.0.0.1", free_port())),
                         SlowDisk(workdir / f"slow-io-{n}")) for n in NODES}


def _disk_env(links: NodeLinks, faults: list[Fault]) -> dict[str, str]:
    """What a broker's environment needs for the schedule's slow disks: the preload, if any
    fault (or part of a combined one) slows a disk."""
    return links.disk.env if any(SLOW_DISK in f.kinds() for f in faults) else {}


def _through_links(client_port: int, links: NodeLinks, chroot: str) -> dict[str, str]:
    """A broker's settings for reaching ZooKeeper through its link, and being reached by its
    peers through the other (advertised as its REPLICATION listener's address)."""
    replication_port = links.peers.upstream[1]
    return {"zookeeper.connect": links.zookeeper.address + chroot,
            "listeners": f"PLAINTEXT://127.0.0.1:{client_port},REPLICATION://127.0.0.1:{replication_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{client_port},REPLICATION://{links.peers.address}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
            "inter.broker.listener.name": "REPLICATION"}


def _close(links: dict[int, NodeLinks]) -> None:
    for link in links.values():
        link.close()
