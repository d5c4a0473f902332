"""Kafka 3.9's znode paths and data: exact bytes against what Kafka writes, round trips, and what
the decoders accept and refuse.

The literal JSON comes from two places: znodes read back from running Kafka 3.x ZooKeeper-mode
clusters (broker, topic, partition state, controller, producer id block), and the string literals
of Kafka 3.9's own tests (KafkaZkClientTest, ReassignPartitionsZNodeTest). The rest is built by
reading the Scala encoders in kafka/zk/ZkData.scala."""

from __future__ import annotations

import uuid

import pytest

from wirekafka.broker.metadata.cluster_metadata import base64_to_uuid
from wirekafka.broker.metadata.zk import layout as zk
from wirekafka.jvm import (
    java_properties_order,
    scala_immutable_order,
    scala_mutable_hashmap_order,
)
from wirekafka.broker.metadata.zk.layout import (
    BrokerRegistration,
    ControllerRegistration,
    Endpoint,
    FeatureState,
    FeatureStatus,
    LeaderRecoveryState,
    PartitionState,
    ProducerIdBlock,
    TopicAssignment,
    ZkDataError,
)

PLAINTEXT = "PLAINTEXT"


# ---- paths -------------------------------------------------------------------------------------
def test_paths() -> None:
    assert zk.broker_path(3) == "/brokers/ids/3"
    assert zk.topic_path("orders") == "/brokers/topics/orders"
    assert zk.topic_partitions_path("orders") == "/brokers/topics/orders/partitions"
    assert zk.partition_path("orders", 2) == "/brokers/topics/orders/partitions/2"
    assert zk.partition_state_path("orders", 2) == "/brokers/topics/orders/partitions/2/state"
    assert zk.topic_config_path("orders") == "/config/topics/orders"
    assert zk.entity_config_path("brokers", "1") == "/config/brokers/1"
    assert zk.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert (zk.CONTROLLER, zk.CONTROLLER_EPOCH, zk.CLUSTER_ID) == ("/controller", "/controller_epoch", "/cluster/id")
    assert zk.CONFIG_CHANGE_PREFIX == "/config/changes/config_change_"
    assert zk.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    assert zk.PREFERRED_REPLICA_ELECTION == "/admin/preferred_replica_election"
    assert zk.ISR_CHANGE_PREFIX == "/isr_change_notification/isr_change_"
    assert zk.LOG_DIR_EVENT_PREFIX == "/log_dir_event_notification/log_dir_event_"
    assert (zk.LATEST_PRODUCER_ID_BLOCK, zk.FEATURE) == ("/latest_producer_id_block", "/feature")


def test_persistent_paths_are_kafkas_start_up_list_in_order() -> None:
    assert zk.PERSISTENT_PATHS == (
        "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics",
        "/brokers/seqid", "/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification",
        "/config/topics", "/config/clients", "/config/users", "/config/brokers", "/config/ips")


# ---- /brokers/ids/<id> -------------------------------------------------------------------------
def test_broker_registration_is_byte_identical_to_kafka() -> None:
    reg = BrokerRegistration(1, (Endpoint(PLAINTEXT, "server1", 9092, PLAINTEXT),), timestamp_ms=1704032948949)
    assert reg.encode() == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://server1:9092"],"jmx_port":-1,"port":9092,"host":"server1",'
        b'"version":5,"timestamp":"1704032948949"}')


def test_broker_registration_lists_listeners_in_registration_order() -> None:
    endpoints = (Endpoint("CONTROLPLANE-9090", "k0", 9090, "SSL"), Endpoint("REPLICATION-9091", "k0", 9091, "SSL"),
                 Endpoint("PLAIN-9092", "k0", 9092, PLAINTEXT), Endpoint("TLS-9093", "k0", 9093, "SSL"))
    assert BrokerRegistration(0, endpoints, timestamp_ms=1710691902130).encode() == (
        b'{"features":{},"listener_security_protocol_map":{"CONTROLPLANE-9090":"SSL","REPLICATION-9091":"SSL",'
        b'"PLAIN-9092":"PLAINTEXT","TLS-9093":"SSL"},"endpoints":["CONTROLPLANE-9090://k0:9090",'
        b'"REPLICATION-9091://k0:9091","PLAIN-9092://k0:9092","TLS-9093://k0:9093"],"jmx_port":-1,"port":9092,'
        b'"host":"k0","version":5,"timestamp":"1710691902130"}')


