"""Stock clients against a broker with an authorizer (Kafka 4's StandardAuthorizer): Kafka's
kafka-acls tool adds, lists and removes ACLs; confluent-kafka's admin client creates, describes and
deletes them; a user without rights is refused (librdkafka reports TOPIC_AUTHORIZATION_FAILED for
its writes and GROUP_AUTHORIZATION_FAILED for its group) and, once granted, produces and consumes;
kcat's metadata lists only the topics the user may describe; the ACLs survive a restart.

One broker for the module: a PLAINTEXT listener (User:ANONYMOUS, a super user, as an inter-broker
principal is) and a SASL_PLAINTEXT one with PLAIN users admin (a super user), alice and bob. The
wire-level answers are compared with Kafka 4.3.1 in conformance/test_acl*.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from kafka_cli import ok, run
from secure_clients import confluent_round_trip
from testsupport.broker_process import BrokerProcess, free_port

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')


def _user(name: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": name,
            "sasl.password": f"{name}-secret"}


class AclBroker:
    """The module's broker, restartable on its data dir."""

    def __init__(self, data: Path) -> None:
        self.plaintext, self.sasl_port = free_port(), free_port()
        self.proc = BrokerProcess(data, {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.plaintext},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
            "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS",
            "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}, port=self.plaintext)

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def admin(self, user: str = "admin") -> AdminClient:
        return AdminClient({"bootstrap.servers": self.sasl, **_user(user)})


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclBroker]:
    b = AclBroker(tmp_path_factory.mktemp("acl") / "data")
    b.proc.start()
    yield b
    b.proc.stop()


def _properties(tmp_path: Path, user: str) -> Path:
    path = tmp_path / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="{user}" password="{user}-secret";\n')
    return path


def _create_topic(broker: AclBroker, topic: str) -> None:
    admin = broker.admin()  # kept referenced until its futures are done (librdkafka destroys it)
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)


def _grant(broker: AclBroker, *bindings: AclBinding) -> None:
    admin = broker.admin()
    for future in admin.create_acls(list(bindings)).values():
        future.result(30)


def _allow(resource: ResourceType, name: str, operation: AclOperation, user: str = "alice") -> AclBinding:
    return AclBinding(resource, name, ResourcePatternType.LITERAL, f"User:{user}", "*", operation,
                      AclPermissionType.ALLOW)


def test_kafka_acls_tool_adds_lists_and_removes(broker: AclBroker, tmp_path: Path) -> None:
    admin = ["--bootstrap-server", broker.sasl, "--command-config", str(_properties(tmp_path, "admin"))]
    ok("kafka-acls", *admin, "--add", "--allow-principal", "User:alice", "--operation", "Read",
       "--operation", "Describe", "--topic", "cli-topic", "--group", "cli-group")
    listed = ok("kafka-acls", *admin, "--list", "--topic", "cli-topic")
    assert "name=cli-topic, patternType=LITERAL" in listed, listed
    for operation in ("READ", "DESCRIBE"):
        assert f"(principal=User:alice, host=*, operation={operation}, permissionType=ALLOW)" in listed, listed
    ok("kafka-acls", *admin, "--add", "--deny-principal", "User:bob", "--operation", "All",
       "--topic", "cli-", "--resource-pattern-type", "prefixed")
    prefixed = ok("kafka-acls", *admin, "--list", "--topic", "cli-", "--resource-pattern-type", "prefixed")
    assert "(principal=User:bob, host=*, operation=ALL, permissionType=DENY)" in prefixed, prefixed
    ok("kafka-acls", *admin, "--remove", "--force", "--topic", "cli-topic")
    assert "cli-topic" not in ok("kafka-acls", *admin, "--list", "--topic", "cli-topic")
    # alice may not read the ACLs: the tool reports the cluster authorization failure
    alice = ["--bootstrap-server", broker.sasl, "--command-config", str(_properties(tmp_path, "alice"))]
    refused = run("kafka-acls", *alice, "--list")
    assert "ClusterAuthorizationException" in refused.stdout + refused.stderr, refused.describe()


def test_confluent_admin_creates_describes_and_deletes(broker: AclBroker) -> None:
    admin = broker.admin()
    binding = _allow(ResourceType.GROUP, "admin-api-group", AclOperation.READ)
    _grant(broker, binding)
    found = admin.describe_acls(AclBindingFilter(ResourceType.GROUP, "admin-api-group", ResourcePatternType.ANY,
                                                 None, None, AclOperation.ANY, AclPermissionType.ANY)).result(30)
    assert found == [binding]
    deleted = admin.delete_acls([AclBindingFilter(ResourceType.GROUP, "admin-api-group", ResourcePatternType.LITERAL,
                                                  "User:alice", None, AclOperation.ANY, AclPermissionType.ANY)])
    assert [b for f in deleted.values() for b in f.result(30)] == [binding]
    alice = broker.admin("alice")
    with pytest.raises(KafkaException) as refused:  # alice may not create ACLs
        for future in alice.create_acls([binding]).values():
            future.result(30)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_a_user_is_refused_until_granted_then_produces_and_consumes(broker: AclBroker) -> None:
    topic = "granted-topic"
    _create_topic(broker, topic)
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": broker.sasl, **_user("alice"), "message.timeout.ms": 10000})
    producer.produce(topic, b"refused", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(20)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED], errors
    _grant(broker, _allow(ResourceType.TOPIC, topic, AclOperation.WRITE),
           _allow(ResourceType.TOPIC, topic, AclOperation.READ),
           _allow(ResourceType.GROUP, f"{topic}-reader", AclOperation.READ))
    values = [b"v%02d" % i for i in range(10)]
    assert confluent_round_trip({"bootstrap.servers": broker.sasl, **_user("alice")}, topic, values) == values


def test_kcat_lists_only_the_topics_a_user_may_describe(broker: AclBroker) -> None:
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.fail("kcat is not installed: run `bash scripts/install_system_deps.sh` (Debian package kcat)")
    for topic in ("seen-by-bob", "hidden-from-bob"):
        _create_topic(broker, topic)
    _grant(broker, _allow(ResourceType.TOPIC, "seen-by-bob", AclOperation.DESCRIBE, user="bob"))
    options = [arg for key, value in _user("bob").items() for arg in ("-X", f"{key}={value}")]
    listed = subprocess.run([kcat, "-b", broker.sasl, *options, "-L", "-J"], capture_output=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert [t["topic"] for t in json.loads(listed.stdout)["topics"]] == ["seen-by-bob"]


def test_acls_survive_a_restart(broker: AclBroker) -> None:
    binding = _allow(ResourceType.TRANSACTIONAL_ID, "restart-", AclOperation.WRITE)
    binding = AclBinding(binding.restype, binding.name, ResourcePatternType.PREFIXED, binding.principal,
                         binding.host, binding.operation, binding.permission_type)
    _grant(broker, binding)
    broker.proc.stop()
    broker.proc.start()
    admin = broker.admin()
    found = admin.describe_acls(AclBindingFilter(
        ResourceType.TRANSACTIONAL_ID, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)
    assert found == [binding]
