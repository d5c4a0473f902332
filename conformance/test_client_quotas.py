"""Client quotas (KIP-546) against Kafka 4.3.1: AlterClientQuotas (API 49) and DescribeClientQuotas
(API 48), versions 0 and 1 (v1 is flexible). Quotas set, changed and removed for users, client ids,
user + client-id pairs and IP addresses, default entities (a null entity name) among them; the
order Kafka gives an entity's components (client-id, user, ip, whatever the request's order) and
an entry's values (a Java HashMap's iteration order, which depends on the set of keys, not on the
order they were set in: all four as producer_byte_rate, consumer_byte_rate,
controller_mutation_rate, request_percentage; consumer_byte_rate before producer_byte_rate when
only those two); validate_only; describe filters by exact name, default and any (which matches
the default entity too), strict or not; and Kafka's errors, with their messages: INVALID_REQUEST
for a bad key, value, entity or filter, UNSUPPORTED_VERSION for a filter on an unknown entity
type, and the same entity twice in one request (one answer, the repeat's error, though the first
alteration is applied).

Kafka answers an alteration once its controller has committed it, and its broker applies the
records from the metadata log a moment later, so describes poll until the expected state shows;
a change that must not happen is checked after a later alteration has shown (the log is applied
in order). Quotas on default entities would reach every other scenario's connections (all
user ANONYMOUS, client id "conformance", from 127.0.0.1), and describe with match "any" or an
empty filter lists every entity on the broker, so this module has a pair of brokers of its own
(started once for the module), sets only quotas far above what its own connections use, removes
its default quotas before it ends, and cuts broker-wide answers to its own names before
asserting. Entry order within an answer follows Java hash maps, so entries are compared sorted."""

from __future__ import annotations

import math
from typing import Any

import pytest
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from conformance.harness.own_brokers import own_broker_pair
from conformance.harness.wire import Connection, poll, unique

_Entry = AlterClientQuotasRequest.EntryData
_Entity = _Entry.EntityData
_Op = _Entry.OpData
_Component = DescribeClientQuotasRequest.ComponentData
EXACT, DEFAULT, ANY = 0, 1, 2
INVALID_REQUEST, UNSUPPORTED_VERSION = 42, 35
PRODUCER, CONSUMER, REQUEST_PCT, MUTATION, CONNECTIONS = (
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
    "connection_creation_rate")
IP_WITH_OTHERS = "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
FILTER_IP_WITH_OTHERS = ("Invalid entity filter component combination. IP filter component should not be used "
                         "with user or clientId filter component.")
LONG_MAX = float(2 ** 63)  # 9223372036854775807 as a double: still accepted for a long-typed quota
ABOVE_LONG_MAX = math.nextafter(LONG_MAX, math.inf)

Entity = tuple[tuple[str, str | None], ...]

own_wirekafka, own_kafka, target = own_broker_pair({})


def _set(key: str, value: float) -> _Op:
    return _Op(key=key, value=value, remove=False)


def _remove(key: str, value: float = 0.0) -> _Op:
    return _Op(key=key, value=value, remove=True)


def _alter(conn: Connection, entries: list[tuple[list[tuple[str, str | None]], list[_Op]]],
           validate_only: bool = False, version: int = 1) -> list[tuple[int, str | None, Entity]]:
    """The answer's entries as (error code, message, entity), in Kafka's order."""
    request = AlterClientQuotasRequest(
        entries=[_Entry(entity=[_Entity(entity_type=t, entity_name=n) for t, n in entity], ops=ops)
                 for entity, ops in entries], validate_only=validate_only)
    answer = conn.call(request, version)
    return [(e.error_code, e.error_message, tuple((c.entity_type, c.entity_name) for c in e.entity))
            for e in answer.entries]