def test_broker_registration_with_rack_and_no_plaintext_listener() -> None:
    endpoints = (Endpoint("CLIENT", "h1", 9093, "SSL"), Endpoint("REPLICATION", "h1", 9094, "SASL_SSL"))
    reg = BrokerRegistration(2, endpoints, rack="us-east-1a", timestamp_ms=5)
    # Kafka's table of 16 slots puts "rack" right after "endpoints"; with no PLAINTEXT listener
    # the legacy host/port are null/-1.
    assert reg.encode() == (
        b'{"features":{},"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"SASL_SSL"},'
        b'"endpoints":["CLIENT://h1:9093","REPLICATION://h1:9094"],"rack":"us-east-1a","jmx_port":-1,'
        b'"port":-1,"host":null,"version":5,"timestamp":"5"}')
    assert BrokerRegistration.decode(2, reg.encode()) == reg


def test_broker_registration_round_trips_odd_hosts() -> None:
    endpoints = (Endpoint(PLAINTEXT, None, 9092, PLAINTEXT), Endpoint("INTERNAL", "::1", 19092, PLAINTEXT),
                 Endpoint("EXTERNAL", "host_1.example", 29092, "SASL_PLAINTEXT"))
    reg = BrokerRegistration(7, endpoints, rack="r\u00e9", timestamp_ms=1, jmx_port=9999)
    data = reg.encode()
    assert b'"endpoints":["PLAINTEXT://:9092","INTERNAL://[::1]:19092","EXTERNAL://host_1.example:29092"]' in data
    assert b'"rack":"r\xc3\xa9"' in data  # UTF-8, not \u escapes, as Jackson writes it
    assert b'"host":null,' in data and b'"port":9092,' in data
    assert BrokerRegistration.decode(7, data) == reg


def test_broker_registration_decodes_older_versions_and_extra_fields() -> None:
    v1 = b'{"jmx_port":-1,"timestamp":"1420485325400","host":"172.16.8.243","version":1,"port":9091}'
    assert BrokerRegistration.decode(1, v1).endpoints == (Endpoint(PLAINTEXT, "172.16.8.243", 9091, PLAINTEXT),)
    # Before version 4 there is no protocol map: listener names are protocol names.
    v3 = (b'{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
          b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"],"rack":"dc1"}')
    reg = BrokerRegistration.decode(1, v3)
    assert reg.endpoints[1] == Endpoint("SSL", "host1", 9093, "SSL") and reg.rack == "dc1" and reg.version == 3
    v4 = (b'{"version":4,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
          b'"endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],'
          b'"listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},"rack":null}')
    reg = BrokerRegistration.decode(1, v4)
    assert reg.endpoints == (Endpoint("CLIENT", "host1", 9092, "SSL"),
                             Endpoint("REPLICATION", "host1", 9093, PLAINTEXT))
    assert reg.rack is None and reg.features == {}
    v5 = (b'{"features":{"f1":{"min_version":1,"max_version":2}},'
          b'"listener_security_protocol_map":{"BROKER":"PLAINTEXT"},'
          b'"endpoints":["BROKER://broker1:9091"],"jmx_port":-1,"port":9091,"host":"broker1","version":5,"tags":{},'
          b'"timestamp":"1673382717473"}')
    reg = BrokerRegistration.decode(1, v5)
    assert reg.features == {"f1": {"min_version": 1, "max_version": 2}} and reg.timestamp_ms == 1673382717473


@pytest.mark.parametrize("data", [
    b'{"version":0,"jmx_port":-1,"host":"h","port":1}',
    b'{"version":5,"jmx_port":-1,"endpoints":["CLIENT://h:1"],"listener_security_protocol_map":{"OTHER":"SSL"}}',
    b'{"version":5,"jmx_port":-1,"endpoints":["no-scheme"]}',
    '{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h\u00f6st:9092"]}'.encode(),  # Kafka's pattern: ASCII hosts
    b'{"version":5,"endpoints":[]}',
    b'{"version":"five","jmx_port":-1}',
    b'not json',
    b'[1]',
])
def test_broker_registration_refuses_what_kafka_refuses(data: bytes) -> None:
    with pytest.raises(ZkDataError):
        BrokerRegistration.decode(1, data)


# ---- /brokers/topics/<t> -----------------------------------------------------------------------
def test_topic_assignment_is_byte_identical_to_kafka() -> None:
    topic_id = base64_to_uuid("SbJQ_jVrRFOYqlkfIgLwNg")
    assert TopicAssignment({0: (3, 2, 1)}, topic_id).encode() == (
        b'{"partitions":{"0":[3,2,1]},"topic_id":"SbJQ_jVrRFOYqlkfIgLwNg","adding_replicas":{},'
        b'"removing_replicas":{},"version":3}')
    four = TopicAssignment({0: (1, 0, 2), 1: (0, 2, 1), 2: (2, 1, 0), 3: (1, 2, 0)},
                           base64_to_uuid("W3mXDtj1RsWmsEhQrZjN5g"))
    assert four.encode() == (
        b'{"partitions":{"0":[1,0,2],"1":[0,2,1],"2":[2,1,0],"3":[1,2,0]},"topic_id":"W3mXDtj1RsWmsEhQrZjN5g",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}')


def test_topic_assignment_partitions_come_out_in_kafkas_hash_order() -> None:
    """From 12 partitions Kafka's map has 32 slots and "11" lands in slot 0 (as a real broker wrote it)."""
    replicas = {0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1), 5: (0, 2, 3), 6: (1, 3, 4),
                7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2), 10: (1, 2, 3), 11: (1, 3, 4)}
    assert TopicAssignment(replicas).encode() == (
        b'{"partitions":{"11":[1,3,4],"0":[0,1,2],"1":[1,2,3],"2":[2,3,4],"3":[3,4,0],"4":[4,0,1],"5":[0,2,3],'
        b'"6":[1,3,4],"7":[2,4,0],"8":[3,0,1],"9":[4,1,2],"10":[1,2,3]},"adding_replicas":{},"removing_replicas":{},'
        b'"version":3}')


