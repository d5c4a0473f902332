"""Broker configuration from KAFKA_* environment variables, as Apache Kafka's container image
(apache/kafka) reads them, so a container recipe or CI service written for that image needs no
file with wirekafka either.

The image's rule (Kafka 4's kafka.docker.KafkaDockerWrapper, getServerConfigsFromEnv): every
variable whose name starts with ``KAFKA_``, except the launcher's own (EXCLUDED), is a key: the
prefix dropped, the rest lower-cased, then ``_`` -> ``.``, and of what that made ``...`` -> ``-``
and ``..`` -> ``_``. So KAFKA_LISTENERS is listeners, KAFKA_LOG_DIRS log.dirs, and
KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG
listener.name.sasl_plaintext.plain.sasl.jaas.config. An empty variable gives an empty value.

Before that, the image's `configure` script derives KAFKA_LISTENERS, when it is unset or empty,
from KAFKA_ADVERTISED_LISTENERS with every host made 0.0.0.0 (unless KAFKA_PROCESS_ROLES is
controller): done here too (derived_listeners).

The image appends these keys to a mounted server.properties (a later line wins in a properties
file), and without one they are the whole configuration; `wirekafka serve` does the same: the
file, then the environment on top, then each --override. Not taken over: the image's own default
variables (configureDefaults: a KRaft controller, CLUSTER_ID), which only make sense inside it,
and its SSL helpers (KAFKA_SSL_KEYSTORE_FILENAME and the *_CREDENTIALS files under
/etc/kafka/secrets)."""

from __future__ import annotations

import re
from typing import Mapping

PREFIX = "KAFKA_"
#: The image's launcher settings (JVM options, log4j levels, its version), never broker keys.
EXCLUDED = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME",
})
_HOST = re.compile(r"://[^:]*:")


def key_of(variable: str) -> str | None:
    """The broker key a variable names, None for a variable that names none."""
    if not variable.startswith(PREFIX) or variable in EXCLUDED:
        return None
    return variable[len(PREFIX):].lower().replace("_", ".").replace("...", "-").replace("..", "_")


def derived_listeners(environ: Mapping[str, str]) -> str | None:
    """KAFKA_LISTENERS as the image's configure script sets it when only the advertised
    listeners are given: the same listeners bound on every interface."""
    advertised = environ.get("KAFKA_ADVERTISED_LISTENERS", "")
    if environ.get("KAFKA_LISTENERS") or not advertised or environ.get("KAFKA_PROCESS_ROLES") == "controller":
        return None
    return _HOST.sub("://0.0.0.0:", advertised)


def properties_from(environ: Mapping[str, str]) -> dict[str, str]:
    """The broker keys and values the environment sets. Variables are taken in name order, so
    two that name one key (KAFKA_A_B and KAFKA_a_b) resolve the same way every time."""
    variables = dict(environ)
    listeners = derived_listeners(environ)
    if listeners is not None:
        variables["KAFKA_LISTENERS"] = listeners
    props: dict[str, str] = {}
    for variable in sorted(variables):
        key = key_of(variable)
        if key:
            props[key] = variables[variable]
    return props
