"""DescribeAcls, CreateAcls and DeleteAcls against Kafka 4.3.1 with StandardAuthorizer (the module's
own pair, conformance/harness/acl_brokers.py), v1-3:

- authorization: DescribeAcls needs DESCRIBE on the cluster (ALTER implies it), CreateAcls and
  DeleteAcls need ALTER: CLUSTER_AUTHORIZATION_FAILED for the describe, each creation and each
  filter otherwise, decided before a creation's own errors; an ACL granted or revoked takes effect
  (grant/revoke, as admin);
- CreateAcls, per creation: the CLUSTER resource named other than kafka-cluster, an empty name,
  codes Kafka does not know (resource type, pattern type, operation, permission), a principal
  without ":" are INVALID_REQUEST with Kafka's messages, each beside valid creations; hosts,
  principal types and operations a resource does not support are accepted; duplicates (in one
  request and across requests) are one ACL; ANY (or MATCH) in a creation fails the whole request
  with UNKNOWN_SERVER_ERROR and creates nothing;
- DescribeAcls filters: ANY, MATCH (literal name, the literal "*" and every prefix of the name),
  LITERAL, PREFIXED, names, principals, hosts, operations, permissions, codes Kafka does not know;
  one resource per pattern with its entries;
- DeleteAcls: filters matching several patterns, two filters matching the same ACLs (both list
  them), a filter matching nothing, filters with codes Kafka does not know ("Unknown
  patternFilter." / "Unknown entryFilter." beside the others), what remains afterwards;
- an UNKNOWN (0) code in any of the three requests closes the connection, even for a session that
  may not use the API.

Kafka lists DescribeAcls resources, their entries and DeleteAcls matches in the order of Java hash
maps keyed by objects whose hash includes enum identity hashes, so the order changes from one
Kafka run to the next; `_canonical` sorts those lists in the recorded answers before they are
compared (the protocol promises no order). Every scenario works on its own names and principals
(`unique`), since ACLs outlive a scenario; filters without a name are narrowed to a principal of
the scenario's own. Kafka applies a change a moment after answering, so reads after a change poll."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from conformance.harness.acl_brokers import (ALL, ALTER, ANY, CLUSTER, CLUSTER_AUTHORIZATION_FAILED, CLUSTER_NAME, CREATE, DENY,
                                     DESCRIBE, GROUP, IDEMPOTENT_WRITE, LITERAL, MATCH, PREFIXED, READ, TOPIC,
                                     TRANSACTIONAL_ID, USER, WRITE, Acl, acl_pair, describe, grant, login,
                                     revoke)
from conformance.harness import transcript
from conformance.harness.wire import Connection, poll, unique

own_wirekafka, own_kafka, target = acl_pair()

UNKNOWN_SERVER_ERROR, INVALID_REQUEST = -1, 42
NOT_A_CODE = 99  # a code Kafka's fromCode reads as UNKNOWN (0, UNKNOWN itself, cannot be parsed)
CREATE_TOKENS, CLUSTER_ACTION = 13, 9
VERSIONS = [1, 2, 3]


# ---- helpers ----------------------------------------------------------------------------------
def _canonical(answer: Any) -> Any:
    """Sort, in place (so the recorded answer is sorted too), the lists Kafka orders by hash:
    DescribeAcls resources and their entries, DeleteAcls matches."""
    for resource in getattr(answer, "resources", None) or []:
        resource.acls.sort(key=lambda a: (a.principal, a.host, a.operation, a.permission_type))
    if getattr(answer, "resources", None):
        answer.resources.sort(key=lambda r: (r.resource_type, r.pattern_type, r.resource_name))
    for result in getattr(answer, "filter_results", None) or []:
        result.matching_acls.sort(key=lambda m: (m.resource_type, m.pattern_type, m.resource_name, m.principal,
                                                 m.host, m.operation, m.permission_type))
    return answer


def _described(answer: Any) -> list[tuple]:
    """A DescribeAcls answer as (type, name, pattern, principal, host, operation, permission)."""
    return [(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in answer.resources for a in r.acls]


def _as_tuple(acl: Acl) -> tuple:
    return (acl.resource_type, acl.name, acl.pattern, acl.principal, acl.host, acl.operation, acl.permission)


def _settled(conn: Connection, expected: list[Acl], version: int = 3, **filter_: Any) -> Any:
    """DescribeAcls with `filter_`, repeated until it shows exactly `expected` (Kafka applies a
    change a moment after answering it)."""
    want = sorted(_as_tuple(a) for a in expected)
    answer = poll(lambda: _canonical(describe(conn, version=version, **filter_)),
                  lambda shown: sorted(_described(shown)) == want)
    assert answer.error_code == 0, answer
    assert sorted(_described(answer)) == want
    return answer


def _create(conn: Connection, acls: list, version: int = 3) -> list[tuple[int, str | None]]:
    creations = [a.creation() if isinstance(a, Acl) else a for a in acls]
    answer = conn.call(CreateAclsRequest(creations=creations), version)
    return [(r.error_code, r.error_message) for r in answer.results]


def _filter(acl: Acl | None = None, **fields: Any) -> DeleteAclsRequest.DeleteAclsFilter:
    """A deletion filter: exactly `acl`, or any of the given fields (the others ANY/null)."""
    if acl is not None:
        fields = {"resource_type_filter": acl.resource_type, "resource_name_filter": acl.name,
                  "pattern_type_filter": acl.pattern, "principal_filter": acl.principal, "host_filter": acl.host,
                  "operation": acl.operation, "permission_type": acl.permission, **fields}
    base = {"resource_type_filter": ANY, "resource_name_filter": None, "pattern_type_filter": ANY,
            "principal_filter": None, "host_filter": None, "operation": ANY, "permission_type": ANY}
    return DeleteAclsRequest.DeleteAclsFilter(**{**base, **fields})


def _delete(conn: Connection, filters: list, version: int = 3) -> list[tuple[int, str | None, list[tuple]]]:
    answer = _canonical(conn.call(DeleteAclsRequest(filters=filters), version))
    return [(r.error_code, r.error_message,
             sorted((m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation,
                     m.permission_type) for m in r.matching_acls)) for r in answer.filter_results]


def _closed_by_broker(conn: Connection, request: Any) -> bool:
    """Send `request` and tell whether the broker closes the connection instead of answering."""
    conn.send(request, 3, expect_response=False)
    conn.sock.settimeout(10)
    try:
        return conn.sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _principal() -> str:
    """A principal of this scenario's own, that nobody logs in as."""
    return f"User:{unique('u')}"


