#!/usr/bin/env bash
# Starts wirekafka with the embedded default (config/server.properties): a single node on
# 127.0.0.1:9092 with data under ./data. Extra arguments go to `wirekafka serve`,
# e.g. --override log.dirs=/var/lib/wirekafka
#
# Installs only what serving needs: the package (editable) and its runtime dependencies, into the
# venv, once per pyproject.toml. A venv that scripts/setup.sh installed (with the test extras) has
# that already. Its own stamp is not setup.sh's, so scripts/test.sh still installs the test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${WIREKAFKA_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
    echo "serve: creating venv $VENV"
    python3 -m venv "$VENV"
fi
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$VENV/.wirekafka-installed" 2>/dev/null)" != "$want" ] \
        && [ "$(cat "$VENV/.wirekafka-serve-installed" 2>/dev/null)" != "$want" ]; then
    echo "serve: installing wirekafka (runtime dependencies only) into $VENV"
    "$VENV/bin/python" -m pip install -q --no-input --upgrade pip
    "$VENV/bin/python" -m pip install -q --no-input -e .
    echo "$want" > "$VENV/.wirekafka-serve-installed"
fi
exec "$VENV/bin/wirekafka" serve config/server.properties "$@"
