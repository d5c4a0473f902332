#!/usr/bin/env bash
# Installs PySpark into a venv and resolves Spark's Kafka connector (same version) with Maven into
# the cache, idempotently. Tests put ${WIREKAFKA_CACHE}/spark-<version>/jars/*.jar on spark.jars.
# Usage: scripts/setup_spark.sh [VENV]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-${VIRTUAL_ENV:-.venv}}
SPARK_VERSION=4.0.0   # the newest 4.x whose connector resolves completely from Maven Central here
CACHE=${WIREKAFKA_CACHE:-$HOME/.cache/wirekafka}
JARS="$CACHE/spark-$SPARK_VERSION/jars"

if ! "$VENV/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$SPARK_VERSION')" 2>/dev/null; then
    echo "setup_spark: installing pyspark==$SPARK_VERSION into $VENV"
    "$VENV/bin/python" -m pip install -q "pyspark==$SPARK_VERSION" pyarrow pandas
fi
stamp="$JARS/.complete"
want=$(sha256sum scripts/maven/spark/pom.xml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup_spark: resolving spark-sql-kafka-0-10 $SPARK_VERSION into $JARS"
    rm -rf "$JARS"
    mkdir -p "$JARS"
    mvn -q -B -U -s scripts/maven/settings.xml -f scripts/maven/spark/pom.xml \
        -Dspark.version="$SPARK_VERSION" -Dmaven.repo.local="$CACHE/m2" \
        dependency:copy-dependencies -DoutputDirectory="$JARS"
    echo "$want" > "$stamp"
fi