# ---- authorization --------------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_describe_needs_describe_on_the_cluster(target, version):
    owner = _principal()
    topic_acl = Acl(TOPIC, unique("t"), READ, principal=owner)
    grant(target, topic_acl)
    with login(target, "alice") as alice:
        denied = describe(alice, TOPIC, topic_acl.name, LITERAL, version=version)
        assert (denied.error_code, denied.resources) == (CLUSTER_AUTHORIZATION_FAILED, [])
        assert "needs DESCRIBE permission" in denied.error_message
    for right in (DESCRIBE, ALTER):  # ALTER implies DESCRIBE
        cluster_acl = Acl(CLUSTER, CLUSTER_NAME, right)
        grant(target, cluster_acl)
        try:
            with login(target, "alice") as alice:
                _settled(alice, [topic_acl], version, resource_type=TOPIC, name=topic_acl.name, pattern=LITERAL)
        finally:
            revoke(target, cluster_acl)
    with login(target, "alice") as alice:
        again = poll(lambda: describe(alice, TOPIC, topic_acl.name, LITERAL, version=version),
                     lambda answer: answer.error_code != 0)
        assert again.error_code == CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", VERSIONS)
def test_create_and_delete_need_alter_on_the_cluster(target, version):
    owner = _principal()
    acls = [Acl(TOPIC, unique("t"), READ, principal=owner), Acl(GROUP, unique("g"), READ, principal=owner)]
    describe_right = Acl(CLUSTER, CLUSTER_NAME, DESCRIBE, principal="User:bob")
    grant(target, describe_right)
    try:
        for user in ("alice", "bob"):  # bob may describe, not alter
            with login(target, user) as conn:
                refused = _create(conn, acls, version)
                assert [code for code, _ in refused] == [CLUSTER_AUTHORIZATION_FAILED] * 2
                assert all("needs ALTER permission" in (message or "") for _, message in refused)
                # authorization comes before a creation Kafka cannot even turn into an ACL
                any_type = Acl(ANY, unique("t"), READ, principal=owner)
                assert [code for code, _ in _create(conn, [any_type], version)] == [CLUSTER_AUTHORIZATION_FAILED]
                deleted = _delete(conn, [_filter(acls[0]), _filter(principal_filter=owner)], version)
                assert [(code, matched) for code, _, matched in deleted] == [(CLUSTER_AUTHORIZATION_FAILED, [])] * 2
        with login(target, "admin") as admin:
            _settled(admin, [], principal=owner)
        alter_right = Acl(CLUSTER, CLUSTER_NAME, ALTER, principal="User:alice")
        grant(target, alter_right)
        try:
            with login(target, "alice") as alice:
                assert [code for code, _ in _create(alice, acls, version)] == [0, 0]
                _settled(alice, acls, principal=owner)
                deleted = _delete(alice, [_filter(principal_filter=owner)], version)
                assert [(code, len(matched)) for code, _, matched in deleted] == [(0, 2)]
                _settled(alice, [], principal=owner)
        finally:
            revoke(target, alter_right)
    finally:
        revoke(target, describe_right)


