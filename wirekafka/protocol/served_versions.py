"""The APIs and versions wirekafka serves: the single source of truth for ApiVersions and dispatch.

Only APIs that are implemented and tested are listed. Java clients act on what a broker
advertises (an advertised but half-answered API can hang them), so nothing is listed early.
Version ranges are Kafka 4.x's, as given by the message schemas' validVersions."""

from __future__ import annotations

from kafka.protocol.admin.acl import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.admin.cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka.protocol.admin.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.api_message import ApiMessage

from wirekafka.protocol import schema_meta
from wirekafka.protocol.inter_broker import (AlterPartitionRequest, AlterPartitionResponse, ControlledShutdownRequest,
                                             ControlledShutdownResponse, LeaderAndIsrRequest, LeaderAndIsrResponse)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

_PAIRS: list[tuple[type[ApiMessage], type[ApiMessage]]] = [
    (ProduceRequest, ProduceResponse),
    (FetchRequest, FetchResponse),
    (ListOffsetsRequest, ListOffsetsResponse),
    (MetadataRequest, MetadataResponse),
    (ApiVersionsRequest, ApiVersionsResponse),
    (CreateTopicsRequest, CreateTopicsResponse),
    (InitProducerIdRequest, InitProducerIdResponse),
    (DeleteTopicsRequest, DeleteTopicsResponse),
    (DeleteRecordsRequest, DeleteRecordsResponse),
    (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    (DescribeConfigsRequest, DescribeConfigsResponse),
    (AlterConfigsRequest, AlterConfigsResponse),
    (DescribeAclsRequest, DescribeAclsResponse),
    (CreateAclsRequest, CreateAclsResponse),
    (DeleteAclsRequest, DeleteAclsResponse),
    (DescribeLogDirsRequest, DescribeLogDirsResponse),
    (CreatePartitionsRequest, CreatePartitionsResponse),
    (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    (DescribeClusterRequest, DescribeClusterResponse),
    (OffsetCommitRequest, OffsetCommitResponse),
    (OffsetFetchRequest, OffsetFetchResponse),
    (FindCoordinatorRequest, FindCoordinatorResponse),
    (JoinGroupRequest, JoinGroupResponse),
    (HeartbeatRequest, HeartbeatResponse),
    (LeaveGroupRequest, LeaveGroupResponse),
    (SyncGroupRequest, SyncGroupResponse),
    (DescribeGroupsRequest, DescribeGroupsResponse),
    (SaslHandshakeRequest, SaslHandshakeResponse),
    (SaslAuthenticateRequest, SaslAuthenticateResponse),
    (ListGroupsRequest, ListGroupsResponse),
    (DeleteGroupsRequest, DeleteGroupsResponse),
    (OffsetDeleteRequest, OffsetDeleteResponse),
    (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    (EndTxnRequest, EndTxnResponse),
    (WriteTxnMarkersRequest, WriteTxnMarkersResponse),
    (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    (DescribeProducersRequest, DescribeProducersResponse),
    (ElectLeadersRequest, ElectLeadersResponse),
    (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse),
    (ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse),
    (DescribeTransactionsRequest, DescribeTransactionsResponse),
    (ListTransactionsRequest, ListTransactionsResponse),
    (DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse),
    (DescribeClientQuotasRequest, DescribeClientQuotasResponse),
    (AlterClientQuotasRequest, AlterClientQuotasResponse),
    (DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse),
    (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
]

REQUEST_CLASSES: dict[int, type[ApiMessage]] = {}
RESPONSE_CLASSES: dict[int, type[ApiMessage]] = {}
SUPPORTED: dict[int, tuple[int, int]] = {}  # advertised in ApiVersions
SERVED: dict[int, tuple[int, int]] = {}  # accepted on the wire: advertised and in the schema


# Where Apache Kafka 4.3.1 advertises a range other than its schema's validVersions (as read
# from a real 4.3.1 broker's ApiVersions response): Produce advertises v0-2, which its schema
# dropped, because librdkafka infers message-format support from the advertised minimum
# (KAFKA-18659) — a request at v0-2 still closes the connection, as for any version the schema
# does not know; InitProducerId v6 (two-phase commit) is not enabled.
KAFKA_RANGES: dict[int, tuple[int, int]] = {0: (0, 13), 22: (0, 5)}


def register(request_class: type[ApiMessage], response_class: type[ApiMessage]) -> None:
    """Advertise an API at the version range Kafka 4.3.1 advertises for it, and serve the part of
    that range its schema defines."""
    key = schema_meta.api_key(request_class)
    REQUEST_CLASSES[key] = request_class
    RESPONSE_CLASSES[key] = response_class
    lo, hi = schema_meta.valid_versions(request_class)
    advertised = KAFKA_RANGES.get(key, (lo, hi))
    SUPPORTED[key] = advertised
    SERVED[key] = (max(lo, advertised[0]), min(hi, advertised[1]))


for _req, _resp in _PAIRS:
    register(_req, _resp)


def enable_zk_broker_apis() -> None:
    """A ZooKeeper-mode broker also serves, and advertises, the inter-broker API its peers send
    it, as Kafka 3.9's ZooKeeper-mode brokers do: AlterPartition and ControlledShutdown, to the
    controller, and LeaderAndIsr, from it. Called once at start-up in that mode; the single node
    keeps Kafka 4's KRaft-broker list."""
    register(AlterPartitionRequest, AlterPartitionResponse)
    register(ControlledShutdownRequest, ControlledShutdownResponse)
    register(LeaderAndIsrRequest, LeaderAndIsrResponse)


def is_served(api_key: int, api_version: int) -> bool:
    """Whether a request at this version is answered; any other request closes the connection."""
    rng = SERVED.get(api_key)
    return rng is not None and rng[0] <= api_version <= rng[1]


def request_class(api_key: int) -> type[ApiMessage]:
    return REQUEST_CLASSES[api_key]


def response_class(api_key: int) -> type[ApiMessage]:
    return RESPONSE_CLASSES[api_key]


def request_header_has_client_id(api_key: int, api_version: int) -> bool:
    """False only for ControlledShutdown v0, whose request header (v0) is key, version and
    correlation id alone, as Kafka still reads it where that API is served."""
    return not (api_key == ControlledShutdownRequest.API_KEY and api_version == 0
                and api_key in REQUEST_CLASSES)


def request_header_is_flexible(api_key: int, api_version: int) -> bool:
    """Header v2 (with tagged fields) iff the request body is flexible at that version.

    An ApiVersions request above our range is parsed as flexible, as KIP-511 asks, so that a
    newer client still gets the v0 UNSUPPORTED_VERSION answer that lists what we serve."""
    cls = REQUEST_CLASSES.get(api_key)
    if cls is None:
        return False
    if api_key == ApiVersionsRequest.API_KEY and api_version > SUPPORTED[api_key][1]:
        return True
    return cls.flexible_version_q(api_version)
