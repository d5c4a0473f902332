"""Runs a fault schedule against a cluster while the workload writes, then heals it, reads the
topic back and judges it, and compares the replicas' committed bytes. The cluster is any mapping
of node id to a process handle with kill(), start(), proc and data_dir (testsupport's
BrokerProcess, scripts.realkafka's RealKafka), each reaching ZooKeeper, and reached by its peers,
through links of its own, its data_dir a tmpfs of its own when the schedule fills disks
(faults/disks.py): the same schedule runs on wirekafka and on Kafka 3.9."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol

from faults import disks
from faults.checkers import Verdict, judge, judge_copy, judge_group
from faults.copy_job import CopyJob
from faults.replicas import Writer, divergent_replicas, writers
from faults.proxy import Link
from faults.schedule import COMBINED, DISK_FULL, KILL, PAUSE, PEER_CUT, SLOW_DISK, TORN_TAIL, ZK_CUT, Fault
from faults.slow_disk import SlowDisk
from faults.workload import AckingProducer, ConsumerGroup, read_back, read_committed

log = logging.getLogger(__name__)

# what a slow disk adds to each write and flush of a broker's files: a disk a hundred times slower
# than a healthy one's flush, so acks=all waits and a slow follower falls behind
SLOW_DISK_MS = 50


class Node(Protocol):
    proc: subprocess.Popen | None
    data_dir: Path  # its log.dirs: partition directories are <topic>-<p> in it

    def kill(self) -> None: ...
    def start(self) -> object: ...


@dataclass(frozen=True)
class NodeLinks:
    """What the nemesis holds of a node besides its process: its links, and its disk's delay."""

    zookeeper: Link  # the node's way to ZooKeeper
    peers: Link  # the way other brokers reach the node's inter-broker listener
    disk: SlowDisk  # in force only when the node was started with disk.env (a schedule with SLOW_DISK)

    def heal(self) -> None:
        self.zookeeper.heal()
        self.peers.heal()
        self.disk.heal()

    def close(self) -> None:
        self.zookeeper.close()
        self.peers.close()


def run_schedule(nodes: Mapping[int, Node], links: Mapping[int, NodeLinks], bootstrap: Callable[[], str],
                 topic: str, partitions: int, faults: list[Fault], rate: float = 100.0,
                 copier: CopyJob | None = None, group: int = 0) -> Verdict:
    """The workload through every fault of the schedule, one at a time (a combined fault is two at
    once); the verdict on what was acknowledged, after every node is back and every link healed.
    With a copier (a transactional job copying the topic into one of as many partitions), its
    copy is judged exactly-once; with group > 0, a consumer group of that many consumers reads
    the topic throughout and is drained to its end after the faults (checkers.judge_group)."""
    producer = AckingProducer(bootstrap(), topic, partitions, rate)
    producer.start()
    consumers = ConsumerGroup(bootstrap(), topic, group) if group else None
    group_stopped = False
    try:
        if consumers is not None:
            consumers.start()
        if copier is not None:
            copier.start()
        try:
            time.sleep(2.0)  # some acknowledgements before the first fault
            for fault in faults:
                _inject(nodes, links, fault, topic)
                time.sleep(fault.settle_s)
        finally:
            for node_id, node in nodes.items():  # whatever a failed step left down comes back
                links[node_id].heal()
                _heal(node)
            left = producer.finish(120)
            log.info("nemesis on %s: %d acknowledged, %d failed, %d unanswered", topic, len(producer.acks),
                     producer.failed, left)
        stored, high_watermarks = read_back(bootstrap(), topic, partitions, 120)
        final_offsets: dict[int, int] = {}
        if consumers is not None:
            consumers.drain(high_watermarks, 120)  # not drained: judged so (undrained partitions)
            consumers.stop()
            group_stopped = True
            final_offsets = consumers.final_offsets(partitions)
        copied, copy_failed = None, None
        if copier is not None:
            try:
                copied = copier.finish(high_watermarks, 300)
            except (RuntimeError, TimeoutError) as exc:  # judged with the rest: the producer's records still count
                log.error("nemesis on %s: %s", topic, exc)
                copy_failed = str(exc).splitlines()[0]
    finally:  # the copy job's JVM never outlives the run, however it ends; the group's members are stopped
        if copier is not None:
            copier.stop()
        if consumers is not None and not group_stopped:
            consumers.stop()
    divergent: list[str] = []
    stored_by: dict[tuple[int, int], Writer] = {}
    for p, high_watermark in high_watermarks.items():
        dirs = {n: node.data_dir / f"{topic}-{p}" for n, node in nodes.items()}
        divergent += divergent_replicas(dirs, high_watermark)
        # identical below the high watermark unless divergent (a failure anyway): the fullest
        fullest = max((writers(d, high_watermark) for d in dirs.values()), key=len)
        stored_by.update(((p, offset), writer) for offset, writer in fullest.items())
    verdict = judge(producer.acks, stored, stored_by)
    verdict.divergent = divergent
    verdict.unacknowledged = producer.failed + left
    verdict.copy_failed = copy_failed
    if consumers is not None:
        deliveries, delivered, commits, rejoins = consumers.recorded()
        verdict.group = judge_group(producer.acks, stored, high_watermarks, deliveries, delivered, commits,
                                    final_offsets, group, rejoins)
    if copier is not None and copied is not None:
        verdict.copy = judge_copy(list(stored.values()), read_committed(bootstrap(), copier.sink, partitions, 120),
                                  copied)
    log.info("nemesis on %s: %s", topic, verdict.row())
    return verdict


