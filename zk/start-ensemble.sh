#!/usr/bin/env bash
# Start a 3-node ZooKeeper ensemble on this host and wait for its quorum. Node N (1..3)
# lives in DIR/zkN with client port PORT+N-1, quorum port 2888+N-1 and election port
# 3888+N-1 unless --port/--quorum-port/--election-port say otherwise, e.g.
#   zk/start-ensemble.sh --dir /dev/shm/zk-ensemble --port 2181
set -euo pipefail
# Import this checkout's kafkalike even where the package is not pip-installed.
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m kafkalike.lab.zookeeper start --nodes 3 "$@"
