"""ACLs on the config, client quota and SCRAM APIs, against Kafka 4.3.1 with StandardAuthorizer.

- DescribeConfigs: DESCRIBE_CONFIGS on the topic, on the cluster for BROKER (this node and the
  cluster default) and BROKER_LOGGER resources, on the group; each refused resource has its own
  error (TOPIC/CLUSTER/GROUP_AUTHORIZATION_FAILED, with a message), and Kafka lists the allowed
  resources first. An unauthorized topic does not say whether it exists. ALTER_CONFIGS implies
  DESCRIBE_CONFIGS; a DENY wins over a PREFIXED ALLOW.
- AlterConfigs and IncrementalAlterConfigs: ALTER_CONFIGS likewise, per resource; the request
  checks Kafka's broker makes before it forwards to its controller (another broker id, a key
  that cannot change at runtime) come before authorization, BROKER_LOGGER's authorization
  before its checks.
- DescribeClientQuotas (DESCRIBE_CONFIGS on the cluster, top-level error) and AlterClientQuotas
  (ALTER_CONFIGS on the cluster, every entry's error).
- DescribeUserScramCredentials (DESCRIBE on the cluster) and AlterUserScramCredentials (ALTER
  on the cluster), with the shapes of their refusals.

The pair is this module's own (conformance/harness/acl_brokers.py); setup runs on the PLAINTEXT
listener (a super user), the checks as alice or bob on the SASL listener. ACLs on the cluster
would carry over to later scenarios, so those scenarios revoke them at the end."""

from __future__ import annotations

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.configs import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest

from conformance.harness.acl_brokers import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_AUTHORIZATION_FAILED,
    CLUSTER_NAME,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP_AUTHORIZATION_FAILED,
    PREFIXED,
    STANDARD_AUTHORIZER,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    Acl,
    acl_pair,
    grant,
    login,
    revoke,
    super_user,
)
from conformance.harness.broker_configs import node_id
from conformance.test_scram import _upsert
from conformance.harness.wire import Connection, create_topic, settled, unique

own_wirekafka, own_kafka, target = acl_pair()

R_TOPIC, R_BROKER, R_LOGGER, R_GROUP = 2, 4, 8, 32
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, RESOURCE_NOT_FOUND = 3, 42, 91
SET, DELETE = 0, 1
NO_KEY = ["no.such.key"]  # a key filter that matches nothing: an allowed resource answers no configs
_Describe = DescribeConfigsRequest.DescribeConfigsResource
_Legacy = AlterConfigsRequest.AlterConfigsResource
_Incremental = IncrementalAlterConfigsRequest.AlterConfigsResource
_Quota = AlterClientQuotasRequest.EntryData



def _node(target) -> str:
    with super_user(target) as admin:
        return node_id(admin)


def _describe(conn: Connection, resources: list[tuple[int, str, list[str] | None]]) -> list:
    """(type, name, error code, has a message, [(config, value)]) per result, in Kafka's order."""
    req = DescribeConfigsRequest(resources=[_Describe(resource_type=t, resource_name=n, configuration_keys=k)
                                            for t, n, k in resources], include_synonyms=False,
                                 include_documentation=False)
    return [(r.resource_type, r.resource_name, r.error_code, bool(r.error_message), [(c.name, c.value) for c in r.configs])
            for r in conn.call(req, 4).results]


def _legacy(conn: Connection, resources: list[tuple[int, str, dict[str, str]]], validate_only: bool = False) -> list:
    req = AlterConfigsRequest(validate_only=validate_only, resources=[
        _Legacy(resource_type=t, resource_name=n, configs=[_Legacy.AlterableConfig(name=k, value=v) for k, v in c.items()])
        for t, n, c in resources])
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message is not None)
            for r in conn.call(req, 2).responses]


def _incremental(conn: Connection, resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
                 validate_only: bool = False) -> list:
    req = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        _Incremental(resource_type=t, resource_name=n,
                     configs=[_Incremental.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in c])
        for t, n, c in resources])
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message is not None)
            for r in conn.call(req, 1).responses]