def _inject(nodes: Mapping[int, Node], links: Mapping[int, NodeLinks], fault: Fault, topic: str) -> None:
    """One fault, healed before it returns (raising if the heal failed: a broker that did not
    come back). A combined fault runs its second part in a thread, `delay_s` after the first."""
    if fault.kind != COMBINED:
        _inject_one(nodes[fault.node], links[fault.node], fault, topic)
        return
    first, second = fault.parts
    log.info("nemesis: combined %s on node %d and, %.2fs later, %s on node %d", first.kind, first.node, fault.delay_s,
             second.kind, second.node)
    failure: list[BaseException] = []

    def run_second() -> None:
        try:
            time.sleep(fault.delay_s)
            _inject_one(nodes[second.node], links[second.node], second, topic)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller's thread
            failure.append(exc)

    other = threading.Thread(target=run_second, name=f"nemesis-{second.kind}-{second.node}", daemon=True)
    other.start()
    try:
        _inject_one(nodes[first.node], links[first.node], first, topic)
    finally:
        other.join()
    if failure:
        raise failure[0]


def _inject_one(node: Node, links: NodeLinks, fault: Fault, topic: str) -> None:
    """One simple fault on one node, healed before it returns; a torn tail tears the segments of
    `topic` and of the topics named after it (the copy job's)."""
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
    elif fault.kind == DISK_FULL:
        _fill_disk(node, fault.hold_s)
    elif fault.kind == SLOW_DISK:
        links.disk.slow(SLOW_DISK_MS)
        try:
            time.sleep(fault.hold_s)
        finally:
            links.disk.heal()
    elif fault.kind == TORN_TAIL:
        node.kill()
        torn = disks.tear_tails(node.data_dir, topic)
        log.info("nemesis: torn-tail: cut %d bytes off %d active segment(s)", disks.TORN_BYTES, len(torn))
        time.sleep(fault.hold_s)
        node.start()
    else:
        raise ValueError(fault.kind)


def _fill_disk(node: Node, hold_s: float) -> None:
    """Fill the node's log dir to ENOSPC and keep it full for hold_s, or until the broker stops
    (its only log dir failed, as Kafka's LogDirFailureChannel stops a ZooKeeper-mode broker);
    then free the space, and start the broker again if it stopped (a few seconds' grace for one
    that is on its way out when the hold ends)."""
    assert node.proc is not None
    taken = disks.fill(node.data_dir)
    try:
        try:
            node.proc.wait(hold_s)
        except subprocess.TimeoutExpired:
            pass
    finally:
        disks.free(node.data_dir)
    if node.proc.poll() is None:
        try:
            node.proc.wait(3.0)
        except subprocess.TimeoutExpired:
            log.info("nemesis: disk-full: the broker pid %d kept running (%d bytes filled)", node.proc.pid, taken)
            return
    log.info("nemesis: disk-full: the broker exited with %s (%d bytes filled); starting it again",
             node.proc.returncode, taken)
    node.start()


def _heal(node: Node) -> None:
    if os.path.ismount(node.data_dir):
        disks.free(node.data_dir)
    if node.proc is None:
        return
    if node.proc.poll() is not None:
        node.start()
    else:
        os.kill(node.proc.pid, signal.SIGCONT)
