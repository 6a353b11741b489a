#!/usr/bin/env bash
# The main job: install what is missing, bring up the lab (ZooKeeper and three brokers on
# this machine, in the background, with bin/kafkalike-lab.sh), then a short demo: bin/kafka-topics.sh creates, lists, describes, alters and deletes topics,
# kcat (an independent Kafka client) produces and consumes records,
# bin/kafka-dump-log.sh shows the segment file the broker wrote, and
# bin/kafkalike-spark-load.sh loads the demo topic into Parquet with Spark (under $LOG_DIR).
# A fault scenario (kill -9 of a partition leader under an acks=all producer) ends it.
# The dashboard (bin/kafkalike-dashboard.sh) watches it all on http://127.0.0.1:9179/;
# start.sh waits until it answers there and prints the address it serves (or fails, with
# the dashboard's output, if it could not start: a port already taken, say).
# Stop everything with bin/kafkalike-lab.sh down and kill $(cat $LOG_DIR/dashboard.pid).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
PYTHON=${PYTHON:-python3}
export LOG_DIR=${LOG_DIR:-$repo/logs}

bash scripts/setup.sh

echo "== The lab: ZooKeeper and three brokers on this machine (bin/kafkalike-lab.sh, docs/lab.md)"
# A second run starts afresh. A ZooKeeper and broker from an earlier start.sh (which ran
# one of each from config/) would hold ports 2181 and 9092: stop them; neither stop script
# touches the lab's daemons.
bin/kafkalike-lab.sh down >/dev/null 2>&1 || true
bin/kafka-server-stop.sh >/dev/null 2>&1 || true
bin/zookeeper-server-stop.sh >/dev/null 2>&1 || true
bin/kafkalike-lab.sh up --brokers 3
zk_port=2181
bootstrap=localhost:9092,localhost:9093,localhost:9094

# The dashboard (docs/dashboard.md) watches the lab through the Kafka protocol and
# ZooKeeper from the start, so the demo below shows up in its plots.
dashboard_pid=$LOG_DIR/dashboard.pid
if [ -f "$dashboard_pid" ]; then kill "$(cat "$dashboard_pid")" 2>/dev/null || true; fi
# Its rate plots read the brokers' Prometheus endpoints (each lab broker has one).
metrics_urls=$(bin/kafkalike-lab.sh status --json | "$PYTHON" -c 'import json, sys; print(",".join(n["metrics_url"] for n in json.load(sys.stdin)["nodes"] if n.get("metrics_url")))')
nohup bin/kafkalike-dashboard.sh --bootstrap-server "$bootstrap" --zookeeper "localhost:$zk_port" \
    --metrics-url "$metrics_urls" > "$LOG_DIR/dashboard.out" 2>&1 < /dev/null &
echo $! > "$dashboard_pid"
# The address it serves, once it answers there; start.sh ends here if it could not start.
dashboard_url=$(scripts/wait-for-dashboard.sh "$(cat "$dashboard_pid")" "$LOG_DIR/dashboard.out" 60)
echo "The dashboard answers on $dashboard_url"

topic=kafkalike-demo
run() { echo; echo "\$ $*"; "$@"; }
# A second run starts the demo afresh.
bin/kafka-topics.sh --bootstrap-server "$bootstrap" --delete --if-exists --topic "$topic" >/dev/null
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --create --topic "$topic" \
    --partitions 3 --replication-factor 3 --config retention.ms=86400000
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --list
run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --describe --topic "$topic"

echo
echo "\$ printf 'k1:hello\nk2:from\nk3:kafkalike\n' | kcat -b $bootstrap -t $topic -P -K: -p 0 -z snappy"
printf 'k1:hello\nk2:from\nk3:kafkalike\n' | kcat -b "$bootstrap" -t "$topic" -P -K: -p 0 -z snappy
run kcat -b "$bootstrap" -t "$topic" -p 0 -C -e -o beginning -f 'offset %o  key %k  value %s\n'

run bin/kafka-topics.sh --bootstrap-server "$bootstrap" --alter --topic "$topic" --partitions 4
run bin/kafka-topics.sh --zookeeper "localhost:$zk_port" --describe --topic "$topic"

# With replication factor 3 every broker holds every partition: broker 0's copy.
run bin/kafka-dump-log.sh --print-data-log --files "$LOG_DIR/lab/broker-0/data/$topic-0/00000000000000000000.log"

run bin/kafka-topics.sh --zookeeper "localhost:$zk_port" --create --topic kafkalike-scratch --partitions 1 --replication-factor 3
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

run bin/kafkalike-lab.sh scenario leader-kill
run bin/kafkalike-lab.sh status

echo
echo "The lab keeps running (its logs in $LOG_DIR/lab). Stop it with: bin/kafkalike-lab.sh down"
# Still there after the demo? It answers, or start.sh says it stopped.
dashboard_url=$(scripts/wait-for-dashboard.sh "$(cat "$dashboard_pid")" "$LOG_DIR/dashboard.out" 30)
echo "The dashboard: $dashboard_url (brokers, topics and ISR, groups and lag, rates)."
echo "  Stop it with: kill \$(cat $dashboard_pid)"
