#!/usr/bin/env bash
# Installs the project's `spark` extra (PySpark, pyarrow, pandas) into a venv and resolves Spark's
# Kafka connector of the same version with Maven into the cache, idempotently. The Spark session
# helper (examples/activity_stream/spark_session.py) puts
# ${WIREKAFKA_CACHE}/spark-<pyspark version>/jars/*.jar on spark.jars, so nothing is resolved at
# run time (no Ivy, no network).
# The version is the pyspark pin in pyproject.toml: 4.2.0, the newest 4.x whose
# spark-sql-kafka-0-10_2.13 resolves from Maven Central (4.2.1 and 4.3.0 are on PyPI but their
# connector is not on Maven Central); Spark 4.2 runs on Java 17.
# Usage: scripts/setup_spark.sh [VENV]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-${VIRTUAL_ENV:-.venv}}
SPARK_VERSION=$(grep -o 'pyspark==[0-9.]*' pyproject.toml | cut -d= -f3)
CACHE=${WIREKAFKA_CACHE:-$HOME/.cache/wirekafka}
JARS="$CACHE/spark-$SPARK_VERSION/jars"

if ! "$VENV/bin/python" -c "import sys, pyspark, pyarrow, pandas; sys.exit(pyspark.__version__ != '$SPARK_VERSION')" 2>/dev/null; then
    echo "setup_spark: installing the spark extra (pyspark==$SPARK_VERSION) into $VENV"
    "$VENV/bin/python" -m pip install -q -e ".[spark]"
fi

# Resolve into a fresh directory and move it into place only when complete, so an interrupted
# run never leaves a partial jar set that looks usable.
stamp="$JARS/.complete"
want=$( (cat scripts/maven/spark/pom.xml; echo "$SPARK_VERSION") | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup_spark: resolving spark-sql-kafka-0-10_2.13 $SPARK_VERSION into $JARS"
    staging="$JARS.partial"
    rm -rf "$staging"
    mkdir -p "$staging"
    mvn -q -B -s scripts/maven/settings.xml -f scripts/maven/spark/pom.xml \
        -Dspark.version="$SPARK_VERSION" -Dmaven.repo.local="$CACHE/m2" \
        dependency:copy-dependencies -DoutputDirectory="$staging"
    echo "$want" > "$staging/.complete"
    rm -rf "$JARS"
    mv "$staging" "$JARS"
fi
