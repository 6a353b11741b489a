#!/usr/bin/env bash
# The main job: install what is missing, start ZooKeeper and one broker on this machine
# (both in the background, from config/zookeeper.properties and config/server.properties),
# then a short demo: bin/kafka-topics.sh creates, lists, describes, alters and deletes topics,
# kcat (an independent Kafka client) produces and consumes records,
# bin/kafka-dump-log.sh shows the segment file the broker wrote, and
# bin/kafkalike-spark-load.sh loads the demo topic into Parquet with Spark (under $LOG_DIR).
# Stop with bin/kafka-server-stop.sh and bin/zookeeper-server-stop.sh.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
PYTHON=${PYTHON:-python3}
export LOG_DIR=${LOG_DIR:-$repo/logs}
. zk/env.sh

bash scripts/setup.sh

zk_config=config/zookeeper.properties
zk_port=$(sed -n 's/^clientPort=\([0-9]*\).*/\1/p' "$zk_config")
echo "== ZooKeeper on localhost:$zk_port"
if mode=$(zk_mode 127.0.0.1 "$zk_port"); then
    echo "already serving ($mode)"
else
    bin/zookeeper-server-start.sh -daemon "$zk_config"
    echo "serving ($(zk_wait_serving 127.0.0.1 "$zk_port" 60))"
fi

bootstrap=localhost:9092
echo
echo "== Broker (bin/kafka-server-start.sh -daemon config/server.properties)"
if "$PYTHON" scripts/wait_broker.py "$bootstrap" --timeout 1 >/dev/null 2>&1; then
    echo "already serving on $bootstrap"
else
    bin/kafka-server-start.sh -daemon config/server.properties
    "$PYTHON" scripts/wait_broker.py "$bootstrap" --timeout 60
fi

topic=kafkalike-demo
run() { echo; echo "\$ $*"; "$@"; }
# A second run starts the demo afresh.
bin/kafka-topics.sh --bootstrap-server "$bootstrap" --delete --if-exists --topic "$topic" >/dev/null
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --create --topic "$topic" \
    --partitions 3 --replication-factor 1 --config retention.ms=86400000
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --list
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --describe --topic "$topic"

echo
echo "\$ printf 'k1:hello\nk2:from\nk3:kafkalike\n' | kcat -b $bootstrap -t $topic -P -K: -p 0 -z snappy"
printf 'k1:hello\nk2:from\nk3:kafkalike\n' | kcat -b "$bootstrap" -t "$topic" -P -K: -p 0 -z snappy
run kcat -b "$bootstrap" -t "$topic" -p 0 -C -e -o beginning -f 'offset %o  key %k  value %s\n'

run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --alter --topic "$topic" --partitions 4
run bin/kafka-topics.sh --zookeeper "localhost:$zk_port" --describe --topic "$topic"

log_dir=$(sed -n 's/^log\.dirs=//p' config/server.properties)
run bin/kafka-dump-log.sh --print-data-log --files "$log_dir/$topic-0/00000000000000000000.log"

run bin/kafka-topics.sh --zookeeper "localhost:$zk_port" --create --topic kafkalike-scratch --partitions 1 --replication-factor 1
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --delete --topic kafkalike-scratch
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --list

echo
echo "== Spark batch load: $topic into Parquet, the offsets loaded kept in a consumer group"
loader=kafkalike-demo-loader
load_dir=$LOG_DIR/spark-load
# The topic was created afresh above, so the loader starts afresh too.
bin/kafka-consumer-groups.sh --bootstrap-server "$bootstrap" --delete --group "$loader" >/dev/null 2>&1 || true
rm -rf "$load_dir"
echo "\$ seq 1 36 | awk '{printf \"user-%d:event-%d\\n\", \$1 % 7, \$1}' | kcat -b $bootstrap -t $topic -P -K:"
seq 1 36 | awk '{printf "user-%d:event-%d\n", $1 % 7, $1}' | kcat -b "$bootstrap" -t "$topic" -P -K:
run bin/kafkalike-spark-load.sh --bootstrap-server "$bootstrap" --topic "$topic" --group "$loader" \
    --output "$load_dir"
run bin/kafka-consumer-groups.sh --bootstrap-server "$bootstrap" --describe --group "$loader"
echo
echo "\$ $PYTHON - $load_dir   # pyarrow reads the Parquet dataset (topic=/date= directories)"
"$PYTHON" - "$load_dir" <<'PY'
import collections
import sys

import pyarrow.dataset as ds

rows = ds.dataset(sys.argv[1], format="parquet", partitioning="hive").to_table().to_pylist()
rows.sort(key=lambda r: (r["partition"], r["offset"]))
counts = collections.Counter((r["topic"], str(r["date"]), r["partition"]) for r in rows)
for (topic, date, partition), n in sorted(counts.items()):
    print(f"topic={topic}/date={date}  partition {partition}: {n} records")
for r in rows[:5]:
    key = None if r["key"] is None else r["key"].decode()
    print(f"  partition {r['partition']} offset {r['offset']}  key {key}  value {r['value'].decode()}  "
          f"timestamp {r['timestamp']:%Y-%m-%d %H:%M:%S}")
print(f"{len(rows)} records in all")
PY
# Run again: nothing is new, so nothing is loaded twice.
run bin/kafkalike-spark-load.sh --bootstrap-server "$bootstrap" --topic "$topic" --group "$loader" \
    --output "$load_dir"

echo
echo "ZooKeeper and the broker keep running (logs in $LOG_DIR)."
echo "Stop them with: bin/kafka-server-stop.sh; bin/zookeeper-server-stop.sh"
