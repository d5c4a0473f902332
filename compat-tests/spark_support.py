"""A SparkSession for the Spark tests: local[2], small, with Spark's Kafka connector jars from the
cache that scripts/setup_spark.sh fills (spark.jars, so nothing is resolved at test time)."""

from __future__ import annotations

import os
from pathlib import Path

SPARK_VERSION = "4.0.0"


def connector_jars() -> list[str]:
    cache = Path(os.environ.get("WIREKAFKA_CACHE", Path.home() / ".cache" / "wirekafka"))
    jars = sorted(str(p) for p in (cache / f"spark-{SPARK_VERSION}" / "jars").glob("*.jar"))
    if not jars:
        raise RuntimeError("Spark's Kafka connector is missing: run scripts/setup_spark.sh")
    return jars


def spark_session(app: str = "wirekafka-tests"):
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only
    return (SparkSession.builder.master("local[2]").appName(app)
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.jars", ",".join(connector_jars()))
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.memory", "1g")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate())
