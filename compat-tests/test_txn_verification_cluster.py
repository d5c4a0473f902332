"""Produce-side transaction verification across a cluster (KIP-890 part 1,
transaction.partition.verification.enable, issue 35): when a transaction's coordinator is another
broker than the partition's leader, the leader verifies the first batch of the transaction on the
partition with that coordinator (AddPartitionsToTxn verify_only), as Kafka 3.9's leader does
through its AddPartitionsToTxnManager. A late batch of a finished transaction (a retry delayed past
the commit) is refused INVALID_TXN_STATE instead of opening a transaction no marker closes, which
would hold the partition's last stable offset and every read_committed consumer.

Failed before the fix: the late batch was appended and the last stable offset stayed behind it.

Many transactions at once: the verification questions and markers bound for one broker while a
request to it is in flight go together in the next (Kafka's AddPartitionsToTxnManager and marker
channel batch them per destination); each transaction still ends with its own marker on each of
its partitions."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest

from conformance.harness.scenarios import fetch
from conformance.harness.wire import Connection
from faults.clusters import create_topic
from faults.workload import read_committed
from scripts import realkafka
from testsupport.cluster import WirekafkaCluster, every_broker_knows_the_cluster, wait_for
from testsupport.watermarks import high_watermarks
from wirekafka.protocol import records
from wirekafka.protocol.errors import ErrorCode

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]

READ_COMMITTED = 1
RETRIED = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
           ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_ENOUGH_REPLICAS)


def _retry(call, code_of, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        result = call()
        if code_of(result) not in RETRIED or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def _coordinated_elsewhere(c: WirekafkaCluster, leader: int, prefix: str) -> tuple[str, int]:
    """A transactional id whose coordinator is not `leader`, and that coordinator."""
    conn = Connection(c.brokers[leader].bootstrap)
    try:
        for n in range(50):
            tid = f"{prefix}-{n}"
            found = _retry(lambda: conn.call(FindCoordinatorRequest(key=tid, key_type=1), 3), lambda r: r.error_code)
            assert found.error_code == 0
            if found.node_id != leader:
                return tid, found.node_id
    finally:
        conn.close()
    raise AssertionError("every transactional id tried is coordinated by the partition's leader")


def _produce(conn: Connection, topic: str, tid: str, pid: int, epoch: int, sequence: int, value: bytes) -> int:
    batch = records.build_batch([(b"k", value, int(time.time() * 1000))], producer_id=pid, producer_epoch=epoch,
                                base_sequence=sequence, transactional=True)
    request = ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    return _retry(lambda: conn.call(request, 9).responses[0].partition_responses[0].error_code, lambda code: code)


def _add(coordinator: Connection, topic: str, tid: str, pid: int, epoch: int) -> None:
    add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])])
    answer = _retry(lambda: coordinator.call(add, 3), lambda r: r.results_by_topic_v3_and_below[0]
                    .results_by_partition[0].partition_error_code)
    assert answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0


def _commit(coordinator: Connection, tid: str, pid: int, epoch: int) -> None:
    answer = _retry(lambda: coordinator.call(EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                           producer_epoch=epoch, committed=True), 3),
                    lambda r: r.error_code)
    assert answer.error_code == 0


def _settled(conn: Connection, topic: str):
    deadline = time.monotonic() + 30
    while True:
        answer = fetch(conn, topic, 0, isolation_level=READ_COMMITTED, version=12)
        if answer.last_stable_offset == answer.high_watermark or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def test_a_late_batch_after_the_commit_is_refused_by_a_leader_whose_coordinator_is_elsewhere(
        zookeeper, tmp_path, topic_name):
    with WirekafkaCluster(tmp_path, zookeeper) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap})  # alive until the result
        admin.create_topics([NewTopic(topic_name, 1, 3)])[topic_name].result(15)
        c.wait_isr(topic_name, 0, 3)
        leader = c.leader(topic_name)
        tid, coordinator_node = _coordinated_elsewhere(c, leader, topic_name)
        coordinator = Connection(c.brokers[coordinator_node].bootstrap)
        to_leader = Connection(c.brokers[leader].bootstrap)
        init = _retry(lambda: coordinator.call(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000,
                                                                     producer_id=-1, producer_epoch=-1), 4),
                      lambda r: r.error_code)
        pid, epoch = init.producer_id, init.producer_epoch

        # a batch before the partition was added: its coordinator says it is not in the transaction
        assert _produce(to_leader, topic_name, tid, pid, epoch, 0, b"unadded") == ErrorCode.INVALID_TXN_STATE
        _add(coordinator, topic_name, tid, pid, epoch)
        assert _produce(to_leader, topic_name, tid, pid, epoch, 0, b"first") == 0  # verified with the coordinator
        assert _produce(to_leader, topic_name, tid, pid, epoch, 1, b"second") == 0  # the transaction is open here
        _commit(coordinator, tid, pid, epoch)
        committed = _settled(to_leader, topic_name)
        assert committed.last_stable_offset == committed.high_watermark == 3  # two records and the marker

        # the late retry of the finished transaction: no transaction left for it to join
        assert _produce(to_leader, topic_name, tid, pid, epoch, 2, b"late") == ErrorCode.INVALID_TXN_STATE
        after = _settled(to_leader, topic_name)
        assert after.last_stable_offset == after.high_watermark == 3, "nothing was appended"

        # the next transaction of the same producer goes through
        _add(coordinator, topic_name, tid, pid, epoch)
        assert _produce(to_leader, topic_name, tid, pid, epoch, 2, b"next") == 0
        _commit(coordinator, tid, pid, epoch)
        assert _settled(to_leader, topic_name).last_stable_offset == 5
        coordinator.close()
        to_leader.close()


PRODUCERS = 12
TRANSACTIONS = 4  # each producer's: the even ones committed, the odd ones aborted
PARTITIONS = 3


def _transactional_producer(bootstrap: str, tid: str, topic: str, failures: list[str]) -> None:
    """One producer's transactions over every partition; what fails is kept for the assertion."""
    try:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000})
        p.init_transactions(60)
        for n in range(TRANSACTIONS):
            p.begin_transaction()
            for partition in range(PARTITIONS):
                p.produce(topic, value=f"{tid}/{n}/{partition}".encode(), partition=partition)
            if n % 2 == 0:
                p.commit_transaction(60)
            else:  # sent first, so the abort has records to close (librdkafka drops unsent ones)
                assert p.flush(60) == 0
                p.abort_transaction(60)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        failures.append(f"{tid}: {exc}")