# ---- CreateAcls ----------------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_each_creation_is_checked_on_its_own(target, version):
    owner = _principal()
    name = unique("t")
    valid = [Acl(TOPIC, name, READ, principal=owner),
             Acl(TOPIC, name, WRITE, principal=owner, permission=DENY, host="10.1.2.3"),
             Acl(GROUP, unique("g"), ALL, principal=owner, pattern=PREFIXED),
             Acl(CLUSTER, CLUSTER_NAME, IDEMPOTENT_WRITE, principal=owner),
             Acl(TRANSACTIONAL_ID, unique("x"), WRITE, principal=owner),
             Acl(USER, unique("p"), CREATE_TOKENS, principal=owner),
             Acl(TOPIC, name, CLUSTER_ACTION, principal=owner),          # not a topic operation: accepted
             Acl(TOPIC, name, READ, principal=owner, host=""),           # hosts are not checked
             Acl(TOPIC, name, READ, principal=owner, host="not a host"),
             Acl(TOPIC, "*", CREATE, principal=owner),
             Acl(TOPIC, "*", CREATE, principal=owner, pattern=PREFIXED)]
    odd_principals = [Acl(TOPIC, name, READ, principal=p) for p in (f"Group:{owner}", f"User:{owner}:x")]
    not_the_cluster = "The only valid name for the CLUSTER resource is kafka-cluster"
    invalid = [
        (Acl(CLUSTER, "my-cluster", ALTER, principal=owner), not_the_cluster),
        (Acl(CLUSTER, "", ALTER, principal=owner), not_the_cluster),
        (Acl(TOPIC, "", READ, principal=owner), "Invalid empty resource name"),
        (Acl(TOPIC, "", NOT_A_CODE, principal=owner), "Invalid empty resource name"),
        (Acl(NOT_A_CODE, name, READ, principal=owner), "Invalid resourceType UNKNOWN"),
        (Acl(-3, name, READ, principal=owner), "Invalid resourceType UNKNOWN"),
        (Acl(TOPIC, name, READ, principal=owner, pattern=NOT_A_CODE), "Invalid patternType UNKNOWN"),
        (Acl(TOPIC, name, NOT_A_CODE, principal=owner), "Invalid operation UNKNOWN"),
        (Acl(TOPIC, name, READ, principal=owner, permission=NOT_A_CODE), "Invalid permissionType UNKNOWN"),
        (Acl(TOPIC, name, NOT_A_CODE, principal="alice", permission=NOT_A_CODE), "Invalid operation UNKNOWN"),
        (Acl(TOPIC, name, READ, principal=owner.removeprefix("User:")),
         f"Could not parse principal from `{owner.removeprefix('User:')}` (no colon is present separating the "
         f"principal type from the principal name)"),
        (Acl(TOPIC, name, READ, principal=""),
         "Could not parse principal from `` (no colon is present separating the principal type from the "
         "principal name)"),
    ]
    creations = valid[:5] + [acl for acl, _ in invalid] + valid[5:] + odd_principals
    expected = ([(0, "")] * 5 + [(INVALID_REQUEST, message) for _, message in invalid]
                + [(0, "")] * (len(valid) - 5 + len(odd_principals)))
    with login(target, "admin") as admin:
        assert _create(admin, creations, version) == expected
        _settled(admin, valid, principal=owner)
        _settled(admin, odd_principals[:1], principal=odd_principals[0].principal)
        _settled(admin, odd_principals[1:], principal=odd_principals[1].principal)


