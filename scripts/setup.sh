#!/usr/bin/env bash
# Installs what wirekafka and its tests need, idempotently and cached:
#   - a venv in .venv with the package (editable) and its test extras;
#   - with --all: Debian packages (kcat, ZooKeeper's jars, MIT Kerberos' KDC and kcat's GSSAPI
#     plug-in for the GSSAPI tests), Apache Kafka's jars (4.x: reference
#     broker and Java CLI tools; 3.9: the ZooKeeper-mode reference cluster), Apache ZooKeeper's
#     server jars, PySpark and the Spark Kafka connector jars.
# Usage: scripts/setup.sh [--all]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${WIREKAFKA_VENV:-.venv}
export WIREKAFKA_CACHE=${WIREKAFKA_CACHE:-$HOME/.cache/wirekafka}
mkdir -p "$WIREKAFKA_CACHE"

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating venv $VENV"
    python3 -m venv "$VENV"
fi
stamp="$VENV/.wirekafka-installed"
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing wirekafka and test dependencies into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e ".[test]"
    echo "$want" > "$stamp"
fi
# Bytecode for the project's own modules, written even where PYTHONDONTWRITEBYTECODE is set (it is
# on some machines): without it every broker process the tests start compiles ~200 modules again
# (about 0.5 s of CPU each time). A module changed later is compiled from source, as usual.
"$VENV/bin/python" -m compileall -q -j 0 wirekafka testsupport scripts >/dev/null

if [ "${1:-}" = "--all" ]; then
    if [ -x scripts/install_system_deps.sh ]; then bash scripts/install_system_deps.sh; fi
    if [ -f scripts/realkafka.py ]; then
        "$VENV/bin/python" scripts/realkafka.py ensure
        # Kafka 3.9: the ZooKeeper-mode reference cluster (compat-tests/test_zookeeper_launcher.py)
        "$VENV/bin/python" scripts/realkafka.py ensure --version "${WIREKAFKA_KAFKA_ZK_VERSION:-3.9.1}"
    fi
    if [ -f scripts/zookeeper.py ]; then "$VENV/bin/python" scripts/zookeeper.py ensure; fi
    if [ -f scripts/setup_spark.sh ]; then bash scripts/setup_spark.sh "$VENV"; fi
fi
