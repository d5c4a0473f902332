"""Client quotas: the store and its Kafka orders, the ZooKeeper layout, Kafka's Rate, throttle
time and token bucket, and which sensor and bound a client gets (the default quota callback)."""

from __future__ import annotations

import pytest

from wirekafka.broker.quotas.client_quota_manager import ClientQuotaManager, ControllerMutationQuota, QuotaResolver
from wirekafka.broker.quotas.entities import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotas,
    entity_entries,
    entity_of,
    entity_text,
    java_double_text,
    stored_text,
)
from wirekafka.broker.quotas.stats import Rate, TokenBucket, java_round, throttle_ms
from wirekafka.jvm import java_int
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config


def _client(name: str | None):
    return entity_of([(CLIENT_ID, name)])


def _user(name: str | None):
    return entity_of([(USER, name)])


def _both(user: str | None, client: str | None):
    return entity_of([(USER, user), (CLIENT_ID, client)])


# ---- the store -----------------------------------------------------------------------------------
def test_values_and_components_come_in_kafkas_hash_order() -> None:
    quotas = ClientQuotas()
    quotas.apply({_both("u", "c"): {PRODUCER_BYTE_RATE: 1.0, CONSUMER_BYTE_RATE: 2.0}})
    # Kafka 4.3.1 lists these two consumer first, and an entity's components client-id, user
    assert list(quotas.get(_both("u", "c"))) == [CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE]
    assert [t for t, _ in entity_entries(_both("u", "c"))] == [CLIENT_ID, USER]
    quotas.apply({_both("u", "c"): {REQUEST_PERCENTAGE: 3.0, CONTROLLER_MUTATION_RATE: 4.0}})
    assert list(quotas.get(_both("u", "c"))) == [PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE,
                                                 REQUEST_PERCENTAGE]
    assert entity_text(_both("u", None)) == "ClientQuotaEntity(entries={client-id=null, user=u})"


def test_removing_the_last_key_removes_the_entity_and_every_change_bumps_the_version() -> None:
    quotas = ClientQuotas()
    quotas.apply({_client("a"): {PRODUCER_BYTE_RATE: 10.0}, _user(None): {CONSUMER_BYTE_RATE: 5.0}})
    before = quotas.version
    quotas.apply({_client("a"): {PRODUCER_BYTE_RATE: None}})
    assert _client("a") not in quotas.entities() and quotas.version == before + 1
    copy = ClientQuotas()
    copy.load(quotas.snapshot())
    assert copy.entities() == {_user(None): {CONSUMER_BYTE_RATE: 5.0}}


def test_describe_filters_exact_default_specified_and_strict() -> None:
    quotas = ClientQuotas()
    quotas.apply({_user("u"): {PRODUCER_BYTE_RATE: 1.0}, _both("u", "c"): {PRODUCER_BYTE_RATE: 2.0},
                  _user(None): {PRODUCER_BYTE_RATE: 3.0}, entity_of([(IP, "1.2.3.4")]): {"connection_creation_rate": 4.0}})
    found = lambda exact, specified, strict: {e for e, _ in quotas.describe(exact, specified, strict)}  # noqa: E731
    assert found({USER: "u"}, set(), False) == {_user("u"), _both("u", "c")}
    assert found({USER: "u"}, set(), True) == {_user("u")}
    assert found({USER: None}, set(), False) == {_user(None)}
    assert found({}, {USER}, False) == {_user("u"), _both("u", "c"), _user(None)}
    assert found({}, {CLIENT_ID}, True) == set()
    assert found({}, set(), True) == set()
    assert len(found({}, set(), False)) == 4


@pytest.mark.parametrize("value,text", [(50.0, "50.0"), (0.5, "0.5"), (1e7, "1.0E7"), (12345678.0, "1.2345678E7"),
                                        (1.5e-5, "1.5E-5"), (0.001, "0.001"), (9.223372036854776e18, "9.223372036854776E18")])