@pytest.mark.parametrize("version", VERSIONS)
def test_duplicates_are_one_acl(target, version):
    acl = Acl(TOPIC, unique("t"), READ, principal=_principal())
    with login(target, "admin") as admin:
        assert _create(admin, [acl, acl], version) == [(0, "")] * 2
        _settled(admin, [acl], principal=acl.principal)
        assert _create(admin, [acl], version) == [(0, "")]
        _settled(admin, [acl], principal=acl.principal)
        assert [len(matched) for _, _, matched in _delete(admin, [_filter(acl)], version)] == [1]
        _settled(admin, [], principal=acl.principal)


@pytest.mark.parametrize("bad", [
    {"resource_type": ANY}, {"pattern": ANY}, {"pattern": MATCH}, {"operation": ANY}, {"permission": ANY},
], ids=["type-any", "pattern-any", "pattern-match", "operation-any", "permission-any"])
def test_any_in_a_creation_fails_the_whole_request(target, bad):
    owner = _principal()
    good = Acl(TOPIC, unique("t"), READ, principal=owner)
    broken = Acl(**{"resource_type": TOPIC, "name": unique("t"), "operation": READ, "principal": owner, **bad})
    with login(target, "admin") as admin:
        empty_name = Acl(TOPIC, "", READ, principal=owner)
        assert _create(admin, [good, broken, empty_name]) == [(UNKNOWN_SERVER_ERROR, None)] * 3
        assert _create(admin, [Acl(TOPIC, unique("t"), READ, principal=owner)]) == [(0, "")]  # the session goes on
        assert _described(_canonical(describe(admin, principal=owner, name=good.name))) == []



MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's controller: the records one request may write
POLICY_VIOLATION = 44
TOO_LARGE = (POLICY_VIOLATION, "Unable to perform excessively large batch operation.")


def _bulk(name: str, count: int) -> list[Acl]:
    """`count` distinct ACLs on one topic, one principal each (principals of this scenario's own)."""
    base = unique("bulk")
    return [Acl(TOPIC, name, READ, principal=f"User:{base}-{i}") for i in range(count)]


def test_more_new_acls_than_one_request_may_write(target):
    """One more new ACL than Kafka's controller writes for one request: none is created, and each
    creation the broker passes on answers POLICY_VIOLATION — a creation the controller itself
    would refuse too; one the broker refuses (an empty name) keeps its INVALID_REQUEST."""
    name = unique("t")
    acls = _bulk(name, MAX_RECORDS_PER_USER_OP + 1)
    no_colon = Acl(TOPIC, name, READ, principal="nobody")
    empty_name = Acl(TOPIC, "", READ, principal=acls[0].principal)
    with login(target, "admin") as admin:
        assert _create(admin, [no_colon, empty_name, *acls]) == [
            TOO_LARGE, (INVALID_REQUEST, "Invalid empty resource name")] + [TOO_LARGE] * len(acls)
        assert _described(_canonical(describe(admin, TOPIC, name, LITERAL))) == []
        assert _create(admin, acls[:2]) == [(0, "")] * 2  # the session goes on
        _settled(admin, acls[:2], resource_type=TOPIC, name=name, pattern=LITERAL)