# ---- DescribeConfigs ------------------------------------------------------------------------------
def test_describe_configs_per_resource(target):
    topic, group, prefix = unique("t"), unique("g"), unique("p")
    node = _node(target)
    with super_user(target) as admin:
        create_topic(admin, topic, configs={"cleanup.policy": "compact"})
    resources = [(R_BROKER, node, NO_KEY), (R_TOPIC, topic, ["cleanup.policy"]), (R_LOGGER, node, NO_KEY),
                 (R_TOPIC, "nowhere", None), (R_GROUP, group, None), (R_BROKER, "", NO_KEY),
                 (R_TOPIC, f"{prefix}-x", None)]
    with login(target, "alice") as alice:
        assert _describe(alice, resources) == [
            (R_BROKER, node, CLUSTER_AUTHORIZATION_FAILED, True, []),
            (R_TOPIC, topic, TOPIC_AUTHORIZATION_FAILED, True, []),
            (R_LOGGER, node, CLUSTER_AUTHORIZATION_FAILED, True, []),
            (R_TOPIC, "nowhere", TOPIC_AUTHORIZATION_FAILED, True, []),
            (R_GROUP, group, GROUP_AUTHORIZATION_FAILED, True, []),
            (R_BROKER, "", CLUSTER_AUTHORIZATION_FAILED, True, []),
            (R_TOPIC, f"{prefix}-x", TOPIC_AUTHORIZATION_FAILED, True, [])]
    cluster = Acl(CLUSTER, CLUSTER_NAME, DESCRIBE_CONFIGS)
    grant(target, Acl(TOPIC, topic, DESCRIBE_CONFIGS), Acl(TOPIC, prefix, DESCRIBE_CONFIGS, pattern=PREFIXED), cluster)
    with login(target, "alice") as alice:  # the allowed resources first, then the refused ones
        assert _describe(alice, resources) == [
            (R_BROKER, node, 0, False, []),
            (R_TOPIC, topic, 0, False, [("cleanup.policy", "compact")]),
            (R_LOGGER, node, 0, False, []),
            (R_BROKER, "", 0, False, []),
            (R_TOPIC, f"{prefix}-x", UNKNOWN_TOPIC_OR_PARTITION, False, []),
            (R_TOPIC, "nowhere", TOPIC_AUTHORIZATION_FAILED, True, []),
            (R_GROUP, group, GROUP_AUTHORIZATION_FAILED, True, [])]
    with login(target, "bob") as bob:
        assert _describe(bob, resources[:2]) == [(R_BROKER, node, CLUSTER_AUTHORIZATION_FAILED, True, []),
                                                 (R_TOPIC, topic, TOPIC_AUTHORIZATION_FAILED, True, [])]
    revoke(target, cluster)



