#!/usr/bin/env bash
# Installs everything the tests need (scripts/setup.sh --all) and runs the whole suite:
# unit tests, integration tests with stock clients, the conformance suite against wirekafka and
# real Apache Kafka, the nemesis suite and the Spark tests.
#
# Without arguments the whole suite runs as two pytest sessions at once, since most of its time is
# tests waiting on brokers, ZooKeeper sessions and JVMs: the unit tests then the conformance suite
# (whose version-coverage check needs the whole suite in one session), beside compat-tests/ and
# faults/ spread over WIREKAFKA_TEST_WORKERS pytest-xdist workers (3; a file's tests stay on one
# worker, so they share its fixtures). Ports come from one locked pool (scripts/port_pool.py) and
# each session has its own temp dir, so nothing collides. Each session's output is shown when both
# are done. WIREKAFKA_TEST_SERIAL=1 runs the whole suite as one pytest session instead (about 50
# minutes on 2 cores, against about 25).
# With arguments, one session runs them as pytest arguments (`./scripts/test.sh tests/`,
# `./scripts/test.sh -m "not slow"`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all
export WIREKAFKA_CONFORMANCE_KAFKA=${WIREKAFKA_CONFORMANCE_KAFKA:-1}
PYTHON="${WIREKAFKA_VENV:-.venv}/bin/python"

verdict() {  # pytest's exit status, except that collecting no test is a failure too
    if [ "$1" -eq 5 ]; then echo "test.sh: pytest collected no tests" >&2; return 1; fi
    return "$1"
}

if [ $# -gt 0 ] || [ "${WIREKAFKA_TEST_SERIAL:-0}" = 1 ]; then
    set +e
    "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
    code=$?
    set -e
    verdict $code
    exit $?
fi

runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
set +e
"$PYTHON" -m pytest -q -p no:cacheprovider --basetemp="$runs/units-and-conformance" --durations=60 \
    tests conformance > "$runs/units-and-conformance.log" 2>&1 &
first=$!
"$PYTHON" -m pytest -q -p no:cacheprovider --basetemp="$runs/clients-and-faults" --durations=60 \
    -n "${WIREKAFKA_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder compat-tests faults > "$runs/clients-and-faults.log" 2>&1 &
second=$!
wait $first; first_code=$?
wait $second; second_code=$?
set -e
for name in units-and-conformance clients-and-faults; do
    echo "==================== $name ===================="
    cat "$runs/$name.log"
done
status=0
verdict $first_code || status=1
verdict $second_code || status=1
exit $status
