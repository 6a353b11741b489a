#!/usr/bin/env bash
# Install everything the tests need (only what is missing: zookeeper, kcat, a JRE,
# `pip install -e '.[test]'`), then run the test suite: the unit, integration (real
# ZooKeeper and broker processes), interop and fault tiers. Benchmarks are left out;
# run them with `python3 -m pytest tests/bench -m bench`.
# Arguments replace the default test path (tests) and come last, so a -m of your own
# wins over 'not bench': scripts/test.sh tests/unit -x; scripts/test.sh tests -m integration
# (one process; without arguments the tiers run as below, WORKERS=3 workers by default).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
PYTHON=${PYTHON:-python3}

bash scripts/setup.sh --test

if [ $# -gt 0 ]; then
    exec "$PYTHON" -m pytest -q --durations=25 -m 'not bench' "$@"
fi

# The whole suite. Most of the unit, integration and interop tiers' time is waiting on
# processes (a broker's start, a session's expiry), so they run on WORKERS pytest-xdist
# workers: a module per worker, every Spark test on one (one SparkSession), the labs on
# one (tests/conftest.py, worker_group). The fault tier then runs alone, one test at a
# time, as its timings assume a machine that is not also running other tests.
workers=${WORKERS:-3}
status=0
"$PYTHON" -m pytest -q --durations=25 -n "$workers" --dist loadgroup -m 'not bench and not fault' tests || status=$?
"$PYTHON" -m pytest -q --durations=15 -m fault tests/fault || status=$((status ? status : $?))
exit "$status"
