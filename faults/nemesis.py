"""Runs a fault schedule against a cluster while the workload writes, then heals it, reads the
topic back and judges it, and compares the replicas' committed bytes. The cluster is any mapping
of node id to a process handle with kill(), start(), proc and data_dir (testsupport's
BrokerProcess, scripts.realkafka's RealKafka), each reaching ZooKeeper, and reached by its peers,
through links of its own: the same schedule runs on wirekafka and on Kafka 3.9."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol

from faults.checkers import Verdict, judge, judge_copy
from faults.copy_job import CopyJob
from faults.replicas import divergent_replicas
from faults.proxy import Link
from faults.schedule import KILL, PAUSE, PEER_CUT, ZK_CUT, Fault
from faults.workload import AckingProducer, read_back, read_committed

log = logging.getLogger(__name__)


class Node(Protocol):
    proc: subprocess.Popen | None
    data_dir: Path  # its log.dirs: partition directories are <topic>-<p> in it

    def kill(self) -> None: ...
    def start(self) -> object: ...


@dataclass(frozen=True)
class NodeLinks:
    zookeeper: Link  # the node's way to ZooKeeper
    peers: Link  # the way other brokers reach the node's inter-broker listener

    def heal(self) -> None:
        self.zookeeper.heal()
        self.peers.heal()

    def close(self) -> None:
        self.zookeeper.close()
        self.peers.close()


def run_schedule(nodes: Mapping[int, Node], links: Mapping[int, NodeLinks], bootstrap: Callable[[], str],
                 topic: str, partitions: int, faults: list[Fault], rate: float = 100.0,
                 copier: CopyJob | None = None) -> Verdict:
    """The workload through every fault of the schedule, one at a time; the verdict on what was
    acknowledged, after every node is back and every link healed. With a copier (a transactional
    job copying the topic into one of as many partitions), its copy is judged exactly-once."""
    producer = AckingProducer(bootstrap(), topic, partitions, rate)
    producer.start()
    try:
        if copier is not None:
            copier.start()
        try:
            time.sleep(2.0)  # some acknowledgements before the first fault
            for fault in faults:
                _inject(nodes[fault.node], links[fault.node], fault)
                time.sleep(fault.settle_s)
        finally:
            for node_id, node in nodes.items():  # whatever a failed step left down comes back
                links[node_id].heal()
                _heal(node)
            left = producer.finish(120)
            log.info("nemesis on %s: %d acknowledged, %d failed, %d unanswered", topic, len(producer.acks),
                     producer.failed, left)
        stored, high_watermarks = read_back(bootstrap(), topic, partitions, 120)
        copied, copy_failed = None, None
        if copier is not None:
            try:
                copied = copier.finish(high_watermarks, 300)
            except (RuntimeError, TimeoutError) as exc:  # judged with the rest: the producer's records still count
                log.error("nemesis on %s: %s", topic, exc)
                copy_failed = str(exc).splitlines()[0]
    finally:  # the copy job's JVM never outlives the run, however it ends (a failed restart, say)
        if copier is not None:
            copier.stop()
    verdict = judge(producer.acks, stored)
    verdict.unacknowledged = producer.failed + left
    verdict.copy_failed = copy_failed
    if copier is not None and copied is not None:
        verdict.copy = judge_copy(list(stored.values()), read_committed(bootstrap(), copier.sink, partitions, 120),
                                  copied)
    for p, high_watermark in high_watermarks.items():
        verdict.divergent += divergent_replicas({n: node.data_dir / f"{topic}-{p}" for n, node in nodes.items()},
                                                high_watermark)
    log.info("nemesis on %s: %s", topic, verdict.row())
    return verdict


def _inject(node: Node, links: NodeLinks, fault: Fault) -> None:
    assert node.proc is not None
    log.info("nemesis: %s node pid %d for %.1fs", fault.kind, node.proc.pid, fault.hold_s)
    if fault.kind == KILL:
        node.kill()
        time.sleep(fault.hold_s)
        node.start()
    elif fault.kind == PAUSE:
        os.kill(node.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(fault.hold_s)
        finally:
            os.kill(node.proc.pid, signal.SIGCONT)
    elif fault.kind in (ZK_CUT, PEER_CUT):
        link = links.zookeeper if fault.kind == ZK_CUT else links.peers
        link.cut()
        try:
            time.sleep(fault.hold_s)
        finally:
            link.heal()
    else:
        raise ValueError(fault.kind)


def _heal(node: Node) -> None:
    if node.proc is None:
        return
    if node.proc.poll() is not None:
        node.start()
    else:
        os.kill(node.proc.pid, signal.SIGCONT)
