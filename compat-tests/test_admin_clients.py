"""Admin clients against a live wirekafka: confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient for topics, partitions, configs, records, offsets and the cluster; retention set
through AlterConfigs really deletes old segments; records deleted with DeleteRecords stay deleted
across a clean restart and a kill -9."""

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
    OffsetSpec,
)
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import ConfigResource as KPConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)


def _admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})


def _kp_admin(broker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)


def _error_name(call) -> str:
    with pytest.raises(KafkaException) as info:
        call()
    return info.value.args[0].name()


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


def _consume_offsets(bootstrap: str, topic: str, start: int, last: int) -> list[int]:
    """Offsets read from `start` (reset to earliest if out of range) until `last`, bounded."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "log_level": 3})
    consumer.assign([TopicPartition(topic, 0, start)])
    got: list[int] = []
    try:
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.offset())
            if got and got[-1] == last:
                break
    finally:
        consumer.close()
    return got


# ---- confluent-kafka -----------------------------------------------------------------------------
def test_confluent_topic_lifecycle(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 2, 1, config={"retention.ms": "1234567"})])[topic_name].result(10)
    assert _error_name(lambda: admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)) == \
        "TOPIC_ALREADY_EXISTS"
    assert sorted(admin.list_topics(timeout=10).topics[topic_name].partitions) == [0, 1]
    admin.create_partitions([NewPartitions(topic_name, 4)], validate_only=True)[topic_name].result(10)
    assert sorted(admin.list_topics(timeout=10).topics[topic_name].partitions) == [0, 1]
    admin.create_partitions([NewPartitions(topic_name, 5)])[topic_name].result(10)
    assert sorted(admin.list_topics(timeout=10).topics[topic_name].partitions) == [0, 1, 2, 3, 4]
    _produce(broker.bootstrap, topic_name, 2, partition=4)
    assert _watermarks(broker.bootstrap, topic_name, 4) == (0, 2)
    assert _error_name(lambda: admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(10)) == \
        "INVALID_PARTITIONS"
    assert _error_name(lambda: admin.create_partitions(
        [NewPartitions(topic_name, 6, replica_assignment=[[7]])])[topic_name].result(10)) == "INVALID_REPLICA_ASSIGNMENT"
    admin.delete_topics([topic_name])[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics
    assert _error_name(lambda: admin.delete_topics([topic_name])[topic_name].result(10)) == "UNKNOWN_TOPIC_OR_PART"
    # The name is free again: a new topic, empty, with default configs.
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    res = ConfigResource("topic", topic_name)
    assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "604800000"
    assert _watermarks(broker.bootstrap, topic_name) == (0, 0)


def test_confluent_create_topics_validation(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 3, 1)], validate_only=True)[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics
    assert _error_name(lambda: admin.create_topics([NewTopic(topic_name, 1, 3)])[topic_name].result(10)) == \
        "INVALID_REPLICATION_FACTOR"
    assert _error_name(lambda: admin.create_topics(
        [NewTopic(topic_name, 1, 1, config={"retention.ms": "soon"})])[topic_name].result(10)) == "INVALID_CONFIG"
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_confluent_configs(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"cleanup.policy": "delete"})])[topic_name].result(10)
    res = ConfigResource("topic", topic_name)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["retention.ms"].value == "604800000" and configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "delete" and not configs["cleanup.policy"].is_default
    assert configs["cleanup.policy"].source == 1  # DYNAMIC_TOPIC_CONFIG

    def incremental(*entries, validate_only=False):
        target = ConfigResource("topic", topic_name, incremental_configs=list(entries))
        return admin.incremental_alter_configs([target], validate_only=validate_only)[target].result(10)

    incremental(ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET), validate_only=True)
    assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "604800000"
    incremental(ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["retention.ms"].value == "86400000"
    assert configs["cleanup.policy"].value == "delete,compact"
    incremental(ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
                ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["retention.ms"].value == "604800000" and configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "compact"
    assert _error_name(lambda: incremental(
        ConfigEntry("retention.ms", "not-a-number", incremental_operation=AlterConfigOpType.SET))) == "INVALID_CONFIG"
    assert _error_name(lambda: incremental(
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND))) == "INVALID_CONFIG"
    # Legacy AlterConfigs replaces every override.
    legacy = ConfigResource("topic", topic_name, set_config={"segment.bytes": "2097152"})
    admin.alter_configs([legacy])[legacy].result(10)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["segment.bytes"].value == "2097152" and configs["cleanup.policy"].value == "delete"
    ghost = ConfigResource("topic", topic_name + "-ghost")
    assert _error_name(lambda: admin.describe_configs([ghost])[ghost].result(10)) == "UNKNOWN_TOPIC_OR_PART"


def test_confluent_broker_configs(broker):
    admin = _admin(broker)
    res = ConfigResource("broker", "1")
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["message.max.bytes"].value == "1048588" and configs["message.max.bytes"].is_default
    assert configs["listeners"].value == f"PLAINTEXT://127.0.0.1:{broker.port}"
    assert configs["listeners"].source == 4  # STATIC_BROKER_CONFIG
    assert configs["log.retention.ms"].value is None and configs["log.retention.hours"].value == "168"
    # log.retention.hours cannot change at runtime (only log.retention.ms can, as in Kafka)
    static = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("log.retention.hours", "1", incremental_operation=AlterConfigOpType.SET)])
    assert _error_name(lambda: admin.incremental_alter_configs([static])[static].result(10)) == "INVALID_REQUEST"
    change = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([change])[change].result(10)
        changed = admin.describe_configs([res])[res].result(10)
        assert (changed["log.retention.ms"].value, changed["log.retention.ms"].source) == ("3600000", 2)  # DYNAMIC_BROKER
        assert changed["log.retention.hours"].value == "168"
    finally:
        undo = ConfigResource("broker", "1", incremental_configs=[
            ConfigEntry("log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
        admin.incremental_alter_configs([undo])[undo].result(10)
    assert admin.describe_configs([res])[res].result(10)["log.retention.ms"].value is None


def test_confluent_cluster_records_and_offsets(broker, topic_name):
    admin = _admin(broker)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert cluster.controller.id == 1 and [n.id for n in cluster.nodes] == [1]
    assert (cluster.nodes[0].host, cluster.nodes[0].port) == ("127.0.0.1", broker.port)
    assert len(cluster.cluster_id) == 22 and cluster.authorized_operations
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    _produce(broker.bootstrap, topic_name, 10)
    tp = TopicPartition(topic_name, 0)
    (future,) = admin.delete_records([TopicPartition(topic_name, 0, 4)]).values()
    assert future.result(10).low_watermark == 4
    assert _watermarks(broker.bootstrap, topic_name) == (4, 10)
    offsets = admin.list_offsets({tp: OffsetSpec.earliest()})
    assert offsets[tp].result(10).offset == 4
    assert admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(10).offset == 10
    (future,) = admin.delete_records([TopicPartition(topic_name, 0, 11)]).values()
    with pytest.raises(KafkaException) as info:
        future.result(10)
    assert info.value.args[0].name() == "OFFSET_OUT_OF_RANGE"
    # A consumer positioned below the log start gets OFFSET_OUT_OF_RANGE and resets to it.
    assert _consume_offsets(broker.bootstrap, topic_name, 1, 9) == list(range(4, 10))


# ---- kafka-python --------------------------------------------------------------------------------
def test_kafka_python_admin(broker, topic_name):
    admin = _kp_admin(broker)
    try:
        admin.create_topics({topic_name: {"num_partitions": 2, "replication_factor": 1,
                                          "configs": {"segment.bytes": "1048576"}}})
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({topic_name: {"num_partitions": 2, "replication_factor": 1}})
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics({topic_name + "-rf3": {"num_partitions": 1, "replication_factor": 3}})
        admin.create_topics({topic_name + "-vo": {"num_partitions": 1, "replication_factor": 1}}, validate_only=True)
        assert topic_name + "-vo" not in admin.list_topics()
        admin.create_partitions({topic_name: 4})
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({topic_name: 3})
        assert len(admin.describe_topics([topic_name])[0]["partitions"]) == 4

        resource = KPConfigResource(ConfigResourceType.TOPIC, topic_name)
        modified = admin.describe_configs([resource])["topic"][topic_name]
        assert modified["segment.bytes"]["value"] == "1048576"
        assert modified["segment.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        everything = admin.describe_configs([resource], include_synonyms=True, config_filter="all")
        ret = everything["topic"][topic_name]["retention.ms"]
        assert (ret["value"], ret["config_source"], ret["config_type"]) == ("604800000", "DEFAULT_CONFIG", "LONG")
        # Incremental by default (the broker advertises it), then the legacy API on request.
        result = admin.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, topic_name,
                                                       configs={"retention.ms": "3600000"})])
        assert result == {"topic": {topic_name: "OK"}}
        modified = admin.describe_configs([resource])["topic"][topic_name]
        assert modified["retention.ms"]["value"] == "3600000" and modified["segment.bytes"]["value"] == "1048576"
        admin.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, topic_name, configs={"flush.ms": "60000"})],
                            incremental=False)
        modified = admin.describe_configs([resource])["topic"][topic_name]
        # kafka-python's legacy path re-sends the other modified keys, so nothing is lost.
        assert {k: v["value"] for k, v in modified.items()} == {
            "segment.bytes": "1048576", "retention.ms": "3600000", "flush.ms": "60000"}
        broker_configs = admin.describe_configs([KPConfigResource(ConfigResourceType.BROKER, "1")],
                                                config_filter="all")["broker"]["1"]
        assert broker_configs["num.partitions"]["value"] == "1"

        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 1 and cluster["cluster_id"]
        assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [(1, "127.0.0.1", broker.port)]

        _produce(broker.bootstrap, topic_name, 5)
        deleted = admin.delete_records({KPTopicPartition(topic_name, 0): 3})
        assert deleted[KPTopicPartition(topic_name, 0)]["low_watermark"] == 3
        assert _watermarks(broker.bootstrap, topic_name) == (3, 5)

        admin.delete_topics([topic_name])
        assert topic_name not in admin.list_topics()
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics([topic_name])
    finally:
        admin.close()


# ---- dedicated brokers ---------------------------------------------------------------------------
def test_delete_records_survives_restart_and_kill(broker_factory, topic_name):
    broker = broker_factory()
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    _produce(broker.bootstrap, topic_name, 10)
    (future,) = admin.delete_records([TopicPartition(topic_name, 0, 6)]).values()
    assert future.result(10).low_watermark == 6
    assert broker.stop() == 0
    broker.start()
    assert _watermarks(broker.bootstrap, topic_name) == (6, 10)
    admin = _admin(broker)
    (future,) = admin.delete_records([TopicPartition(topic_name, 0, 8)]).values()
    assert future.result(10).low_watermark == 8
    broker.kill()
    broker.start()
    assert _watermarks(broker.bootstrap, topic_name) == (8, 10)
    assert _consume_offsets(broker.bootstrap, topic_name, 0, 9) == [8, 9]


def test_retention_ms_set_through_alter_configs_deletes_old_segments(broker_factory, topic_name):
    # Kafka 4 refuses segments under 1 MiB (segment.bytes and log.segment.bytes); its internal
    # topic config internal.segment.bytes makes small ones, as in Kafka's own tests.
    broker = broker_factory({"log.retention.check.interval.ms": "300"})
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"flush.ms": "60000", "internal.segment.bytes": "1024"})]
                        )[topic_name].result(10)
    old = int(time.time() * 1000) - 3_600_000
    _produce(broker.bootstrap, topic_name, 60, timestamp=old)  # many small segments, an hour old
    _produce(broker.bootstrap, topic_name, 3)  # recent records in the newest segments
    seg_dir = broker.data_dir / f"{topic_name}-0"
    before = sorted(seg_dir.glob("*.log"))
    assert len(before) >= 4 and _watermarks(broker.bootstrap, topic_name)[0] == 0
    time.sleep(1)  # a few retention checks pass: the default 7-day retention keeps everything
    assert sorted(seg_dir.glob("*.log")) == before
    res = ConfigResource("topic", topic_name, set_config={"retention.ms": "600000", "internal.segment.bytes": "1024"})
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
    assert _consume_offsets(broker.bootstrap, topic_name, low, 62) == list(range(low, 63))


def _list_offsets(admin: AdminClient, topic: str) -> tuple[int, int]:
    """ListOffsets EARLIEST and LATEST of partition 0."""
    tp = TopicPartition(topic, 0)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(10).offset
    return earliest, admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(10).offset


@pytest.mark.parametrize("config", [{"retention.ms": "1000"}, {"retention.bytes": "0"}],
                         ids=["retention.ms", "retention.bytes"])
def test_a_topic_written_once_and_left_alone_is_emptied_by_retention(broker_factory, config):
    """Retention covers the active segment, as in Kafka 4.3.1 (checked against it with the same
    configs): the log rolls an empty segment at the log end and the old one goes, so ListOffsets
    answers earliest == latest == the records written, within retention.ms + the check interval
    (given generous slack here for a loaded machine). The log start survives a restart, and the
    log carries on from it."""
    broker = broker_factory({"log.retention.check.interval.ms": "500"})
    topic = "written-once"  # the broker is this test's own: a fixed name cannot collide
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(10)
    _produce(broker.bootstrap, topic, 5)
    assert _list_offsets(admin, topic)[1] == 5
    deadline = time.monotonic() + 1.0 + 0.5 + 15
    segments = broker.data_dir / f"{topic}-0"
    while _list_offsets(admin, topic) != (5, 5) or len(list(segments.glob("*.log"))) != 1:
        assert time.monotonic() < deadline, (_list_offsets(admin, topic), sorted(segments.glob("*.log")))
        time.sleep(0.1)
    assert sorted(p.name for p in segments.glob("*.log")) == ["00000000000000000005.log"]
    assert broker.stop() == 0, broker.log_tail()
    broker.start()
    admin = _admin(broker)
    assert _list_offsets(admin, topic) == (5, 5)
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE) for name in config])
    admin.incremental_alter_configs([res])[res].result(10)  # retention back to the defaults
    _produce(broker.bootstrap, topic, 1)
    assert _list_offsets(admin, topic) == (5, 6)
    assert _consume_offsets(broker.bootstrap, topic, 0, 5) == [5]  # out of range at 0: reset to the start


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_deleted_files_are_renamed_at_once_and_removed_after_the_delete_delay(broker_factory, topic_name):
    """Kafka's asynchronous deletion, through a live broker: segments retention takes become
    `*.deleted` and go file.delete.delay.ms later; a deleted topic's partition directory becomes
    `<topic>-0.<uuid>-delete` (the name is free at once: the topic is re-created and written
    while the old files wait) and goes log.segment.delete.delay.ms later, also after a kill -9."""
    broker = broker_factory({"log.retention.check.interval.ms": "200", "log.segment.delete.delay.ms": "8000"})
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"internal.segment.bytes": "1024",
                                                             "file.delete.delay.ms": "3000"})])[topic_name].result(10)
    _produce(broker.bootstrap, topic_name, 40)
    part = broker.data_dir / f"{topic_name}-0"
    res = ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("retention.bytes", "100", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(10)
    _wait(lambda: any(p.name.endswith(".log.deleted") for p in part.iterdir()), 15, "retention renamed segments")
    low = _watermarks(broker.bootstrap, topic_name)[0]
    assert low > 0 and all(int(p.stem) >= low for p in part.glob("*.log"))
    _wait(lambda: not any(p.name.endswith(".deleted") for p in part.iterdir()), 15, "renamed segments removed")

    admin.delete_topics([topic_name], operation_timeout=10)[topic_name].result(10)
    doomed = [p for p in broker.data_dir.iterdir() if p.name.startswith(f"{topic_name}-0.") and p.name.endswith("-delete")]
    assert len(doomed) == 1 and not part.exists() and sorted(doomed[0].glob("*.log"))
    _wait(lambda: _topic_created(admin, topic_name), 15, "topic re-created under the same name")
    _produce(broker.bootstrap, topic_name, 2)
    assert _watermarks(broker.bootstrap, topic_name) == (0, 2) and doomed[0].exists()
    _wait(lambda: not doomed[0].exists(), 25, "the -delete directory removed")

    admin.delete_topics([topic_name], operation_timeout=10)[topic_name].result(10)
    [left] = [p for p in broker.data_dir.iterdir() if p.name.startswith(f"{topic_name}-0.") and p.name.endswith("-delete")]
    broker.kill()
    broker.start()
    assert left.exists()  # a previous run's: removed after the delay, as Kafka's LogManager does
    _wait(lambda: not left.exists(), 25, "the left-over -delete directory removed after a restart")


def _topic_created(admin: AdminClient, topic: str) -> bool:
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
        return True
    except KafkaException:
        return False
