#!/usr/bin/env bash
# Show the mode (standalone, leader, follower) of each server zk/start-*.sh started in DIR.
#   zk/status.sh --dir DIR
set -euo pipefail
# Import this checkout's kafkalike even where the package is not pip-installed.
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m kafkalike.lab.zookeeper status "$@"
