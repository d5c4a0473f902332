"""DescribeAcls, CreateAcls and DeleteAcls against Kafka 4.3.1 without an authorizer (its default,
and the only way wirekafka runs): SECURITY_DISABLED for a describe, for each creation and for
each deletion filter, with Kafka's messages; a creation with an UNKNOWN element is a request Kafka
cannot parse, so it closes the connection."""

from __future__ import annotations

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from conformance.harness.wire import Connection, unique

SECURITY_DISABLED = 54
TOPIC, GROUP = 2, 3  # resource types
LITERAL, PREFIXED, MATCH = 3, 4, 1  # pattern types (MATCH: filters only)
READ, WRITE, ALLOW, DENY = 3, 4, 3, 2


def _creation(name: str, pattern: int = LITERAL, resource: int = TOPIC, operation: int = READ,
              permission: int = ALLOW) -> CreateAclsRequest.AclCreation:
    return CreateAclsRequest.AclCreation(resource_type=resource, resource_name=name, resource_pattern_type=pattern,
                                         principal="User:alice", host="*", operation=operation,
                                         permission_type=permission)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe_acls(target, version):
    with Connection(target.bootstrap) as conn:
        answer = conn.call(DescribeAclsRequest(resource_type_filter=TOPIC, resource_name_filter=None,
                                               pattern_type_filter=MATCH, principal_filter=None, host_filter=None,
                                               operation=READ, permission_type=ALLOW), version)
    assert (answer.error_code, answer.error_message, answer.resources) == (
        SECURITY_DISABLED, "No Authorizer is configured on the broker", [])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_acls(target, version):
    with Connection(target.bootstrap) as conn:
        answer = conn.call(CreateAclsRequest(creations=[
            _creation(unique("t")), _creation(unique("p"), PREFIXED, GROUP, WRITE, DENY)]), version)
    assert [(r.error_code, r.error_message) for r in answer.results] == [
        (SECURITY_DISABLED, "No Authorizer is configured.")] * 2


@pytest.mark.parametrize("version", [1, 2, 3])
def test_delete_acls(target, version):
    filter_ = DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=TOPIC, resource_name_filter=unique("t"), pattern_type_filter=MATCH,
        principal_filter="User:alice", host_filter=None, operation=READ, permission_type=ALLOW)
    with Connection(target.bootstrap) as conn:
        answer = conn.call(DeleteAclsRequest(filters=[filter_, filter_]), version)
    assert [(r.error_code, r.error_message, r.matching_acls) for r in answer.filter_results] == [
        (SECURITY_DISABLED, "No Authorizer is configured.", [])] * 2


@pytest.mark.parametrize("field", ["resource_type", "resource_pattern_type", "operation", "permission_type"])
def test_a_creation_with_an_unknown_element_closes_the_connection(target, field):
    creation = _creation(unique("t"))
    setattr(creation, field, 0)
    with Connection(target.bootstrap) as conn:
        conn.send(CreateAclsRequest(creations=[creation]), 3, expect_response=False)
        conn.sock.settimeout(10)
        try:
            closed = conn.sock.recv(1) == b""
        except ConnectionResetError:
            closed = True
    assert closed
