#!/usr/bin/env bash
# Start a ZooKeeper server from a zookeeper.properties file, the way Kafka's script does:
# in the foreground by default, or with -daemon in the background with its output in
# $LOG_DIR/zookeeper.out (LOG_DIR defaults to logs/ beside bin/).
#
# The properties file is passed to the server untouched: it is the only source of
# configuration. What Debian's package needs is added on the java command line only:
# the classpath with a logging backend, heap (KAFKA_HEAP_OPTS), GC options
# (KAFKA_JVM_PERFORMANCE_OPTS), a GC log, and any KAFKA_OPTS.
#
# The server's pid goes to $LOG_DIR/zookeeper.pid, and the java command carries
# -Dkafkalike.zookeeper.logdir=$LOG_DIR, so that bin/zookeeper-server-stop.sh stops the
# servers this installation started and leaves other ZooKeepers on the machine alone.
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "USAGE: $0 [-daemon] zookeeper.properties"
    exit 1
fi

base_dir=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
. "$base_dir/zk/env.sh"

daemon=no
if [ "$1" = "-daemon" ]; then
    daemon=yes
    shift
fi
if [ $# -lt 1 ]; then
    echo "USAGE: $0 [-daemon] zookeeper.properties"
    exit 1
fi

LOG_DIR=${LOG_DIR:-$base_dir/logs}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
pid_file=$LOG_DIR/zookeeper.pid

if [ -f "$pid_file" ] && zk_is_server_pid "$(cat "$pid_file")"; then
    echo "ZooKeeper is already running as process $(cat "$pid_file") (pid file $pid_file)" >&2
    exit 1
fi

java=$(zk_java)
classpath=$(zk_classpath)

# Word splitting of these variables is intended, as in Kafka's scripts.
# shellcheck disable=SC2206
heap_opts=(${KAFKA_HEAP_OPTS:--Xmx512M -Xms512M})
# shellcheck disable=SC2206
perf_opts=(${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true})
# shellcheck disable=SC2206
extra_opts=(${KAFKA_OPTS:-})

command=(
    "$java" "${heap_opts[@]}" "${perf_opts[@]}"
    "-Xlog:gc*:file=$LOG_DIR/zookeeper-gc.log:time,tags:filecount=10,filesize=100M"
    "-Dorg.slf4j.simpleLogger.showDateTime=true"
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS"
    "-Dkafkalike.zookeeper.logdir=$LOG_DIR"
    ${extra_opts[@]+"${extra_opts[@]}"}
    -cp "$classpath" "$ZK_MAIN_CLASS" "$@"
)

if [ "$daemon" = yes ]; then
    # setsid: the server must not die with the terminal or provisioning shell that started it.
    setsid nohup "${command[@]}" >"$LOG_DIR/zookeeper.out" 2>&1 </dev/null &
    echo $! >"$pid_file"
else
    echo $$ >"$pid_file"
    exec "${command[@]}"
fi