def test_topic_assignment_with_a_reassignment_in_flight_round_trips() -> None:
    assignment = TopicAssignment({0: (1, 2, 3), 1: (2, 3)}, uuid.UUID(int=0x1234), adding_replicas={0: (3,)},
                                 removing_replicas={0: (1,)})
    data = assignment.encode()
    assert b'"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}' in data
    assert TopicAssignment.decode(data) == assignment


def test_topic_assignment_decodes_older_versions() -> None:
    old = TopicAssignment.decode(b'{"version":1,"partitions":{"2":[1,2],"1":[0,1],"3":[2,1],"0":[2,0]}}')
    assert old == TopicAssignment({2: (1, 2), 1: (0, 1), 3: (2, 1), 0: (2, 0)})
    # In-flight lists for partitions the assignment does not have are ignored, as Kafka does.
    stray = TopicAssignment.decode(
        b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"5":[2]},"removing_replicas":{}}')
    assert stray.adding_replicas == {}


# ---- /brokers/topics/<t>/partitions/<p>/state --------------------------------------------------
def test_partition_state_is_byte_identical_to_kafka() -> None:
    state = PartitionState(leader=2, leader_epoch=0, isr=(2, 0, 1), controller_epoch=1)
    assert state.encode() == b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,0,1]}'
    assert PartitionState.decode(state.encode()) == state


def test_partition_state_after_unclean_election_keeps_version_1() -> None:
    state = PartitionState(3, 7, (3,), 20, LeaderRecoveryState.RECOVERING)
    assert state.encode() == (
        b'{"controller_epoch":20,"leader":3,"version":1,"leader_recovery_state":1,"leader_epoch":7,"isr":[3]}')
    assert PartitionState.decode(state.encode()) == state


@pytest.mark.parametrize("data", [
    b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0}',
    b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2],"leader_recovery_state":5}',
])
def test_partition_state_refuses_what_kafka_refuses(data: bytes) -> None:
    with pytest.raises(ZkDataError):
        PartitionState.decode(data)


# ---- /controller, /controller_epoch, /cluster/id -----------------------------------------------
def test_controller_registration_is_byte_identical_to_kafka() -> None:
    reg = ControllerRegistration(broker_id=0, timestamp_ms=1710691902625)
    assert reg.encode() == b'{"version":2,"brokerid":0,"timestamp":"1710691902625","kraftControllerEpoch":-1}'
    assert ControllerRegistration.decode(reg.encode()) == reg


def test_controller_registration_version_1_has_no_kraft_epoch() -> None:
    reg = ControllerRegistration.decode(b'{"version":1,"brokerid":0,"timestamp":"1677731044279"}')
    assert reg == ControllerRegistration(0, 1677731044279, -1)


def test_controller_epoch_and_cluster_id() -> None:
    assert zk.encode_controller_epoch(1) == b"1"
    assert zk.decode_controller_epoch(b"17") == 17
    with pytest.raises(ZkDataError):
        zk.decode_controller_epoch(b"x")
    assert zk.encode_cluster_id("1N7JbZwjS-aW9JqhZbmMBg") == b'{"version":"1","id":"1N7JbZwjS-aW9JqhZbmMBg"}'
    assert zk.decode_cluster_id(b'{"version":"1","id":"abc"}') == "abc"


# ---- /config ------------------------------------------------------------------------------------
def test_entity_config() -> None:
    assert zk.encode_entity_config({"retention.ms": "100000"}) == b'{"version":1,"config":{"retention.ms":"100000"}}'
    # A Properties lists keys by hash bin: "cleanup.policy" (bin 2) before "retention.ms" (bin 5).
    data = zk.encode_entity_config({"retention.ms": "1000", "cleanup.policy": "compact"})
    assert data == b'{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}'
    assert zk.decode_entity_config(data) == {"cleanup.policy": "compact", "retention.ms": "1000"}
    assert zk.decode_entity_config(b"") == {} and zk.decode_entity_config(None) == {}
    assert zk.decode_entity_config(b'{"version":1}') == {}
    with pytest.raises(ZkDataError):
        zk.decode_entity_config(b'{"version":1,"config":{"retention.ms":1000}}')