def test_describe_configs_lists_the_authorizer_keys_the_broker_was_started_with(target):
    """The broker's own resource lists every key it was started with, also the ones that are not
    broker configs: the authorizer's (super.users, allow.everyone.if.no.acl.found) have no type
    Kafka knows (UNKNOWN), so they are sensitive and shown without a value; a listener's JAAS
    text is typed as sasl.jaas.config (PASSWORD). All static and read-only. The cluster default
    lists none of them. (listener.security.protocol.map, a map, is a STRING to Kafka.)"""
    node = _node(target)
    keys = ["super.users", "allow.everyone.if.no.acl.found", "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "authorizer.class.name", "listener.security.protocol.map"]
    req = DescribeConfigsRequest(resources=[_Describe(resource_type=R_BROKER, resource_name=name,
                                                      configuration_keys=keys) for name in (node, "")],
                                 include_synonyms=True, include_documentation=False)
    with super_user(target) as admin:
        own, default = admin.call(req, 4).results
    listed = {c.name: (c.value, c.read_only, c.config_source, c.is_sensitive, c.config_type,
                       [(s.name, s.value, s.source) for s in c.synonyms]) for c in own.configs}
    static, unknown, password = 4, 0, 9
    hidden = lambda key, kind: (None, True, static, True, kind, [(key, None, static)])  # noqa: E731
    assert {k: listed.get(k) for k in keys[:3]} == {
        "super.users": hidden("super.users", unknown),
        "allow.everyone.if.no.acl.found": hidden("allow.everyone.if.no.acl.found", unknown),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            hidden("listener.name.sasl_plaintext.plain.sasl.jaas.config", password)}
    assert listed["authorizer.class.name"][:5] == (STANDARD_AUTHORIZER, True, static, False, 2)
    assert listed["listener.security.protocol.map"][4] == 2  # a map, but a STRING in Kafka's ConfigDef
    assert (default.error_code, default.configs) == (0, [])


def test_describe_configs_implied_and_denied(target):
    prefix = unique("p")
    altered, denied, other = f"{prefix}-altered", f"{prefix}-denied", unique("t")
    with super_user(target) as admin:
        for topic in (altered, denied, other):
            create_topic(admin, topic)
    grant(target, Acl(TOPIC, prefix, DESCRIBE_CONFIGS, pattern=PREFIXED),
          Acl(TOPIC, denied, DESCRIBE_CONFIGS, permission=DENY), Acl(TOPIC, other, ALTER_CONFIGS))
    keys = ["retention.ms"]
    with login(target, "alice") as alice:
        assert _describe(alice, [(R_TOPIC, t, keys) for t in (denied, altered, other)]) == [
            (R_TOPIC, altered, 0, False, [("retention.ms", "604800000")]),
            (R_TOPIC, other, 0, False, [("retention.ms", "604800000")]),  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
            (R_TOPIC, denied, TOPIC_AUTHORIZATION_FAILED, True, [])]


# ---- AlterConfigs and IncrementalAlterConfigs --------------------------------------------------------
def test_alter_configs_per_resource(target):
    topic, group, prefix = unique("t"), unique("g"), unique("p")
    node = _node(target)
    with super_user(target) as admin:
        create_topic(admin, topic)
    retention = {"retention.ms": "3600000"}
    resources = [(R_TOPIC, topic, retention), (R_BROKER, node, {"log.retention.ms": "3600000"}),
                 (R_TOPIC, f"{prefix}-x", retention), (R_GROUP, group, {"session.timeout.ms": "50000"}),
                 (R_BROKER, "", {"log.retention.ms": "3600000"})]
    with login(target, "alice") as alice:
        assert _legacy(alice, resources, validate_only=True) == [
            (R_TOPIC, topic, TOPIC_AUTHORIZATION_FAILED, True), (R_BROKER, node, CLUSTER_AUTHORIZATION_FAILED, True),
            (R_TOPIC, f"{prefix}-x", TOPIC_AUTHORIZATION_FAILED, True),
            (R_GROUP, group, GROUP_AUTHORIZATION_FAILED, True), (R_BROKER, "", CLUSTER_AUTHORIZATION_FAILED, True)]
        # the broker's own checks come before authorization
        assert _legacy(alice, [(R_BROKER, "999", {"log.retention.ms": "1"}), (R_BROKER, node, {"broker.id": "7"}),
                               (R_TOPIC, topic, {"retention.ms": None})], validate_only=True) == [
            (R_BROKER, "999", INVALID_REQUEST, True), (R_BROKER, node, INVALID_REQUEST, True),
            (R_TOPIC, topic, INVALID_REQUEST, True)]
    grant(target, Acl(TOPIC, topic, ALTER_CONFIGS), Acl(TOPIC, prefix, ALTER_CONFIGS, pattern=PREFIXED))
    with login(target, "alice") as alice:
        assert _legacy(alice, resources[:3] + resources[4:], validate_only=True) == [
            (R_TOPIC, topic, 0, False), (R_BROKER, node, CLUSTER_AUTHORIZATION_FAILED, True),
            (R_TOPIC, f"{prefix}-x", UNKNOWN_TOPIC_OR_PARTITION, True), (R_BROKER, "", CLUSTER_AUTHORIZATION_FAILED, True)]
        assert _legacy(alice, [(R_TOPIC, topic, retention)]) == [(R_TOPIC, topic, 0, False)]
        applied = [(R_TOPIC, topic, 0, False, [("retention.ms", "3600000")])]
        assert settled(lambda: _describe(alice, [(R_TOPIC, topic, ["retention.ms"])]), applied) == applied
    cluster = Acl(CLUSTER, CLUSTER_NAME, ALTER_CONFIGS)
    grant(target, cluster)
    with login(target, "alice") as alice:
        assert _legacy(alice, [(R_BROKER, node, {"log.retention.ms": "3600000"})], validate_only=True) == \
            [(R_BROKER, node, 0, False)]
    revoke(target, cluster)


def test_incremental_alter_configs_per_resource(target):
    topic, group, denied = unique("t"), unique("g"), unique("t")
    node = _node(target)
    with super_user(target) as admin:
        create_topic(admin, topic)
        create_topic(admin, denied)
    retention = [("retention.ms", SET, "3600000")]
    resources = [(R_LOGGER, node, [("root", SET, "INFO")]), (R_TOPIC, topic, retention),
                 (R_BROKER, node, [("log.retention.ms", SET, "3600000")]), (R_GROUP, group, [("session.timeout.ms", SET, "50000")]),
                 (R_TOPIC, "nowhere", retention), (R_LOGGER, "999", [("root", SET, "INFO")])]
    with login(target, "alice") as alice:
        assert _incremental(alice, resources, validate_only=True) == [
            (R_LOGGER, node, CLUSTER_AUTHORIZATION_FAILED, False), (R_TOPIC, topic, TOPIC_AUTHORIZATION_FAILED, True),
            (R_BROKER, node, CLUSTER_AUTHORIZATION_FAILED, True), (R_GROUP, group, GROUP_AUTHORIZATION_FAILED, True),
            (R_TOPIC, "nowhere", TOPIC_AUTHORIZATION_FAILED, True), (R_LOGGER, "999", CLUSTER_AUTHORIZATION_FAILED, False)]
        assert _incremental(alice, [(R_BROKER, node, [("broker.id", SET, "7")]),
                                    (R_TOPIC, topic, [("retention.ms", SET, None)]),
                                    (R_TOPIC, denied, [("retention.ms", DELETE, None), ("retention.ms", DELETE, None)])],
                            validate_only=True) == [
            (R_BROKER, node, INVALID_REQUEST, True), (R_TOPIC, topic, INVALID_REQUEST, True),
            (R_TOPIC, denied, INVALID_REQUEST, True)]
    grant(target, Acl(TOPIC, topic, ALTER_CONFIGS), Acl(TOPIC, denied, ALTER_CONFIGS, permission=DENY),
          Acl(TOPIC, "*", ALTER_CONFIGS))
    with login(target, "alice") as alice:
        assert _incremental(alice, [(R_TOPIC, denied, retention), (R_TOPIC, topic, retention),
                                    (R_TOPIC, "nowhere", retention)]) == [
            (R_TOPIC, denied, TOPIC_AUTHORIZATION_FAILED, True), (R_TOPIC, topic, 0, False),
            (R_TOPIC, "nowhere", UNKNOWN_TOPIC_OR_PARTITION, True)]
        applied = [(R_TOPIC, topic, 0, False, [("retention.ms", "3600000")])]
        assert settled(lambda: _describe(alice, [(R_TOPIC, topic, ["retention.ms"])]), applied) == applied
    revoke(target, Acl(TOPIC, "*", ALTER_CONFIGS))


# ---- client quotas ----------------------------------------------------------------------------------
def _describe_quotas(conn: Connection, user: str):
    req = DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
        entity_type="user", match_type=0, match=user)], strict=False)
    res = conn.call(req, 1)
    return res.error_code, res.error_message is not None, res.entries


