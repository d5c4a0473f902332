"""No secret leaves a ZooKeeper-mode broker (Kafka 3.9's mode) through its log, DescribeConfigs or
the znodes it writes: its password encoder secret, its static store passwords, AclAuthorizer's
own ZooKeeper TLS password (logged as having no effect, hidden), and a store password set at
runtime, which /config/brokers/<id> keeps encoded with password.encoder.secret, never in clear.
The single-node broker's scan is compat-tests/test_secrets_broker.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from testsupport.broker_process import free_port
from testsupport.cluster import WirekafkaCluster
from testsupport.self_signed import PASSWORD as STORE_PASSWORD
from testsupport.self_signed import make_stores

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper]

ENCODER_SECRET, ACL_ZK_SECRET, WRONG_SECRET = "zk-encoder-pw-0b9e", "acl-zk-pw-61f2", "zk-wrong-pw-2c7d"
SECRETS = [ENCODER_SECRET, ACL_ZK_SECRET, WRONG_SECRET, STORE_PASSWORD]


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _texts(configs: dict[str, ConfigEntry]) -> str:
    return "\n".join(f"{e.name}={e.value} {[(s.name, s.value) for s in e.synonyms.values()]}"
                     for e in configs.values())


def test_a_zookeeper_mode_broker_shows_no_secret(tmp_path: Path, zookeeper: str) -> None:
    (tmp_path / "stores").mkdir()
    stores = make_stores(tmp_path / "stores")
    copy = tmp_path / "rotated.p12"
    shutil.copy(stores / "broker.p12", copy)
    port, ssl_port = free_port(), free_port()
    own = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port}",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(stores / "broker.p12"),
        "ssl.keystore.password": STORE_PASSWORD, "ssl.key.password": STORE_PASSWORD,
        "password.encoder.secret": ENCODER_SECRET,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "authorizer.zookeeper.ssl.keystore.password": ACL_ZK_SECRET,
    }
    cluster = WirekafkaCluster(tmp_path / "cluster", zookeeper, size=1, broker_overrides={1: own}, ports={1: port})
    with cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        prefix = "listener.name.ssl."

        def change(password: str) -> ConfigResource:
            return ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
                ConfigEntry(prefix + "ssl.keystore.location", str(copy), incremental_operation=AlterConfigOpType.SET),
                ConfigEntry(prefix + "ssl.keystore.password", password, incremental_operation=AlterConfigOpType.SET),
                ConfigEntry(prefix + "ssl.key.password", password, incremental_operation=AlterConfigOpType.SET)])

        right = change(STORE_PASSWORD)
        admin.incremental_alter_configs([right])[right].result(20)
        wrong = change(WRONG_SECRET)
        with pytest.raises(Exception) as refused:
            admin.incremental_alter_configs([wrong])[wrong].result(20)
        assert not _leaks(str(refused.value)), refused.value
        stored = cluster.znode("/config/brokers/1")
        assert stored is not None and prefix + "ssl.keystore.password" in stored["config"]
        assert not _leaks(str(stored)), stored  # kept encoded with password.encoder.secret
        resource = ConfigResource(ResourceType.BROKER, "1")
        configs = admin.describe_configs([resource])[resource].result(20)
        assert not _leaks(_texts(configs))
        for key in ("ssl.keystore.password", prefix + "ssl.keystore.password", "password.encoder.secret"):
            assert configs[key].is_sensitive and configs[key].value is None, key
        del admin  # before the broker stops: it would retry its connection meanwhile
    text = (tmp_path / "cluster" / "broker-1.log").read_text()
    assert not _leaks(text), [line for line in text.splitlines() if _leaks(line)]
    assert "authorizer.zookeeper.ssl.keystore.password=[hidden] has no effect" in text
    assert "Traceback" not in text
