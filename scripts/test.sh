#!/usr/bin/env bash
# Installs everything the tests need (scripts/setup.sh --all) and runs the whole suite:
# unit tests, integration tests with stock clients, the conformance suite against wirekafka and
# real Apache Kafka, and the Spark tests. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all
export WIREKAFKA_CONFORMANCE_KAFKA=${WIREKAFKA_CONFORMANCE_KAFKA:-1}
set +e
"${WIREKAFKA_VENV:-.venv}/bin/python" -m pytest -q -p no:cacheprovider "$@"
code=$?
set -e
if [ $code -eq 5 ]; then echo "test.sh: pytest collected no tests"; exit 1; fi
exit $code