def _alter_quotas(conn: Connection, users: list[str], validate_only: bool = True) -> list:
    req = AlterClientQuotasRequest(validate_only=validate_only, entries=[_Quota(
        entity=[_Quota.EntityData(entity_type="user", entity_name=u)],
        ops=[_Quota.OpData(key="producer_byte_rate", value=1024.0, remove=False)]) for u in users])
    return [([(e.entity_type, e.entity_name) for e in r.entity], r.error_code, r.error_message is not None)
            for r in conn.call(req, 1).entries]


def test_client_quotas_need_describe_and_alter_configs_on_the_cluster(target):
    user = unique("u")
    with login(target, "bob") as bob:
        assert _describe_quotas(bob, user) == (CLUSTER_AUTHORIZATION_FAILED, False, None)
        assert _alter_quotas(bob, [user]) == [([("user", user)], CLUSTER_AUTHORIZATION_FAILED, True)]
    describe = Acl(CLUSTER, CLUSTER_NAME, DESCRIBE_CONFIGS, principal="User:bob")
    grant(target, describe)
    with login(target, "bob") as bob:
        assert _describe_quotas(bob, user) == (0, True, [])
        assert _alter_quotas(bob, [user]) == [([("user", user)], CLUSTER_AUTHORIZATION_FAILED, True)]
    revoke(target, describe)
    alter = Acl(CLUSTER, CLUSTER_NAME, ALTER_CONFIGS, principal="User:bob")
    grant(target, alter)
    with login(target, "bob") as bob:
        assert _describe_quotas(bob, user) == (0, True, [])  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
        assert _alter_quotas(bob, [user]) == [([("user", user)], 0, False)]
    revoke(target, alter)