def _describe(conn: Connection, components: list[tuple[str, int, str | None]], strict: bool,
              version: int = 1) -> tuple[int, str | None, list[tuple[Entity, list[tuple[str, float]]]] | None]:
    """(error code, message, entries as (entity, [(key, value)...]) in Kafka's order, or None)."""
    request = DescribeClientQuotasRequest(
        components=[_Component(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict)
    answer = conn.call(request, version)
    entries = None if answer.entries is None else [
        (tuple((c.entity_type, c.entity_name) for c in e.entity), [(v.key, v.value) for v in e.values])
        for e in answer.entries]
    return answer.error_code, answer.error_message, entries


def _key(item: Any) -> Any:
    """Sort key for answers: a null (a default entity's name) before any string."""
    if item is None:
        return (0, "")
    if isinstance(item, str):
        return (1, item)
    if isinstance(item, (int, float)):
        return (2, item)
    return (3, tuple(_key(i) for i in item))


def _sorted(items: list) -> list:
    return sorted(items, key=_key)


def _mine(entries: list, names: set[str]) -> list:
    """The entries whose entity names are all this scenario's (or null: a default component)."""
    return [e for e in entries if all(n is None or n in names for _t, n in e[0])]


def _expect(conn: Connection, components: list[tuple[str, int, str | None]], strict: bool, expected: list,
            names: set[str] | None = None, version: int = 1) -> None:
    """Describe until the answer (cut to `names` when given, sorted) is `expected`, then assert it."""
    def view() -> tuple:
        code, message, entries = _describe(conn, components, strict, version)
        if entries is not None:
            entries = _sorted(entries if names is None else _mine(entries, names))
        return code, message, entries

    assert poll(view, lambda found: found == (0, "", expected)) == (0, "", expected)


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("kind", ["user", "client-id", "user+client-id"])
def test_alter_then_describe(target, kind, version):
    user, client = unique("user"), unique("client")
    entity = {"user": [("user", user)], "client-id": [("client-id", client)],
              "user+client-id": [("user", user), ("client-id", client)]}[kind]
    answered = {"user": (("user", user),), "client-id": (("client-id", client),),
                "user+client-id": (("client-id", client), ("user", user))}[kind]  # Kafka's component order
    with Connection(target.bootstrap) as conn:
        ops = [_set(REQUEST_PCT, 250.5), _set(MUTATION, 12.25), _set(CONSUMER, 2097152), _set(PRODUCER, 1048576)]
        assert _alter(conn, [(entity, ops)], version=version) == [(0, None, answered)]
        exact = [(t, EXACT, n) for t, n in entity]
        _expect(conn, exact, True, [(answered, [(PRODUCER, 1048576.0), (CONSUMER, 2097152.0), (MUTATION, 12.25),
                                                (REQUEST_PCT, 250.5)])], version=version)
        # a second alteration changes one value and adds nothing else
        assert _alter(conn, [(entity, [_set(CONSUMER, 4194304)])], version=version) == [(0, None, answered)]
        _expect(conn, exact, True, [(answered, [(PRODUCER, 1048576.0), (CONSUMER, 4194304.0), (MUTATION, 12.25),
                                                (REQUEST_PCT, 250.5)])], version=version)
        # the components in the other order name the same entity
        _expect(conn, list(reversed(exact)), True, [(answered, [(PRODUCER, 1048576.0), (CONSUMER, 4194304.0),
                                                                (MUTATION, 12.25), (REQUEST_PCT, 250.5)])],
                version=version)


@pytest.mark.parametrize("version", [0, 1])
def test_ip_quotas(target, version):
    v4, v6 = f"198.51.100.{10 + version}", f"2001:DB8:0:0::{10 + version}"  # v6 written out, not canonical
    ips = {v4, v6}
    with Connection(target.bootstrap) as conn:
        results = _alter(conn, [([("ip", v4)], [_set(CONNECTIONS, 25)]), ([("ip", v6)], [_set(CONNECTIONS, 50)])],
                         version=version)
        assert _sorted(results) == [(0, None, (("ip", v4),)), (0, None, (("ip", v6),))]
        _expect(conn, [("ip", EXACT, v4)], True, [((("ip", v4),), [(CONNECTIONS, 25.0)])], version=version)
        # the name is kept as written: the canonical form of the v6 address is another entity
        _expect(conn, [("ip", EXACT, v6)], False, [((("ip", v6),), [(CONNECTIONS, 50.0)])], version=version)
        _expect(conn, [("ip", EXACT, f"2001:db8::{10 + version}")], True, [], version=version)
        _expect(conn, [("ip", ANY, None)], True, [((("ip", v4),), [(CONNECTIONS, 25.0)]),
                                                  ((("ip", v6),), [(CONNECTIONS, 50.0)])], names=ips, version=version)
        assert _alter(conn, [([("ip", v4)], [_remove(CONNECTIONS)])], version=version) == [(0, None, (("ip", v4),))]
        _expect(conn, [("ip", ANY, None)], True, [((("ip", v6),), [(CONNECTIONS, 50.0)])], names=ips,
                version=version)


def test_default_entities(target):
    user, client = unique("user"), unique("client")
    defaults = [
        ([("user", None)], [_set(PRODUCER, 104857600)]),
        ([("client-id", None)], [_set(CONSUMER, 209715200)]),
        ([("user", None), ("client-id", None)], [_set(REQUEST_PCT, 1000)]),
        ([("user", user), ("client-id", None)], [_set(PRODUCER, 52428800)]),
        ([("user", None), ("client-id", client)], [_set(CONSUMER, 52428800)]),
        ([("ip", None)], [_set(CONNECTIONS, 10000)]),
    ]
    removals = [(entity, [_remove(ops[0].key)]) for entity, ops in defaults]
    names = {user, client}
    answers = _sorted([  # the components in Kafka's order: client-id, user
        (0, None, (("user", None),)), (0, None, (("client-id", None),)),
        (0, None, (("client-id", None), ("user", None))), (0, None, (("client-id", None), ("user", user))),
        (0, None, (("client-id", client), ("user", None))), (0, None, (("ip", None),))])
    with Connection(target.bootstrap) as conn:
        try:
            assert _sorted(_alter(conn, defaults)) == answers
            _expect(conn, [("user", DEFAULT, None)], True, [((("user", None),), [(PRODUCER, 104857600.0)])])
            _expect(conn, [("client-id", DEFAULT, None)], True, [((("client-id", None),), [(CONSUMER, 209715200.0)])])
            _expect(conn, [("ip", DEFAULT, None)], True, [((("ip", None),), [(CONNECTIONS, 10000.0)])])
            _expect(conn, [("user", DEFAULT, None), ("client-id", DEFAULT, None)], True,
                    [((("client-id", None), ("user", None)), [(REQUEST_PCT, 1000.0)])])
            _expect(conn, [("user", DEFAULT, None)], False, _sorted([
                ((("user", None),), [(PRODUCER, 104857600.0)]),
                ((("client-id", None), ("user", None)), [(REQUEST_PCT, 1000.0)]),
                ((("client-id", client), ("user", None)), [(CONSUMER, 52428800.0)])]), names=names)
            _expect(conn, [("user", EXACT, user), ("client-id", DEFAULT, None)], True,
                    [((("client-id", None), ("user", user)), [(PRODUCER, 52428800.0)])])
            _expect(conn, [("client-id", EXACT, client)], False,
                    [((("client-id", client), ("user", None)), [(CONSUMER, 52428800.0)])])
            # the default user is no user's exact name
            _expect(conn, [("user", EXACT, user)], True, [])
            assert _sorted(_alter(conn, removals)) == answers
            for entity, _ops in defaults:
                _expect(conn, [(t, EXACT if n is not None else DEFAULT, n) for t, n in entity], True, [])
        except BaseException:
            _alter(conn, removals)  # leave no default quota to the module's other scenarios
            raise


def test_remove_quotas(target):
    user, never, empty, sentinel = unique("user"), unique("never"), unique("empty"), unique("sentinel")
    with Connection(target.bootstrap) as conn:
        assert _alter(conn, [([("user", user)], [_set(PRODUCER, 1000), _set(CONSUMER, 2000)])]) == [
            (0, None, (("user", user),))]
        _expect(conn, [("user", EXACT, user)], True, [((("user", user),), [(CONSUMER, 2000.0), (PRODUCER, 1000.0)])])
        # the value of a removal is ignored
        assert _alter(conn, [([("user", user)], [_remove(PRODUCER, 999)])]) == [(0, None, (("user", user),))]
        _expect(conn, [("user", EXACT, user)], True, [((("user", user),), [(CONSUMER, 2000.0)])])
        # its last quota gone, the entity is gone
        assert _alter(conn, [([("user", user)], [_remove(CONSUMER)])]) == [(0, None, (("user", user),))]
        _expect(conn, [("user", EXACT, user)], False, [])
        # removing what is not there succeeds, and a removal's key is not validated
        results = _alter(conn, [([("user", never)], [_remove(PRODUCER), _remove("no_such_quota"),
                                                     _remove(CONNECTIONS, -1.5)]),
                                ([("ip", "198.51.100.20")], [_remove(PRODUCER)]),
                                ([("user", empty)], [])])
        assert _sorted(results) == _sorted([(0, None, (("user", never),)), (0, None, (("ip", "198.51.100.20"),)),
                                            (0, None, (("user", empty),))])
        assert _alter(conn, [([("user", sentinel)], [_set(PRODUCER, 5000)])]) == [(0, None, (("user", sentinel),))]
        _expect(conn, [("user", EXACT, sentinel)], True, [((("user", sentinel),), [(PRODUCER, 5000.0)])])
        for name in (user, never, empty):
            _expect(conn, [("user", EXACT, name)], False, [])
        _expect(conn, [("ip", EXACT, "198.51.100.20")], False, [])


@pytest.mark.parametrize("version", [0, 1])
def test_validate_only(target, version):
    user, other = unique("user"), unique("other")
    with Connection(target.bootstrap) as conn:
        assert _alter(conn, [([("user", user)], [_set(PRODUCER, 1000)])], validate_only=True, version=version) == [
            (0, None, (("user", user),))]
        # errors are the same as without validate_only
        results = _alter(conn, [([("user", other)], [_set("no_such_quota", 1)]),
                                ([("ip", "198.51.100.30"), ("user", other)], [_set(CONNECTIONS, 1)])],
                         validate_only=True, version=version)
        assert _sorted(results) == _sorted([
            (INVALID_REQUEST, "Invalid configuration key no_such_quota", (("user", other),)),
            (INVALID_REQUEST, IP_WITH_OTHERS, (("user", other), ("ip", "198.51.100.30")))])
        assert _alter(conn, [([("user", user)], [_set(CONSUMER, 2000)])], version=version) == [
            (0, None, (("user", user),))]
        _expect(conn, [("user", EXACT, user)], True, [((("user", user),), [(CONSUMER, 2000.0)])], version=version)
        # a validated removal and a validated new entity change nothing either
        assert _sorted(_alter(conn, [([("user", user)], [_remove(CONSUMER)]),
                                     ([("user", other)], [_set(PRODUCER, 3000)])],
                              validate_only=True, version=version)) == _sorted([
            (0, None, (("user", user),)), (0, None, (("user", other),))])
        assert _alter(conn, [([("user", user)], [_set(REQUEST_PCT, 50)])], version=version) == [
            (0, None, (("user", user),))]
        _expect(conn, [("user", EXACT, user)], True, [((("user", user),), [(CONSUMER, 2000.0), (REQUEST_PCT, 50.0)])],
                version=version)
        _expect(conn, [("user", EXACT, other)], False, [], version=version)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_filters(target, version):
    user, user2, client, client2 = unique("user"), unique("user"), unique("client"), unique("client")
    names = {user, user2, client, client2}
    U, UC, Ud, dC, C, C2, U2C2 = (  # noqa: N806 - the entities' shapes
        (("user", user),), (("client-id", client), ("user", user)), (("client-id", None), ("user", user)),
        (("client-id", client), ("user", None)), (("client-id", client),), (("client-id", client2),),
        (("client-id", client2), ("user", user2)))
    rate = {U: 1001.0, UC: 1002.0, Ud: 1003.0, dC: 1004.0, C: 1005.0, C2: 1006.0, U2C2: 1007.0}
    with Connection(target.bootstrap) as conn:
        results = _alter(conn, [(list(entity), [_set(PRODUCER, value)]) for entity, value in rate.items()],
                         version=version)
        assert _sorted(results) == _sorted([(0, None, entity) for entity in rate])

        def expect(components: list, strict: bool, entities: list, mine: bool = False) -> None:
            _expect(conn, components, strict, _sorted([(e, [(PRODUCER, rate[e])]) for e in entities]),
                    names=names if mine else None, version=version)

        expect([], False, list(rate), mine=True)  # an empty filter that is not strict: every entity
        expect([], True, [])  # strict: an entity has at least one component
        expect([("user", EXACT, user)], True, [U])
        expect([("user", EXACT, user)], False, [U, UC, Ud])
        expect([("user", EXACT, user), ("client-id", ANY, None)], True, [UC, Ud])  # any: the default too
        expect([("user", EXACT, user), ("client-id", DEFAULT, None)], True, [Ud])
        expect([("client-id", EXACT, client), ("user", EXACT, user)], True, [UC])
        expect([("client-id", EXACT, client)], True, [C])
        expect([("client-id", EXACT, client)], False, [C, UC, dC])
        expect([("user", ANY, None), ("client-id", EXACT, client)], True, [UC, dC])
        expect([("user", DEFAULT, None), ("client-id", EXACT, client)], False, [dC])
        expect([("user", ANY, None)], True, [U], mine=True)
        expect([("user", ANY, None)], False, [U, UC, Ud, dC, U2C2], mine=True)
        expect([("client-id", ANY, None)], True, [C, C2], mine=True)
        expect([("user", EXACT, user2)], True, [])  # only with a client id
        expect([("user", EXACT, unique("nobody"))], False, [])
        expect([("ip", ANY, None)], False, [], mine=True)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_filter_errors(target, version):
    name = unique("user")
    cases = [
        ([("user", 3, None)], INVALID_REQUEST, "Unknown match type 3"),
        ([("user", -1, None)], INVALID_REQUEST, "Unknown match type -1"),
        ([("user", EXACT, None)], INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
        ([("ip", EXACT, None)], INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
        ([("user", DEFAULT, name)], INVALID_REQUEST,
         "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
        ([("client-id", ANY, name)], INVALID_REQUEST,
         "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
        ([("user", EXACT, name), ("user", ANY, None)], INVALID_REQUEST,
         "Entity type user cannot appear more than once in the filter."),
        ([("client-id", EXACT, name), ("client-id", EXACT, name)], INVALID_REQUEST,
         "Entity type client-id cannot appear more than once in the filter."),
        ([("user", EXACT, name), ("user", 3, None)], INVALID_REQUEST,  # the repeat is refused before its match type
         "Entity type user cannot appear more than once in the filter."),
        ([("group", EXACT, name)], UNSUPPORTED_VERSION, "Unsupported entity type group"),
        ([("User", ANY, None)], UNSUPPORTED_VERSION, "Unsupported entity type User"),
        ([("user", EXACT, name), ("group", EXACT, None)], UNSUPPORTED_VERSION,  # the type before the match
         "Unsupported entity type group"),
        ([("user", 3, None), ("group", EXACT, name)], INVALID_REQUEST, "Unknown match type 3"),  # in filter order
        ([("ip", EXACT, "198.51.100.40"), ("user", ANY, None)], INVALID_REQUEST, FILTER_IP_WITH_OTHERS),
        ([("client-id", DEFAULT, None), ("ip", ANY, None)], INVALID_REQUEST, FILTER_IP_WITH_OTHERS),
    ]
    with Connection(target.bootstrap) as conn:
        answers = [(components, *_describe(conn, components, False, version)) for components, _c, _m in cases]
        assert answers == [(components, code, message, None) for components, code, message in cases]
        # names that cannot be stored are no error, they match nothing
        for components in ([("user", EXACT, "")], [("ip", EXACT, "host.invalid")], [("client-id", EXACT, name)]):
            assert _describe(conn, components, False, version) == (0, "", [])


@pytest.mark.parametrize("version", [0, 1])
def test_alter_errors(target, version):
    n = [unique("user") for _ in range(18)]
    bad_ip = "198.51.100.50"
    cases = [
        ([("user", n[0])], [_set("no_such_quota", 1)], "Invalid configuration key no_such_quota", None),
        ([("user", n[1])], [_set(CONNECTIONS, 10)], "Invalid configuration key connection_creation_rate", None),
        ([("client-id", n[2])], [_set(CONNECTIONS, 10)], "Invalid configuration key connection_creation_rate", None),
        ([("ip", bad_ip)], [_set(PRODUCER, 1000)], "Invalid configuration key producer_byte_rate", None),
        ([("ip", None)], [_set(REQUEST_PCT, 10)], "Invalid configuration key request_percentage", None),
        ([("ip", "198.51.100.51"), ("user", n[3])], [_set(CONNECTIONS, 10)], IP_WITH_OTHERS,
         (("user", n[3]), ("ip", "198.51.100.51"))),
        ([("ip", "198.51.100.52"), ("client-id", n[4])], [_set(CONNECTIONS, 10)], IP_WITH_OTHERS,
         (("client-id", n[4]), ("ip", "198.51.100.52"))),
        ([("group", n[5])], [_set(PRODUCER, 1000)], "Unhandled client quota entity type: group", None),
        ([("User", n[6])], [_set(PRODUCER, 1000)], "Unhandled client quota entity type: User", None),
        ([("group", n[7]), ("user", n[7])], [_set(PRODUCER, 1000)], "Unhandled client quota entity type: group",
         (("user", n[7]), ("group", n[7]))),
        ([], [_set(PRODUCER, 1000)], "Invalid empty client quota entity", None),
        ([("user", "")], [_set(PRODUCER, 1000)], "Empty user not supported", None),
        ([("client-id", "")], [_set(PRODUCER, 1000)], "Empty client-id not supported", None),
        ([("ip", "")], [_set(CONNECTIONS, 10)], "Empty ip not supported", None),
        ([("ip", "host.invalid")], [_set(CONNECTIONS, 10)], "host.invalid is not a valid IP or resolvable host.",
         None),
        ([("ip", "2001:db8::g")], [_set(CONNECTIONS, 10)], "2001:db8::g is not a valid IP or resolvable host.",
         None),
        ([("user", n[8])], [_set(PRODUCER, 1.5)], "producer_byte_rate cannot be a fractional value.", None),
        ([("client-id", n[9])], [_set(CONSUMER, 2048.25)], "consumer_byte_rate cannot be a fractional value.", None),
        ([("ip", "198.51.100.53")], [_set(CONNECTIONS, 2.5)], "connection_creation_rate cannot be a fractional value.",
         None),
        ([("user", n[10])], [_set(PRODUCER, 0)], "Quota producer_byte_rate must be greater than 0", None),
        ([("user", n[11])], [_set(REQUEST_PCT, -5)], "Quota request_percentage must be greater than 0", None),
        ([("user", n[12])], [_set(REQUEST_PCT, -math.inf)], "Quota request_percentage must be greater than 0", None),
        ([("client-id", n[13])], [_set(MUTATION, 0)], "Quota controller_mutation_rate must be greater than 0", None),
        ([("ip", "198.51.100.54")], [_set(CONNECTIONS, -1)], "Quota connection_creation_rate must be greater than 0",
         None),
        ([("user", n[14])], [_set(PRODUCER, 1e30)], "Proposed value for producer_byte_rate is too large for a LONG.",
         None),
        ([("client-id", n[14])], [_set(CONSUMER, ABOVE_LONG_MAX)],
         "Proposed value for consumer_byte_rate is too large for a LONG.", None),
        # an unknown key is reported before a bad value, whatever their order
        ([("user", n[15])], [_set(PRODUCER, 1.5), _set("no_such_quota", 1)], "Invalid configuration key no_such_quota",
         None),
        # two bad values: consumer_byte_rate is reported, though it comes second
        ([("user", n[16])], [_set(PRODUCER, -1), _set(CONSUMER, -1)], "Quota consumer_byte_rate must be greater than 0",
         None),
    ]
    valid = n[17]
    entries = [(entity, ops) for entity, ops, _message, _answered in cases]
    entries.insert(len(entries) // 2, ([("user", valid)], [_set(PRODUCER, 4096)]))
    expected = [(INVALID_REQUEST, message, answered if answered is not None else tuple(entity))
                for entity, _ops, message, answered in cases] + [(0, None, (("user", valid),))]
    with Connection(target.bootstrap) as conn:
        assert _sorted(_alter(conn, entries, version=version)) == _sorted(expected)
        # the valid entry is applied, none of the others
        _expect(conn, [("user", EXACT, valid)], True, [((("user", valid),), [(PRODUCER, 4096.0)])], version=version)
        mine = set(n) | {bad_ip, "198.51.100.51", "198.51.100.52", "198.51.100.53", "198.51.100.54"}
        _expect(conn, [], False, [((("user", valid),), [(PRODUCER, 4096.0)])], names=mine, version=version)


def test_value_limits(target):
    user, client = unique("user"), unique("client")
    with Connection(target.bootstrap) as conn:
        # 2^63 (Long.MAX_VALUE as a double) is not too large; a double-typed quota has no upper bound
        results = _alter(conn, [([("user", user)], [_set(PRODUCER, LONG_MAX), _set(CONSUMER, 1),
                                                    _set(REQUEST_PCT, math.inf), _set(MUTATION, 1e-9)]),
                                ([("client-id", client)], [_set(MUTATION, 1e300), _set(REQUEST_PCT, 0.001)])])
        assert _sorted(results) == [(0, None, (("client-id", client),)), (0, None, (("user", user),))]
        _expect(conn, [("user", EXACT, user)], True, [((("user", user),), [(PRODUCER, LONG_MAX), (CONSUMER, 1.0),
                                                                          (MUTATION, 1e-9), (REQUEST_PCT, math.inf)])])
        _expect(conn, [("client-id", EXACT, client)], True,
                [((("client-id", client),), [(MUTATION, 1e300), (REQUEST_PCT, 0.001)])])


@pytest.mark.parametrize("validate_only", [False, True], ids=["applied", "validate-only"])
def test_duplicate_entities(target, validate_only):
    first, invalid_first, user, client, twice, kept, overridden = (
        unique("user"), unique("user"), unique("user"), unique("client"), unique("user"), unique("user"),
        unique("user"))
    with Connection(target.bootstrap) as conn:
        results = _alter(conn, [
            ([("user", first)], [_set(PRODUCER, 3000)]),
            ([("user", first)], [_set(CONSUMER, 5000)]),
            ([("user", invalid_first)], [_set("no_such_quota", 1)]),
            ([("user", invalid_first)], [_set(PRODUCER, 3000)]),
            ([("user", user), ("client-id", client)], [_set(PRODUCER, 3000)]),
            ([("client-id", client), ("user", user)], [_set(CONSUMER, 5000)]),
            ([("user", twice)], [_set(PRODUCER, 1000), _set(PRODUCER, 2000)]),  # one key twice
            ([("user", overridden), ("user", kept)], [_set(PRODUCER, 7000)]),  # one type twice: the last name
        ], validate_only=validate_only)
        duplicate = "Ignoring duplicate entity ClientQuotaEntity(entries={{{}}})"
        assert _sorted(results) == _sorted([
            (INVALID_REQUEST, duplicate.format(f"user={first}"), (("user", first),)),
            (INVALID_REQUEST, duplicate.format(f"user={invalid_first}"), (("user", invalid_first),)),
            (INVALID_REQUEST, duplicate.format(f"client-id={client}, user={user}"),
             (("client-id", client), ("user", user))),
            (INVALID_REQUEST, duplicate.format(f"user={twice}"), (("user", twice),)),
            (0, None, (("user", kept),))])
        if validate_only:
            sentinel = unique("sentinel")
            assert _alter(conn, [([("user", sentinel)], [_set(PRODUCER, 1)])]) == [(0, None, (("user", sentinel),))]
            _expect(conn, [("user", EXACT, sentinel)], True, [((("user", sentinel),), [(PRODUCER, 1.0)])])
            absent = [first, invalid_first, twice, kept, overridden]
            _expect(conn, [("user", EXACT, user), ("client-id", EXACT, client)], False, [])
        else:
            # the first alteration of a repeated entity is applied, though its answer is the repeat's error
            _expect(conn, [("user", EXACT, first)], True, [((("user", first),), [(PRODUCER, 3000.0)])])
            _expect(conn, [("user", EXACT, user), ("client-id", EXACT, client)], True,
                    [((("client-id", client), ("user", user)), [(PRODUCER, 3000.0)])])
            _expect(conn, [("user", EXACT, kept)], True, [((("user", kept),), [(PRODUCER, 7000.0)])])
            absent = [invalid_first, twice, overridden]
        for name in absent:
            _expect(conn, [("user", EXACT, name)], False, [])
