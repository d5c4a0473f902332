"""DescribeAcls (key 29), CreateAcls (30) and DeleteAcls (31), v1-3, as a Kafka 4 broker without
an authorizer answers them (authorizer.class.name unset, Kafka's default): SECURITY_DISABLED,
"No Authorizer is configured on the broker" for a describe, "No Authorizer is configured." for
every creation and every deletion filter. wirekafka has no authorizer (setting one stops
start-up), so these are its answers; Kafka's tools (kafka-acls) then report what they report
against such a Kafka broker. A creation naming an UNKNOWN resource type, pattern type,
operation or permission is a request Kafka cannot parse: the connection is closed, as Kafka
closes it."""

from __future__ import annotations

from kafka.protocol.admin.acl import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse

from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.protocol.errors import ErrorCode

NO_AUTHORIZER = "No Authorizer is configured."
UNKNOWN = 0  # the UNKNOWN code of ACL resource types, pattern types, operations and permissions


def handle_describe(ctx: RequestContext, _request: object) -> DescribeAclsResponse:
    return DescribeAclsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED,
                                error_message="No Authorizer is configured on the broker", resources=[])


def handle_create(ctx: RequestContext, request: object) -> CreateAclsResponse:
    creations = request.creations  # type: ignore[attr-defined]
    if any(UNKNOWN in (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type) for c in creations):
        raise CloseConnection("CreateAcls with unknown elements (Kafka cannot parse the request)")
    result = CreateAclsResponse.AclCreationResult
    return CreateAclsResponse(version=ctx.version, throttle_time_ms=0, results=[
        result(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER) for _ in creations])


def handle_delete(ctx: RequestContext, request: object) -> DeleteAclsResponse:
    result = DeleteAclsResponse.DeleteAclsFilterResult
    return DeleteAclsResponse(version=ctx.version, throttle_time_ms=0, filter_results=[
        result(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, matching_acls=[])
        for _ in request.filters])  # type: ignore[attr-defined]
