"""wirekafka.embedded.Broker: a broker in a thread of the test process (or a child process),
reached by stock clients over TCP on 127.0.0.1 like any other broker."""

from __future__ import annotations

import shutil
import signal
import socket
import threading
from pathlib import Path
from typing import Callable, TypeVar

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from wirekafka.broker import dispatch
from wirekafka.embedded import Broker, BrokerError, Cluster, keyword_properties

T = TypeVar("T")


def off_main_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` in a thread of its own and return what it returned (or raise what it raised)."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert not thread.is_alive()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def confluent_round_trip(bootstrap: str, topic: str, value: bytes) -> bytes:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=value)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-group",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                return msg.value()
    finally:
        consumer.close()
    raise AssertionError(f"no record read back from {topic}")


def kafka_python_round_trip(bootstrap: str, topic: str, value: bytes) -> bytes:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(topic, value).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"{topic}-group",
                             auto_offset_reset="earliest", consumer_timeout_ms=30_000)
    try:
        return next(iter(consumer)).value
    finally:
        consumer.close()


def test_a_broker_started_off_the_main_thread_serves_both_clients() -> None:
    handlers = dict(dispatch.HANDLERS)
    term, interrupt = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    def scenario() -> tuple[bytes, bytes]:
        with Broker() as broker:
            assert broker.bootstrap_servers.startswith("127.0.0.1:")
            assert signal.getsignal(signal.SIGTERM) is term and signal.getsignal(signal.SIGINT) is interrupt
            return (confluent_round_trip(broker.bootstrap_servers, "embedded-confluent", b"from librdkafka"),
                    kafka_python_round_trip(broker.bootstrap_servers, "embedded-kafka-python", b"from kafka-python"))

    assert off_main_thread(scenario) == (b"from librdkafka", b"from kafka-python")
    assert dispatch.HANDLERS == handlers  # nothing process-wide changed


def test_two_brokers_in_one_process_keep_their_own_records() -> None:
    with Broker() as first, Broker(num_partitions=2) as second:
        assert first.bootstrap_servers != second.bootstrap_servers
        assert confluent_round_trip(first.bootstrap_servers, "shared-name", b"first") == b"first"
        assert confluent_round_trip(second.bootstrap_servers, "shared-name", b"second") == b"second"
        metadata = AdminClient({"bootstrap.servers": second.bootstrap_servers}).list_topics(
            "shared-name", timeout=10)
        assert len(metadata.topics["shared-name"].partitions) == 2  # the keyword reached that broker only
        metadata = AdminClient({"bootstrap.servers": first.bootstrap_servers}).list_topics(
            "shared-name", timeout=10)
        assert len(metadata.topics["shared-name"].partitions) == 1


def test_stop_removes_the_temporary_data_dir_unless_kept(tmp_path: Path) -> None:
    broker = Broker().start()
    temp = broker.data_dir
    assert temp.is_dir()
    broker.stop()
    assert not temp.exists()

    kept = Broker(keep_data=True).start()
    try:
        kept.stop()
        assert (kept.data_dir / "meta.properties").is_file()
    finally:
        shutil.rmtree(kept.data_dir)

    given = tmp_path / "data"
    with Broker(data_dir=given) as broker:
        assert broker.data_dir == given
    assert (given / "meta.properties").is_file()


def test_a_broker_restarts_on_its_data(tmp_path: Path) -> None:
    broker = Broker(data_dir=tmp_path / "data")
    with broker:
        assert confluent_round_trip(broker.bootstrap_servers, "kept", b"before") == b"before"
    with broker:  # a new port, the same log
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce("kept", value=b"after")
        assert producer.flush(30) == 0
        consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g2",
                                             "auto.offset.reset": "earliest"})
        consumer.assign([confluent_kafka.TopicPartition("kept", 0, 0)])
        values = []
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                values.append(msg.value())
            if len(values) == 2:
                break
        consumer.close()
        assert values == [b"before", b"after"]


def test_a_child_process_broker() -> None:
    broker = Broker(process=True)

    def scenario() -> bytes:
        with broker:
            return kafka_python_round_trip(broker.bootstrap_servers, "in-a-child", b"child")

    assert off_main_thread(scenario) == b"child"
    assert not broker.running


@pytest.mark.parametrize("process", [False, True], ids=["thread", "child-process"])
def test_a_bad_config_value_fails_start_with_the_reason(process: bool) -> None:
    broker = Broker({"num.partitions": "many"}, process=process)
    with pytest.raises(BrokerError, match="invalid value 'many' for num.partitions"):
        broker.start()
    assert not broker.running


def test_a_taken_port_fails_start_with_the_reason() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(BrokerError, match="ddress already in use"):
            Broker(listeners=f"PLAINTEXT://127.0.0.1:{port}").start()


def test_zookeeper_mode_needs_a_child_process() -> None:
    with pytest.raises(BrokerError, match="process=True"):
        Broker(zookeeper_connect="127.0.0.1:2181", broker_id=1).start()


def test_keywords_name_keys_with_dots() -> None:
    assert keyword_properties({"num_partitions": 3, "auto_create_topics_enable": False,
                               "log_dirs": ["/a", "/b"]}) == {
        "num.partitions": "3", "auto.create.topics.enable": "false", "log.dirs": "/a,/b"}


def test_bootstrap_servers_before_start_says_so() -> None:
    with pytest.raises(BrokerError, match="start"):
        _ = Broker().bootstrap_servers


@pytest.mark.zookeeper
def test_a_cluster_on_the_callers_zookeeper_replicates(zookeeper: str) -> None:
    with Cluster(2, zookeeper=zookeeper) as cluster:
        assert cluster.zookeeper_connect.startswith(zookeeper + "/wirekafka-")  # a chroot of its own
        assert len(cluster.bootstrap_servers.split(",")) == 2
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("replicated", 1, 2, config={"min.insync.replicas": "2"})])["replicated"] \
            .result(30)
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        producer.produce("replicated", value=b"on both")
        assert producer.flush(30) == 0  # acknowledged by both replicas (min.insync.replicas=2)
        [partition] = admin.list_topics("replicated", timeout=10).topics["replicated"].partitions.values()
        assert sorted(partition.isrs) == [1, 2]
