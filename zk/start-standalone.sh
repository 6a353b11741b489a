#!/usr/bin/env bash
# Start one ZooKeeper server in the background from zk/zoo.cfg.template and wait until it
# serves. Options go to `python -m kafkalike.lab.zookeeper start`, e.g.
#   zk/start-standalone.sh --dir /var/lib/kafkalike/zk --port 2181 --address 0.0.0.0
# Running it again while the server is up only prints its status.
set -euo pipefail
# Import this checkout's kafkalike even where the package is not pip-installed.
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m kafkalike.lab.zookeeper start --nodes 1 "$@"