def test_doubles_are_written_as_javas_double_to_string(value: float, text: str) -> None:
    assert java_double_text(value) == text


def test_stored_values_take_their_keys_type() -> None:
    assert stored_text(PRODUCER_BYTE_RATE, 1024.0) == "1024"
    assert stored_text("connection_creation_rate", 10.0) == "10"
    assert stored_text(REQUEST_PERCENTAGE, 50.0) == "50.0"


# ---- ZooKeeper layout ------------------------------------------------------------------------------
@pytest.mark.parametrize("entity,path", [
    (_user("alice"), ("users", "alice")),
    (_user(None), ("users", "<default>")),
    (_client("app 1"), ("clients", "app%201")),
    (_both("alice", None), ("users", "alice/clients/<default>")),
    (_both(None, "c"), ("users", "<default>/clients/c")),
    (entity_of([(IP, None)]), ("ips", "<default>")),
])
def test_quota_znodes_are_where_kafka_39_writes_them(entity, path) -> None:
    assert zl.quota_entity_path(entity) == path
    entity_type, name = path
    read = zl.quota_entities({f"{entity_type}/{name}": {PRODUCER_BYTE_RATE: "7", "connection_creation_rate": "7",
                                                        "SCRAM-SHA-256": "salt=..."}})
    key = "connection_creation_rate" if entity_type == "ips" else PRODUCER_BYTE_RATE
    assert read == {entity: {key: 7.0}}


def test_a_user_literally_named_default_is_not_the_default_entity() -> None:
    assert zl.quota_entity_path(_user("<default>")) == ("users", "%3Cdefault%3E")
    assert zl.quota_entities({"users/%3Cdefault%3E": {PRODUCER_BYTE_RATE: "1"}}) == {_user("<default>"): {PRODUCER_BYTE_RATE: 1.0}}


# ---- Kafka's measurements ---------------------------------------------------------------------------
def test_a_new_clients_rate_is_measured_over_the_padded_window() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(1000, 0)
    assert rate.window_size_ms(0) == 10_000 and rate.measure(0) == 100.0
    assert rate.window_size_ms(12_500) == 10_000  # the sample expired: fresh again


def test_throttle_time_is_kafkas_formula() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(15_000_000, 0)  # 1.5 MB/s over the 10 s window, bound 1 MB/s
    assert throttle_ms(rate, 1_000_000, 0) == 5000
    assert (java_round(2.5), java_round(-2.5), java_round(0.49)) == (3, -2, 0)
    assert java_int(2**31) == -(2**31) and java_int(2**63 - 1) == -1  # a Java (int) cast wraps


def test_token_bucket_starts_full_and_may_go_into_debt() -> None:
    bucket = TokenBucket(rate=1.0, samples=11, window_s=1, now_ms=0)
    assert bucket.tokens == 11
    bucket.record(20, 0)
    assert bucket.throttle_ms(0) == 9000
    assert bucket.throttle_ms(4000) == 5000
    assert bucket.throttle_ms(60_000) == 0 and bucket.tokens == 11


# ---- which sensor, which bound ------------------------------------------------------------------------
def test_with_client_id_quotas_only_each_client_id_has_its_own_rate() -> None:
    quotas = ClientQuotas()
    quotas.apply({_client(None): {PRODUCER_BYTE_RATE: 100.0}, _client("fast"): {PRODUCER_BYTE_RATE: 1000.0}})
    resolver = QuotaResolver(PRODUCER_BYTE_RATE, quotas)
    assert resolver.tags("alice", "app") == ("", "app")
    assert resolver.bound(("", "app")) == 100.0  # the default bounds each client id on its own
    assert resolver.bound(("", "fast")) == 1000.0
    assert resolver.bound(("", "")) is None  # an empty client id escapes client-id quotas
    assert QuotaResolver(CONSUMER_BYTE_RATE, quotas).enabled is False


