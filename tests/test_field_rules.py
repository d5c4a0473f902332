"""What Kafka's readers refuse closes the connection (protocol/field_rules.py): null in a field
the schema does not let be null, a string over 32,767 bytes; nullable fields pass."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import JoinGroupRequest

from wirekafka.protocol import codec
from wirekafka.protocol.field_rules import broken_rule


def _join(group_id, instance_id=None) -> JoinGroupRequest:
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return JoinGroupRequest(group_id=group_id, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                            group_instance_id=instance_id, protocol_type="consumer", protocols=[protocol], reason=None)


def test_a_null_group_id_is_found_and_a_null_instance_id_is_allowed():
    assert broken_rule(JoinGroupRequest, 5, _join(None)) == "non-nullable field GroupId was serialized as null"
    assert broken_rule(JoinGroupRequest, 5, _join("g", None)) is None


def test_a_null_element_of_a_string_array_is_found():
    resource = DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="t",
                                                              configuration_keys=["a", None])
    request = DescribeConfigsRequest(resources=[resource], include_synonyms=False, include_documentation=False)
    assert broken_rule(DescribeConfigsRequest, 4, request) == "non-nullable field ConfigurationKeys was serialized as null"
    resource.configuration_keys = None  # the array itself is nullable
    assert broken_rule(DescribeConfigsRequest, 4, request) is None


def test_a_fetch_checks_its_topic_names_not_its_partitions():
    partition = FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                       last_fetched_epoch=-1, log_start_offset=-1,
                                                       partition_max_bytes=1)
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1, isolation_level=0, session_id=0,
                           session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=None, partitions=[partition])],
                           forgotten_topics_data=[], rack_id="")
    assert broken_rule(FetchRequest, 12, request) == "non-nullable field Topic was serialized as null"


@pytest.mark.parametrize("version", [1, 5])
def test_the_codec_refuses_the_request(version):
    header = struct.pack(">hhih", JoinGroupRequest.API_KEY, version, 7, 1) + b"c"
    body = bytes(_join("g").encode(version=version))
    good = codec.decode_body(codec.parse_header(header + body), header + body)
    assert good.group_id == "g"
    nulled = header + struct.pack(">h", -1) + body[2 + 1:]  # GroupId "g" (int16 length 1) as null
    with pytest.raises(codec.ProtocolError, match="non-nullable field GroupId"):
        codec.decode_body(codec.parse_header(nulled), nulled)


def test_a_string_over_32767_bytes_is_refused_in_a_flexible_version():
    assert broken_rule(JoinGroupRequest, 9, _join("g" * 32767)) is None
    assert broken_rule(JoinGroupRequest, 9, _join("g" * 32768)) == "string field GroupId had invalid length"
    assert broken_rule(JoinGroupRequest, 9, _join("\u00e9" * 16384)) == "string field GroupId had invalid length"  # 32,768 bytes
    long_type = _join("g")
    long_type.protocols[0].name = "n" * 40000
    assert broken_rule(JoinGroupRequest, 9, long_type) == "string field Name had invalid length"


def test_an_error_message_quoting_a_long_string_still_fits_an_old_version():
    """AlterConfigs v0 refusing a config name of 32,767 bytes: "Unknown config name: <name>"
    is longer than an int16-length string holds; cut, the answer encodes."""
    from kafka.protocol.admin.configs import AlterConfigsResponse
    from wirekafka.protocol.errors import ErrorCode, KafkaApiError

    error = KafkaApiError(ErrorCode.INVALID_CONFIG, "Unknown config name: " + "\u00e9" * 20000)
    assert len(error.message.encode()) <= 32767
    answer = AlterConfigsResponse.AlterConfigsResourceResponse
    response = AlterConfigsResponse(throttle_time_ms=0, responses=[answer(
        error_code=error.code, error_message=error.message, resource_type=2, resource_name="t")])
    assert AlterConfigsResponse.decode(bytes(response.encode(version=0)), version=0).responses[0].error_message == \
        error.message
