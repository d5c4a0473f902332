"""Stock clients against a 3-broker wirekafka cluster (testsupport/cluster.py on a real ZooKeeper)
while a broker is killed (SIGKILL) and restarted: kafka-python, aiokafka, Kafka 4.3.1's Java
tools (kafka-verifiable-producer, kafka-console-consumer, kafka-topics), Spark's Kafka connector
and a confluent-kafka group consumer whose coordinator goes away.

The shape repeats: a client works in the background (a producer thread or task, a consumer
loop) while the test kills the broker that matters to it (the partition's leader, the group's
coordinator), waits for the controller to move leadership (after the dead broker's ZooKeeper
session expires, 2 s here), waits for the client to make progress without it, restarts it,
waits for it to rejoin the ISR and for more progress, then reads everything back. Acked writes
must all be there exactly once: every producer here is idempotent, so even retried batches
leave no duplicates.

Each test starts its own cluster under its own ZooKeeper chroot (one ZooKeeper server for the
module). Every wait is bounded."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_cli import ok, run
from testsupport.cluster import WirekafkaCluster
from scripts import realkafka
from wirekafka.broker.coordinator.group_model import partition_for

pytestmark = pytest.mark.slow

OFFSETS_PARTITIONS = 5  # WirekafkaCluster's offsets.topic.num.partitions
STEP = 150  # records a client must get through before the kill, while the broker is down, after the restart


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def _create(cluster: WirekafkaCluster, topic: str, partitions: int = 1) -> None:
    """An RF=3 topic with min.insync.replicas=2, all replicas in sync."""
    admin = _admin(cluster.bootstrap)  # keep it alive until the result is in
    admin.create_topics([NewTopic(topic, partitions, 3, config={"min.insync.replicas": "2"})],
                        request_timeout=30)[topic].result(30)
    for p in range(partitions):
        cluster.wait_isr(topic, p, 3)


def _wait_metadata(bootstrap: str, topic: str, partition: int, predicate: Callable[[object], bool],
                   what: str, timeout: float = 30) -> None:
    """Until the broker(s) at bootstrap answer Metadata for topic-partition satisfying predicate."""
    admin = _admin(bootstrap)

    def check() -> bool:
        try:
            return predicate(admin.list_topics(topic, timeout=5).topics[topic].partitions[partition])
        except KafkaException:
            return False
    WirekafkaCluster.wait_for(check, timeout, what)


def _wait_all_brokers_isr(cluster: WirekafkaCluster, topic: str, partition: int, isr: set[int]) -> None:
    """Every live broker's own Metadata answer has applied this ISR (and a live leader)."""
    for node, b in cluster.brokers.items():
        if b.alive():
            _wait_metadata(b.bootstrap, topic, partition,
                           lambda pm: set(pm.isrs) == isr and pm.leader in isr,
                           f"broker {node} to show {topic}-{partition} with ISR {sorted(isr)}")


def _progress_at_least(progress: Callable[[], int], target: int, timeout: float, what: str,
                       errors: Callable[[], list] | None = None) -> None:
    def check() -> bool:
        if errors is not None and errors():
            raise AssertionError(f"client errors while waiting for {what}: {errors()[:5]}")
        return progress() >= target
    WirekafkaCluster.wait_for(check, timeout, f"{what} (from {progress()} to {target})")


def _kill_and_restart(cluster: WirekafkaCluster, victim: int, moved: Callable[[], bool],
                      back_in_sync: Callable[[], None], progress: Callable[[], int], what: str,
                      errors: Callable[[], list] | None = None, step: int = STEP,
                      before_kill: Callable[[], None] | None = None,
                      after_move: Callable[[], None] | None = None) -> None:
    """The client makes `step` progress; kill -9 `victim`; wait until `moved()` (leadership
    elsewhere); `step` more progress without it; restart it; `back_in_sync()`; `step` more."""
    _progress_at_least(progress, step, 60, f"{what} before the kill", errors)
    if before_kill is not None:
        before_kill()
    cluster.brokers[victim].kill()
    cluster.wait_for(moved, 30, f"leadership to move off killed broker {victim}")
    if after_move is not None:
        after_move()
    _progress_at_least(progress, progress() + step, 60, f"{what} while broker {victim} is down", errors)
    cluster.brokers[victim].start(timeout=60)
    back_in_sync()
    _progress_at_least(progress, progress() + step, 60, f"{what} after broker {victim} restarted", errors)


