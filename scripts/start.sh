#!/usr/bin/env bash
# The main job, for now. Installs what is missing, starts a standalone ZooKeeper in the
# background from config/zookeeper.properties (unless one already serves there), then
# shows what kafkalike can do so far: it writes a topic partition log with its own
# record and storage layers, prints it with bin/kafka-dump-log.sh, and lists
# ZooKeeper's root with bin/zookeeper-shell.sh. The broker comes later; this script
# will start it too. Stop ZooKeeper with bin/zookeeper-server-stop.sh.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
PYTHON=${PYTHON:-python3}
. zk/env.sh

bash scripts/setup.sh

zk_config=config/zookeeper.properties
zk_port=$(sed -n 's/^clientPort=\([0-9]*\).*/\1/p' "$zk_config")
pid_file=${LOG_DIR:-$repo/logs}/zookeeper.pid

echo "== ZooKeeper on localhost:$zk_port"
if mode=$(zk_mode 127.0.0.1 "$zk_port"); then
    echo "already serving ($mode)"
else
    if ! { [ -f "$pid_file" ] && zk_is_server_pid "$(cat "$pid_file")"; }; then
        bin/zookeeper-server-start.sh -daemon "$zk_config"
        echo "started (pid $(cat "$pid_file"), output in logs/zookeeper.out)"
    fi
    echo "serving ($(zk_wait_serving 127.0.0.1 "$zk_port" 30))"
fi

demo_dir=${DEMO_LOG_DIR:-/tmp/kafkalike-demo}
echo
echo "== A topic partition log written by kafkalike.records and kafkalike.storage"
"$PYTHON" scripts/demo.py --log-dir "$demo_dir" --topic demo --partition 0

echo
echo "== bin/kafka-dump-log.sh --print-data-log --files $demo_dir/demo-0/00000000000000000000.log"
if [ ! -x bin/kafka-dump-log.sh ]; then
    echo "bin/kafka-dump-log.sh is missing" >&2
    exit 1
fi
bin/kafka-dump-log.sh --print-data-log --files "$demo_dir/demo-0/00000000000000000000.log"

echo
echo "== bin/zookeeper-shell.sh localhost:$zk_port ls /"
bin/zookeeper-shell.sh "localhost:$zk_port" ls /
