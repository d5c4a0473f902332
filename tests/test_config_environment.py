"""KAFKA_* environment variables as broker configuration, by the rule of Apache Kafka's container
image (wirekafka/config/environment.py), and `wirekafka serve` reading them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from scripts import port_pool
from testsupport.broker_process import REPO, api_versions_ok
from wirekafka.config import environment
from wirekafka.config.loader import load_config


@pytest.mark.parametrize("variable, key", [
    ("KAFKA_LISTENERS", "listeners"),
    ("KAFKA_LOG_DIRS", "log.dirs"),
    ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "offsets.topic.replication.factor"),
    ("KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG", "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ("KAFKA_A___B", "a-b"),
    ("KAFKA_num_partitions", "num.partitions"),
])
def test_a_variable_names_a_key(variable: str, key: str) -> None:
    assert environment.key_of(variable) == key


@pytest.mark.parametrize("variable", sorted(environment.EXCLUDED) + ["PATH", "WIREKAFKA_CACHE", "kafka_listeners",
                                                                     "KAFKA_"])
def test_launcher_settings_and_other_variables_are_not_keys(variable: str) -> None:
    assert not environment.key_of(variable)


def test_properties_from_an_environment() -> None:
    assert environment.properties_from({"KAFKA_NUM_PARTITIONS": "3", "KAFKA_HEAP_OPTS": "-Xmx1G", "HOME": "/root",
                                        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": ""}) == {
        "num.partitions": "3", "auto.create.topics.enable": ""}


def test_listeners_follow_the_advertised_ones_on_every_interface() -> None:
    advertised = "PLAINTEXT://broker:9092,SSL://broker.example:9093"
    assert environment.properties_from({"KAFKA_ADVERTISED_LISTENERS": advertised})["listeners"] == \
        "PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093"
    assert environment.properties_from({"KAFKA_ADVERTISED_LISTENERS": advertised,
                                        "KAFKA_LISTENERS": "PLAINTEXT://:9092"})["listeners"] == "PLAINTEXT://:9092"
    assert "listeners" not in environment.properties_from({"KAFKA_ADVERTISED_LISTENERS": advertised,
                                                           "KAFKA_PROCESS_ROLES": "controller"})


def test_the_environment_goes_over_the_file_and_under_overrides(tmp_path: Path) -> None:
    file = tmp_path / "server.properties"
    file.write_text("num.partitions=2\nmessage.max.bytes=1000000\nlog.retention.hours=1\n")
    config = load_config(file, ["message.max.bytes=3000000"],
                         {"KAFKA_NUM_PARTITIONS": " 3 ", "KAFKA_MESSAGE_MAX_BYTES": "2000000"})
    assert (config.int("num.partitions"), config.int("message.max.bytes"), config.int("log.retention.hours")) == \
        (3, 3000000, 1)
    assert load_config(file, []).int("num.partitions") == 2  # no environment given: the file alone


def test_serve_takes_its_configuration_from_the_environment(tmp_path: Path) -> None:
    """`wirekafka serve` with a file, KAFKA_* variables and an --override, as a container would run it."""
    port = port_pool.free_port()
    file = tmp_path / "server.properties"
    file.write_text(f"listeners=PLAINTEXT://127.0.0.1:9\nlog.dirs={tmp_path / 'from-file'}\nnum.partitions=2\n")
    env = dict(os.environ, KAFKA_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}", KAFKA_LOG_DIRS=str(tmp_path / "data"),
               KAFKA_NUM_PARTITIONS="3", KAFKA_MESSAGE_MAX_BYTES="2000000", KAFKA_HEAP_OPTS="-Xmx1G",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "wirekafka", "serve", str(file),
                                 "--override", "message.max.bytes=3000000"], stdout=log, stderr=subprocess.STDOUT,
                                env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (f"listening on 127.0.0.1:{port} ".encode() in log_path.read_bytes()
                   and api_versions_ok("127.0.0.1", port)):
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}")
        try:
            described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        finally:
            admin.close()
        [configs] = [by_name for by_type in described.values() for by_name in by_type.values()]
        assert (configs["num.partitions"]["value"], configs["message.max.bytes"]["value"]) == ("3", "3000000")
        assert (tmp_path / "data" / "meta.properties").is_file() and not (tmp_path / "from-file").exists()
    finally:
        proc.terminate()
        assert proc.wait(30) == 0, log_path.read_text()