def _leader_moved(cluster: WirekafkaCluster, topic: str, partition: int, old: int) -> Callable[[], bool]:
    return lambda: cluster.leader(topic, partition) not in (old, -1)


def _values(n: int, prefix: bytes) -> list[bytes]:
    return [prefix + b"%06d" % i for i in range(n)]


def _assert_exactly_once_in_order(got: list[bytes], acked: list[bytes], sent: int, prefix: bytes) -> None:
    """The partition holds every acked record exactly once, in send order, and nothing else."""
    assert len(acked) == sent, f"{sent - len(acked)} of {sent} records not acknowledged"
    duplicated = [v for v, n in Counter(got).items() if n > 1]
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {duplicated[:5]}"
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    assert got == _values(sent, prefix), "records out of send order"


# ---- kafka-python --------------------------------------------------------------------------
def test_kafka_python_producer_across_leader_kill_and_restart(cluster: WirekafkaCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    topic, prefix = "kafka-python-failover", b"kp-"
    _create(cluster, topic)
    bootstrap = cluster.bootstrap  # all three brokers, as a client configured once would have
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             retries=2**31 - 1, delivery_timeout_ms=120000, linger_ms=5,
                             reconnect_backoff_max_ms=1000)
    acked: list[bytes] = []
    failed: list[str] = []
    sent = 0
    stop = threading.Event()

    def produce() -> None:
        nonlocal sent
        while not stop.is_set():
            if sent - len(acked) - len(failed) >= 100:  # bounded in flight
                time.sleep(0.005)
                continue
            value = prefix + b"%06d" % sent
            future = producer.send(topic, value=value, partition=0)
            future.add_callback(lambda _md, v=value: acked.append(v))
            future.add_errback(lambda exc: failed.append(repr(exc)))
            sent += 1
            time.sleep(0.003)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        leader = cluster.leader(topic)
        _kill_and_restart(cluster, leader, _leader_moved(cluster, topic, 0, leader),
                          lambda: cluster.wait_isr(topic, 0, 3, timeout=60), lambda: len(acked),
                          "kafka-python acks", lambda: failed)
    finally:
        stop.set()
        thread.join(10)
        producer.flush(120)
        producer.close(10)
    assert not failed, failed[:5]

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False)
    tp = KTopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got += [m.value for m in batch]
    finally:
        consumer.close()
    assert end == sent, f"log end offset {end} for {sent} records sent"
    _assert_exactly_once_in_order(got, acked, sent, prefix)


