"""The wheel as a user gets it: built from this tree, installed into a fresh venv with nothing of
the repository on the path, then `wirekafka --version`, an embedded broker started off the main
thread that a confluent-kafka client round-trips a record through (and one in a child process),
and a user's own test file on the pytest plugin's fixtures with confluent-kafka, kafka-python
and aiokafka, run plainly, under pytest-xdist and against a broker of its own.

It needs PyPI (pip's cache makes the installs quick after the first run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from wirekafka.embedded import Broker

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.network, pytest.mark.timeout(900)]

#: What the test file of a user, and the broker check, need beside the wheel.
CLIENT_TOOLS = ["confluent-kafka", "kafka-python", "aiokafka", "pytest", "pytest-xdist", "pytest-timeout"]
#: Distributions only the test extras bring: none may be a requirement of the wheel itself.
TEST_ONLY = {"pytest", "pytest-timeout", "pytest-xdist", "confluent-kafka", "aiokafka", "pyright"}

BROKER_OFF_THE_MAIN_THREAD = """
import threading
from confluent_kafka import Consumer, Producer
from wirekafka.embedded import Broker

result = {}

def run():
    with Broker() as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce("wheel-check", value=b"from the wheel")
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "wheel",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["wheel-check"])
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                result["value"] = msg.value()
                break
        consumer.close()

thread = threading.Thread(target=run)
thread.start()
thread.join(120)
assert result.get("value") == b"from the wheel", result
print("round trip ok")

with Broker(process=True) as child:  # the child process runs the installed wirekafka too
    producer = Producer({"bootstrap.servers": child.bootstrap_servers})
    producer.produce("wheel-child", value=b"to the child")
    assert producer.flush(30) == 0
print("child process ok")
"""

USER_TESTS = '''
import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer


def test_confluent_kafka(wirekafka_broker, wirekafka_topic):
    topic = wirekafka_topic(partitions=3)
    producer = Producer({"bootstrap.servers": wirekafka_broker.bootstrap_servers})
    for i in range(3):
        producer.produce(topic, value=b"v%d" % i, partition=i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": wirekafka_broker.bootstrap_servers, "group.id": topic})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    values = set()
    for _ in range(60):
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            values.add(msg.value())
        if len(values) == 3:
            break
    consumer.close()
    assert values == {b"v0", b"v1", b"v2"}


def test_kafka_python(wirekafka_broker, wirekafka_topic):
    topic = wirekafka_topic(config={"cleanup.policy": "compact"})
    producer = KafkaProducer(bootstrap_servers=wirekafka_broker.bootstrap_servers)
    producer.send(topic, key=b"k", value=b"kafka-python").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=wirekafka_broker.bootstrap_servers, group_id=topic,
                             auto_offset_reset="earliest", consumer_timeout_ms=30000)
    assert next(iter(consumer)).value == b"kafka-python"
    consumer.close()


def test_aiokafka(wirekafka_broker, wirekafka_topic):
    topic = wirekafka_topic()

    async def round_trip():
        producer = AIOKafkaProducer(bootstrap_servers=wirekafka_broker.bootstrap_servers)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"aiokafka")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=wirekafka_broker.bootstrap_servers, group_id=topic,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            return (await asyncio.wait_for(consumer.getone(), 30)).value
        finally:
            await consumer.stop()

    assert asyncio.run(round_trip()) == b"aiokafka"


def test_each_call_makes_a_new_topic(wirekafka_broker, wirekafka_topic):
    first, second = wirekafka_topic(), wirekafka_topic(partitions=2)
    assert first != second and "test_each_call_makes_a_new_topic" in first
    topics = AdminClient({"bootstrap.servers": wirekafka_broker.bootstrap_servers}).list_topics(timeout=10).topics
    assert len(topics[first].partitions) == 1 and len(topics[second].partitions) == 2
'''


def run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel, the clients and pytest installed; and an environment with
    nothing of this repository on the path."""
    work = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_NO_INPUT"] = "1"
    source = work / "source"  # a copy: building in the tree would leave build/ and egg-info behind
    shutil.copytree(REPO / "wirekafka", source / "wirekafka", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-input", "-q", str(source), "-w", str(work / "dist")],
        work, env)
    [wheel] = (work / "dist").glob("wirekafka-*.whl")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], work, env)  # this pip installs into it
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-input", "-q",
         str(wheel), *CLIENT_TOOLS], work, env)
    return venv, env


def test_the_wheel_requires_no_test_only_package(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    requires = json.loads(run([str(venv / "bin" / "python"), "-c",
                               "import importlib.metadata, json; "
                               "print(json.dumps(importlib.metadata.requires('wirekafka')))"], tmp_path, env))
    unconditional = {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower()  # type: ignore[union-attr]
                     for r in requires if "extra ==" not in r}
    assert "trio" in unconditional and not unconditional & TEST_ONLY, unconditional
    assert any(r.startswith("pytest") and 'extra == "test"' in r for r in requires), requires  # optional, there


def test_version(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    version = run([str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('wirekafka'))"],
                  tmp_path, env).strip()
    assert run([str(venv / "bin" / "wirekafka"), "--version"], tmp_path, env).strip() == f"wirekafka {version}"


def test_an_embedded_broker_off_the_main_thread(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    out = run([str(venv / "bin" / "python"), "-c", BROKER_OFF_THE_MAIN_THREAD], tmp_path, env)
    assert "round trip ok" in out and "child process ok" in out
    where = run([str(venv / "bin" / "python"), "-c", "import wirekafka; print(wirekafka.__file__)"], tmp_path, env)
    assert str(venv) in where  # the wheel's copy, not this tree's


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_users_tests_on_the_plugin(installed: tuple[Path, dict[str, str]], tmp_path: Path,
                                      workers: list[str]) -> None:
    venv, env = installed
    (tmp_path / "test_with_wirekafka.py").write_text(textwrap.dedent(USER_TESTS))
    out = run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers,
               "--wirekafka-config", "num.partitions=1", "test_with_wirekafka.py"], tmp_path, env)
    assert "4 passed" in out, out


def test_a_users_tests_on_a_broker_of_their_own(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """--wirekafka-bootstrap: the fixtures use a running broker (here one this test started) and
    leave no topic behind on it."""
    venv, env = installed
    (tmp_path / "test_with_wirekafka.py").write_text(textwrap.dedent(USER_TESTS))
    with Broker() as broker:
        run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--wirekafka-bootstrap", broker.bootstrap_servers, "test_with_wirekafka.py"], tmp_path, env)
        topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).topics
        assert not [t for t in topics if "test_with_wirekafka" in t], topics
