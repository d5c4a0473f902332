"""Sessions of Kafka's own Java CLI tools (4.3.1 jars through scripts/realkafka.py): the console
producer and consumer, and an admin round of kafka-topics, kafka-configs and
kafka-consumer-groups."""

from __future__ import annotations

from testsupport.java_tools import tool

from conformance.sessions import Session, expect, settle
from conformance.sessions.kafka_state import led_partitions, topic_config

CONSOLE_TOPIC, CONSOLE_GROUP = "java-console", "java-console-readers"
CONSOLE_LINES = [f"jkey-{i}:jvalue-{i}" for i in range(5)]
ADMIN_TOPIC, ADMIN_GROUP = "java-admin", "java-admin-group"


def _ok(name: str, *args: str, input: str | None = None) -> str:
    result = tool(name, *args, timeout=90, input=None if input is None else input.encode())
    expect(result.returncode == 0, f"{name} {' '.join(args)} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result.stdout


def console(bootstrap: str, _kafka: str) -> None:
    """kafka-console-producer writes keyed lines to a topic it auto-creates (an idempotent
    producer, Java's default); kafka-console-consumer reads them back in a group."""
    _ok("kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", CONSOLE_TOPIC,
        "--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
        input="\n".join(CONSOLE_LINES) + "\n")
    out = _ok("kafka-console-consumer", "--bootstrap-server", bootstrap, "--topic", CONSOLE_TOPIC,
              "--group", CONSOLE_GROUP, "--from-beginning", "--max-messages", str(len(CONSOLE_LINES)),
              "--timeout-ms", "20000", "--formatter-property", "print.key=true",
              "--formatter-property", "key.separator=:", "--command-property", "fetch.max.wait.ms=200",
              "--command-property", "heartbeat.interval.ms=1000")
    expect(out.split() == CONSOLE_LINES, f"consumed {out!r}")


def admin(bootstrap: str, kafka: str) -> None:
    """kafka-topics creates, describes, grows and lists a topic; kafka-configs describes and
    alters its configs; kafka-consumer-groups sets a group's offsets and describes the group."""
    b = ("--bootstrap-server", bootstrap)
    _ok("kafka-topics", *b, "--create", "--topic", ADMIN_TOPIC, "--partitions", "2",
        "--config", "retention.ms=86400000")
    settle(lambda: led_partitions(kafka, ADMIN_TOPIC) == 2, "the topic")
    expect("PartitionCount: 2" in _ok("kafka-topics", *b, "--describe", "--topic", ADMIN_TOPIC), "not described")
    _ok("kafka-topics", *b, "--alter", "--topic", ADMIN_TOPIC, "--partitions", "3")
    settle(lambda: led_partitions(kafka, ADMIN_TOPIC) == 3, "the new partition")
    entity = (*b, "--entity-type", "topics", "--entity-name", ADMIN_TOPIC)
    _ok("kafka-configs", *entity, "--describe")
    _ok("kafka-configs", *entity, "--alter", "--add-config", "cleanup.policy=compact,max.message.bytes=65536")
    settle(lambda: topic_config(kafka, ADMIN_TOPIC, "max.message.bytes") == "65536", "the altered config")
    expect("max.message.bytes=65536" in _ok("kafka-configs", *entity, "--describe"), "config not altered")
    _ok("kafka-consumer-groups", *b, "--group", ADMIN_GROUP, "--reset-offsets", "--to-earliest",
        "--topic", ADMIN_TOPIC, "--execute")
    expect(ADMIN_GROUP in _ok("kafka-consumer-groups", *b, "--describe", "--group", ADMIN_GROUP), "no group")
    expect(ADMIN_TOPIC in _ok("kafka-topics", *b, "--list").split(), "topic not listed")


SESSIONS = [
    Session("java_console", "Kafka 4.3.1 console tools", console.__doc__ or "", console),
    Session("java_admin", "Kafka 4.3.1 admin tools", admin.__doc__ or "", admin),
]
