#!/usr/bin/env bash
# Profiles wirekafka under the benchmark's throughput and latency workloads with py-spy: runs
# `scripts/bench.py --no-kafka` under `py-spy record --subprocesses` and writes the flame graph
# (SVG; the broker process is one root of it, the bench client another) and the bench table to
# docs/perf/. py-spy is installed into the venv on demand.
# Usage: scripts/profile_broker.sh [bench.py options, default: --only throughput,latency]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${WIREKAFKA_VENV:-.venv}
bash scripts/setup.sh
"$VENV/bin/python" -m pip install -q py-spy
mkdir -p docs/perf
args=("$@")
if [ ${#args[@]} -eq 0 ]; then args=(--only throughput,latency); fi
out=docs/perf/flame-bench.svg
"$VENV/bin/py-spy" record --subprocesses --rate 200 --output "$out" --format flamegraph -- \
    "$VENV/bin/python" scripts/bench.py --no-kafka --out docs/perf/flame-bench.md "${args[@]}"
echo "profile: $out (bench table: docs/perf/flame-bench.md)"
