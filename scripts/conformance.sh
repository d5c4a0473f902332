#!/usr/bin/env bash
# Runs the conformance suite once against real Apache Kafka (started from Maven Central jars) and
# wirekafka side by side, comparing their whole answers, and rewrites conformance/MATRIX.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all
exec "${WIREKAFKA_VENV:-.venv}/bin/python" -m conformance.harness.matrix
