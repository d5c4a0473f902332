#!/usr/bin/env bash
# Starts wirekafka with the embedded default (config/server.properties): a single node on
# 127.0.0.1:9092 with data under ./data. Extra arguments go to `wirekafka serve`,
# e.g. --override log.dirs=/var/lib/wirekafka
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${WIREKAFKA_VENV:-.venv}/bin/wirekafka" serve config/server.properties "$@"
