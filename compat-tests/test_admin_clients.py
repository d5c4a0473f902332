"""Admin clients against a live wirekafka: confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient for topics, partitions, configs, records and the cluster; retention set through
AlterConfigs really deletes old segments."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka.admin import ConfigResource as KPConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.admin import NewPartitions as KPNewPartitions
from kafka.admin import NewTopic as KPNewTopic
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError


def _admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})


def _produce(bootstrap: str, topic: str, n: int, partition: int = 0, timestamp: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "linger.ms": 0})
    for i in range(n):
        kwargs = {"timestamp": timestamp} if timestamp is not None else {}
        p.produce(topic, value=b"v%d" % i, partition=partition, **kwargs)
        assert p.flush(10) == 0  # one batch per record, so small segments really fill up


def _watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm", "log_level": 3})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        c.close()


def test_confluent_topic_lifecycle(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 2, 1, config={"retention.ms": "1234567"})])[topic_name].result(10)
    with pytest.raises(KafkaException) as info:
        admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    assert info.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    md = admin.list_topics(timeout=10).topics[topic_name]
    assert sorted(md.partitions) == [0, 1]
    admin.create_partitions([NewPartitions(topic_name, 5)])[topic_name].result(10)
    assert sorted(admin.list_topics(timeout=10).topics[topic_name].partitions) == [0, 1, 2, 3, 4]
    with pytest.raises(KafkaException) as info:
        admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(10)
    assert info.value.args[0].name() == "INVALID_PARTITIONS"
    admin.delete_topics([topic_name])[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics
    with pytest.raises(KafkaException) as info:
        admin.delete_topics([topic_name])[topic_name].result(10)
    assert info.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"


def test_confluent_validate_only_creates_nothing(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 3, 1)], validate_only=True)[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_confluent_configs(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"cleanup.policy": "delete"})])[topic_name].result(10)
    res = ConfigResource("topic", topic_name)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["retention.ms"].value == "604800000" and configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "delete" and not configs["cleanup.policy"].is_default
    admin.incremental_alter_configs([ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ])])[res].result(10)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["retention.ms"].value == "86400000"
    assert configs["cleanup.policy"].value == "delete,compact"
    admin.incremental_alter_configs([ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])])[res].result(10)
    assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "604800000"
    with pytest.raises(KafkaException) as info:
        admin.incremental_alter_configs([ConfigResource("topic", topic_name, incremental_configs=[
            ConfigEntry("retention.ms", "not-a-number", incremental_operation=AlterConfigOpType.SET),
        ])])[res].result(10)
    assert info.value.args[0].name() == "INVALID_CONFIG"
    broker_res = ConfigResource("broker", "1")
    broker_configs = admin.describe_configs([broker_res])[broker_res].result(10)
    assert broker_configs["message.max.bytes"].value == "1048588"
    assert broker_configs["listeners"].value == f"PLAINTEXT://127.0.0.1:{broker.port}"


def test_confluent_describe_cluster_and_delete_records(broker, topic_name):
    admin = _admin(broker)
    cluster = admin.describe_cluster().result(10)
    assert cluster.controller.id == 1 and [n.id for n in cluster.nodes] == [1]
    assert len(cluster.cluster_id) == 22
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    _produce(broker.bootstrap, topic_name, 10)
    deleted = admin.delete_records([TopicPartition(topic_name, 0, 4)])
    (future,) = deleted.values()
    assert future.result(10).low_watermark == 4
    assert _watermarks(broker.bootstrap, topic_name) == (4, 10)


def test_kafka_python_admin(broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([KPNewTopic(topic_name, 2, 1, topic_configs={"segment.bytes": "1048576"})])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([KPNewTopic(topic_name, 2, 1)], raise_errors=True) \
                if "raise_errors" in KafkaAdminClient.create_topics.__code__.co_varnames \
                else admin.create_topics([KPNewTopic(topic_name, 2, 1)])
        admin.create_partitions({topic_name: KPNewPartitions(4)})
        described = admin.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, topic_name)])
        text = repr(described)
        assert "segment.bytes" in text and "1048576" in text
        admin.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, topic_name,
                                              configs={"retention.ms": "3600000"})])
        described = repr(admin.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, topic_name)]))
        assert "3600000" in described
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 1
        admin.delete_topics([topic_name])
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics([topic_name])
    finally:
        admin.close()


def test_retention_ms_set_through_alter_configs_deletes_old_segments(broker_factory, topic_name):
    # Kafka 4 refuses topic segment.bytes under 1 MiB; the broker-level key makes small segments.
    broker = broker_factory({"log.retention.check.interval.ms": "300", "log.segment.bytes": "1024"})
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"flush.ms": "60000"})])[topic_name].result(10)
    old = int(time.time() * 1000) - 3_600_000
    _produce(broker.bootstrap, topic_name, 60, timestamp=old)  # many small segments, an hour old
    _produce(broker.bootstrap, topic_name, 3)  # recent records in the newest segments
    seg_dir = broker.data_dir / f"{topic_name}-0"
    before = sorted(seg_dir.glob("*.log"))
    assert len(before) >= 4 and _watermarks(broker.bootstrap, topic_name)[0] == 0
    res = ConfigResource("topic", topic_name, set_config={"retention.ms": "600000"})
    admin.alter_configs([res])[res].result(10)
    # Legacy AlterConfigs replaces the whole override set: flush.ms went back to its default.
    assert admin.describe_configs([res])[res].result(10)["flush.ms"].is_default
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _watermarks(broker.bootstrap, topic_name)[0] == 0:
        time.sleep(0.2)
    low, high = _watermarks(broker.bootstrap, topic_name)
    assert 0 < low <= 60 and high == 63
    after = sorted(seg_dir.glob("*.log"))
    assert before[0] not in after and len(after) < len(before)
    assert all(int(p.stem) >= low or p == after[0] for p in after)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "r", "log_level": 3})
    consumer.assign([TopicPartition(topic_name, 0, low)])
    got = []
    for _ in range(40):
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.offset())
        if got and got[-1] == 62:
            break
    consumer.close()
    assert got == list(range(low, 63))