def _many_transactions_at_once(bootstrap: str, topic: str) -> None:
    """Twelve transactional producers, their coordinators spread over the three brokers, each
    writing every partition (led by different brokers) in concurrent transactions, half
    committed and half aborted: read_committed returns exactly the committed records and reaches
    every high watermark (each transaction's marker landed on each partition)."""
    create_topic(bootstrap, topic, PARTITIONS)
    failures: list[str] = []
    threads = [threading.Thread(target=_transactional_producer, args=(bootstrap, f"{topic}-{n}", topic, failures))
               for n in range(PRODUCERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == [] and not any(t.is_alive() for t in threads)
    # each transaction's record and its marker on every partition (Kafka answers EndTxn before its
    # markers are written, so they may land after the producers are done)
    expected = dict.fromkeys(range(PARTITIONS), PRODUCERS * TRANSACTIONS * 2)
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{topic}"})
    try:
        deadline = time.monotonic() + 30
        while True:
            ends = high_watermarks(probe, topic, range(PARTITIONS))
            if ends == expected or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        probe.close()
    assert ends == expected
    committed = sorted(read_committed(bootstrap, topic, PARTITIONS, 60))
    assert committed == sorted(f"{topic}-{n}/{t}/{p}".encode() for n in range(PRODUCERS)
                               for t in range(0, TRANSACTIONS, 2) for p in range(PARTITIONS))


def test_many_transactions_at_once_each_end_with_their_markers(zookeeper, tmp_path, topic_name):
    with WirekafkaCluster(tmp_path, zookeeper) as c:
        _many_transactions_at_once(c.bootstrap, topic_name)


@pytest.mark.realkafka
def test_kafka39_many_transactions_at_once_each_end_with_their_markers(zookeeper, tmp_path, topic_name):
    brokers = realkafka.start_zk_cluster(f"{zookeeper}/k39-many-txn-{tmp_path.name}", (1, 2, 3), workdir=tmp_path,
                                         version=realkafka.KAFKA_ZK_VERSION)
    try:
        wait_for(lambda: every_broker_knows_the_cluster([b.bootstrap for b in brokers]), 60,
                 "every Kafka 3.9 broker naming all brokers and the controller")
        _many_transactions_at_once(",".join(b.bootstrap for b in brokers), topic_name)
    finally:
        realkafka.stop_all(brokers)
