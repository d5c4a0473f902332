"""The checker that the cluster's epochs never go back, from ZooKeeper as it changes: the
controller epoch (/controller_epoch, bumped by each newly elected controller) and each
partition's leader epoch and the controller epoch that wrote its state
(/brokers/topics/<topic>/partitions/<p>/state). Kafka's fencing rests on both only growing: a
broker drops a request from an older controller epoch, a follower an answer from an older leader
epoch. Polled, so a change reverted between two reads can slip by; what it sees going back is
always a finding."""

from __future__ import annotations

import json
import logging
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

log = logging.getLogger(__name__)


class EpochWatch(threading.Thread):
    def __init__(self, zk_connect: str, topic: str, partitions: int, interval_s: float = 0.1) -> None:
        """zk_connect: the cluster's connect string with its chroot (read directly, not through
        any link the nemesis cuts)."""
        super().__init__(name=f"epoch-watch-{topic}", daemon=True)
        self.zk = KazooClient(hosts=zk_connect)
        self.topic, self.partitions, self.interval_s = topic, partitions, interval_s
        self.went_back: list[str] = []
        self.reads = 0
        self._last: dict[str, int] = {}
        self._halt = threading.Event()

    def __enter__(self) -> EpochWatch:
        self.zk.start(timeout=15)
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._halt.set()
        self.join(10)
        log.info("epoch watch on %s: %d rounds read, %d findings", self.topic, self.reads, len(self.went_back))
        self.zk.stop()
        self.zk.close()

    def run(self) -> None:
        while not self._halt.wait(self.interval_s):
            self._see("controller epoch", self._read("/controller_epoch"))
            for p in range(self.partitions):
                state = self._read(f"/brokers/topics/{self.topic}/partitions/{p}/state")
                if isinstance(state, dict):
                    self._see(f"{self.topic}-{p} leader epoch", state["leader_epoch"])
                    self._see(f"{self.topic}-{p} state's controller epoch", state["controller_epoch"])
            self.reads += 1

    def _read(self, path: str) -> object:
        try:
            data, _ = self.zk.get(path)
        except NoNodeError:
            return None
        except KazooException:  # the watch's own session reconnecting: read again next round
            return None
        return json.loads(data)

    def _see(self, what: str, value: object) -> None:
        if not isinstance(value, int):
            return
        before = self._last.get(what)
        if before is not None and value < before:
            finding = f"{what} went back from {before} to {value}"
            log.error("epoch watch: %s", finding)
            self.went_back.append(finding)
        self._last[what] = value if before is None else max(before, value)
