"""The JVM system properties a Kafka user gives Kafka's scripts in KAFKA_OPTS (`-Dname=value`),
read from wirekafka's environment, and the one file such a property names that a broker reads:
the JAAS login configuration (`-Djava.security.auth.login.config=...`) with its `KafkaServer`
section for the SASL listeners and its `Client` section for the ZooKeeper session."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Mapping

from wirekafka.security import jaas

LOGIN_CONFIG = "java.security.auth.login.config"


def system_property(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A JVM system property as KAFKA_OPTS' -Dname=value entries give it to Kafka's scripts."""
    value = None
    for word in shlex.split((os.environ if environ is None else environ).get("KAFKA_OPTS", "")):
        if word.startswith(f"-D{name}="):
            value = word[len(name) + 3:]
        elif word == f"-D{name}":
            value = ""
    return value


def login_config() -> tuple[str | None, dict[str, list[jaas.LoginModule]]]:
    """(the JAAS file's path, its sections by name); (None, {}) when no file is named. Raises
    OSError when it cannot be read and jaas.JaasError when it does not parse."""
    location = system_property(LOGIN_CONFIG)
    if location is None:
        return None, {}
    return location, jaas.parse_file(Path(location).read_text())
