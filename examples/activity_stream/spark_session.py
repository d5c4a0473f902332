"""A small local SparkSession with Spark's Kafka connector, shared by the pipeline and the tests.

The connector jars (spark-sql-kafka-0-10, its token provider, kafka-clients, commons-pool2) are
resolved from Maven Central by scripts/setup_spark.sh into
${WIREKAFKA_CACHE:-~/.cache/wirekafka}/spark-<version>/jars and passed through `spark.jars`, so
starting a session needs no network and no Ivy. The version is the installed PySpark's: Spark's
connector must match the Spark it runs in."""

from __future__ import annotations

import os
from pathlib import Path


class ConnectorMissing(RuntimeError):
    """The connector jars for the installed PySpark have not been resolved yet."""


def connector_jars() -> list[str]:
    import pyspark

    cache = Path(os.environ.get("WIREKAFKA_CACHE") or Path.home() / ".cache" / "wirekafka")
    jar_dir = cache / f"spark-{pyspark.__version__}" / "jars"
    jars = sorted(str(p) for p in jar_dir.glob("*.jar"))
    if not jars or not (jar_dir / ".complete").is_file():
        raise ConnectorMissing(f"Spark's Kafka connector {pyspark.__version__} is not in {jar_dir}: "
                               "run scripts/setup_spark.sh")
    return jars


def spark_session(app: str, log_level: str = "ERROR"):
    """local[2], loopback only, no UI, two shuffle partitions (the data is small), UTC session time
    zone (event-time windows and date partitions do not depend on the machine's zone)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (SparkSession.builder.master("local[2]").appName(app)
               .config("spark.jars", ",".join(connector_jars()))
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.memory", "1g")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel(log_level)
    return session
