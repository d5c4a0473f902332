"""A wirekafka cluster for integration tests: a real ZooKeeper (scripts/zookeeper.py) and N real
`wirekafka serve` processes joined to it with Kafka's ZooKeeper-mode keys, all on 127.0.0.1.

Each cluster gets its own ZooKeeper chroot named after its work directory, so clusters of
different tests sharing one ZooKeeper server never see each other. Every wait here is bounded
and polls ZooKeeper or a broker, never a fixed sleep."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kafka.protocol.metadata.metadata import MetadataRequest

from conformance.harness.wire import Connection
from testsupport.broker_process import BrokerProcess

SESSION_TIMEOUT_MS = 2000  # failover waits for ZooKeeper to expire a killed broker's session


def wait_for(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> object:
    """Poll predicate until it returns something truthy (returned); TimeoutError after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def every_broker_knows_the_cluster(bootstraps: list[str]) -> bool:
    """Whether each broker's own Metadata answer lists them all and names a controller. A broker
    answers before it has learnt the others and the controller (from its ZooKeeper watches, or
    Kafka 3.9's UpdateMetadata): a CreateTopics sent then finds too few brokers, and a request a
    client must send to the controller (AlterUserScramCredentials) waits until it knows one."""
    for bootstrap in bootstraps:
        with Connection(bootstrap) as conn:
            answer = conn.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
        if len(answer.brokers) != len(bootstraps) or answer.controller_id < 0:
            return False
    return True


class WirekafkaCluster:
    def __init__(self, workdir: Path, zk_connect: str, size: int = 3, overrides: dict[str, str] | None = None,
                 broker_overrides: dict[int, dict[str, str]] | None = None,
                 ports: dict[int, int] | None = None, env: dict[str, str] | None = None) -> None:
        """`overrides` apply to every broker, `broker_overrides[n]` to broker n alone (its rack);
        `ports[n]`, when given, is broker n's client port (else one is picked); `env` is added to
        every broker's environment (KAFKA_OPTS, say)."""
        self.workdir = Path(workdir)
        self.chroot = "/wk-" + self.workdir.name
        self.zk_connect = zk_connect
        base = {
            "zookeeper.connect": zk_connect + self.chroot,
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "default.replication.factor": str(min(size, 3)),
            "offsets.topic.replication.factor": str(min(size, 3)),
            "transaction.state.log.replication.factor": str(min(size, 3)),
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.num.partitions": "5",
            "group.initial.rebalance.delay.ms": "0",
            "replica.lag.time.max.ms": "4000",
            # the last broker to stop has nowhere to move its leaderships: it asks the controller
            # controlled.shutdown.max.retries times; 1 s apart instead of Kafka's 5 s keeps teardowns short
            "controlled.shutdown.retry.backoff.ms": "1000",
        }
        base.update(overrides or {})
        self.brokers: dict[int, BrokerProcess] = {}
        for node in range(1, size + 1):
            data = self.workdir / f"broker-{node}"
            own = (broker_overrides or {}).get(node, {})
            self.brokers[node] = BrokerProcess(data / "logs", {**base, **own, "broker.id": str(node)},
                                               port=(ports or {}).get(node),
                                               log_path=self.workdir / f"broker-{node}.log", env=env)
        self.zk = KazooClient(hosts=zk_connect + self.chroot)

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> "WirekafkaCluster":
        """Start every broker at once (each start waits for its own process to listen)."""
        for b in self.brokers.values():
            b.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(len(self.brokers)) as pool:
            for started in [pool.submit(b.start, timeout) for b in self.brokers.values()]:
                started.result()
        self.zk.start(timeout=15)
        self.wait_for(lambda: len(self.registered()) == len(self.brokers), timeout, "all brokers registered")
        self.wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in self.brokers.values()]),
                      timeout, "every broker sees all brokers and the controller")
        return self

    def stop(self) -> None:
        """Stop every broker; AssertionError (with its log's tail) if one had exited by itself
        with an error meanwhile: a broker that crashed must fail its test, not just slow it."""
        crashed = {node: b for node, b in self.brokers.items() if b.crashed()}
        for b in self.brokers.values():
            if b.alive():
                b.stop()
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:  # noqa: BLE001 - the session may already be gone
            pass
        if crashed:
            raise AssertionError("\n".join(f"broker {node} exited with {b.proc.returncode if b.proc else None}:\n"
                                           f"{b.log_tail(80)}" for node, b in crashed.items()))

    def __enter__(self) -> "WirekafkaCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.alive())

    # ---- ZooKeeper reads ---------------------------------------------------------------------
    def znode(self, path: str) -> dict | None:
        """The znode's JSON, None if it does not exist. One read: an exists() first could see an
        ephemeral (/controller) that a session expiry deletes before the get."""
        try:
            data, _ = self.zk.get(path)
        except NoNodeError:
            return None
        return json.loads(data)

    def registered(self) -> list[int]:
        return sorted(int(c) for c in self.zk.get_children("/brokers/ids"))

    def controller(self) -> int:
        c = self.znode("/controller")
        return -1 if c is None else c["brokerid"]

    def controller_epoch(self) -> int:
        data, _ = self.zk.get("/controller_epoch")
        return int(data)

    def partition_state(self, topic: str, partition: int) -> dict | None:
        return self.znode(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def leader(self, topic: str, partition: int = 0) -> int:
        state = self.partition_state(topic, partition)
        return -1 if state is None else state["leader"]

    # ---- waiting ---------------------------------------------------------------------------------
    wait_for = staticmethod(wait_for)

    def wait_isr(self, topic: str, partition: int, size: int, timeout: float = 30.0) -> dict:
        return self.wait_for(lambda: (s := self.partition_state(topic, partition)) is not None
                             and s["leader"] >= 0 and len(s["isr"]) == size and s, timeout,
                             f"{topic}-{partition} with {size} in-sync replicas")  # type: ignore[return-value]

    def segment_files(self, node: int, topic: str, partition: int) -> Iterator[Path]:
        d = self.brokers[node].data_dir / f"{topic}-{partition}"
        return iter(sorted(d.glob("*.log")))
