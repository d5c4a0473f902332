"""The authorizer's start-up keys: which authorizer.class.name each mode accepts (Kafka 4's
StandardAuthorizer on the single node, Kafka 3.9's AclAuthorizer in a ZooKeeper cluster),
super.users and allow.everyone.if.no.acl.found, and AclAuthorizer's authorizer.zookeeper.* keys."""

from __future__ import annotations

import pytest

from wirekafka.broker.state import BrokerState
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ZK = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1"}


def test_each_mode_accepts_its_kafka_authorizer_only() -> None:
    assert build_config({"authorizer.class.name": STANDARD}).authorizer_enabled
    assert build_config({**ZK, "authorizer.class.name": ACL_AUTHORIZER}).authorizer_enabled
    with pytest.raises(ConfigError, match="belongs to a ZooKeeper-mode cluster"):
        build_config({"authorizer.class.name": ACL_AUTHORIZER})
    with pytest.raises(ConfigError, match="belongs to the single node"):
        build_config({**ZK, "authorizer.class.name": STANDARD})
    assert not build_config({}).authorizer_enabled


def test_the_broker_state_has_an_authorizer_with_the_configured_super_users(tmp_path) -> None:
    config = build_config({"log.dirs": str(tmp_path), "authorizer.class.name": STANDARD,
                           "super.users": " User:admin ; ;User:CN=broker,O=example",
                           "allow.everyone.if.no.acl.found": "true"})
    authorizer = BrokerState(config).authorizer
    assert authorizer is not None
    assert authorizer.super_users == {"User:admin", "User:CN=broker,O=example"}
    assert authorizer.allow_everyone_if_no_acl_found
    assert BrokerState(build_config({"log.dirs": str(tmp_path / "b")})).authorizer is None


@pytest.mark.parametrize("key,value,message", [
    ("authorizer.zookeeper.url", "127.0.0.1:2182", "keeps ACLs in the cluster's ZooKeeper"),
    ("authorizer.zookeeper.ssl.client.enable", "true", "zookeeper.ssl.client.enable=false makes plaintext"),
])
def test_acl_authorizer_zookeeper_keys_naming_another_ensemble_stop_startup(key: str, value: str, message: str) -> None:
    zk = {**ZK, "authorizer.class.name": ACL_AUTHORIZER}
    with pytest.raises(ConfigError, match=message):
        build_config({**zk, key: value})
    build_config({**zk, "authorizer.zookeeper.url": "127.0.0.1:2181", "authorizer.zookeeper.session.timeout.ms": "9000"})
    # the broker's own session over TLS carries the ACLs over TLS, as asked
    build_config({**zk, "authorizer.zookeeper.ssl.client.enable": "true", "zookeeper.ssl.client.enable": "true"})


@pytest.mark.parametrize("peer,host", [("127.0.0.1:5000", "127.0.0.1"), ("::1:5000", "0:0:0:0:0:0:0:1"),
                                       ("fe80::1:2:5000", "fe80:0:0:0:0:0:1:2"),
                                       ("::ffff:10.1.2.3:5000", "10.1.2.3")])
def test_the_client_host_is_written_as_kafka_writes_it(peer: str, host: str) -> None:
    from wirekafka.broker.context import RequestContext

    assert RequestContext(None, None, "PLAINTEXT", peer).client_host == host  # type: ignore[arg-type]