def test_mixed_shapes_take_the_first_of_kafkas_eight_levels() -> None:
    quotas = ClientQuotas()
    quotas.apply({_user("alice"): {PRODUCER_BYTE_RATE: 10.0}, _both(None, None): {PRODUCER_BYTE_RATE: 20.0},
                  _client("app"): {PRODUCER_BYTE_RATE: 30.0}})
    resolver = QuotaResolver(PRODUCER_BYTE_RATE, quotas)
    assert resolver.tags("alice", "app") == ("alice", "")  # level 3 before level 5
    assert resolver.bound(("alice", "")) == 10.0
    assert resolver.tags("bob", "app") == ("bob", "app")  # level 5: users/<default>/clients/<default>
    assert resolver.bound(("bob", "app")) == 20.0
    quotas.apply({_both(None, None): {PRODUCER_BYTE_RATE: None}})
    assert resolver.tags("bob", "app") == ("", "app") and resolver.bound(("", "app")) == 30.0


def test_manager_records_throttles_unrecords_and_caps_fetches() -> None:
    now = [0.0]
    quotas = ClientQuotas()
    manager = ClientQuotaManager(CONSUMER_BYTE_RATE, quotas, samples=11, window_s=1, clock=lambda: now[0])
    assert manager.record("u", "c", 10**9) == 0 and manager.max_value_in_window("u", "c") == 2**31 - 1
    quotas.apply({_client("c"): {CONSUMER_BYTE_RATE: 1000.0}})
    assert manager.max_value_in_window("u", "c") == 10_000
    assert manager.record("u", "c", 10_000) == 0  # exactly the bound is within it
    assert manager.record("u", "c", 5_000) == 5000  # 1.5x the bound over 10 s
    manager.unrecord("u", "c", 5_000)
    assert manager.record("u", "c", 0) == 0
    request = ClientQuotaManager(REQUEST_PERCENTAGE, quotas, samples=11, window_s=1, max_throttle_ms=1000,
                                 clock=lambda: now[0])
    quotas.apply({_client("c"): {REQUEST_PERCENTAGE: 1.0}})
    assert request.record("u", "c", 1000.0) == 1000  # capped at one window


def test_mutation_permits_strict_and_permissive() -> None:
    now = [100.0]
    quotas = ClientQuotas()
    quotas.apply({_client("admin"): {CONTROLLER_MUTATION_RATE: 1.0}})
    mutation = ControllerMutationQuota(quotas, samples=11, window_s=1, clock=lambda: now[0])
    strict = mutation.for_request("u", "admin", strict=True)
    assert strict.allowed()
    strict.charge(20)  # a strict charge is taken whole, whatever the debt
    assert strict.throttle_ms() == 0 and not strict.allowed() and strict.throttle_ms() == 9000
    now[0] += 8.5
    permissive = mutation.for_request("u", "admin", strict=False)
    assert permissive.allowed()
    permissive.charge(1)
    assert permissive.throttle_ms() == 1500
    assert mutation.for_request("u", "other", strict=True).allowed()  # no quota: unbounded


# ---- configuration --------------------------------------------------------------------------------
@pytest.mark.parametrize("key,value,message", [
    ("authorizer.class.name", "com.example.MyAuthorizer", "ACLs would not be enforced"),
    ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer", "belongs to a ZooKeeper-mode cluster"),
    ("client.quota.callback.class", "com.example.Callback", "default quota callback only"),
    ("quota.window.num", "0", "Value must be at least 1"),
    ("controller.quota.window.size.seconds", "0", "Value must be at least 1"),
])
def test_quota_and_plugin_keys_refused_as_kafka_would(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config({key: value})


def test_quota_windows_default_to_kafkas() -> None:
    config = build_config({})
    assert [config.int(k) for k in ("quota.window.num", "quota.window.size.seconds", "controller.quota.window.num",
                                    "controller.quota.window.size.seconds")] == [11, 1, 11, 1]
