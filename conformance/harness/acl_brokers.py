"""A pair of brokers with an authorizer, for the ACL scenarios, and the helpers they share.

Each broker has a PLAINTEXT listener (inter-broker, and Kafka's controller: its principal
User:ANONYMOUS is a super user, as a KRaft broker with an authorizer needs) and a SASL_PLAINTEXT
listener where users log in with PLAIN: `admin` (a super user), `alice` and `bob` (no rights
until a scenario grants them). Kafka runs StandardAuthorizer, the authorizer of a Kafka 4 broker;
wirekafka is given the same `authorizer.class.name`, `super.users` and
`allow.everyone.if.no.acl.found` (false, the default).

ACLs live as long as the module's brokers, so every scenario grants on names of its own
(`conformance.harness.wire.unique`). Kafka applies a created ACL a moment after CreateAcls answers (from
its metadata log), so `grant` waits until DescribeAcls shows it, as a client would have to; its
exchanges are a scenario's set-up, not compared."""

from __future__ import annotations

from dataclasses import dataclass
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from conformance.harness import transcript
from conformance.harness.own_brokers import TwoListeners, own_two_listener_pair
from conformance.test_sasl import sasl_listener_settings
from conformance.harness.wire import Connection, poll

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" ' + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")

# Kafka's codes (org.apache.kafka.common.resource / acl)
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4              # pattern types (ANY is also a type's code)
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 2, 3, 4, 5, 6, 7  # resource types
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8              # operations
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
DENY, ALLOW = 2, 3                                                                     # permission types
CLUSTER_NAME = "kafka-cluster"
# error codes
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 30, 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def _settings(plaintext: int, sasl: int) -> dict[str, str]:
    return {**sasl_listener_settings(plaintext, sasl, {"PLAIN": JAAS}),
            "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false"}  # the default, set so DescribeConfigs lists it


def acl_pair():
    """(own_wirekafka, own_kafka, target) fixtures for a module: bind them to those names."""
    return own_two_listener_pair("SASL_PLAINTEXT", _settings)


def super_user(target: TwoListeners) -> Connection:
    """A connection to the PLAINTEXT listener, whose User:ANONYMOUS is a super user: a scenario's
    set-up, free of the ACLs it tests."""
    return Connection(target.bootstrap(target.plaintext))


def login(target: TwoListeners, user: str) -> Connection:
    """A connection to the SASL listener, authenticated as `user` (one of PASSWORDS)."""
    conn = Connection(f"127.0.0.1:{target.second}")
    with transcript.unrecorded():  # a client's opening, not what the ACL scenarios compare
        conn.call(ApiVersionsRequest(client_software_name="conformance", client_software_version="1"), 3)
    assert conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    answer = conn.call(SaslAuthenticateRequest(auth_bytes=f"\x00{user}\x00{PASSWORDS[user]}".encode()), 2)
    assert answer.error_code == 0, answer
    return conn


@dataclass(frozen=True)
class Acl:
    """One ACL binding: a resource pattern and an access control entry."""

    resource_type: int
    name: str
    operation: int
    principal: str = "User:alice"
    permission: int = ALLOW
    pattern: int = LITERAL
    host: str = "*"

    def creation(self) -> CreateAclsRequest.AclCreation:
        return CreateAclsRequest.AclCreation(
            resource_type=self.resource_type, resource_name=self.name, resource_pattern_type=self.pattern,
            principal=self.principal, host=self.host, operation=self.operation, permission_type=self.permission)


def describe(conn: Connection, resource_type: int = ANY, name: str | None = None, pattern: int = ANY,
             principal: str | None = None, host: str | None = None, operation: int = ANY,
             permission: int = ANY, version: int = 3):
    return conn.call(DescribeAclsRequest(
        resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=pattern,
        principal_filter=principal, host_filter=host, operation=operation, permission_type=permission), version)


def _shown(answer, acl: Acl) -> bool:
    return any(r.resource_type == acl.resource_type and r.resource_name == acl.name
               and r.pattern_type == acl.pattern
               and any((a.principal, a.host, a.operation, a.permission_type)
                       == (acl.principal, acl.host, acl.operation, acl.permission) for a in r.acls)
               for r in answer.resources)


def grant(target: TwoListeners, *acls: Acl) -> None:
    """Create the ACLs as admin, and wait until the broker's authorizer has them. Not compared:
    the set-up of a scenario, whose DescribeAcls answers list entries in Kafka's hash order
    (conformance/test_acls.py compares the ACL APIs themselves)."""
    with transcript.unrecorded(), login(target, "admin") as admin:
        answer = admin.call(CreateAclsRequest(creations=[a.creation() for a in acls]), 3)
        assert [r.error_code for r in answer.results] == [0] * len(acls), answer
        for acl in acls:
            found = poll(lambda: describe(admin, acl.resource_type, acl.name, acl.pattern),
                         lambda shown: _shown(shown, acl))
            assert _shown(found, acl), found


def revoke(target: TwoListeners, *acls: Acl) -> None:
    """Delete exactly these ACLs as admin, and wait until the authorizer no longer has them
    (not compared, as grant)."""
    filters = [DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=a.resource_type, resource_name_filter=a.name, pattern_type_filter=a.pattern,
        principal_filter=a.principal, host_filter=a.host, operation=a.operation, permission_type=a.permission)
        for a in acls]
    with transcript.unrecorded(), login(target, "admin") as admin:
        answer = admin.call(DeleteAclsRequest(filters=filters), 3)
        assert [r.error_code for r in answer.filter_results] == [0] * len(acls), answer
        for acl in acls:
            gone = poll(lambda: describe(admin, acl.resource_type, acl.name, acl.pattern),
                        lambda shown: not _shown(shown, acl))
            assert not _shown(gone, acl), gone