def test_config_change_notification() -> None:
    assert zk.encode_config_change("topics", "orders") == b'{"version":2,"entity_path":"topics/orders"}'
    assert zk.decode_config_change(b'{"version":2,"entity_path":"brokers/1"}') == ("brokers", "1")
    assert zk.decode_config_change(b'{"version":2,"entity_path":"users/alice/clients/app"}') == (
        "users", "alice/clients/app")
    assert zk.decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"t"}') == ("topics", "t")
    for bad in (b'{"version":3,"entity_path":"topics/t"}', b'{"version":2,"entity_path":"topics"}', b'{"version":2}'):
        with pytest.raises(ZkDataError):
            zk.decode_config_change(bad)


# ---- /admin and notifications ------------------------------------------------------------------
def test_reassignment_matches_kafkas_test_literal() -> None:
    literal = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'
    assert zk.encode_reassignment({("foo", 0): [1, 2]}) == literal
    assert zk.decode_reassignment(literal) == {("foo", 0): (1, 2)}


def test_partition_lists_match_kafkas_test_literals() -> None:
    literal = b'{"version":1,"partitions":[{"topic":"topic-a","partition":0},{"topic":"topic-b","partition":0}]}'
    partitions = [("topic-a", 0), ("topic-b", 0)]
    assert zk.encode_isr_change(partitions) == literal
    assert zk.encode_preferred_replica_election(partitions) == literal
    assert zk.decode_isr_change(literal) == zk.decode_preferred_replica_election(literal) == set(partitions)
    assert zk.encode_log_dir_event(3) == b'{"version":1,"broker":3,"event":1}'
    assert zk.decode_log_dir_event(b'{"version":1,"broker":3,"event":1}') == 3


# ---- /latest_producer_id_block, /feature -------------------------------------------------------
def test_producer_id_block_is_byte_identical_to_kafka() -> None:
    block = ProducerIdBlock(broker_id=0, block_start=8000, block_end=8999)
    assert block.encode() == b'{"version":1,"broker":0,"block_start":"8000","block_end":"8999"}'
    assert ProducerIdBlock.decode(block.encode()) == block
    with pytest.raises(ZkDataError):
        ProducerIdBlock.decode(b'{"version":1,"broker":0,"block_start":"x","block_end":"9"}')


def test_feature_znode() -> None:
    assert FeatureState().encode() == b'{"features":{},"version":2,"status":1}'
    assert FeatureState.decode(b'{"features":{},"version":2,"status":1}') == FeatureState()
    v1 = FeatureState(FeatureStatus.ENABLED, {"metadata.version": 1}, version=1)
    assert v1.encode() == (b'{"features":{"metadata.version":{"max_version_level":1,"min_version_level":1}},'
                           b'"version":1,"status":1}')
    assert FeatureState.decode(v1.encode()) == v1
    for bad in (b'{"features":{},"version":3,"status":1}', b'{"features":{},"version":2}',
                b'{"version":2,"status":0}', b'{"features":{"f":{"min_version_level":1}},"version":2,"status":1}'):
        with pytest.raises(ZkDataError):
            FeatureState.decode(bad)


# ---- the JVM collection orders behind the bytes ------------------------------------------------
def test_scala_mutable_hashmap_order() -> None:
    assert scala_mutable_hashmap_order(["2", "0", "1"]) == ["0", "1", "2"]
    assert scala_mutable_hashmap_order([str(i) for i in range(12)])[:2] == ["11", "0"]
    # Int keys hash to themselves; 16 folds into slot 0 of the 16-slot table, ahead of 1.
    assert scala_mutable_hashmap_order([1, 16]) == [16, 1]


def test_scala_immutable_order() -> None:
    assert scala_immutable_order(["b", "a", "c", "b"]) == ["b", "a", "c"]  # up to four: as inserted
    keys = ["version", "leader", "leader_epoch", "controller_epoch", "isr"]
    assert scala_immutable_order(keys) == ["controller_epoch", "leader", "version", "leader_epoch", "isr"]


def test_java_properties_order_within_and_across_a_resize() -> None:
    # "a", "A", "q", "Q" share bin 1 of 16; "a" and "A" stay in bin 1 of 32, "q" and "Q" move to 17.
    eleven = ["a", "A", "q", "Q", "b", "c", "d", "e", "f", "g", "h"]
    assert java_properties_order(eleven) == eleven
    # The 12th key doubles the table; the nodes ahead of the bin's last run are re-linked in reverse.
    assert java_properties_order(eleven + ["i"]) == ["A", "a", "b", "c", "d", "e", "f", "g", "h", "i", "q", "Q"]