def test_the_bound_counts_only_new_acls(target):
    """The bound counts the records Kafka would write: an ACL the cluster already has and a
    creation repeated in the request write none, so a request over the bound in creations but at
    it in new ACLs creates them all."""
    name = unique("t")
    acls = _bulk(name, MAX_RECORDS_PER_USER_OP + 1)
    with login(target, "admin") as admin:
        assert _create(admin, acls[:1]) == [(0, "")]
        _settled(admin, acls[:1], resource_type=TOPIC, name=name, pattern=LITERAL)
        assert _create(admin, [*acls, acls[1]]) == [(0, "")] * (len(acls) + 1)
        with transcript.unrecorded():  # the listing and the clean-up: tens of thousands of entries
            _settled(admin, acls, resource_type=TOPIC, name=name, pattern=LITERAL)
            assert [len(matched) for _, _, matched in _delete(admin, [_filter(acls[0])])] == [1]
            everything = _filter(resource_type_filter=TOPIC, resource_name_filter=name, pattern_type_filter=LITERAL)
            assert [len(matched) for _, _, matched in _delete(admin, [everything])] == [MAX_RECORDS_PER_USER_OP]


# ---- DescribeAcls filters ---------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_describe_filters(target, version):
    p, q = _principal(), _principal()
    name = unique("t")
    literal = Acl(TOPIC, name, READ, principal=p)
    wildcard = Acl(TOPIC, "*", WRITE, principal=p)
    prefix = Acl(TOPIC, name[:-3], DESCRIBE, principal=p, pattern=PREFIXED)
    longer_prefix = Acl(TOPIC, name + "x", READ, principal=p, pattern=PREFIXED, permission=DENY)
    group = Acl(GROUP, name, READ, principal=p)
    deny_host = Acl(TOPIC, name, READ, principal=p, permission=DENY, host="10.1.1.1")
    other_user = Acl(TOPIC, name, READ, principal=q)
    everything = [literal, wildcard, prefix, longer_prefix, group, deny_host, other_user]
    grant(target, *everything)
    cases: list[tuple[dict[str, Any], list[Acl]]] = [
        ({"principal": p}, [literal, wildcard, prefix, longer_prefix, group, deny_host]),
        ({"principal": p, "resource_type": TOPIC, "name": name, "pattern": MATCH},
         [literal, wildcard, prefix, deny_host]),
        ({"principal": p, "resource_type": TOPIC, "name": name + "xyz", "pattern": MATCH},
         [wildcard, prefix, longer_prefix]),
        ({"principal": p, "resource_type": TOPIC, "name": name, "pattern": LITERAL}, [literal, deny_host]),
        ({"principal": p, "name": name}, [literal, group, deny_host]),
        ({"principal": p, "resource_type": TOPIC, "pattern": PREFIXED}, [prefix, longer_prefix]),
        ({"principal": p, "resource_type": TOPIC, "pattern": MATCH},
         [literal, wildcard, prefix, longer_prefix, deny_host]),
        ({"principal": p, "name": "*", "pattern": LITERAL}, [wildcard]),
        ({"principal": p, "name": "*", "pattern": MATCH}, [wildcard]),
        ({"principal": p, "resource_type": GROUP}, [group]),
        ({"principal": p, "host": "10.1.1.1"}, [deny_host]),
        ({"principal": p, "host": "*", "operation": READ}, [literal, longer_prefix, group]),
        ({"principal": p, "permission": DENY}, [longer_prefix, deny_host]),
        ({"name": name, "pattern": LITERAL, "resource_type": TOPIC}, [literal, deny_host, other_user]),
        ({"principal": q.removeprefix("User:")}, []),
        ({"principal": p, "resource_type": NOT_A_CODE}, []),
        ({"principal": p, "pattern": NOT_A_CODE}, []),
        ({"principal": p, "operation": NOT_A_CODE}, []),
        ({"principal": p, "permission": NOT_A_CODE}, []),
    ]
    with login(target, "admin") as admin:
        for filter_, expected in cases:
            _settled(admin, expected, version, **filter_)


