#!/usr/bin/env bash
# Install everything the tests need (only what is missing: zookeeper, kcat, a JRE,
# `pip install -e '.[test]'`), then run the test suite: the unit, integration (real
# ZooKeeper and broker processes), interop and fault tiers. Benchmarks are left out;
# run them with `python3 -m pytest tests/bench -m bench`.
# Arguments replace the default test path (tests) and come last, so a -m of your own
# wins over 'not bench': scripts/test.sh tests/unit -x; scripts/test.sh tests -m integration
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
PYTHON=${PYTHON:-python3}

bash scripts/setup.sh --test

if [ $# -eq 0 ]; then
    set -- tests
fi
exec "$PYTHON" -m pytest -q --durations=25 -m 'not bench' "$@"