# ---- aiokafka --------------------------------------------------------------------------------
def test_aiokafka_producer_across_leader_kill_and_restart(cluster: WirekafkaCluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as ATopicPartition

    topic, prefix = "aiokafka-failover", b"aio-"
    _create(cluster, topic)
    bootstrap = cluster.bootstrap
    acked: list[bytes] = []
    failed: list[str] = []
    sent = 0

    async def produce(producer: AIOKafkaProducer, stop: asyncio.Event) -> None:
        nonlocal sent

        def done(fut: asyncio.Future, value: bytes) -> None:
            if fut.exception() is None:
                acked.append(value)
            else:
                failed.append(repr(fut.exception()))

        while not stop.is_set():
            if sent - len(acked) - len(failed) >= 100:
                await asyncio.sleep(0.005)
                continue
            value = prefix + b"%06d" % sent
            fut = await producer.send(topic, value=value, partition=0)
            fut.add_done_callback(lambda f, v=value: done(f, v))
            sent += 1
            await asyncio.sleep(0.003)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                                    linger_ms=5, request_timeout_ms=60000)
        await producer.start()
        stop = asyncio.Event()
        task = asyncio.create_task(produce(producer, stop))
        try:
            leader = cluster.leader(topic)
            await asyncio.to_thread(
                _kill_and_restart, cluster, leader, _leader_moved(cluster, topic, 0, leader),
                lambda: cluster.wait_isr(topic, 0, 3, timeout=60), lambda: len(acked), "aiokafka acks",
                lambda: failed)
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)
            await asyncio.wait_for(producer.flush(), 120)
            await producer.stop()

    asyncio.run(run())
    assert not failed, failed[:5]

    async def read() -> tuple[int, list[bytes]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = ATopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            end = (await consumer.end_offsets([tp]))[tp]
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while await consumer.position(tp) < end and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    got += [m.value for m in batch]
            return end, got
        finally:
            await consumer.stop()

    end, got = asyncio.run(read())
    assert end == sent, f"log end offset {end} for {sent} records sent"
    _assert_exactly_once_in_order(got, acked, sent, prefix)


# ---- Kafka's Java tools ------------------------------------------------------------------------
class _VerifiableProducer:
    """kafka-verifiable-producer in the background; its JSON events parsed as they come."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        cmd = realkafka.tool_command("kafka-verifiable-producer", list(args))
        self.stderr_path = tmp_path / "verifiable-producer.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr)
        self.acked: list[int] = []
        self.errors: list[dict] = []
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name")
            if name == "producer_send_success":
                self.acked.append(int(event["value"]))
            elif name == "producer_send_error":
                self.errors.append(event)
            else:
                self.events.append(event)

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"kafka-verifiable-producer did not finish in {timeout}s; "
                                 f"{len(self.acked)} acked:\n{self.stderr_tail()}")
        finally:
            self._reader.join(10)
            self._stderr.close()
        return code

    def stderr_tail(self) -> str:
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-40:])


@pytest.mark.java
def test_java_verifiable_producer_across_leader_kill_and_restart(cluster: WirekafkaCluster, tmp_path: Path) -> None:
    topic, n = "java-verifiable", 4000
    _create(cluster, topic)
    bootstrap = cluster.bootstrap
    # The tool sets retries=0 (Kafka's system tests pass retries in a config file), which also
    # turns idempotence off: ask for both, as a producer meant to survive a failover would.
    config = tmp_path / "producer.properties"
    config.write_text("retries=2147483647\nenable.idempotence=true\ndelivery.timeout.ms=120000\n")
    producer = _VerifiableProducer(tmp_path, "--topic", topic, "--bootstrap-server", bootstrap, "--acks", "-1",
                                   "--max-messages", str(n), "--throughput", "250", "--command-config", str(config))
    try:
        leader = cluster.leader(topic)
        _kill_and_restart(cluster, leader, _leader_moved(cluster, topic, 0, leader),
                          lambda: cluster.wait_isr(topic, 0, 3, timeout=60), lambda: len(producer.acked),
                          "kafka-verifiable-producer acks", lambda: producer.errors)
    finally:
        code = producer.wait(120)
    assert code == 0, producer.stderr_tail()
    assert not producer.errors, producer.errors[:5]
    tool_data = next(e for e in producer.events if e.get("name") == "tool_data")
    assert (tool_data["sent"], tool_data["acked"]) == (n, n), tool_data
    assert sorted(producer.acked) == list(range(n))

    result = run("kafka-console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
                   "--partition", "0", "--offset", "earliest", "--max-messages", str(n), "--timeout-ms", "30000")
    assert result.returncode == 0, result.describe()
    got = [int(v) for v in result.stdout.split()]
    assert f"Processed a total of {n} messages" in result.stderr
    duplicated = [v for v, c in Counter(got).items() if c > 1]
    assert not duplicated, f"{len(duplicated)} records read twice, e.g. {duplicated[:5]}"
    assert got == list(range(n)), f"{len(set(range(n)) - set(got))} acknowledged records missing or out of order"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "end-check", "log_level": 3})
    try:  # and nothing after them
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, n)
    finally:
        consumer.close()


def _describe_rows(bootstrap: str, topic: str, *extra: str) -> tuple[dict[str, str] | None, list[dict[str, str]]]:
    """kafka-topics --describe: the topic's head line and its partition rows, as field dicts."""
    out = ok("kafka-topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic, *extra)
    head, rows = None, []
    for line in out.splitlines():
        if not line.strip():
            continue
        cells = dict(cell.split(": ", 1) if ": " in cell else (cell.rstrip(":"), "")
                     for cell in line.strip("\t").split("\t"))
        if "Partition" in cells:
            rows.append(cells)
        else:
            head = cells
    return head, rows


@pytest.mark.java
def test_java_topics_describe_shows_the_isr_shrink_and_expand(cluster: WirekafkaCluster) -> None:
    topic = "java-describe"
    _create(cluster, topic)
    state = cluster.partition_state(topic, 0)
    replicas = cluster.znode(f"/brokers/topics/{topic}")["partitions"]["0"]
    assert sorted(replicas) == [1, 2, 3]
    leader = state["leader"]
    _wait_all_brokers_isr(cluster, topic, 0, {1, 2, 3})

    head, rows = _describe_rows(cluster.bootstrap, topic)
    assert head is not None and head["Topic"] == topic
    assert (head["PartitionCount"], head["ReplicationFactor"]) == ("1", "3")
    assert "min.insync.replicas=2" in head["Configs"].split(",")
    [row] = rows
    assert (row["Topic"], row["Partition"], row["Leader"]) == (topic, "0", str(leader))
    assert row["Replicas"] == ",".join(map(str, replicas))
    assert sorted(map(int, row["Isr"].split(","))) == [1, 2, 3]

    cluster.brokers[leader].kill()
    state = cluster.wait_for(lambda: (s := cluster.partition_state(topic, 0))["leader"] not in (leader, -1)
                             and len(s["isr"]) == 2 and s, 30, "a new leader and an ISR of two")
    survivors = {n for n in cluster.brokers if n != leader}
    assert set(state["isr"]) == survivors
    _wait_all_brokers_isr(cluster, topic, 0, survivors)
    live = cluster.bootstrap  # the two live brokers
    _, [row] = _describe_rows(live, topic)
    assert (row["Leader"], row["Replicas"]) == (str(state["leader"]), ",".join(map(str, replicas)))
    assert set(map(int, row["Isr"].split(","))) == survivors
    head, [row] = _describe_rows(live, topic, "--under-replicated-partitions")
    assert head is None  # only the partition lines
    assert (row["Partition"], row["Leader"]) == ("0", str(state["leader"]))
    assert set(map(int, row["Isr"].split(","))) == survivors

    cluster.brokers[leader].start(timeout=60)
    cluster.wait_isr(topic, 0, 3, timeout=60)
    _wait_all_brokers_isr(cluster, topic, 0, {1, 2, 3})
    # back in sync everywhere: no longer under-replicated
    assert _describe_rows(cluster.bootstrap, topic, "--under-replicated-partitions") == (None, [])


# ---- Spark ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    from examples.activity_stream.spark_session import spark_session

    session = spark_session("wirekafka-cluster-tests")
    yield session
    session.stop()


@pytest.mark.spark
def test_spark_write_then_read_with_a_broker_down(spark, cluster: WirekafkaCluster) -> None:
    topic, n = "spark-failover", 300
    _create(cluster, topic, partitions=2)
    bootstrap = cluster.bootstrap  # all three: the read below goes on with one of them dead
    (spark.range(n).selectExpr("CAST(CAST(id AS STRING) AS BINARY) key",
                               "CAST(CONCAT('v', CAST(id AS STRING)) AS BINARY) value",
                               "CAST(id % 2 AS INT) partition")
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
    leader = cluster.leader(topic, 0)
    cluster.brokers[leader].kill()
    cluster.wait_for(_leader_moved(cluster, topic, 0, leader), 30, "a new leader for partition 0")
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
            .selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v", "partition", "offset").collect())
    got = sorted((r.partition, r.offset, int(r.k), r.v) for r in rows)
    assert len(got) == n, f"{len(got)} rows read back of {n} written"
    assert sorted(int(r.k) for r in rows) == list(range(n))
    for r in rows:
        assert r.v == f"v{r.k}" and r.partition == int(r.k) % 2
    for p in (0, 1):  # dense offsets: nothing written twice
        assert [o for q, o, _, _ in got if q == p] == list(range(n // 2))


# ---- confluent-kafka: a group consumer and its coordinator -----------------------------------
def test_confluent_group_consumer_across_coordinator_kill_and_restart(cluster: WirekafkaCluster) -> None:
    topic, group, partitions = "grouped-failover", "failover-group", 2
    _create(cluster, topic, partitions)
    bootstrap = cluster.bootstrap
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": 120000, "reconnect.backoff.max.ms": 500, "log_level": 3})
    acked: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    failed: list[str] = []
    stop = threading.Event()

    def on_delivery(err, msg) -> None:
        if err is None:
            acked[msg.partition()].append(msg.value())
        else:
            failed.append(str(err))

    def produce() -> None:
        i = 0
        while not stop.is_set():
            try:
                producer.produce(topic, value=b"g-%06d" % i, partition=i % partitions, on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0.004)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "reconnect.backoff.max.ms": 500,
                         "topic.metadata.refresh.interval.ms": 1000, "log_level": 3})
    consumer.subscribe([topic])
    received: list[tuple[int, int, bytes]] = []
    committed: dict[int, int] = {}        # partition -> last offset committed successfully
    commit_errors: list[str] = []
    rewinds: list[tuple[int, int, int]] = []  # (partition, offset, committed) read again behind a commit
    done_committing = [0]                 # records consumed and committed
    before_kill: dict[int, int] = {}      # committed (last offset) as the coordinator was killed
    after_move: dict[int, int] = {}       # committed offsets (next to read) from the new coordinator

    def orchestrate() -> None:
        _progress_at_least(lambda: done_committing[0], 1, 60, "the group's first commit")
        offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
        coordinator = cluster.leader("__consumer_offsets", offsets_partition)
        admin = _admin(bootstrap)
        described = admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)
        # FindCoordinator's answer is the leader of the group's __consumer_offsets partition
        assert described.coordinator.id == coordinator, (described.coordinator.id, coordinator)

        def back_in_sync() -> None:
            cluster.wait_isr("__consumer_offsets", offsets_partition, 3, timeout=60)
            for p in range(partitions):
                cluster.wait_isr(topic, p, 3, timeout=60)

        def snapshot() -> None:
            before_kill.update(committed.copy())

        def offsets_survived() -> None:
            """The new coordinator answers with offsets at least those committed before the kill
            (the consumer goes on committing meanwhile, so they may be higher). Asked with a
            Consumer of the group that does not join it: librdkafka 2.16's AdminClient
            list_consumer_group_offsets crashes the process (SIGSEGV in rd_kafka_cgrp_op, an admin
            client has no cgrp) when OffsetFetch answers NOT_COORDINATOR, as a broker may while
            leadership moves (librdkafka issue #5040)."""
            reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})

            def fetched() -> dict[int, int] | None:
                try:
                    got = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=5)
                except KafkaException:  # e.g. the coordinator still loading the partition: asked again
                    return None
                return {tp.partition: tp.offset for tp in got if tp.error is None}
            try:
                got = cluster.wait_for(fetched, 30, "the group's offsets from the new coordinator")
            finally:
                reader.close()
            after_move.update(got)
            for p, last in before_kill.items():
                assert got.get(p, -1) >= last + 1, \
                    f"partition {p}: committed {last + 1} before the kill, the new coordinator has {got.get(p)}"

        _kill_and_restart(cluster, coordinator, _leader_moved(cluster, "__consumer_offsets", offsets_partition,
                                                              coordinator),
                          back_in_sync, lambda: done_committing[0], "consumed and committed records",
                          lambda: failed, before_kill=snapshot, after_move=offsets_survived)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        orchestration = pool.submit(orchestrate)
        deadline = time.monotonic() + 240
        try:
            while time.monotonic() < deadline and not failed:
                if orchestration.done():
                    if orchestration.exception() is not None:
                        break
                    stop.set()
                    thread.join(10)
                    assert producer.flush(60) == 0
                    if all(committed.get(p, -1) + 1 == len(acked[p]) for p in range(partitions)):
                        break
                batch = [m for m in consumer.consume(200, 0.2) if not m.error()]
                for m in batch:
                    p, o = m.partition(), m.offset()
                    if o < committed.get(p, -1) + 1:
                        rewinds.append((p, o, committed[p]))
                    received.append((p, o, m.value()))
                if batch:
                    try:
                        for tp in consumer.commit(asynchronous=False):
                            if tp.error is None and tp.offset >= 0:
                                committed[tp.partition] = tp.offset - 1
                        done_committing[0] += len(batch)
                    except KafkaException as exc:  # while the coordinator moves: retried by the next commit
                        commit_errors.append(str(exc))
        finally:
            stop.set()
            thread.join(10)
            orchestration_error = orchestration.exception(timeout=240)
            consumer.close()
    if orchestration_error is not None:
        raise orchestration_error
    assert not failed, failed[:5]
    assert before_kill and after_move, (before_kill, after_move)
    assert not rewinds, f"the group went back behind committed offsets: {rewinds[:5]}"
    for p in range(partitions):
        assert committed.get(p, -1) + 1 == len(acked[p]), f"partition {p}: consumed to " \
            f"{committed.get(p, -1) + 1} of {len(acked[p])} acked; commit errors {commit_errors[:5]}"
        values = [v for q, _, v in received if q == p]
        missing = set(acked[p]) - set(values)
        assert not missing, f"partition {p}: {len(missing)} acked records never consumed, e.g. {sorted(missing)[:5]}"

    # After the member left: the group's committed offsets are at the end of every partition,
    # as the coordinator it has now answers a consumer of the group.
    check = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "log_level": 3})
    try:
        got = check.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        assert [tp.offset for tp in got] == [len(acked[p]) for p in range(partitions)]
        for p in range(partitions):  # the idempotent producer wrote each record once
            assert check.get_watermark_offsets(TopicPartition(topic, p), timeout=10) == (0, len(acked[p]))
    finally:
        check.close()
