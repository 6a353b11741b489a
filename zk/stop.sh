#!/usr/bin/env bash
# SIGTERM the servers zk/start-*.sh started in DIR and wait for them to exit; data stays.
#   zk/stop.sh --dir DIR
set -euo pipefail
# Import this checkout's kafkalike even where the package is not pip-installed.
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m kafkalike.lab.zookeeper stop "$@"