# ---- SCRAM credentials ------------------------------------------------------------------------------
def _describe_scram(conn: Connection, users: list[str]):
    res = conn.call(DescribeUserScramCredentialsRequest(
        users=[DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]), 0)
    return res.error_code, res.error_message is not None, [(r.user, r.error_code, r.error_message is not None)
                                                           for r in res.results]


def _alter_scram(conn: Connection, upsert: list[str], delete: list[str] = ()) -> list:
    req = AlterUserScramCredentialsRequest(
        upsertions=[_upsert(u, "pw") for u in upsert],
        deletions=[AlterUserScramCredentialsRequest.ScramCredentialDeletion(name=u, mechanism=1) for u in delete])
    return [(r.user, r.error_code, r.error_message is not None) for r in conn.call(req, 0).results]


def test_scram_credentials_need_describe_and_alter_on_the_cluster(target):
    first, second = unique("u"), unique("u")
    with login(target, "bob") as bob:
        assert _describe_scram(bob, [first, second]) == (CLUSTER_AUTHORIZATION_FAILED, False, [
            ("", CLUSTER_AUTHORIZATION_FAILED, False), ("", CLUSTER_AUTHORIZATION_FAILED, False)])
        assert _alter_scram(bob, [second, first], [first]) == [
            (first, CLUSTER_AUTHORIZATION_FAILED, True), (second, CLUSTER_AUTHORIZATION_FAILED, True)]
    describe = Acl(CLUSTER, CLUSTER_NAME, DESCRIBE, principal="User:bob")
    grant(target, describe)
    with login(target, "bob") as bob:
        assert _describe_scram(bob, [first]) == (0, True, [(first, RESOURCE_NOT_FOUND, True)])
        assert _alter_scram(bob, [first]) == [(first, CLUSTER_AUTHORIZATION_FAILED, True)]
    revoke(target, describe)
    alter = Acl(CLUSTER, CLUSTER_NAME, ALTER, principal="User:bob")
    grant(target, alter)
    with login(target, "bob") as bob:
        assert _alter_scram(bob, [first]) == [(first, 0, False)]
        assert _describe_scram(bob, [second]) == (0, True, [(second, RESOURCE_NOT_FOUND, True)])  # ALTER implies DESCRIBE
    revoke(target, alter)