# ---- DeleteAcls -------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_delete_filters(target, version):
    p = _principal()
    name = unique("t")
    literal = Acl(TOPIC, name, READ, principal=p)
    literal_write = Acl(TOPIC, name, WRITE, principal=p)
    wildcard = Acl(TOPIC, "*", WRITE, principal=p)
    prefix = Acl(TOPIC, name[:-2], ALL, principal=p, pattern=PREFIXED)
    group = Acl(GROUP, name, READ, principal=p)
    keep = Acl(TOPIC, unique("t"), READ, principal=p)
    grant(target, literal, literal_write, wildcard, prefix, group, keep)
    with login(target, "admin") as admin:
        filters = [
            _filter(resource_type_filter=TOPIC, resource_name_filter=name, pattern_type_filter=MATCH,
                    principal_filter=p),
            _filter(literal, operation=ANY),                                 # the same literal ACLs again
            _filter(resource_type_filter=NOT_A_CODE, principal_filter=p),   # Unknown patternFilter.
            _filter(pattern_type_filter=NOT_A_CODE, principal_filter=p),
            _filter(operation=NOT_A_CODE, principal_filter=p),              # Unknown entryFilter.
            _filter(permission_type=NOT_A_CODE, principal_filter=p),
            _filter(resource_type_filter=GROUP, resource_name_filter=name, pattern_type_filter=PREFIXED,
                    principal_filter=p),                                    # matches nothing
            _filter(group, principal_filter=p.upper()),                     # nor does this
            _filter(group),
        ]
        as_tuples = lambda *acls: sorted(_as_tuple(a) for a in acls)  # noqa: E731
        assert _delete(admin, filters, version) == [
            (0, None, as_tuples(literal, literal_write, wildcard, prefix)),
            (0, None, as_tuples(literal, literal_write)),
            (INVALID_REQUEST, "Unknown patternFilter.", []),
            (INVALID_REQUEST, "Unknown patternFilter.", []),
            (INVALID_REQUEST, "Unknown entryFilter.", []),
            (INVALID_REQUEST, "Unknown entryFilter.", []),
            (0, None, []),
            (0, None, []),
            (0, None, as_tuples(group)),
        ]
        _settled(admin, [keep], principal=p)
        assert _delete(admin, filters[:2], version) == [(0, None, []), (0, None, [])]
        assert _delete(admin, [_filter(keep)], version) == [(0, None, as_tuples(keep))]
        _settled(admin, [], principal=p)


# ---- requests Kafka cannot parse ------------------------------------------------------------------------
def _unknown_creation(field: str) -> CreateAclsRequest:
    creation = Acl(TOPIC, unique("t"), READ, principal=_principal()).creation()
    setattr(creation, field, 0)
    return CreateAclsRequest(creations=[creation])


def _unknown_describe(field: str) -> DescribeAclsRequest:
    fields = {"resource_type_filter": TOPIC, "resource_name_filter": None, "pattern_type_filter": ANY,
              "principal_filter": None, "host_filter": None, "operation": ANY, "permission_type": ANY}
    return DescribeAclsRequest(**{**fields, field: 0})


def _unknown_delete(field: str) -> DeleteAclsRequest:
    return DeleteAclsRequest(filters=[_filter(principal_filter=_principal()), _filter(**{field: 0})])


UNPARSABLE = [("create", f) for f in ("resource_type", "resource_pattern_type", "operation", "permission_type")] + [
    (api, f) for api in ("describe", "delete")
    for f in ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")]


@pytest.mark.parametrize("user", ["admin", "alice"])
@pytest.mark.parametrize("api,field", UNPARSABLE, ids=[f"{a}-{f}" for a, f in UNPARSABLE])
def test_an_unknown_code_closes_the_connection(target, user, api, field):
    request = {"create": _unknown_creation, "describe": _unknown_describe, "delete": _unknown_delete}[api](field)
    with login(target, user) as conn:
        assert _closed_by_broker(conn, request)
