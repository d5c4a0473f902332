"""OfflineReplicas: the controller's side of a broker's failed log dir, as Kafka 3.9's ZooKeeper
controller does it (KafkaController.processLogDirEventNotification, onReplicasBecomeOffline).

A broker whose log dir fails keeps running on its other dirs and writes a sequential
/log_dir_event_notification/log_dir_event_<n> naming itself. The controller, watching that
znode's children, sends the broker a LeaderAndIsr of every partition it hosts; the partitions it
answers KAFKA_STORAGE_ERROR for are its replicas on the failed dir. From then on those replicas
count as down for their partitions alone (ClusterSnapshot.offline_replicas): leaderships move to
the rest of the ISR and they leave the ISRs, in the controller's ordinary fenced writes. The
notifications are deleted once handled (a broker that did not answer is asked again).

Like Kafka's ControllerContext.replicasOnOfflineDirs this is the controller's memory, not
ZooKeeper's: it is forgotten for a broker whose registration goes or changes (it restarted, and
reloads its dirs), and a new controller starts without it; by then the replicas are out of the
ISRs the controller wrote, and a replica that cannot fetch does not rejoin one."""

from __future__ import annotations

import logging
from typing import Callable

import trio

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.broker.replication.leader_and_isr_client import ask_broker, request_for
from wirekafka.broker.replication.peer_client import PeerPool
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

_RETRY_S = 1.0  # a broker that did not answer is asked again after this


class OfflineReplicas:
    def __init__(self, node_id: int, zk: ZkSession, snapshot: Callable[[], ClusterSnapshot], peers: PeerPool) -> None:
        """snapshot(): the cluster as this broker applied it last; peers: to the other brokers'
        inter-broker listeners."""
        self.node_id = node_id
        self.zk = zk
        self._snapshot = snapshot
        self._peers = peers
        self._known: dict[int, tuple[int, frozenset[tuple[str, int]]]] = {}  # broker -> (its epoch, replicas)
        self._wake = trio.Event()

    def lay_over(self, snapshot: ClusterSnapshot) -> dict[int, frozenset[tuple[str, int]]]:
        """The offline replicas to lay over a snapshot read as the controller: a broker's are
        forgotten once its registration is gone or changed."""
        for broker, (epoch, _) in list(self._known.items()):
            if snapshot.broker_epochs.get(broker) != epoch:
                del self._known[broker]
        return {broker: replicas for broker, (_, replicas) in self._known.items()}

    def forget(self) -> None:
        """This broker is not the controller (any more)."""
        self._known.clear()

    async def notice(self) -> None:
        """As the controller, after a reconcile: wake the handler when notifications wait (the
        read goes through the cache and sets its watch, so a new one brings a reconcile)."""
        pending = await self.zk.call(self.zk.cache.get_children, zl.LOG_DIR_EVENT_NOTIFICATION, self.zk.cache.watch)
        if pending:
            self._wake.set()

    async def run(self) -> None:
        """Handle the notifications whenever some wait, while this broker is the controller."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            snapshot = self._snapshot()
            if snapshot.controller != self.node_id or not self.zk.connected:
                continue
            try:
                if not await self._handle(snapshot):
                    await trio.sleep(_RETRY_S)
                    self._wake.set()
            except Exception:  # ZooKeeper unreachable or the controller moved: the next notice retries
                log.warning("controller: handling log dir event notifications failed", exc_info=True)
                await trio.sleep(_RETRY_S)
                self._wake.set()

    async def _handle(self, snapshot: ClusterSnapshot) -> bool:
        """Ask each broker named (and live) which of its replicas are offline, remember them, delete
        the notifications handled and have the controller act; False if a broker did not answer."""
        events = await self.zk.call(io.read_log_dir_events, self.zk.client)
        if not events:
            return True
        handled = [name for name, broker in events.items() if broker not in snapshot.brokers]
        for broker in sorted({b for b in events.values() if b in snapshot.brokers}):
            answer = await ask_broker(self._peers, broker, request_for(snapshot, self.node_id, broker, self._peers.lookup))
            if answer is None:
                continue
            handled += [name for name, b in events.items() if b == broker]
            offline = answer.offline()
            if answer.error != ErrorCode.NONE or not offline:
                log.info("controller: broker %d reported a log dir failure; its LeaderAndIsr answer: %s, "
                         "%d replicas offline", broker, answer.error.name, len(offline))
                continue
            epoch = snapshot.broker_epochs[broker]
            known_epoch, known = self._known.get(broker, (epoch, frozenset()))
            self._known[broker] = (epoch, offline | (known if known_epoch == epoch else frozenset()))
            log.info("controller: broker %d has %d replicas on a failed log dir: %s", broker, len(offline),
                     ", ".join(f"{t}-{p}" for t, p in sorted(offline)[:20]))
        if handled:
            await self.zk.call(io.delete_fenced, self.zk.client, [zl.log_dir_event_path(name) for name in handled],
                               snapshot.controller_epoch_version)
            self.zk.mark_changed(zl.LOG_DIR_EVENT_NOTIFICATION)  # the next reconcile elects without them
        return len(handled) == len(events)
